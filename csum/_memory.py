"""A compaction's memory of facts: what the agent may need again from what it evicts.

A summary (a model's or the offline handler's) says what happened; what an agent most
often needs again from old turns is narrower: the exact paths, identifiers, ids,
numbers and error names it read or used. After the handler's summary, the Compactor
appends those facts of every message the summary replaces that the summary does not
already hold, deduplicated, newest first (what the agent itself wrote or called first,
then the questions and tool results), in the room the summary's share leaves
(:func:`with_fact_memory`). An earlier summary being folded again is one of the
replaced messages, so its facts carry over while room is left, behind the newer ones.

Generic: tokens are read by their shape (:mod:`csum.clearing`, plus code identifiers:
``snake_case``, ``camelCase``, ``Dotted.names``, ``a::b``), never by a tool's name. Pure:
the same messages and summary give the same bytes, so the prefix stays byte-stable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

import regex

from cast import Message, Role
from cast.internals import utf8_len
from csum._message_text import message_strings
from csum.archive import split_archive_line
from csum.clearing import LINE_CAP, reads_alike, tokens_of_lines

__all__ = ["FACT_SHARE", "MEMORY_HEADER", "fact_memory", "message_facts", "with_fact_memory"]

FACT_SHARE: Final = 0.5
"""Share of the summary's bytes the Compactor's default handler leaves to the facts."""
MEMORY_HEADER: Final = "Facts:"
"""How each line of facts starts (one line per replaced message, newest first)."""
_SEPARATOR: Final = ", "
_HEAD_CHARS: Final = 32_768  # characters of a long text read from its start ...
_TAIL_CHARS: Final = 8_192  # ... and from its end (a log's outcome)
_MAX_TOKEN: Final = 100
_MIN_ROOM: Final = 24  # bytes below which no facts are written

_IDENTIFIER = regex.compile(
    r"(?<![\w.:/-])(?:"
    r"[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+"  # snake_case
    r"|[a-z]+[A-Z][A-Za-z0-9]*"  # camelCase
    r"|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"  # PascalCase with a second word
    r"|[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+"  # Dotted.names, a::b
    r")(?![\w/-])"
)

_FAST_IDENTIFIER = re.compile(_IDENTIFIER.pattern)  # the same where both read alike


def _read(text: str) -> str:
    if len(text) <= _HEAD_CHARS + _TAIL_CHARS:
        return text
    return text[:_HEAD_CHARS] + "\n" + text[-_TAIL_CHARS:]


def message_facts(message: Message) -> list[str]:
    """The salient tokens of ``message`` in their order, each once: paths, URLs, named
    numbers, ids (:mod:`csum.clearing`) and code identifiers, read from its texts,
    tool results and the values (not the names) of its calls' arguments."""
    seen: dict[str, None] = {}
    for text in message_strings(message, argument_values=True):
        body = _read(text)
        lines = [" ".join(line[:LINE_CAP].split()) for line in body.splitlines()]
        for found in tokens_of_lines([line for line in lines if line]):
            for token, _ in found:
                if len(token) <= _MAX_TOKEN:
                    seen.setdefault(token, None)
        identifiers = _FAST_IDENTIFIER if reads_alike(body) else _IDENTIFIER
        for match in identifiers.finditer(body):
            token = match.group().rstrip(".")
            if 3 <= len(token) <= _MAX_TOKEN:
                seen.setdefault(token, None)
    return list(seen)


def _order(messages: Sequence[Message]) -> list[Message]:
    """Newest first: what the agent wrote or called, then the questions and results."""
    newest = list(reversed(messages))
    own = [m for m in newest if m.role is Role.AI]
    return own + [m for m in newest if m.role is not Role.AI and m.role is not Role.SYSTEM]


def fact_memory(messages: Sequence[Message], known: str, limit: int) -> str:
    """The facts of ``messages`` not already in ``known`` (the summary), newest first,
    one line per message (``Facts: a, b, c``), in at most ``limit`` UTF-8 bytes; ""
    when none fits."""
    if limit < _MIN_ROOM:
        return ""
    used = -1
    lines: list[str] = []
    said: set[str] = set()
    full = False
    for message in _order(messages):
        line = ""
        for token in message_facts(message):
            if token in said or token in known:
                continue
            piece = (_SEPARATOR if line else f"{MEMORY_HEADER} ") + token
            if used + 1 + utf8_len(line) + utf8_len(piece) > limit:
                full = True  # the newest facts are in: older ones are not read
                break
            line += piece
            said.add(token)
        if line:
            lines.append(line)
            used += 1 + utf8_len(line)
        if full or limit - used < _MIN_ROOM:
            break
    return "\n".join(lines)


def with_fact_memory(summary: str, replaced: Iterable[Message], limit: int) -> str:
    """``summary`` with the facts of ``replaced`` it lacks appended within ``limit``
    bytes in all, before its ``[archived: ...]`` line when it ends with one (that line
    is not counted: it names the archive, the summary's share does not pay for it)."""
    body, line = split_archive_line(summary)
    room = limit - utf8_len(body) - 1
    facts = fact_memory(list(replaced), body, room)
    if not facts:
        return summary
    out = f"{body}\n{facts}" if body else facts
    return f"{out}\n{line}" if line else out
