"""One request's compaction: decode its history, find the conversation's state, keep the
chain within the budget with the Compactor, encode it back.

Every failure here (a body that is not a request the codec reads, a store that does not
answer, a summarization that fails) ends in an :class:`Outcome` that says to forward
the client's bytes unchanged: the gateway never fails a request for its own sake.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from cast import Message
from csum.archive import HistoryArchive
from csum.cache import SummaryCache
from csum.compactor import Compactor, summary_bytes
from csum.config import (
    DEFAULT_CLEARING,
    SUMMARY_ONLY,
    Budget,
    Stores,
)
from csum.serve.apis import Api
from csum.serve.config import ServeConfig
from csum.serve.conversation import ConversationState, ConversationStates, conversation_key
from csum.serve.limits import RefusedError, check_items, parse
from csum.serve.loop_stores import LoopArchive, LoopStore
from csum.serve.pool import WorkerPool
from csum.serve.responses_items import as_sent
from csum.serve.summarizer import Credentials, Summarizer, SummaryHandler, robustness
from csum.serve.tenant import ANONYMOUS
from csum.store_events import StoreEventKind
from csum.stores import SummaryStore
from csum.stores._archive_protocol import ArchiveStore

__all__ = [
    "MODEL_PROMPT_BYTES",
    "PROVIDER_STATE_KEYS",
    "Outcome",
    "OutcomeKind",
    "Rewriter",
    "fits_by_size",
]

_log = logging.getLogger("csum.serve")

MODEL_PROMPT_BYTES = 1 << 20
"""Largest prompt sent to a model handler (as ``csum summarize``'s default): an evicted
part beyond it is summarized in pieces, then merged."""
PROVIDER_STATE_KEYS = ("previous_response_id", "conversation")
"""Responses API fields that make the provider hold the history: the gateway sees only
the new items, so it cannot compact (the request goes as it came, counted)."""


class OutcomeKind(StrEnum):
    """What the gateway did with a request's history."""

    WITHIN_BUDGET = "within_budget"
    """Forwarded byte for byte: the chain fits and the conversation was never compacted."""
    REUSED = "reused"
    """The conversation's earlier compacted prefix was sent again, plus the new turns."""
    COMPACTED = "compacted"
    """Compacted now (its state stored for the next request)."""
    NOT_COMPACTABLE = "not_compactable"
    """No history the codec reads (no list of turns, an unknown model without
    ``--budget``): forwarded byte for byte."""
    FAILED = "failed"
    """Decoding or compaction failed: forwarded byte for byte (logged, counted)."""
    DEADLINE = "deadline"
    """The request's deadline passed before its compaction was done (waiting for a
    worker, a store or a summary): forwarded byte for byte (logged, counted)."""
    REFUSED = "refused"
    """Over the gateway's bounds on what it decodes (nesting depth, items): answered
    with ``status`` by the gateway, never forwarded."""
    OVER_FLOOR = "over_floor"
    """Over the budget however compacted: the system prompt and the newest turn alone
    exceed it (the floor). Sent compacted as far as it goes (the older turns replaced by
    a short summary), logged once per conversation with the floor's size."""
    PROVIDER_STATE = "provider_state"
    """A Responses request continuing state the provider holds (``previous_response_id``
    or ``conversation``): the history is not in the request, forwarded byte for byte."""


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
    """A compaction was made (``compacted``, and ``over_floor`` when it made one)."""
    floor: int = 0
    """With ``over_floor``: the history's size sent, in the budget's unit (the smallest
    budget this request fits)."""
    detail: str = ""
    status: int = 0
    """The status to answer with (``REFUSED`` only)."""


class Rewriter:
    """Compacts requests for one gateway; ``store`` holds the conversations' state and
    the summary cache (shared by replicas when it is Redis), ``archive_store`` (when
    given) the messages summarized away, one session per conversation key.

    The work of a request that needs decoding (JSON, codec, Compactor, encoding: all
    CPU-bound) runs in a worker thread of :attr:`pool` on an event loop of its own, so a
    large request does not stall the others; store calls go back to the gateway's loop,
    where the stores' connections live (:class:`LoopStore`) and their I/O runs in the
    loop's default thread pool, which compactions never hold. A request whose work is
    not done by ``config.deadline`` seconds goes uncompacted (:attr:`OutcomeKind.DEADLINE`)."""

    def __init__(
        self,
        config: ServeConfig,
        store: SummaryStore,
        archive_store: ArchiveStore | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.archive_store = archive_store
        self.summarizer = Summarizer(config)
        self.pool = WorkerPool(config.compaction_workers, config.deadline)
        self._floors_logged: set[str] = set()

    async def rewrite(
        self,
        api: Api,
        body: bytes,
        conversation: str | None,
        credentials: Credentials | None = None,
        tenant: str = ANONYMOUS,
    ) -> Outcome:
        """What to send upstream for ``body`` on ``api``; never raises for bad input or
        a failing store (``conversation`` is the optional header's value,
        ``credentials`` the client's, used only by ``--summarizer upstream``;
        ``tenant`` scopes the conversation state, the archive session and the summary
        cache, see :mod:`csum.serve.tenant`)."""
        held = api.name == "responses" and any(
            f'"{k}"'.encode() in body for k in PROVIDER_STATE_KEYS
        )
        if not held and self.config.budget is not None and fits_by_size(body, self.config.budget):
            return Outcome(OutcomeKind.WITHIN_BUDGET, bytes_before=len(body))
        until = time.monotonic() + self.config.deadline
        request = _Request(api, body, conversation, credentials, until, tenant)
        if not self.config.offload:
            read = self._read(request)
            if isinstance(read, Outcome):
                return read
            return await self._compacted(request, read, self.store, self.archive_store)
        token = anyio.lowlevel.current_token()
        outcome = await self.pool.run(lambda: self._in_worker(request, token), until)
        if outcome is None:
            return _past_deadline(api)
        return outcome

    def _in_worker(self, request: _Request, token: anyio.lowlevel.EventLoopToken) -> Outcome:
        """The request read here, and compacted (when due) on this worker thread's own
        event loop, started only then."""
        read = self._read(request)
        if isinstance(read, Outcome):
            return read
        store: SummaryStore = LoopStore(self.store, token)
        archive: ArchiveStore | None = None
        if self.archive_store is not None:
            archive = LoopArchive(self.archive_store, token)
        return anyio.run(self._compacted, request, read, store, archive)

    def _read(self, request: _Request) -> Outcome | _Read:
        """The body parsed and measured: an Outcome when it goes as it came."""
        api, body = request.api, request.body
        try:
            payload = parse(body, self.config.max_depth, self.config.max_items)
        except RefusedError as exc:
            return Outcome(OutcomeKind.REFUSED, status=exc.status, detail=exc.message)
        except ValueError as exc:  # not JSON: the upstream will say so
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail=f"body is not JSON: {exc}")
        if not isinstance(payload, dict):
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail="body is not a JSON object")
        if api.name == "responses":
            held = [k for k in PROVIDER_STATE_KEYS if payload.get(k) not in (None, "")]
            if held:
                return Outcome(
                    OutcomeKind.PROVIDER_STATE,
                    bytes_before=len(body),
                    detail=f"the provider holds the history ({held[0]})",
                )
        history = api.history(payload)
        if history is None:
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail=f"no {api.list_key} list")
        try:
            check_items(history, api.list_key, self.config.max_items)
        except RefusedError as exc:
            return Outcome(OutcomeKind.REFUSED, status=exc.status, detail=exc.message)
        budget = self.config.budget_for(payload.get("model"))
        if budget is None:
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail="no budget for this model")
        # the history's share of the body, not the body (Claude Code's tools are 80 KB):
        # at most the body less the other fields' most compact JSON
        other = {k: v for k, v in payload.items() if k not in api.history_keys}
        share = len(body) - len(_dumps(other))
        if fits_by_size(body, budget, size=share):
            return Outcome(OutcomeKind.WITHIN_BUDGET, bytes_before=share)
        return _Read(payload, history, budget)

    async def _compacted(
        self, request: _Request, read: _Read, store: SummaryStore, archive: ArchiveStore | None
    ) -> Outcome:
        try:
            with anyio.move_on_after(request.until - time.monotonic()):
                return await self._rewrite(
                    request,
                    read.payload,
                    read.history,
                    read.budget,
                    store=store,
                    archive_store=archive,
                )
            return _past_deadline(request.api)
        except Exception as exc:  # noqa: BLE001 -- a gateway failure never fails the request
            _log.warning(
                "compaction failed, forwarding uncompacted",
                extra={"endpoint": request.api.name, "error": type(exc).__name__},
            )
            return Outcome(OutcomeKind.FAILED, detail=type(exc).__name__)

    async def _rewrite(
        self,
        request: _Request,
        payload: dict[str, Any],
        history: dict[str, Any],
        budget: Budget,
        *,
        store: SummaryStore,
        archive_store: ArchiveStore | None,
    ) -> Outcome:
        api = request.api
        messages = api.decode(history)
        key = conversation_key(api.name, messages, request.conversation, request.tenant)
        store_failures = 0
        states = ConversationStates()
        try:
            stored = await store.get(key)
            if stored is not None:
                states = ConversationStates.from_bytes(stored)
        except Exception as exc:  # noqa: BLE001 -- store down or record damaged: compact afresh
            store_failures += 1
            _log.warning(
                "conversation state unavailable",
                extra={"endpoint": api.name, "error": type(exc).__name__},
            )
        match = states.match(messages)
        rebuilt = None if match is None else match[1]
        state = None if match is None else states.states[match[0]]
        chain = messages if rebuilt is None else rebuilt
        summary = self.summarizer.for_request(
            api.provider, payload.get("model"), request.credentials
        )
        archive = None
        if archive_store is not None:
            archive = HistoryArchive(
                archive_store,
                session=key,
                reinsert_bytes=self.config.archive_reinsert_bytes,
            )
        compactor = self._compactor(api, budget, store, summary, archive, tenant=request.tenant)
        if state is not None and rebuilt is not None:
            compactor.restore_summary_depths(state.depths)
        result = await compactor.run(chain)
        hits = sum(1 for e in result.store_events if e.kind is StoreEventKind.CACHE_HIT)
        store_failures += sum(
            1
            for e in result.store_events
            if e.kind in (StoreEventKind.CACHE_UNAVAILABLE, StoreEventKind.ARCHIVE_UNAVAILABLE)
        )
        archived = sum(1 for e in result.store_events if e.kind is StoreEventKind.ARCHIVED)
        if not result.compacted and rebuilt is None:
            over = result.over_budget
            if over:
                self._log_floor(key, api, budget, result.size_after)
            return Outcome(
                OutcomeKind.OVER_FLOOR if over else OutcomeKind.WITHIN_BUDGET,
                bytes_before=result.bytes_before,
                bytes_after=result.bytes_before,
                store_failures=store_failures,
                floor=result.size_after if over else 0,
            )
        sent = result.messages
        depth = 0
        if result.compacted:
            depth = max((e.depth for e in result.events), default=0)
            new_state = ConversationState.after(messages, sent, compactor.summary_depths)
            kept = states.with_state(new_state, None if match is None else match[0])
            try:
                await store.set(key, kept.to_bytes(), self.config.state_ttl)
            except Exception as exc:  # noqa: BLE001 -- the request still goes, compacted
                store_failures += 1
                _log.warning(
                    "conversation state not stored",
                    extra={"endpoint": api.name, "error": type(exc).__name__},
                )
        # the keeper placed its summaries where the provider takes them (csum._placement)
        encoded = api.encode(sent)
        if api.name == "responses":  # the client's own items where the compaction kept them
            encoded = as_sent(history, encoded)
        body = _dumps(api.merged(payload, encoded))
        before = sum(m.size for m in messages)
        kind = OutcomeKind.COMPACTED if result.compacted else OutcomeKind.REUSED
        if result.over_budget:
            kind = OutcomeKind.OVER_FLOOR
            self._log_floor(key, api, budget, result.size_after)
        return Outcome(
            kind,
            body=body,
            bytes_before=before,
            bytes_after=result.bytes_after,
            tokens_saved=_tokens_saved(compactor, messages, sent),
            handler_calls=result.handler_calls,
            cache_hits=hits,
            store_failures=store_failures,
            depth=depth,
            archived=archived,
            compacted=result.compacted,
            floor=result.size_after if result.over_budget else 0,
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

    def _compactor(
        self,
        api: Api,
        budget: Budget,
        store: SummaryStore,
        summary: SummaryHandler,
        archive: HistoryArchive | None,
        *,
        tenant: str = ANONYMOUS,
    ) -> Compactor:
        """A fresh keeper per request: everything it must remember between requests is
        in the conversation state, so any replica sends the same chain. Its summary
        cache is the tenant's: a summary is served only to the tenant that paid for it,
        and a cache hit tells nothing of what another tenant sent."""
        stage = self.stage_options()
        # The gateway's promise: a request within the budget goes through byte for byte,
        # so its keepers compact only over the budget (trigger 1.0), down to the config's
        # keep ratio.
        budget = budget.evolve(
            trigger=1.0,
            keep_ratio=self.config.keep_ratio,
            summary_ratio=stage.get("summary_ratio", budget.summary_ratio),
        )
        size = summary_bytes(budget, budget.summary_ratio)
        handler_id = f"tenant:{tenant}|{summary.handler_id or f'extractive:{size}'}"
        cache = SummaryCache(store, handler_id=handler_id, summary_budget=size)
        return Compactor(
            summary.handler,
            budget=budget,
            target=api.provider,
            stores=Stores(cache=cache, archive=archive),
            # a model's input is bounded: what is evicted beyond it goes in pieces; one
            # retry policy (the handlers make one attempt per call), within the deadline
            robustness=robustness(summary.offline, MODEL_PROMPT_BYTES),
            clearing=stage.get("clearing", DEFAULT_CLEARING),
        )

    def stage_options(self) -> dict[str, Any]:
        """The Compactor options ``--summary-only`` sets (none: the defaults)."""
        if not self.config.summary_only:
            return {}
        return {"clearing": SUMMARY_ONLY.clearing, "summary_ratio": SUMMARY_ONLY.summary_ratio}


@dataclass(frozen=True, slots=True)
class _Read:
    payload: dict[str, Any] = field(repr=False)
    history: dict[str, Any] = field(repr=False)
    budget: Budget


@dataclass(frozen=True, slots=True)
class _Request:
    api: Api
    body: bytes = field(repr=False)
    conversation: str | None = field(repr=False)
    credentials: Credentials | None = field(repr=False)
    until: float
    """The request's deadline (``time.monotonic()``)."""
    tenant: str = ANONYMOUS


def _past_deadline(api: Api) -> Outcome:
    _log.warning(
        "deadline passed before the compaction was done, forwarding uncompacted",
        extra={"endpoint": api.name, "error": "deadline"},
    )
    return Outcome(OutcomeKind.DEADLINE, detail="deadline")


_FLOORS_REMEMBERED = 65536
"""Conversations whose floor was logged that a gateway remembers (then it forgets them
all, and logs each once more)."""

_MEDIA_MARKERS = (b"data:", b'"image', b'"input_image', b'"document"', b'"input_file"', b"audio")
"""Byte strings whose presence in a body turns the token bound off (media are counted
by their pixels, not their bytes)."""


def fits_by_size(body: bytes, budget: Budget, *, size: int | None = None) -> bool:
    """Whether ``body``'s history fits ``budget`` for sure, from its length alone, so the
    request goes without being decoded. A message's size (the UTF-8 bytes of its parts)
    never exceeds its JSON text, which quotes and punctuates each part; and the default
    :class:`~csum.tokens.EstimatedTokens` counts at most one token per 3 bytes of text,
    and fewer for the per-message and per-call overheads than their JSON takes. Media
    are counted by pixel size, so a body that may hold one is always decoded. ``size``
    (default: the body's length) is the history's share of the body when known: the
    JSON text the history's messages come from."""
    if size is None:
        size = len(body)
    if budget.unit == "bytes":
        return size <= budget.limit
    if size // 3 + 1 > budget.limit:
        return False
    return not any(marker in body for marker in _MEDIA_MARKERS)


def _tokens_saved(compactor: Compactor, before: list[Message], after: list[Message]) -> int:
    count = compactor.counter.count
    return max(0, sum(map(count, before)) - sum(map(count, after)))


def _dumps(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
