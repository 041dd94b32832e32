"""One request's compaction: decode its history, find the conversation's state, keep the
chain within the budget with the Compactor, encode it back. Every failure ends in an
:class:`Outcome` forwarding the client's bytes unchanged. The work runs on a
:class:`WorkerPool`, its store calls on the gateway's event loop (:class:`OnLoop`)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import typing
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import xxhash
from anyio.lowlevel import EventLoopToken

from cast import Message, get_provider
from csum.archive import HistoryArchive
from csum.cache import SummaryCache
from csum.compactor import Compactor, summary_bytes
from csum.config import DEFAULT_CLEARING, SUMMARY_ONLY, Budget, Stores
from csum.serve.apis import Api
from csum.serve.body import RefusedError, ScannedBody, check_depth, check_items, scan, skim
from csum.serve.config import ServeConfig
from csum.serve.conversation import (
    ConversationState,
    ConversationStates,
    RawPrefix,
    conversation_key,
)
from csum.serve.reuse import (
    SEEN_IN_ALL,
    ReadRequest,
    Scope,
    Seen,
    SeenRequests,
    fields_json,
    tokens_saved,
)
from csum.serve.summary_handler import SummaryHandlerFactory
from csum.serve.tenant import ANONYMOUS
from csum.store_events import StoreEventKind
from csum.stores import SummaryStore
from csum.stores._protocol import ArchiveStore

__all__ = ["OnLoop", "Outcome", "OutcomeKind", "Rewriter", "WorkerPool", "fits_by_size"]

_log = logging.getLogger("csum.serve")


class OutcomeKind(StrEnum):
    """What the gateway did with a request's history."""

    WITHIN_BUDGET = "within_budget"
    """Forwarded byte for byte: the chain fits and the conversation was never compacted."""
    REUSED = "reused"
    """The conversation's earlier compacted prefix was sent again, plus the new turns."""
    COMPACTED = "compacted"
    """Compacted now (its state stored for the next request)."""
    NOT_COMPACTABLE = "not_compactable"
    """No history the codec reads, or no budget for the model: forwarded byte for byte."""
    FAILED = "failed"
    """Decoding or compaction failed: forwarded byte for byte (logged, counted)."""
    DEADLINE = "deadline"
    """The deadline passed before the compaction was done: forwarded byte for byte."""
    REFUSED = "refused"
    """Over the bounds on what the gateway decodes: answered with ``status``."""
    OVER_FLOOR = "over_floor"
    """The system prompt and newest turn alone exceed the budget: sent compacted as far
    as it goes, logged once per conversation."""
    PROVIDER_STATE = "provider_state"
    """A Responses request continuing state the provider holds: forwarded byte for byte."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """``body`` is what to send upstream; None means the client's bytes as they came."""

    kind: OutcomeKind
    body: bytes | None = None
    bytes_before: int = 0
    bytes_after: int = 0
    tokens_saved: int = 0
    handler_calls: int = 0
    cache_hits: int = 0
    store_failures: int = 0
    depth: int = 0
    """Depth of the summary a compaction wrote (0: none written)."""
    archived: int = 0
    """Messages the compaction put in the archive."""
    compacted: bool = False
    """A compaction was made."""
    floor: int = 0
    """With ``over_floor``: the history's size sent, in the budget's unit."""
    detail: str = ""
    status: int = 0
    """The status to answer with (``REFUSED`` only)."""
    payload: dict[str, Any] | None = field(default=None, repr=False)
    """For a request translated next: the request as an object, compacted when it was."""
    chain: list[Message] | None = field(default=None, repr=False)
    """With ``payload``: its history as decoded (and compacted), when it was."""


