"""One wrapper that makes any summarize handler robust: :class:`RobustHandler`.

* **timeout** per call (``anyio.fail_after``; a timeout is a transient failure);
* **retries** of transient failures with exponential backoff and jitter
  (:class:`~csum._retry.RetryPolicy`); permanent failures are not retried;
* **splitting**: a prompt over ``max_prompt_bytes`` is cut, on message boundaries (a
  message too large alone is cut inside its text), into prompts that fit; their
  summaries are made concurrently and merged by one more call. A merge prompt that is
  too large again is split again, at most ``max_split_depth`` levels deep; past that
  the joined summaries are cut to ``max_prompt_bytes`` (seed 000);
* **fallback**: when the handler fails for good (retries spent or a permanent error),
  the ``fallback`` handler (e.g. the offline extractive one) is tried with the same
  timeout and retries. When it fails too, an ``ExceptionGroup`` of both failures is
  raised.

Its settings are one :class:`~csum.config.Robustness` object, the one the Compactor
takes too. Counts (calls, retries, timeouts, fallback calls, chunks) go to the
:class:`HandlerLedger` of the current context (see :func:`ledger`), so a caller can
measure one run even when the wrapper is shared.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import anyio

from cast import Message, Reasoning, Role, TextPart, ToolCall, ToolResult
from cast.internals import utf8_len
from csum._fit import fit_joined
from csum._gather import unwrapped
from csum._retry import RetryPolicy
from csum.config import MIN_PROMPT_BYTES, Robustness
from csum.prompt import (
    PromptCase,
    PromptEntry,
    SummaryRequest,
    message_strings,
    summary_request,
    text_request,
)
from csum.request import Handler, RequestHandler, as_request_handler

__all__ = [
    "MIN_PROMPT_BYTES",
    "HandlerLedger",
    "RobustHandler",
    "is_transient",
    "ledger",
    "split_request",
]

_RETRIED_STATUS = frozenset({408, 409, 425, 429})


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
    """A summarize handler wrapped with timeout, retries, splitting and a fallback: a
    request handler, as the handler and the fallback are taken
    (:func:`~csum.request.as_request_handler`).

    ``robustness`` (a :class:`~csum.config.Robustness`, default ``Robustness()``) says
    how: timeout per call, retry policy, input limit and split depth, calls in flight,
    fallback. ``transient`` decides which failures are retried (default
    :func:`is_transient`). ``rng`` seeds the jitter (tests).
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
        if robustness is not None and not isinstance(robustness, Robustness):
            raise TypeError(
                f"robustness must be a csum.Robustness or None, not {type(robustness).__name__}"
            )
        self.robustness = Robustness() if robustness is None else robustness
        fallback = self.robustness.fallback
        self.fallback = None if fallback is None else as_request_handler(fallback, "fallback")
        self.transient = transient
        self.rng = rng if rng is not None else random.Random()

    @property
    def timeout(self) -> float | None:
        return self.robustness.timeout

    @property
    def retry(self) -> RetryPolicy:
        return self.robustness.retry

    @property
    def max_prompt_bytes(self) -> int | None:
        return self.robustness.max_prompt_bytes

    @property
    def max_split_depth(self) -> int:
        return self.robustness.max_split_depth

    @property
    def max_concurrency(self) -> int:
        return self.robustness.max_concurrency

    def __repr__(self) -> str:
        return f"RobustHandler({self.handler!r}, {self.robustness!r})"

    async def __call__(self, request: SummaryRequest, /) -> str:
        """The summary of ``request``; its chunks and merges (when its prompt is over
        ``max_prompt_bytes``) are requests of their own, without its conversation."""
        return await self._summarize(request, 1)

    async def _summarize(self, job: SummaryRequest, depth: int) -> str:
        limit = self.max_prompt_bytes
        if limit is None or utf8_len(job.prompt) <= limit:
            return await self._call(job)
        pieces = split_request(job, limit)
        books = _books()
        books.chunks += len(pieces)
        summaries = await self._all(pieces)
        return await self._merge(summaries, depth)

    async def _all(self, jobs: Sequence[SummaryRequest]) -> list[str]:
        results: list[str] = [""] * len(jobs)
        limiter = anyio.CapacityLimiter(self.max_concurrency)

        async def one(index: int) -> None:
            async with limiter:
                results[index] = await self._call(jobs[index])

        try:
            async with anyio.create_task_group() as group:
                for index in range(len(jobs)):
                    group.start_soon(one, index)
        except BaseExceptionGroup as group_error:
            # the handler's own error, not a group the backend words its own way
            raise unwrapped(group_error) from None
        return results

    async def _merge(self, summaries: list[str], depth: int) -> str:
        if len(summaries) == 1:
            return summaries[0]
        limit = self.max_prompt_bytes
        assert limit is not None
        books = _books()
        merged = summary_request([], [Message.ai(text) for text in summaries])
        if utf8_len(merged.prompt) <= limit:
            books.merges += 1
            return await self._call(merged)
        if depth < self.max_split_depth:
            books.merges += 1
            return await self._summarize(merged, depth + 1)
        books.truncated += 1
        return fit_joined(summaries, limit)

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
        books = _books()
        retry = 0
        while True:
            books.calls += 1
            try:
                if self.timeout is None:
                    result = await handler(job)
                else:
                    with anyio.fail_after(self.timeout):
                        result = await handler(job)
            except Exception as exc:
                if isinstance(exc, TimeoutError):
                    books.timeouts += 1
                if retry >= self.retry.max_retries or not self.transient(exc):
                    raise
                retry += 1
                books.retries += 1
                after = getattr(exc, "retry_after", None)
                wait = self.retry.delay(
                    retry, after if isinstance(after, int | float) else None, self.rng
                )
                await anyio.sleep(wait)
                continue
            if not isinstance(result, str):
                raise TypeError(
                    f"the summarize handler returned {type(result).__name__}, expected str"
                )
            return result


