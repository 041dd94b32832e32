"""A cleared tool result's gist: its first line and its most salient lines, bounded.

When the clearing stage replaces an old tool result with a placeholder, the result's
content is gone from the chain (and, without a history archive, from everywhere). The
gist keeps what a later step most often needs of it, in at most :data:`GIST_BYTES`:
the first line (what the output is) and the lines holding error messages, paths, URLs,
identifiers and named numbers, ranked by the generic salience weights the fact guard
uses too (:mod:`csum._salience`), in their original order. It is a pure function of the content, so
the same result always gets the same placeholder (the prompt cache's prefix stays
byte-stable) and it never holds a newline (a placeholder stays recognizable).
"""

from __future__ import annotations

from itertools import islice
from typing import Final

from cast.internals import utf8_len
from csum._salience import (
    ANSI,
    LINE_CAP,
    LIST_MARK,
    WEIGHTS,
    error_words,
    excerpt,
    tokens_of_lines,
)

__all__ = ["GIST_BYTES", "GIST_SEPARATOR", "gist"]

GIST_BYTES: Final = 160
"""The most a gist takes, in UTF-8 bytes (separators included)."""
GIST_SEPARATOR: Final = " | "
"""Between the gist's lines (a gist is one line)."""
_MAX_LINES: Final = 4000  # lines of a result that are read from its start ...
_HEAD_CHARS: Final = 32_768  # ... within its first characters, of a result longer than
_TAIL_CHARS: Final = 8_192  # these two, with the lines of its end (a log's outcome)
_PIECE: Final = 72  # bytes of one line, at most (longer lines: the words around a fact)


def gist(text: str, limit: int = GIST_BYTES) -> str:
    """The gist of ``text`` in at most ``limit`` UTF-8 bytes ("" when nothing fits)."""
    if limit <= 0:
        return ""
    lines: list[str] = []
    seen: set[str] = set()
    for raw in _read(text):
        start = raw[:LINE_CAP]
        if "[" in start:  # every colour code holds one
            start = ANSI.sub("", start)
        line = " ".join(LIST_MARK.sub("", start).split())
        if line and line not in seen:
            seen.add(line)
            lines.append(line)
    if not lines:
        return ""
    facts = tokens_of_lines(lines)  # read once: ranking and trimming use them
    errors = error_words(lines)
    weights = [
        (WEIGHTS["error"] if error is not None else 0.0) + sum(WEIGHTS[kind] for _, kind in found)
        for found, error in zip(facts, errors, strict=True)
    ]
    ranked = sorted((i for i in range(1, len(lines)) if weights[i] > 0), key=lambda i: -weights[i])
    chosen: dict[int, str] = {}
    used = 0
    for index in (0, *ranked):
        if chosen and limit - used <= len(GIST_SEPARATOR):
            break  # full: no piece (at least one byte) fits after a separator
        piece = _piece(lines[index], facts[index], errors[index])
        cost = utf8_len(piece) + (len(GIST_SEPARATOR) if chosen else 0)
        if used + cost > limit:
            continue
        chosen[index] = piece
        used += cost
    return GIST_SEPARATOR.join(chosen[i] for i in sorted(chosen))


def _read(text: str) -> list[str]:
    """The lines of ``text`` the gist reads: of a huge result its first lines (those
    whole within :data:`_HEAD_CHARS`) and its last (within :data:`_TAIL_CHARS`), so the
    cost of a gist is bounded and a long log's outcome is read too."""
    if len(text) <= _HEAD_CHARS + _TAIL_CHARS:
        return list(islice(text.splitlines(), _MAX_LINES))
    head = text[:_HEAD_CHARS].splitlines()[:-1]  # the last one may be cut
    tail = text[-_TAIL_CHARS:].splitlines()[1:]  # the first one may be cut
    return head[:_MAX_LINES] + tail


def _piece(line: str, found: list[tuple[str, str]], error: str | None) -> str:
    """``line`` within :data:`_PIECE` bytes: whole, or the words around its first error
    word, else its first fact (``found``: its facts)."""
    if utf8_len(line) <= _PIECE:
        return line
    token = error if error is not None else found[0][0] if found else line.split(maxsplit=1)[0]
    piece = excerpt(line, token)[:_PIECE]
    while utf8_len(piece) > _PIECE:
        piece = piece[:-1]
    return piece
