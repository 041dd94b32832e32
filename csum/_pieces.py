"""Summary prompts within a bound: the question a prompt shows as context, cut to its head
and tail, and a summary of more than one prompt can hold, made of pieces whose prompts
fit (each rendered only when its call starts), then merged."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Final

import anyio

from cast import ImagePart, Message, Role, TextPart, ToolCall, ToolResult
from cast.internals import clip_utf8, utf8_len
from csum._fit import fit_joined
from csum._gather import gather
from csum.prompt import INSTRUCTIONS, SummaryRequest, message_strings, summary_request
from csum.request import HandlerCalls, _books, _cut_context, _cut_message

__all__ = [
    "QUESTION_CONTEXT_BYTES",
    "Piece",
    "prompt_bound",
    "question_context",
    "split_into_pieces",
    "summarize_in_pieces",
]

QUESTION_CONTEXT_BYTES: Final = 2048
"""Bytes of the staying question a compaction prompt shows as context (its head and tail)."""
_TAIL_SHARE = 1 / 3
"""Share of the bound given to the question's tail (a request says what it expects back
at its end)."""

_MESSAGE_FRAME = 96
"""Upper bound of a message's own tags in a prompt (index, role, marker suffixes)."""
_PART_FRAME = 224
"""Upper bound of one part's tags in a prompt (with its reasoning's), ids apart."""
_FIXED = max(utf8_len(text) for text in INSTRUCTIONS.values()) + 512
"""Upper bound of a prompt's instructions and block tags."""
_ESCAPE_GROWTH = 5
"""An id character is at most 6 in an attribute (``"`` as ``&quot;``): 5 more."""


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

    context: list[Message] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    used: int = 0
    """Prompt bound of ``messages``."""

    def request(self, max_context: int, focus: str | None = None) -> SummaryRequest:
        """The request of the piece (its prompt and entries), its context cut to
        ``max_context`` bytes."""
        context = _cut_context(
            self.context, max_context, prompt_bound, _MESSAGE_FRAME + _PART_FRAME
        )
        return summary_request(context, self.messages, focus=focus)


def split_into_pieces(
    turns: Sequence[tuple[Message | None, Sequence[Message]]],
    max_bytes: int,
    *,
    staying: Message | None = None,
) -> list[Piece]:
    """Pieces whose prompts (their context cut to ``max_bytes // 4``) fit ``max_bytes``:
    consecutive messages of ``turns`` ((question, messages) in chain order, each question
    summarized in its place); the context is ``staying`` and, for a piece starting inside
    a turn, that turn's question."""
    room = max(512, max_bytes - _FIXED - max_bytes // 4)
    kept = [staying] if staying is not None else []
    pieces: list[Piece] = []
    current = Piece(context=list(kept))
    for asked, messages in turns:
        for message in (asked, *messages) if asked is not None else messages:
            for item in _fitting(message, room):
                cost = prompt_bound(item)
                if current.messages and current.used + cost > room:
                    pieces.append(current)
                    # A piece starting inside a turn: its question was summarized before.
                    inside = [asked] if asked is not None and message is not asked else []
                    current = Piece(context=[*inside, *kept])
                current.messages.append(item)
                current.used += cost
    if current.messages:
        pieces.append(current)
    return pieces


def _fitting(message: Message, room: int) -> list[Message]:
    """``message``, or pieces of its texts when its prompt bound exceeds ``room``."""
    if prompt_bound(message) <= room:
        return [message]
    return _cut_message(message, max(256, room - _MESSAGE_FRAME - 2 * _PART_FRAME))


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
    pieces = split_into_pieces(turns, max_bytes, staying=staying)
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


def _groups(messages: Sequence[Message], room: int) -> list[list[Message]]:
    """Consecutive groups of ``messages`` whose prompt bounds fit ``room``."""
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