class Rewriter:
    """Compacts requests for one gateway; ``store`` holds the conversations' state and
    the summary cache, ``archive_store`` (when given) the messages summarized away."""

    def __init__(
        self, config: ServeConfig, store: SummaryStore, archive_store: ArchiveStore | None = None
    ) -> None:
        self.config = config
        self.store = store
        self.archive_store = archive_store
        self.summarizer = SummaryHandlerFactory(config)
        self.pool = WorkerPool(config.compaction_workers, config.deadline)
        self._floors_logged: set[str] = set()
        self._keys: dict[tuple[Scope, str], str] = {}  # by the hash of the opening's raw text
        self._seen = SeenRequests()
        self._records: dict[str, tuple[bytes, list[tuple[int, RawPrefix | None]]]] = {}
        self._records_lock = threading.Lock()

    async def rewrite(
        self,
        api: Api,
        body: bytes,
        conversation: str | None,
        api_key: str | None = None,
        tenant: str = ANONYMOUS,
        *,
        upstream: Api | None = None,
    ) -> Outcome:
        """What to send upstream for ``body`` on ``api``; never raises for bad input or a
        failing store. ``conversation``: the optional header's value; ``api_key``:
        the client's (``--summarizer upstream``); ``tenant`` scopes state, archive and
        cache; ``upstream``: the API the request is translated for next (the chain is
        compacted for its provider's rules, the outcome carries it decoded)."""
        budget = self.config.budget
        if (
            upstream is None
            and budget is not None
            and fits_by_size(body, budget)
            and not any(f'"{key}"'.encode() in body for key in api.held_keys)
        ):
            return Outcome(OutcomeKind.WITHIN_BUDGET, bytes_before=len(body))
        until = time.monotonic() + self.config.deadline
        store, archive = self.store, self.archive_store
        if self.config.offload:  # handled on a worker's own loop, the stores on this one
            token = anyio.lowlevel.current_token()
            store = typing.cast(SummaryStore, OnLoop(store, token))
            archive = None if archive is None else typing.cast(ArchiveStore, OnLoop(archive, token))
        request = _Request(
            api, body, conversation, api_key, until, store, archive, tenant, upstream
        )
        if not self.config.offload:
            read = self._read(request)
            return read if isinstance(read, Outcome) else await self._compacted(request, read)
        outcome = await self.pool.run(lambda: self._in_worker(request), until)
        return _past_deadline(api) if outcome is None else outcome

    def _in_worker(self, request: _Request) -> Outcome:
        """The request read, and compacted when due on this worker thread's own loop."""
        read = self._read(request)
        return read if isinstance(read, Outcome) else anyio.run(self._compacted, request, read)

    def _read(self, request: _Request) -> Outcome | ReadRequest:
        """The body parsed (once) and measured: an Outcome when it goes as it came (with
        the client's request as an object when translated next)."""
        api, body = request.api, request.body
        try:
            scanned, known = self._scanned(request)
        except RefusedError as exc:
            return _refusal(exc)
        except ValueError as exc:  # not JSON: the upstream will say so
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail=f"body is not JSON: {exc}")
        payload = scanned.payload
        if not isinstance(payload, dict):
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail="body is not a JSON object")
        if request.upstream is not None and (refused := self._too_deep(payload)):
            return refused  # the translation reads all of it
        along = None if request.upstream is None else payload
        held = [key for key in api.held_keys if payload.get(key) not in (None, "")]
        if held:
            detail = f"the provider holds the history ({held[0]})"
            return Outcome(
                OutcomeKind.PROVIDER_STATE, bytes_before=len(body), detail=detail, payload=along
            )
        history = api.history(payload)
        if history is None:
            return Outcome(
                OutcomeKind.NOT_COMPACTABLE, detail=f"no {api.list_key} list", payload=along
            )
        try:
            check_items(history, api.list_key, self.config.max_items)
        except RefusedError as exc:
            return replace(_refusal(exc), payload=along)
        budget = self.config.budget_for(self._model(request, payload))
        if budget is None:
            return Outcome(
                OutcomeKind.NOT_COMPACTABLE, detail="no budget for this model", payload=along
            )
        # the history's share (Claude Code's tools are 80 KB): at most the body less the
        # other fields' compact JSON (the known request's, or written once here)
        other = fields_json(api.others(payload)) if known is None else known[0].other
        share = len(body) - (2 + sum(map(len, other.values())) + max(0, len(other) - 1))
        if fits_by_size(body, budget, size=share):
            return self._too_deep(payload) or Outcome(
                OutcomeKind.WITHIN_BUDGET, bytes_before=share, payload=along
            )
        return ReadRequest(scanned, api, history, budget, other, known=known)

    def _scanned(self, request: _Request) -> tuple[ScannedBody, tuple[Seen, int] | None]:
        """The body read against the last requests of its scope (skim), or scanned whole."""
        api, body, max_items = request.api, request.body, self.config.max_items
        recent = self._seen.recent(request.scope)
        skimmed = skim(body, [seen.scanned for seen in recent], api.list_key, max_items)
        if skimmed is not None:
            scanned, index, fresh = skimmed
            return scanned, (recent[index], fresh)
        return scan(body, api.list_key, self.config.max_depth, max_items), None

    def _model(self, request: _Request, payload: dict[str, Any]) -> object:
        """The model the request goes to: ``--upstream-model`` when it is translated."""
        if request.upstream is not None and self.config.upstream_model is not None:
            return self.config.upstream_model
        return payload.get("model")

    def _too_deep(self, value: Any) -> Outcome | None:
        """``REFUSED`` when ``value`` nests deeper than ``--max-depth``."""
        try:
            check_depth(value, self.config.max_depth)
        except RefusedError as exc:
            return _refusal(exc)
        return None

    async def _compacted(self, request: _Request, read: ReadRequest) -> Outcome:
        """The outcome of a request to compact: reused, refused, or from the full path (the
        client's request as an object along, when translated next and not rewritten)."""
        try:
            outcome: Outcome | None = None
            with anyio.move_on_after(request.until - time.monotonic()):
                outcome = (
                    await self._reused(request, read)
                    or self._too_deep(read.payload)
                    or await self._rewrite(request, read)
                )
            outcome = outcome or _past_deadline(request.api)
        except Exception as exc:  # noqa: BLE001 -- a gateway failure never fails the request
            _warn("compaction failed, forwarding uncompacted", request.api, type(exc).__name__)
            outcome = Outcome(OutcomeKind.FAILED, detail=type(exc).__name__)
        if request.upstream is None or outcome.payload is not None:
            return outcome
        return replace(outcome, payload=read.payload)

    async def _reused(self, request: _Request, read: ReadRequest) -> Outcome | None:
        """A compacted conversation's request recognised by its items' raw text, sent
        without decoding them (csum.serve.reuse); None: the full path decides."""
        api = request.api
        key = self._known_key(request, read)
        if key is None:
            return None
        try:
            stored = await request.store.get(key)
            prefixes = [] if stored is None else self._raw_prefixes(key, stored)
        except Exception:  # noqa: BLE001 -- the full path retries and reports it
            return None
        raw = read.matching(prefixes)
        if raw is None:
            return None
        # the prefix's text nested within bounds when it was compacted (and the other
        # fields when the request they are the same bytes as was read): the rest is checked
        rest = {} if read.known else api.others(read.payload)
        refused = self._too_deep({**rest, api.list_key: read.history[api.list_key][raw.items :]})
        if refused is not None:
            return refused
        # a keeper compacts over its budget's limit only: the request's own is the bound
        as_object = request.upstream is not None
        found = read.spliced(raw, get_provider(request.provider), as_object=as_object)
        if found is None:
            return None
        self._seen.remember(request.scope, read, request.body)
        body, payload, new_bytes = found
        return Outcome(
            OutcomeKind.REUSED,
            body=body,
            payload=payload,
            bytes_before=raw.history_bytes + new_bytes,
            bytes_after=raw.sent_bytes + new_bytes,
            tokens_saved=raw.tokens_saved,
        )

    def _raw_prefixes(self, key: str, stored: bytes) -> list[tuple[int, RawPrefix | None]]:
        """(``prefix_len``, raw prefix) of each state in ``stored``, chains undecoded, read once."""
        digest = xxhash.xxh3_128_digest(stored)
        with self._records_lock:
            cached = self._records.get(key)
        if cached is not None and cached[0] == digest:
            return cached[1]
        states = ConversationStates.from_bytes(stored, chains=False).states
        prefixes = [(state.prefix_len, state.raw) for state in states]
        with self._records_lock:
            if len(self._records) >= SEEN_IN_ALL:
                self._records.pop(next(iter(self._records)))
            self._records[key] = (digest, prefixes)
        return prefixes

    def _known_key(self, request: _Request, read: ReadRequest) -> str | None:
        """The conversation's key without decoding (header, or remembered), or None."""
        if request.conversation:
            return conversation_key(request.api.name, [], request.conversation, request.tenant)
        opening = read.opening()
        return None if opening is None else self._keys.get((request.scope, opening[0]))

    def _remember_key(self, request: _Request, read: ReadRequest, key: str) -> None:
        """Remember ``key`` for the opening's raw text, when the opening alone gives it."""
        opening = None if request.conversation else read.opening()
        if opening is None or self._keys.get((request.scope, opening[0])) == key:
            return
        api = request.api
        history = {**read.history, api.list_key: read.history[api.list_key][: opening[1]]}
        try:
            alone = api.decode(history)
        except Exception:  # noqa: BLE001 -- not remembered: the full path goes on
            return
        if conversation_key(api.name, alone, None, request.tenant) == key:
            if len(self._keys) >= _FLOORS_REMEMBERED:
                self._keys.clear()
            self._keys[request.scope, opening[0]] = key

    async def _rewrite(self, request: _Request, read: ReadRequest) -> Outcome:
        """The full path: decoded, matched to the stored state, compacted when due, encoded."""
        api = request.api
        messages = api.decode(read.history)
        key = conversation_key(api.name, messages, request.conversation, request.tenant)
        self._remember_key(request, read, key)
        states, store_failures = await _states(request.store, key, api)
        match = states.match(messages)
        compactor = self._keeper(request, read, key)
        if match is not None:
            compactor.restore_summary_depths(states.states[match[0]].depths)
        result = await compactor.run(messages if match is None else match[1])
        events = [e.kind for e in result.store_events]
        store_failures += sum(1 for kind in events if kind in _UNAVAILABLE)
        over, floor = result.over_budget, result.size_after if result.over_budget else 0
        if over:
            self._log_floor(key, api, read.budget, floor)
        if not result.compacted and match is None:  # left as it was, in no compacted conversation
            return Outcome(
                OutcomeKind.OVER_FLOOR if over else OutcomeKind.WITHIN_BUDGET,
                bytes_before=result.bytes_before,
                bytes_after=result.bytes_before,
                store_failures=store_failures,
                floor=floor,
                chain=None if request.upstream is None else messages,
            )
        if result.compacted:
            sent, profile = result.messages, get_provider(request.provider)
            raw = read.raw_prefix(messages, sent, profile)
            state = ConversationState.after(messages, sent, compactor.summary_depths, raw)
            kept = states.with_state(state, None if match is None else match[0])
            store_failures += await _stored(request.store, key, kept, self.config.state_ttl, api)
        kind = OutcomeKind.COMPACTED if result.compacted else OutcomeKind.REUSED
        if over:
            kind = OutcomeKind.OVER_FLOOR
        body, payload = read.encoded(result.messages, as_object=request.upstream is not None)
        self._seen.remember(request.scope, read, request.body)
        return Outcome(
            kind,
            body=body,
            payload=payload,
            bytes_before=sum(m.size for m in messages),
            bytes_after=result.bytes_after,
            tokens_saved=tokens_saved(messages, result.messages),
            handler_calls=result.handler_calls,
            cache_hits=events.count(StoreEventKind.CACHE_HIT),
            store_failures=store_failures,
            depth=max((e.depth for e in result.events), default=0) if result.compacted else 0,
            archived=events.count(StoreEventKind.ARCHIVED),
            compacted=result.compacted,
            floor=floor,
            chain=None if request.upstream is None else result.messages,
        )

    def _keeper(self, request: _Request, read: ReadRequest, key: str) -> Compactor:
        """A fresh keeper per request (what it remembers is in the conversation state),
        with its summarizer, its archive session and the tenant's summary cache."""
        model = self._model(request, read.payload)
        summary = self.summarizer.for_request(request.provider, model, request.api_key)
        archive = None
        if request.archive is not None:
            reinsert = self.config.archive_reinsert_bytes
            archive = HistoryArchive(request.archive, session=key, reinsert_bytes=reinsert)
        stage = self.stage_options()
        # a request within the budget goes byte for byte: keepers compact over it only
        budget = read.budget.evolve(
            trigger=1.0,
            keep_ratio=self.config.keep_ratio,
            summary_ratio=stage.get("summary_ratio", read.budget.summary_ratio),
        )
        size = summary_bytes(budget, budget.summary_ratio)
        handler_id = f"tenant:{request.tenant}|{summary.handler_id or f'extractive:{size}'}"
        cache = SummaryCache(request.store, handler_id=handler_id, summary_budget=size)
        return Compactor(
            summary.handler,
            budget=budget,
            target=request.provider,
            stores=Stores(cache=cache, archive=archive),
            robustness=summary.robustness,
            clearing=stage.get("clearing", DEFAULT_CLEARING),
        )

    def _log_floor(self, key: str, api: Api, budget: Budget, floor: int) -> None:
        """Once per conversation (per process): its floor and the budget it needs."""
        if key in self._floors_logged:
            return
        if len(self._floors_logged) >= _FLOORS_REMEMBERED:
            self._floors_logged.clear()
        self._floors_logged.add(key)
        _log.warning(
            "over the floor: the system prompt and the newest turn exceed the budget",
            extra={
                "endpoint": api.name,
                "outcome": str(OutcomeKind.OVER_FLOOR),
                "floor": floor,
                "budget": budget.limit,
                "unit": budget.unit,
            },
        )

    def stage_options(self) -> dict[str, Any]:
        """The Compactor options ``--summary-only`` sets (none: the defaults)."""
        if not self.config.summary_only:
            return {}
        return {"clearing": SUMMARY_ONLY.clearing, "summary_ratio": SUMMARY_ONLY.summary_ratio}


