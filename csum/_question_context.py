"""The question a summary prompt shows as context, cut to a bound.

A compaction's prompt shows the question that stays in the chain (the turn the cut falls
in) as context: the summarizer reads it only to know what was asked, and the question
itself stays in the chain verbatim. In agent sessions it is often long (a pasted plan, a
file list, a log) and every compaction of that turn sent it again: at a 64 KiB budget on
the corpus's Claude Code sessions the context was a fifth of all summarizer input. Past
:data:`QUESTION_CONTEXT_BYTES`, its head and its tail are shown (a request usually says
what it wants at its start and what it expects back at its end), with a line saying how
much was left out between them.
"""

from __future__ import annotations

from typing import Final

from cast import Message, Role, TextPart
from cast.internals import utf8_len
from csum.prompt import message_strings

__all__ = ["QUESTION_CONTEXT_BYTES", "question_context"]

QUESTION_CONTEXT_BYTES: Final = 2048
"""Bytes of the staying question a compaction prompt shows as context (its head and tail)."""

_TAIL_SHARE = 1 / 3
"""Share of the bound given to the question's tail."""


def question_context(message: Message, max_bytes: int = QUESTION_CONTEXT_BYTES) -> Message:
    """``message`` itself when it holds at most ``max_bytes``, else a human text message
    of its head and tail within ``max_bytes`` (its text, tool calls as ``name(args)``
    and tool results' contents; images and binary data left out), with the number of
    bytes left out between them. ``message`` is not changed."""
    if message.size <= max_bytes:
        return message
    text = "\n".join(message_strings(message))
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return Message.from_parts(Role.HUMAN, (TextPart(text=text),))
    tail_bytes = int(max_bytes * _TAIL_SHARE)
    head_bytes = max_bytes - tail_bytes
    head = data[:head_bytes].decode("utf-8", "ignore")
    tail = data[len(data) - tail_bytes :].decode("utf-8", "ignore")
    gap = len(data) - utf8_len(head) - utf8_len(tail)
    note = f"\n[... {gap} bytes of the question left out here; it stays in the chain ...]\n"
    return Message.from_parts(Role.HUMAN, (TextPart(text=head + note + tail),))
