"""What makes a line of tool output or chat worth keeping: the facts on it.

Shared by the fact guard (:mod:`csum.guard`, what a summary lost) and the clearing gist
(:mod:`csum._gist`, what a placeholder keeps). Generic: it reads the shape of a token (a
path, a URL, a token mixing letters and digits, a version, a hash, a number with the
word naming it) and of a line (an error word), never a tool's or a format's name. A leaf:
it imports nothing of csum, so the gist loads without the guard and its handlers.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import Final

import regex

from cast.internals import utf8_len

__all__ = [
    "ANSI",
    "ERROR_LINE",
    "EXCERPT_BYTES",
    "LINE_CAP",
    "LIST_MARK",
    "WEIGHTS",
    "error_words",
    "excerpt",
    "reads_alike",
    "tokens",
    "tokens_of_lines",
]

LINE_CAP: Final = 2000
"""Characters of a line that are read (longer lines: their start)."""
EXCERPT_BYTES: Final = 72
"""Bytes of an excerpt around a fact, at most."""

_URL = regex.compile(r"https?://[^\s<>\"'`)\]]{3,200}")
_PATH = regex.compile(
    r"(?<![\w/.-])(?:[\w.~-]{0,60}/){1,12}[\w.-]{1,80}(?::\d{1,6}){0,2}"
    r"|(?<![\w/.-])[\w-]{1,60}\.[A-Za-z][A-Za-z0-9]{0,6}(?::\d{1,6}){1,2}"
)
_MIXED = regex.compile(r"(?<![\w.-])(?=[\w.-]{0,80}\d)(?=[\w.-]{0,80}[A-Za-z])\w[\w.-]{2,80}")
_VERSION = regex.compile(r"(?<![\w.])v?\d{1,4}(?:\.\d{1,6}){1,3}(?![\w.])")
_HASH = regex.compile(r"(?<!\w)[0-9a-f]{7,64}(?!\w)")
_NAMED_NUMBER = regex.compile(
    r"(?<![\w.])(?:[A-Za-z_][\w-]{1,40}[ \t]{0,3}[:=][ \t]{0,3}\"?-?\$?\d[\d,.]{0,20}"
    r"|-?\$?\d[\d,.]{0,20}[ \t]?(?:%|[A-Za-z]{1,12}))(?![\w.])"
)
_DIGIT = regex.compile(r"\d")  # the same \d as the patterns' (any decimal digit)
ERROR_LINE: Final = regex.compile(
    r"\b(?:[A-Z]\w{0,40}(?:Error|Exception)|Traceback|FAILED|FAIL|ERROR|[Ee]rror|failed|"
    r"fatal|panic|denied|refused|[Nn]o such file|not found|[Cc]annot)\b"
)
"""A line that reports a failure."""
ANSI: Final = regex.compile(r"\x1b?\[[0-9;]{0,12}m")
"""Colour codes, with or without ESC."""
LIST_MARK: Final = regex.compile(r"^\s{0,8}(?:[-*+•]|\d{1,3}[.)])\s{1,4}")
"""A list item's mark at the start of a line."""
_TRAILING = ".,;:!?\"')]}"

WEIGHTS: Final = {"error": 3.0, "path": 2.5, "url": 2.0, "id": 2.0, "number": 1.5}
"""What a fact of each kind weighs."""


def tokens(line: str) -> list[tuple[str, str]]:
    """(token, kind) of one line in their order, a token found inside an earlier kind's
    left out (kinds tried: url, path, number, then ids: version, hash, mixed).

    A kind is tried only when the line holds what every match of it needs (``://`` for
    a URL, ``/`` or a ``:`` and a digit for a path, a digit for a number, a version or a
    mixed token): a pattern skipped finds nothing, so the result is the same."""
    found: list[tuple[int, int, str]] = []
    for kind, pattern, needed in _needed(line):
        if not needed:
            continue
        for match in pattern.finditer(line):
            start, end = match.span()
            while end > start and line[end - 1] in _TRAILING:
                end -= 1
            if end - start >= 3 and not any(s <= start and end <= e for s, e, _ in found):
                found.append((start, end, kind))
    return [(line[s:e], kind) for s, e, kind in sorted(found)]


def _needed(text: str, fast: bool = False) -> tuple[tuple[str, Pattern, bool], ...]:
    """Each kind's pattern, in order, and whether ``text`` holds what its matches need;
    with ``fast``, the ``re`` twins where they are faster (:func:`reads_alike`)."""
    digit = _DIGIT.search(text) is not None
    return (
        ("url", _URL, "://" in text),
        ("path", _FAST_PATH if fast else _PATH, "/" in text or (digit and ":" in text)),
        ("number", _FAST_NAMED_NUMBER if fast else _NAMED_NUMBER, digit),
        ("id", _VERSION, digit),
        ("id", _FAST_HASH if fast else _HASH, True),
        ("id", _FAST_MIXED if fast else _MIXED, digit),
    )


