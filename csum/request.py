"""How csum calls a summarize handler: the handler contract (every handler csum calls
is a :class:`RequestHandler`, taking the structured :class:`~csum.prompt.SummaryRequest`;
a text handler is adapted once, where it is taken), the calls of one run and their
books (:class:`HandlerCalls`), :class:`RobustHandler` (timeout, retries, splitting,
fallback), and summaries of more than one prompt can hold (:func:`summarize_in_pieces`):
pieces whose prompts fit, each rendered only when its call starts, merged in rounds."""

from __future__ import annotations

import contextlib
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

import anyio
import anyio.lowlevel

from cast import BodyPair, ImagePart, Message, Reasoning, Role, TextPart, ToolCall, ToolResult
from cast.internals import clip_utf8, utf8_len
from csum._checks import check_handler, check_instance
from csum._fit import fit_joined
from csum.config import Robustness
from csum.errors import SummarizationError
from csum.prompt import (
    FOCUS_INSTRUCTIONS,
    INSTRUCTIONS,
    PromptCase,
    PromptEntry,
    SummaryRequest,
    summary_request,
    text_request,
)
from csum.store_events import StoreEvent, message_strings

if TYPE_CHECKING:
    from csum.archive import HistoryArchive
    from csum.cache import SummaryCache

__all__ = [
    "QUESTION_CONTEXT_BYTES",
    "SUMMARY_FLOOR_BYTES",
    "Handler",
    "HandlerCalls",
    "HandlerLedger",
    "Piece",
    "RequestHandler",
    "RobustHandler",
    "SummarizeHandler",
    "SummaryRequest",
    "as_request_handler",
    "check_request",
    "gather",
    "is_transient",
    "ledger",
    "prompt_bound",
    "question_context",
    "request_handler",
    "split_into_pieces",
    "split_request",
    "summarize_in_pieces",
]

SummarizeHandler: TypeAlias = Callable[[str], Awaitable[str]]
"""Takes the prompt text, returns the summary text (the public contract)."""


class RequestHandler(ABC):
    """A summarize handler that takes the structured request (``await
    handler(request)``) and returns the summary text."""

    @abstractmethod
    async def __call__(self, request: SummaryRequest, /) -> str:
        """The summary of ``request`` (``request.prompt`` is its text)."""


Handler: TypeAlias = SummarizeHandler | RequestHandler
"""What csum takes where it takes a handler: a text handler or a request handler."""


def check_request(request: object) -> None:
    """Raise ``TypeError`` unless ``request`` is a :class:`~csum.prompt.SummaryRequest`."""
    if not isinstance(request, SummaryRequest):
        raise TypeError(f"request must be a SummaryRequest, got {type(request).__name__}")


class _FunctionHandler(RequestHandler):
    """A coroutine function of the request, as a :class:`RequestHandler`."""

    __slots__ = ("_name", "_summarize")

    def __init__(self, summarize: Callable[[SummaryRequest], Awaitable[str]], name: str) -> None:
        self._summarize = summarize
        self._name = name

    def __repr__(self) -> str:
        return self._name

    async def __call__(self, request: SummaryRequest, /) -> str:
        return await self._summarize(request)


def request_handler(
    summarize: Callable[[SummaryRequest], Awaitable[str]], name: str | None = None
) -> RequestHandler:
    """``summarize`` (``async (request) -> summary``) as a request handler; ``name`` is
    its ``repr`` (default: the function's qualified name)."""
    if not callable(summarize):
        raise TypeError(f"summarize must be callable, not {type(summarize).__name__}")
    return _FunctionHandler(summarize, name or str(getattr(summarize, "__qualname__", "handler")))


def as_request_handler(handler: Handler, what: str = "handler") -> RequestHandler:
    """``handler`` as a request handler: itself, or one passing a text handler
    ``request.prompt``. Raises ``TypeError`` for what is no handler."""
    if isinstance(handler, RequestHandler):
        return handler
    check_handler(handler, what)
    text = handler

    async def by_text(request: SummaryRequest) -> str:
        check_request(request)
        return await text(request.prompt)

    return _FunctionHandler(by_text, str(getattr(text, "__qualname__", None) or repr(text)))


# -- the calls of one run ---------------------------------------------------------------------

T = TypeVar("T")
_SIZE: Callable[[Message], int] = attrgetter("size")

