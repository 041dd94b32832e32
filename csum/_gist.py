"""A cleared tool result's gist: its first line and its most salient lines, bounded.

When the clearing stage replaces an old tool result with a placeholder, the result's
content is gone from the chain (and, without a history archive, from everywhere). The
gist keeps what a later step most often needs of it, in at most :data:`GIST_BYTES`:
the first line (what the output is) and the lines holding error messages, paths, URLs,
identifiers and named numbers, ranked by the fact guard's generic salience weights
(:mod:`csum.guard`), in their original order. It is a pure function of the content, so
the same result always gets the same placeholder (the prompt cache's prefix stays
byte-stable) and it never holds a newline (a placeholder stays recognizable).
"""

from __future__ import annotations

from itertools import islice
from typing import Final

from cast.internals import utf8_len

__all__ = ["GIST_BYTES", "GIST_SEPARATOR", "gist"]

GIST_BYTES: Final = 160
"""The most a gist takes, in UTF-8 bytes (separators included)."""
GIST_SEPARATOR: Final = " | "
"""Between the gist's lines (a gist is one line)."""
_MAX_LINES: Final = 4000  # lines of a result that are read (a huge log: its start)
_PIECE: Final = 72  # bytes of one line, at most (longer lines: the words around a fact)


def gist(text: str, limit: int = GIST_BYTES) -> str:
    """The gist of ``text`` in at most ``limit`` UTF-8 bytes ("" when nothing fits)."""
    # csum.guard imports the handlers: loaded on the first clearing, not with csum.
    from csum.guard import _ANSI, _LINE_CAP, _LIST_MARK

    lines: list[str] = []
    seen: set[str] = set()
    for raw in islice(text.splitlines(), _MAX_LINES):
        line = " ".join(_LIST_MARK.sub("", _ANSI.sub("", raw[:_LINE_CAP])).split())
        if line and line not in seen:
            seen.add(line)
            lines.append(line)
    if not lines or limit <= 0:
        return ""
    tokens = [_tokens_of(line) for line in lines]  # read once: ranking and trimming use them
    weights = [_salience(line, found) for line, found in zip(lines, tokens, strict=True)]
    ranked = sorted((i for i in range(1, len(lines)) if weights[i] > 0), key=lambda i: -weights[i])
    chosen: dict[int, str] = {}
    used = 0
    for index in (0, *ranked):
        if chosen and limit - used <= len(GIST_SEPARATOR):
            break  # full: no piece (at least one byte) fits after a separator
        piece = _piece(lines[index], tokens[index])
        cost = utf8_len(piece) + (len(GIST_SEPARATOR) if chosen else 0)
        if used + cost > limit:
            continue
        chosen[index] = piece
        used += cost
    return GIST_SEPARATOR.join(chosen[i] for i in sorted(chosen))


def _tokens_of(line: str) -> list[tuple[str, str]]:
    """The facts of a line as the guard finds them: (text, kind) pairs."""
    from csum.guard import _tokens

    return _tokens(line)


def _salience(line: str, tokens: list[tuple[str, str]]) -> float:
    """What a line's facts weigh: an error line, then paths, URLs, ids, numbers."""
    from csum.guard import _ERROR_LINE, _WEIGHTS

    score = _WEIGHTS["error"] if _ERROR_LINE.search(line) else 0.0
    return score + sum(_WEIGHTS[kind] for _, kind in tokens)


def _piece(line: str, tokens: list[tuple[str, str]]) -> str:
    """``line`` within :data:`_PIECE` bytes: whole, or the words around its first fact."""
    from csum.guard import _ERROR_LINE, _excerpt

    if utf8_len(line) <= _PIECE:
        return line
    error = _ERROR_LINE.search(line)
    if error is not None:
        token = error.group()
    else:
        token = tokens[0][0] if tokens else line.split(maxsplit=1)[0]
    piece = _excerpt(line, token)[:_PIECE]
    while utf8_len(piece) > _PIECE:
        piece = piece[:-1]
    return piece
