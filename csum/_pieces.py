"""A summary of more than one bounded prompt can hold: the messages are cut into pieces
whose prompts fit ``max_bytes``, each piece is summarized, then the summaries are merged.

Why not render one prompt and split it (as :class:`~csum.request.RobustHandler` does
for prompts it is handed): a prompt is one Python string holding every message it
summarizes verbatim, at 2 or 4 bytes per character once one character of it is beyond
Latin-1 or the BMP, and a handler copies it again while reading it. On a 100 MB chain
one prompt of everything evicted took 4x the file, the handler's copies as much again.
Here the pieces are chosen from the messages' sizes, and a piece's prompt is rendered
only when its call starts, so at most ``concurrency`` prompts are alive at any time.

A piece's prompt is what :func:`~csum.prompt.messages_to_prompt` makes of its messages.
As in one prompt of it all, the questions that leave the chain are summarized in their
place among the turns' messages; the question that stays (the turn the cut falls in)
is context, and so is the question of the turn a piece starts inside (summarized by an
earlier piece), within a quarter of ``max_bytes``. A message too large for a piece
alone is cut inside its texts. The summaries are merged by one more call on a prompt
of the summaries as AI messages (as the robust handler merges its chunks), in rounds
while they do not fit one prompt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio

from cast import ImagePart, Message, Role, TextPart, ToolCall, ToolResult
from cast.internals import utf8_len
from csum._fit import fit_joined
from csum._gather import gather
from csum.prompt import INSTRUCTIONS, SummaryRequest, summary_request
from csum.request import HandlerCalls, _books, _cut_message, _head

__all__ = ["Piece", "prompt_bound", "split_into_pieces", "summarize_in_pieces"]

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

    context: list[Message] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    used: int = 0
    """Prompt bound of ``messages``."""

    def prompt(self, max_context: int, focus: str | None = None) -> str:
        """The prompt of the piece, its context cut to ``max_context`` bytes."""
        return self.request(max_context, focus).prompt

    def request(self, max_context: int, focus: str | None = None) -> SummaryRequest:
        """The request of the piece (its prompt and entries), context cut as in
        :meth:`prompt`."""
        return summary_request(_cut_context(self.context, max_context), self.messages, focus=focus)


def split_into_pieces(
    turns: Sequence[tuple[Message | None, Sequence[Message]]],
    max_bytes: int,
    *,
    staying: Message | None = None,
) -> list[Piece]:
    """Pieces whose prompts (their context cut to ``max_bytes // 4``) fit ``max_bytes``.

    ``turns`` are (question, messages) in chain order, all leaving the chain: each
    question is summarized in its place, before its turn's messages. A piece holds
    consecutive messages; its context is ``staying`` (the question that stays in the
    chain) and, for a piece that starts inside a turn, that turn's question.
    """
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


def _cut_context(context: Sequence[Message], max_bytes: int) -> list[Message]:
    """The newest questions whose prompt bounds fit ``max_bytes``, the oldest kept one
    cut to the room left."""
    kept: list[Message] = []
    room = max_bytes
    for message in reversed(context):
        cost = prompt_bound(message)
        if cost <= room:
            kept.append(message)
            room -= cost
            continue
        frame = _MESSAGE_FRAME + _PART_FRAME
        if room > frame + 64:
            kept.append(
                Message.from_parts(Role.HUMAN, (TextPart(text=_head(message, room - frame)),))
            )
        break
    kept.reverse()
    return kept


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
    made from prompts of at most ``max_bytes`` (see the module docstring); at most
    ``concurrency`` prompts are alive at once. Calls go through ``calls`` (counted,
    cached, failures raised as :class:`~csum.errors.SummarizationError`)."""
    pieces = split_into_pieces(turns, max_bytes, staying=staying)
    if not pieces:
        raise ValueError("nothing to summarize: no question and no message")
    books = _books()
    books.chunks += len(pieces)
    limiter = anyio.CapacityLimiter(concurrency)
    max_context = max_bytes // 4

    def job(piece: Piece) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            async with limiter:  # the prompt exists only while its call runs
                request = piece.request(max_context, focus)
                return await calls.summarize_prompt(request, phase=phase, section=section)

        return run

    summaries = await gather([job(piece) for piece in pieces])
    del pieces
    room = max(512, max_bytes - _FIXED)
    while len(summaries) > 1:
        groups = _groups([Message.ai(text) for text in summaries], room)
        if len(groups) == len(summaries):  # no two fit one prompt: cut, as the robust handler
            books.truncated += 1
            return fit_joined(summaries, max_bytes)
        books.merges += 1
        summaries = await gather(
            [_merge_job(calls, group, limiter, phase, section) for group in groups]
        )
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


def _merge_job(
    calls: HandlerCalls,
    group: list[Message],
    limiter: anyio.CapacityLimiter,
    phase: str,
    section: int,
) -> Callable[[], Awaitable[str]]:
    async def run() -> str:
        if len(group) == 1:
            return group[0].text
        async with limiter:
            request = summary_request([], group)
            return await calls.summarize_prompt(request, phase=phase, section=section)

    return run