SUMMARY_FLOOR_BYTES = 1024
"""What a summary may always take, in UTF-8 bytes, whatever it replaces: the bare
:class:`~csum.Summarizer` cuts an answer larger than both (None there lifts it)."""


@dataclass
class HandlerCalls:
    """Calls the handler for one summarization run and keeps its books; ``limiter``
    bounds the calls in flight. A handler exception or a non-``str`` result becomes a
    :class:`SummarizationError` (its ``__cause__`` the handler's exception)."""

    handler: Handler
    limiter: anyio.CapacityLimiter | None = None
    calls: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    on_call: Callable[[int, int], None] | None = field(default=None, repr=False)
    max_summary_bytes: int | None = None
    """Cap of a summary's size in UTF-8 bytes (None: no cap); longer answers are cut."""
    summary_floor: int | None = None
    """With it, a summary of messages is also cut to the larger of this and their size
    (None: no such bound; see :data:`SUMMARY_FLOOR_BYTES`)."""
    created: list[BodyPair] = field(default_factory=list, repr=False)
    """The summary pairs made in this run (their ids are made unique at the end)."""
    cache: SummaryCache | None = field(default=None, repr=False)
    archive: HistoryArchive | None = field(default=None, repr=False)
    cache_hits: int = 0
    events: list[StoreEvent] = field(default_factory=list, repr=False)
    """What the cache and the archive reported in this run."""

    def __post_init__(self) -> None:
        self.requests: RequestHandler = as_request_handler(self.handler)

    def adopt(self, pair: BodyPair) -> BodyPair:
        """Record a summary pair made in this run."""
        self.created.append(pair)
        return pair

    async def summarize(
        self,
        human_messages: Sequence[Message],
        ai_messages: Sequence[Message],
        *,
        phase: str,
        section: int,
        replaced: Sequence[Message] | None = None,
        focus: str | None = None,
        conversation: tuple[Message, ...] = (),
        kept: int = 0,
        sizes: tuple[int, int] | None = None,
    ) -> str:
        """The summary of the messages; with an archive, it ends naming the batch of
        ``replaced`` (default: the AI and tool messages, else the human ones). ``sizes``:
        the bytes of the human and of the AI messages, when the caller knows them."""
        request = summary_request(
            human_messages,
            ai_messages,
            focus=focus,
            conversation=conversation,
            kept=kept,
            sizes=sizes,
        )
        known = None
        if replaced is None:
            replaced = ai_messages if ai_messages else human_messages
            known = None if sizes is None else sizes[1] if ai_messages else sizes[0]
        cap = self.max_summary_bytes
        if self.summary_floor is not None:  # at most the larger of the floor and what it replaces
            bound = max(self.summary_floor, sum(map(_SIZE, replaced)) if known is None else known)
            cap = bound if cap is None else min(bound, cap)
        summary = await self.summarize_prompt(request, phase=phase, section=section, cap=cap)
        return await self.archived(summary, replaced)

    @property
    def stale_cap(self) -> int | None:
        """The size over which a lone summary pair was not made under this run's bounds."""
        return self.max_summary_bytes if self.max_summary_bytes is not None else self.summary_floor

    async def summarize_prompt(
        self, prompt: SummaryRequest, *, phase: str, section: int, cap: int | None = None
    ) -> str:
        """The summary of one request, at most ``cap``: from the cache (checked as a fresh
        answer), or from the handler (then stored)."""
        cap = self.max_summary_bytes if cap is None else cap
        call = partial(self.call_handler, prompt, phase=phase, section=section, cap=cap)
        if self.cache is None:
            return await call()

        def accept(summary: str) -> str | None:
            if not summary.strip():
                return "blank"
            size = utf8_len(summary)
            if cap is not None and size > cap:
                return f"{size} bytes, over the {cap} a fresh answer is cut to"
            return None

        summary, hit = await self.cache.summarize(
            prompt.prompt, call, emit=self.events.append, accept=accept
        )
        self.cache_hits += hit
        return summary

    async def archived(self, summary: str, replaced: Sequence[Message]) -> str:
        """With an archive: ``replaced`` archived, the summary naming their batch."""
        if self.archive is None:
            return summary
        line = await self.archive.add_summarized(replaced, self.events.append)
        return summary if line is None else f"{summary}\n{line}"

    async def call_handler(
        self, prompt: SummaryRequest, *, phase: str, section: int, cap: int | None
    ) -> str:
        """One handler call on ``prompt``, counted; failures become SummarizationError.
        The answer is cut to ``cap`` bytes (None: not cut)."""
        self.calls += 1
        self.input_bytes += utf8_len(prompt.prompt)
        try:
            if self.limiter is None:
                result = await self.requests(prompt)
            else:
                async with self.limiter:
                    # The limiter may hand its slot over just as the caller is
                    # cancelled: do not start a handler call then.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    result = await self.requests(prompt)
        except anyio.get_cancelled_exc_class() as exc:
            # a real cancellation propagates as such (anyio delivers it at every checkpoint)
            await anyio.lowlevel.checkpoint_if_cancelled()
            what = f"raised {type(exc).__name__} although the summarizer was not cancelled"
            raise _failed(what, section, phase) from exc
        except Exception as exc:
            raise _failed(f"raised {type(exc).__name__}: {exc}", section, phase) from exc
        if not isinstance(result, str):
            raise _failed(f"returned {type(result).__name__}, expected str", section, phase)
        if not result.strip():
            raise _failed(f"returned an empty summary ({result[:20]!r})", section, phase)
        if cap is not None and utf8_len(result) > cap:
            result = fit_joined([result], cap)
        self.output_bytes += utf8_len(result)
        if self.on_call is not None:
            self.on_call(self.calls, self.input_bytes)
        return result