# -- splitting ------------------------------------------------------------------------------


def split_request(request: SummaryRequest, max_bytes: int) -> list[SummaryRequest]:
    """Requests of at most ``max_bytes`` UTF-8 bytes of prompt that together hold
    ``request``'s data, made from its entries: split on message boundaries, each piece
    keeping the instructions, the focus and (cut to at most a quarter of ``max_bytes``)
    the context block; a message too large alone is cut inside its texts. A
    :func:`~csum.prompt.text_request` is cut at line breaks."""
    if request.case is None:
        return [text_request(piece) for piece in _split_text(request.prompt, max_bytes)]
    human_only = request.case is PromptCase.HUMAN_ONLY
    context = [] if human_only else _cut_context(_messages(request.context), max_bytes // 4)
    focus = request.focus or None

    def render(chunk: Sequence[Message]) -> SummaryRequest:
        if human_only:
            return summary_request(chunk, [], focus=focus)
        return summary_request(context, chunk, focus=focus)

    base = utf8_len(render([Message.ai("")]).prompt)
    room = max(512, max_bytes - base - 256)
    pieces: list[Message] = []
    for message in _messages(request.summarized):
        pieces.extend(_cut_message(message, room))
    out: list[SummaryRequest] = []
    chunk: list[Message] = []
    for message in pieces:
        candidate = render([*chunk, message])
        if chunk and utf8_len(candidate.prompt) > max_bytes:
            out.append(render(chunk))
            chunk = [message]
        else:
            chunk.append(message)
    if chunk:
        out.append(render(chunk))
    return out


def _messages(entries: Sequence[PromptEntry]) -> list[Message]:
    """Messages rebuilt from prompt entries (placeholders for images and binaries)."""
    out: list[Message] = []
    parts: list[TextPart | ToolCall | ToolResult] = []
    current: tuple[int, str] | None = None

    def flush() -> None:
        if current is not None and parts:
            out.append(Message.from_parts(Role(current[1]), tuple(parts)))

    for entry in entries:
        key = (entry.message_index, entry.role)
        if key != current:
            flush()
            parts = []
            current = key
        if entry.kind == "tool_call":
            parts.append(ToolCall(id=entry.call_id, name=entry.name, arguments=entry.args))
        elif entry.kind == "tool_result":
            parts.append(
                ToolResult(tool_call_id=entry.call_id, name=entry.name, content=entry.content)
            )
        elif entry.kind == "reasoning":
            parts.append(TextPart(text="", reasoning=Reasoning(content=entry.content)))
        else:
            parts.append(TextPart(text=entry.content))
    flush()
    return out


def _cut_context(messages: list[Message], max_bytes: int) -> list[Message]:
    """The context's newest messages that fit ``max_bytes``, the oldest kept one cut."""
    kept: list[Message] = []
    room = max_bytes
    for message in reversed(messages):
        if message.size <= room:
            kept.append(message)
            room -= message.size
            continue
        if room > 64:
            kept.append(Message.from_parts(message.role, (TextPart(text=_head(message, room)),)))
        break
    kept.reverse()
    return kept


def _head(message: Message, max_bytes: int) -> str:
    text = "\n".join(message_strings(message))
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def _cut_message(message: Message, room: int) -> list[Message]:
    """``message`` itself when it fits ``room`` bytes, else pieces of its text that do
    (a cut tool result keeps its call id and name; other parts become text)."""
    if message.size <= room:
        return [message]
    out: list[Message] = []
    for part in message.parts:
        if type(part) is ToolResult:
            text, make = part.content, _result_maker(part)
        else:
            text, make = (
                "\n".join(message_strings(Message.from_parts(message.role, (part,)))),
                _text_part,
            )
        out.extend(Message.from_parts(message.role, (make(p),)) for p in _split_text(text, room))
    return out


def _result_maker(result: ToolResult) -> Callable[[str], TextPart | ToolResult]:
    def make(piece: str) -> TextPart | ToolResult:
        return ToolResult(tool_call_id=result.tool_call_id, name=result.name, content=piece)

    return make


def _text_part(piece: str) -> TextPart | ToolResult:
    return TextPart(text=piece)


def _split_text(text: str, max_bytes: int) -> list[str]:
    """``text`` in pieces of at most ``max_bytes`` UTF-8 bytes, cut after a line break
    where one falls in the second half of a piece."""
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
