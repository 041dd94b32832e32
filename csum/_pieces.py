"""Summary prompts within a bound: the question a prompt shows as context, cut to its head
and tail, and a summary of more than one prompt can hold, made of pieces whose prompts
fit (each rendered only when its call starts), then merged."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Final

import anyio

from cast import Message, Role, TextPart
from cast.internals import clip_utf8, utf8_len
from csum._fit import fit_joined
from csum._gather import gather
from csum.prompt import SummaryRequest, summary_request
from csum.request import _FIXED, HandlerCalls, _books, _groups, split_into_pieces
from csum.store_events import message_strings

__all__ = [
    "QUESTION_CONTEXT_BYTES",
    "question_context",
    "summarize_in_pieces",
]

QUESTION_CONTEXT_BYTES: Final = 2048
"""Bytes of the staying question a compaction prompt shows as context (its head and tail)."""
_TAIL_SHARE = 1 / 3
"""Share of the bound given to the question's tail (a request says what it expects back
at its end)."""


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
    """One summary of ``turns`` (``staying`` as context, see
    :func:`~csum.request.split_into_pieces`) from prompts of at most ``max_bytes``, at most
    ``concurrency`` of them alive at once, the pieces' summaries merged by more calls in
    rounds while they do not fit one."""
    context = [] if staying is None else [staying]
    pieces = split_into_pieces(turns, max_bytes, context=context, focus=focus)
    if not pieces:
        raise ValueError("nothing to summarize: no question and no message")
    books = _books()
    books.chunks += len(pieces)
    limiter = anyio.CapacityLimiter(concurrency)
    max_context = max_bytes // 4

    def job(request: Callable[[], SummaryRequest]) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            async with limiter:  # the prompt exists only while its call runs
                return await calls.summarize_prompt(request(), phase=phase, section=section)

        return run

    summaries = await gather([job(partial(piece.request, max_context, focus)) for piece in pieces])
    del pieces
    room = max(512, max_bytes - _FIXED)
    while len(summaries) > 1:
        groups = _groups([Message.ai(text) for text in summaries], room)
        if len(groups) == len(summaries):  # no two fit one prompt: cut, as the robust handler
            books.truncated += 1
            return fit_joined(summaries, max_bytes)
        books.merges += 1
        merged = iter(
            await gather([job(partial(summary_request, [], g)) for g in groups if len(g) > 1])
        )
        summaries = [g[0].text if len(g) == 1 else next(merged) for g in groups]
    return summaries[0]