def _failed(what: str, section: int, phase: str) -> SummarizationError:
    return SummarizationError(f"the summarize handler {what}", section=section, phase=phase)


async def gather(jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run ``jobs`` concurrently; results by index. The first failure cancels the rest;
    the :class:`SummarizationError` of the earliest job that failed is raised (the
    others in a note). Workers pull jobs from a shared counter, a new one started only
    after the others could run: instant jobs share one task, waiting ones get one each.
    """
    count = len(jobs)
    if count == 1:
        return [await jobs[0]()]
    results: list[T | None] = [None] * count
    failures: dict[int, SummarizationError] = {}
    next_job = 0

    try:
        async with anyio.create_task_group() as group:

            async def worker() -> None:
                nonlocal next_job
                while next_job < count:
                    index = next_job
                    next_job += 1
                    try:
                        results[index] = await jobs[index]()
                    except SummarizationError as exc:
                        failures[index] = exc
                        group.cancel_scope.cancel()
                        return

            while next_job < count:
                group.start_soon(worker)
                await anyio.lowlevel.checkpoint()
    except BaseExceptionGroup as group_error:
        raise _unwrapped(group_error) from None

    if failures:  # the earliest job's, whichever failed first on this event loop
        first = min(failures)
        error = failures[first]
        others = [str(failures[i]) for i in sorted(failures) if i != first]
        if others:
            error.add_note("other handler calls failed too: " + "; ".join(others))
        raise error
    return results  # type: ignore[return-value]


def _unwrapped(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """A task group's failure: KeyboardInterrupt, SystemExit or a lone exception bare."""
    leaves = _leaves(group)
    stops = [leaf for leaf in leaves if isinstance(leaf, KeyboardInterrupt | SystemExit)]
    return (stops or leaves)[0] if stops or len(leaves) == 1 else group


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


# -- the robust handler ------------------------------------------------------------------------

_RETRIED_STATUS = frozenset({408, 409, 425, 429})
"""Request timeout, lock timeout (the providers' SDKs retry it), too early, rate limit."""


def is_transient(exc: BaseException) -> bool:
    """Whether a handler failure is worth retrying: timeouts, connection errors,
    HTTP 408/409/425/429 and 5xx (read from ``status_code`` or ``status``), and errors
    that say so themselves (``retryable=True``, as :class:`~csum.handlers.HandlerError`)."""
    if isinstance(exc, TimeoutError | ConnectionError | anyio.BrokenResourceError):
        return True
    retryable = getattr(exc, "retryable", None)
    if isinstance(retryable, bool):
        return retryable
    for name in ("status_code", "status"):
        status = getattr(exc, name, None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status in _RETRIED_STATUS or 500 <= status <= 599
    return False


@dataclass
class HandlerLedger:
    """What the robust handler did in one run."""

    calls: int = 0
    """Handler and fallback invocations, retries and chunk calls included."""
    retries: int = 0
    timeouts: int = 0
    fallback_calls: int = 0
    chunks: int = 0
    """Pieces prompts were split into (0: no prompt was split)."""
    merges: int = 0
    truncated: int = 0
    """Merges cut at the depth limit."""


_LEDGER: ContextVar[HandlerLedger | None] = ContextVar("csum_handler_ledger", default=None)


@contextlib.contextmanager
def ledger() -> Iterator[HandlerLedger]:
    """Count what robust handlers do inside the ``with`` block (tasks started in it
    included)."""
    books = HandlerLedger()
    token = _LEDGER.set(books)
    try:
        yield books
    finally:
        _LEDGER.reset(token)


def _books() -> HandlerLedger:
    return _LEDGER.get() or HandlerLedger()


class RobustHandler(RequestHandler):
    """A summarize handler wrapped with a timeout per call, retries of transient
    failures (backoff and jitter), splitting of a prompt over ``max_prompt_bytes`` on
    message boundaries (pieces summarized concurrently, then merged, at most
    ``max_split_depth`` rounds; past that the summaries are cut to fit), and a
    ``fallback`` tried when the handler fails for good (both failing: an
    ``ExceptionGroup``). ``robustness`` (a :class:`~csum.config.Robustness`) holds these
    settings; ``transient`` decides what is retried; ``rng`` seeds the jitter. Counts go
    to the :class:`HandlerLedger` of the current context (:func:`ledger`).
    """

    def __init__(
        self,
        handler: Handler,
        robustness: Robustness | None = None,
        *,
        transient: Callable[[BaseException], bool] = is_transient,
        rng: random.Random | None = None,
    ) -> None:
        # a keeper, the extractive factory: TypeError with the fix
        self.handler = as_request_handler(handler)
        check_instance("robustness", robustness, Robustness)
        self.robustness = Robustness() if robustness is None else robustness
        fallback = self.robustness.fallback
        self.fallback = None if fallback is None else as_request_handler(fallback, "fallback")
        self.transient = transient
        self.rng = rng if rng is not None else random.Random()

    def __repr__(self) -> str:
        return f"RobustHandler({self.handler!r}, {self.robustness!r})"

    async def __call__(self, request: SummaryRequest, /) -> str:
        """The summary of ``request`` (its chunks and merges are requests of their own)."""
        return await self._summarize(request, 1)

    async def _summarize(self, job: SummaryRequest, depth: int) -> str:
        """One call when ``job`` fits, else its pieces' summaries merged (split again in depth)."""
        limit = self.robustness.max_prompt_bytes
        if limit is None or utf8_len(job.prompt) <= limit:
            return await self._call(job)
        pieces = split_request(job, limit)
        _books().chunks += len(pieces)
        summaries = await _summaries(pieces, self._call, self.robustness.max_concurrency)
        if len(summaries) == 1:
            return summaries[0]
        merged = summary_request([], [Message.ai(text) for text in summaries])
        if depth >= self.robustness.max_split_depth and utf8_len(merged.prompt) > limit:
            _books().truncated += 1
            return fit_joined(summaries, limit)
        _books().merges += 1
        return await self._summarize(merged, depth + 1)

    async def _call(self, job: SummaryRequest) -> str:
        try:
            return await self._attempts(self.handler, job)
        except Exception as primary:
            if self.fallback is None:
                raise
            _books().fallback_calls += 1
            try:
                return await self._attempts(self.fallback, job)
            except Exception as secondary:  # noqa: BLE001 - raised in the group
                raise ExceptionGroup(
                    "the summarize handler and its fallback both failed", [primary, secondary]
                ) from None

    async def _attempts(self, handler: RequestHandler, job: SummaryRequest) -> str:
        books, timeout, policy = _books(), self.robustness.timeout, self.robustness.retry
        retry = 0
        while True:
            books.calls += 1
            try:
                with anyio.fail_after(timeout):  # None: no deadline
                    result = await handler(job)
            except Exception as exc:
                if isinstance(exc, TimeoutError):
                    books.timeouts += 1
                if retry >= policy.max_retries or not self.transient(exc):
                    raise
                retry += 1
                books.retries += 1
                after = getattr(exc, "retry_after", None)
                after = after if isinstance(after, int | float) else None
                await anyio.sleep(policy.delay(retry, after, self.rng))
                continue
            if not isinstance(result, str):
                raise TypeError(
                    f"the summarize handler returned {type(result).__name__}, expected str"
                )
            return result


# -- splitting ------------------------------------------------------------------------------

_MESSAGE_FRAME = 96
"""Upper bound of a message's own tags in a prompt (index, role, marker suffixes)."""
_PART_FRAME = 224
"""Upper bound of one part's tags in a prompt (with its reasoning's), ids apart."""
_FIXED = max(utf8_len(text) for text in INSTRUCTIONS.values()) + 512
"""Upper bound of a prompt's instructions and block tags."""
_ESCAPE_GROWTH = 5
"""An id character is at most 6 in an attribute (``"`` as ``&quot;``): 5 more."""


def prompt_bound(message: Message) -> int:
    """An upper bound of the UTF-8 bytes ``message`` takes in a prompt (its size, its
    tags, escaped ids; images and binary data count their whole size although the
    prompt only names them)."""
    bound = message.size + _MESSAGE_FRAME
    for part in message.parts:
        bound += _PART_FRAME
        if type(part) is ToolCall:
            bound += _ESCAPE_GROWTH * utf8_len(part.id)
        elif type(part) is ToolResult:
            bound += _ESCAPE_GROWTH * utf8_len(part.tool_call_id)
        elif type(part) is ImagePart:
            bound += utf8_len(part.url) // 4 + 64  # the placeholder: "[image URL, detail D]"
    return bound


@dataclass
class Piece:
    """The messages of one prompt: ``context`` (questions) and ``messages`` (summarized)."""

    context: list[Message]
    messages: list[Message]

    def request(self, max_context: int, focus: str | None = None) -> SummaryRequest:
        """The request of the piece (its prompt and entries), its context cut to
        ``max_context`` bytes."""
        frame = _MESSAGE_FRAME + _PART_FRAME
        context = _cut_context(self.context, max_context, prompt_bound, frame)
        return summary_request(context, self.messages, focus=focus)


def split_into_pieces(
    turns: Sequence[tuple[Message | None, Sequence[Message]]],
    max_bytes: int,
    *,
    context: Sequence[Message] = (),
    focus: str | None = None,
) -> list[Piece]:
    """Pieces whose prompts (their context cut to ``max_bytes // 4``, ``focus`` shown)
    fit ``max_bytes``: consecutive messages of ``turns`` ((question, messages) in chain
    order, each question summarized in its place), a message too large alone cut inside
    its texts; the context is ``context`` and, for a piece starting inside a turn, that
    turn's question. Measured by :func:`prompt_bound`, so that no prompt is rendered
    before its call (:func:`split_request` packs the same way, measuring prompts)."""
    fixed = _FIXED + (utf8_len(FOCUS_INSTRUCTIONS + focus) + 64 if focus else 0)
    room = max(512, max_bytes - fixed - max_bytes // 4)
    cut_room = max(256, room - _MESSAGE_FRAME - 2 * _PART_FRAME)  # a text's piece, cut
    items: list[Message] = []
    inside: list[Message | None] = []  # the question of the turn an item is inside
    for asked, messages in turns:
        for message in (asked, *messages) if asked is not None else messages:
            fits = prompt_bound(message) <= room
            for item in [message] if fits else _cut_message(message, cut_room):
                items.append(item)
                inside.append(None if message is asked else asked)
    pieces: list[Piece] = []
    start = 0
    for group in _groups(items, room):
        asked = inside[start]
        start += len(group)
        pieces.append(Piece([asked, *context] if asked is not None else list(context), group))
    return pieces


def _groups(messages: Sequence[Message], room: int) -> list[list[Message]]:
    """Consecutive groups of ``messages`` whose prompt bounds fit ``room`` (or one alone)."""
    groups: list[list[Message]] = []
    used = 0
    for message in messages:
        cost = prompt_bound(message)
        if groups and used + cost <= room:
            groups[-1].append(message)
            used += cost
        else:
            groups.append([message])
            used = cost
    return groups


def split_request(request: SummaryRequest, max_bytes: int) -> list[SummaryRequest]:
    """Requests of at most ``max_bytes`` UTF-8 bytes of prompt that together hold
    ``request``'s data, made from its entries as :func:`split_into_pieces` makes pieces
    but measuring the rendered prompts: each keeps the instructions, the focus and (cut to at
    most a quarter of ``max_bytes``) the context block; a message too large alone is cut
    inside its texts. A :func:`~csum.prompt.text_request` is cut at line breaks."""
    if request.case is None:
        return [text_request(piece) for piece in _split_text(request.prompt, max_bytes)]
    human_only = request.case is PromptCase.HUMAN_ONLY
    context = [] if human_only else _cut_context(_messages(request.context), max_bytes // 4)
    focus = request.focus or None

    def render(chunk: Sequence[Message]) -> SummaryRequest:
        humans, summarized = (chunk, ()) if human_only else (context, chunk)
        return summary_request(humans, summarized, focus=focus)

    room = max(512, max_bytes - utf8_len(render([Message.ai("")]).prompt) - 256)
    pieces = [piece for m in _messages(request.summarized) for piece in _cut_message(m, room)]
    requests: list[SummaryRequest] = []
    start = 0
    while start < len(pieces):
        # The longest run from ``start`` whose prompt fits (one piece at least). A prompt
        # grows with its run, so doubling, then halving, finds it in a few renderings
        # (one rendering per piece added made splitting quadratic).
        fit, over, best = 1, len(pieces) - start + 1, None
        while fit + 1 < over:
            grown = over > len(pieces) - start  # no run known to be over yet
            size = min(2 * fit, over - 1) if grown else (fit + over) // 2
            candidate = render(pieces[start : start + size])
            if utf8_len(candidate.prompt) <= max_bytes:
                fit, best = size, candidate
            else:
                over = size
        requests.append(best or render(pieces[start : start + fit]))
        start += fit
    return requests


def _messages(entries: Sequence[PromptEntry]) -> list[Message]:
    """Messages rebuilt from prompt entries (placeholders for images and binaries)."""
    return [
        Message.from_parts(Role(role), tuple(map(_entry_part, group)))
        for (_, role), group in groupby(entries, key=lambda e: (e.message_index, e.role))
    ]


def _entry_part(entry: PromptEntry) -> TextPart | ToolCall | ToolResult:
    if entry.kind == "tool_call":
        return ToolCall(id=entry.call_id, name=entry.name, arguments=entry.args)
    if entry.kind == "tool_result":
        return ToolResult(tool_call_id=entry.call_id, name=entry.name, content=entry.content)
    if entry.kind == "reasoning":
        return TextPart(text="", reasoning=Reasoning(content=entry.content))
    return TextPart(text=entry.content)


def _cut_context(
    messages: Sequence[Message],
    max_bytes: int,
    cost: Callable[[Message], int] = _SIZE,
    frame: int = 0,
) -> list[Message]:
    """The context's newest messages whose ``cost`` fits ``max_bytes``, the oldest one cut."""
    kept: list[Message] = []
    room = max_bytes
    for message in reversed(messages):
        if (size := cost(message)) <= room:
            kept.append(message)
            room -= size
            continue
        if room > frame + 64:
            head = clip_utf8("\n".join(message_strings(message)), room - frame)
            kept.append(Message.from_parts(message.role, (TextPart(text=head),)))
        break
    return kept[::-1]


def _cut_message(message: Message, room: int) -> list[Message]:
    """``message`` itself when it fits ``room`` bytes, else pieces of its texts that do."""
    if message.size <= room:
        return [message]
    out: list[Message] = []
    role = message.role
    for part in message.parts:
        pieces: list[TextPart | ToolResult] = []
        reasoning = getattr(part, "reasoning", None)
        if reasoning is not None and reasoning.content:
            thoughts = _split_text(reasoning.content, room)
            pieces += [TextPart(text="", reasoning=Reasoning(content=t)) for t in thoughts]
        if type(part) is ToolResult:  # a cut result keeps its call id and name
            call_id, name = part.tool_call_id, part.name
            texts = _split_text(part.content, room)
            pieces += [ToolResult(tool_call_id=call_id, name=name, content=t) for t in texts]
        elif type(part) is TextPart or type(part) is ToolCall:
            text = "\n".join(message_strings(Message.from_parts(role, (part,))))
            pieces += [TextPart(text=t) for t in _split_text(text, room)]
        else:
            out.append(Message.from_parts(role, (part,)))
        out.extend(Message.from_parts(role, (piece,)) for piece in pieces)
    return out


def _split_text(text: str, max_bytes: int) -> list[str]:
    """``text`` in pieces of at most ``max_bytes`` bytes, cut after a late line break."""
    data = text.encode("utf-8")
    out: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        if end < len(data):
            newline = data.rfind(b"\n", start + max_bytes // 2, end)
            if newline > 0:
                end = newline + 1
            while end > start and (data[end] & 0xC0) == 0x80:  # not inside a character
                end -= 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out or [""]


# -- summaries in pieces ------------------------------------------------------------------

QUESTION_CONTEXT_BYTES: Final = 2048
"""Bytes of the staying question a compaction prompt shows as context (its head and tail)."""
_TAIL_SHARE = 1 / 3
"""Share of the bound given to the question's tail (where a request says what it wants)."""


def question_context(message: Message, max_bytes: int = QUESTION_CONTEXT_BYTES) -> Message:
    """``message`` itself when it holds at most ``max_bytes``, else a human text message
    of its head and tail within ``max_bytes`` (its text, tool calls as ``name(args)``
    and tool results' contents; images and binary data left out), with the number of
    bytes left out between them: the summarizer reads the staying question only to know
    what was asked, and it stays in the chain verbatim. ``message`` is not changed."""
    if message.size <= max_bytes:
        return message
    text = "\n".join(message_strings(message))
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return Message.from_parts(Role.HUMAN, (TextPart(text=text),))
    tail_bytes = int(max_bytes * _TAIL_SHARE)
    head = clip_utf8(text, max_bytes - tail_bytes)
    tail = data[len(data) - tail_bytes :].decode("utf-8", "ignore")
    gap = len(data) - utf8_len(head) - utf8_len(tail)
    note = f"\n[... {gap} bytes of the question left out here; it stays in the chain ...]\n"
    return Message.from_parts(Role.HUMAN, (TextPart(text=head + note + tail),))


async def summarize_in_pieces(
    calls: HandlerCalls,
    turns: Sequence[tuple[Message | None, Sequence[Message]]],
    *,
    staying: Message | None = None,
    max_bytes: int,
    concurrency: int,
    phase: str,
    section: int,
    focus: str | None = None,
) -> str:
    """One summary of ``turns`` (``staying`` as context, see :func:`split_into_pieces`)
    from prompts of at most ``max_bytes``, at most ``concurrency`` of them alive at once,
    the pieces' summaries merged by more calls in rounds while they do not fit one."""
    context = [] if staying is None else [staying]
    pieces = split_into_pieces(turns, max_bytes, context=context, focus=focus)
    if not pieces:
        raise ValueError("nothing to summarize: no question and no message")
    _books().chunks += len(pieces)
    summarize = partial(calls.summarize_prompt, phase=phase, section=section)
    requests = [partial(piece.request, max_bytes // 4, focus) for piece in pieces]
    del pieces
    summaries = await _summaries(requests, summarize, concurrency)
    del requests  # the pieces (cut texts among them) are not kept through the merges
    room = max(512, max_bytes - _FIXED)
    while len(summaries) > 1:  # groups that fit one prompt merged, in rounds
        groups = _groups([Message.ai(text) for text in summaries], room)
        if len(groups) == len(summaries):
            _books().truncated += 1
            return fit_joined(summaries, max_bytes)
        _books().merges += 1
        jobs = [partial(summary_request, [], group) for group in groups if len(group) > 1]
        merged = iter(await _summaries(jobs, summarize, concurrency))
        summaries = [group[0].text if len(group) == 1 else next(merged) for group in groups]
    return summaries[0]


async def _summaries(
    requests: Sequence[SummaryRequest | Callable[[], SummaryRequest]],
    summarize: Callable[[SummaryRequest], Awaitable[str]],
    concurrency: int,
) -> list[str]:
    """Summaries of ``requests`` (a function: made when called), ``concurrency`` at once."""
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(request: SummaryRequest | Callable[[], SummaryRequest]) -> str:
        async with limiter:
            return await summarize(request if isinstance(request, SummaryRequest) else request())

    return await gather([partial(one, request) for request in requests])