Pattern = regex.Pattern[str] | re.Pattern[str]

# The standard library's engine runs these patterns about twice as fast. Their syntax
# means the same in both (possessive and look-around forms, no flags); what may differ is
# which characters \w and \d take in (``re``: str.isalnum and "_", str.isdecimal;
# ``regex``: Unicode's word and digit properties, e.g. combining marks). So a twin reads
# a text only when both engines class every character of it alike (reads_alike).
_FAST_PATH = re.compile(_PATH.pattern)
_FAST_NAMED_NUMBER = re.compile(_NAMED_NUMBER.pattern)
_FAST_HASH = re.compile(_HASH.pattern)
_FAST_MIXED = re.compile(_MIXED.pattern)
_WORD, _FAST_WORD = regex.compile(r"\w"), re.compile(r"\w")
_FAST_DIGIT = re.compile(r"\d")
_ALIKE: dict[str, bool] = {}


def _alike(char: str) -> bool:
    same = _ALIKE.get(char)
    if same is None:
        same = (_WORD.match(char) is None) == (_FAST_WORD.match(char) is None) and (
            _DIGIT.match(char) is None
        ) == (_FAST_DIGIT.match(char) is None)
        if len(_ALIKE) < 65_536:
            _ALIKE[char] = same
    return same


def reads_alike(text: str) -> bool:
    """Whether ``re`` and ``regex`` class every character of ``text`` alike as a word
    character and as a digit (then a pattern using no other class matches the same in
    both)."""
    return text.isascii() or all(map(_alike, set(text)))


def tokens_of_lines(lines: Sequence[str]) -> list[list[tuple[str, str]]]:
    """``[tokens(line) for line in lines]`` for lines holding no whitespace but single
    spaces (as ``" ".join(line.split())`` leaves them), read in one pass per pattern.

    The lines are joined by newlines and each pattern runs once over the whole: no
    pattern's match holds a newline, and a newline is, like the edge of a string,
    neither a word character nor one of the characters the patterns look behind or
    ahead for, so each line's matches are those it has alone."""
    text, starts = _joined(lines)
    found: list[list[tuple[int, int, str]]] = [[] for _ in lines]
    for kind, pattern, needed in _needed(text, reads_alike(text)):
        if not needed:
            continue  # as in tokens: what no line holds, no pattern skipped would find
        for match in pattern.finditer(text):
            start, end = match.span()
            while end > start and text[end - 1] in _TRAILING:
                end -= 1
            if end - start < 3:
                continue
            line_found = found[bisect_right(starts, start) - 1]
            for s, e, _ in line_found:
                if s <= start and end <= e:
                    break
            else:
                line_found.append((start, end, kind))
    return [[(text[s:e], kind) for s, e, kind in sorted(line_found)] for line_found in found]


def error_words(lines: Sequence[str]) -> list[str | None]:
    """The first error word of each line (:data:`ERROR_LINE`), None for a line without
    one; lines as :func:`tokens_of_lines` takes them, read in one pass."""
    text, starts = _joined(lines)
    words: list[str | None] = [None] * len(lines)
    for match in ERROR_LINE.finditer(text):
        number = bisect_right(starts, match.start()) - 1
        if words[number] is None:
            words[number] = match.group()
    return words


def _joined(lines: Sequence[str]) -> tuple[str, list[int]]:
    """``lines`` joined by newlines, and where each starts."""
    starts: list[int] = []
    at = 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return "\n".join(lines), starts


def excerpt(line: str, token: str) -> str:
    """``token`` with the words around it on ``line``, at most :data:`EXCERPT_BYTES`
    (the token alone when it is longer), cut between words."""
    line = " ".join(line.split())
    if utf8_len(line) <= EXCERPT_BYTES:
        return line
    at = line.find(token)
    if at < 0 or utf8_len(token) >= EXCERPT_BYTES:
        return token
    room = EXCERPT_BYTES - utf8_len(token)
    before = line[max(0, at - (room * 2) // 3) : at]
    if " " in before and at - len(before) > 0:
        before = before[before.index(" ") + 1 :]
    after_room = room - utf8_len(before)
    after = line[at + len(token) : at + len(token) + max(0, after_room)]
    if " " in after and at + len(token) + len(after) < len(line):
        after = after[: after.rindex(" ")]
    text = (before + token + after).strip()
    while utf8_len(text) > EXCERPT_BYTES:
        text = text[:-1]
    return text