@dataclass(frozen=True, slots=True)
class _Request:
    api: Api
    body: bytes = field(repr=False)
    conversation: str | None = field(repr=False)
    api_key: str | None = field(repr=False)  # never shown
    until: float  # time.monotonic()
    store: SummaryStore = field(repr=False)  # the Rewriter's, called on the gateway's loop
    archive: ArchiveStore | None = field(repr=False)
    tenant: str = ANONYMOUS
    upstream: Api | None = None  # translated for it after its compaction

    @property
    def provider(self) -> str:
        return (self.upstream or self.api).provider

    @property
    def scope(self) -> Scope:
        return self.api.name, self.tenant, self.conversation


def _warn(message: str, api: Api, error: str) -> None:
    _log.warning(message, extra={"endpoint": api.name, "error": error})


def _past_deadline(api: Api) -> Outcome:
    _warn("deadline passed before the compaction was done, forwarding uncompacted", api, "deadline")
    return Outcome(OutcomeKind.DEADLINE, detail="deadline")


_FLOORS_REMEMBERED = 65536  # floors logged (and keys) remembered, then all forgotten
# media are counted by their pixels, not their bytes: the token bound is off with them
_MEDIA_MARKERS = (b"data:", b'"image', b'"input_image', b'"document"', b'"input_file"', b"audio")


def fits_by_size(body: bytes, budget: Budget, *, size: int | None = None) -> bool:
    """Whether ``body``'s history fits ``budget`` for sure from its length alone (a
    message's size never exceeds its JSON text; the default ``EstimatedTokens`` counts at
    most a token per 3 bytes; a body that may hold media is always decoded). ``size``:
    the history's share of the body when known (default: the body's length)."""
    if size is None:
        size = len(body)
    if budget.unit == "bytes":
        return size <= budget.limit
    if size // 3 + 1 > budget.limit:
        return False
    return not any(marker in body for marker in _MEDIA_MARKERS)


def _refusal(exc: RefusedError) -> Outcome:
    return Outcome(OutcomeKind.REFUSED, status=exc.status, detail=exc.message)


async def _states(store: SummaryStore, key: str, api: Api) -> tuple[ConversationStates, int]:
    """The states stored under ``key``, and 1 failure when the store did not answer."""
    try:
        stored = await store.get(key)
        return (
            ConversationStates() if stored is None else ConversationStates.from_bytes(stored)
        ), 0
    except Exception as exc:  # noqa: BLE001 -- store down or record damaged: compact afresh
        _warn("conversation state unavailable", api, type(exc).__name__)
        return ConversationStates(), 1


async def _stored(
    store: SummaryStore, key: str, states: ConversationStates, ttl: float | None, api: Api
) -> int:
    """Store ``states``; 1 failure when the store did not take them."""
    try:
        await store.set(key, states.to_bytes(), ttl)
    except Exception as exc:  # noqa: BLE001 -- the request still goes, compacted
        _warn("conversation state not stored", api, type(exc).__name__)
        return 1
    return 0


_UNAVAILABLE = (StoreEventKind.CACHE_UNAVAILABLE, StoreEventKind.ARCHIVE_UNAVAILABLE)


T = TypeVar("T")


class WorkerPool:
    """At most ``size`` threads of their own doing work at once (anyio's default pool is left
    to store I/O, which compactions wait for: one pool would deadlock), each caller waiting
    until its deadline; busy past twice the deadline, the pool is stuck."""

    def __init__(self, size: int, deadline: float) -> None:
        self.size = size
        self.deadline = deadline
        self._slots: anyio.Semaphore | None = None
        self._running: dict[Future[Any], float] = {}  # when each started
        self._lock = threading.Lock()

    def state(self) -> tuple[dict[str, float], bool]:
        """What ``/healthz`` reports of the pool now (``oldest_seconds``: how long the
        longest-running work has run, 0 when none runs), and whether it is stuck."""
        now = time.monotonic()
        with self._lock:
            starts = list(self._running.values())
        waiting = 0 if self._slots is None else self._slots.statistics().tasks_waiting
        oldest = now - min(starts) if starts else 0.0
        busy, stuck = len(starts), len(starts) >= self.size and oldest > 2 * self.deadline
        workers = {"size": self.size, "busy": busy, "waiting": waiting}
        return {**workers, "oldest_seconds": round(oldest, 3)}, stuck

    async def run(self, work: Callable[[], T], until: float) -> T | None:
        """``work()`` in a (plain) worker thread; None when ``until`` passed first."""
        if self._slots is None:  # made on the loop of first use
            self._slots = anyio.Semaphore(self.size)
        slots = self._slots
        with anyio.move_on_after(until - time.monotonic()) as waited:
            await slots.acquire()
        if waited.cancelled_caught:  # not acquired
            return None
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        future: Future[T] = Future()
        with self._lock:
            self._running[future] = time.monotonic()

        def finish() -> None:
            with self._lock:
                self._running.pop(future, None)
            slots.release()
            done.set()

        def in_thread() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller
                future.set_exception(exc)
            finally:
                # the loop is gone (the gateway stopped): nothing left to release
                with contextlib.suppress(Exception):
                    anyio.from_thread.run_sync(finish, token=token)

        threading.Thread(target=in_thread, name="csum-compaction", daemon=True).start()
        with anyio.move_on_after(until - time.monotonic()):
            await done.wait()
        return future.result() if future.done() else None


class OnLoop:
    """A store (summary or archive) whose calls run on the loop of ``token``, where its
    connections live: each method of ``inner`` is called there; closing it is the gateway's."""

    def __init__(self, inner: SummaryStore | ArchiveStore, token: EventLoopToken) -> None:
        self.inner = inner
        self.token = token
        self.name: str = inner.name

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        call = getattr(self.inner, method)

        async def on_loop(*args: Any, **kwargs: Any) -> Any:
            return anyio.from_thread.run(partial(call, *args, **kwargs), token=self.token)

        return on_loop

    async def aclose(self) -> None:
        """Nothing: the gateway closes the store it owns."""
