"""Identifiers in a line: paths, versions, codes, ids, URLs, and what each is worth."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from csum.handlers._extractive.patterns import (
    _BACKTICKED,
    _CAMEL,
    _CODE,
    _EXCEPTION_NAME,
    _HEX,
    _ID,
    _NAME,
    _TOKEN,
    _TRAIL,
    _UNIT,
    _VERSION,
)
from csum.handlers._extractive.weights import (
    _CACHED_TOKEN,
    _LINE_SCAN,
    _PATH_WEIGHTS,
    _TOKEN_CAP,
    WEIGHTS,
)


def _identifiers(line: str, named: dict[str, int] | None = None) -> float:
    """How many identifiers the line holds (paths, versions, codes, ids, URLs...); with
    ``named`` (how often each was seen in the lines above), a name said again counts
    less each time (a column list repeated, the same host on every line)."""
    if named is None:
        found: float = sum(weight for _, _, weight in _identifier_spans(line))
    else:
        found = 0.0
        for start, end, weight in _identifier_spans(line):
            token = line[start:end]
            seen = named.get(token, 0)
            named[token] = seen + 1
            found += weight / (1 + seen * WEIGHTS["name_repeat"])
    if line.find("`", 0, _LINE_SCAN) != -1:  # every quoted name starts with one
        found += len(_BACKTICKED.findall(line, endpos=_LINE_SCAN))
    return found + len(_UNIT.findall(line, endpos=_LINE_SCAN))


def _identifier_spans(line: str) -> Iterator[tuple[int, int, int]]:
    """Where the line's identifiers are: (start, end, weight), a path with a line
    number weighing 3 (where to look next)."""
    for match in _TOKEN.finditer(line, endpos=_LINE_SCAN):
        token = match.group()
        weight = _cached_weight(token) if len(token) <= _CACHED_TOKEN else _token_weight(token)
        if weight:
            yield match.start(), match.end(), weight


def _token_weight(raw: str) -> int:
    """A token's weight as an identifier (0: none; see :func:`_identifier_spans`)."""
    token = raw.strip(_TRAIL)
    if len(token) < 3 or len(token) > _TOKEN_CAP:
        return 0
    kind = _path_kind(token)
    if kind:
        return _PATH_WEIGHTS[kind]
    # Each pattern is tried only on a token holding what all its matches hold (a version's
    # dot, a code's length, an id's separator, an exception's word): the same answer.
    identifier = (
        "://" in token
        or "=" in token[1:]
        or ("." in token and _VERSION.fullmatch(token))
        or (5 <= len(token) <= 10 and _CODE.fullmatch(token))
        or _HEX.fullmatch(token)
        or (_separated(token) and _ID.fullmatch(token) and _digit_or_underscore(token))
        or (_names_exception(token) and _EXCEPTION_NAME.fullmatch(token))
        or _NAME.fullmatch(token)
        or (not token.islower() and not token.isupper() and _CAMEL.fullmatch(token))
    )
    return 1 if identifier else 0


def _separated(token: str) -> bool:
    """What every _ID match holds: a separator."""
    return "_" in token or "." in token or "-" in token


def _names_exception(token: str) -> bool:
    """What every _EXCEPTION_NAME match holds: one of its words."""
    return (
        "Error" in token
        or "Exception" in token
        or "Exit" in token
        or "Interrupt" in token
        or "Fault" in token
    )


def _digit_or_underscore(token: str) -> bool:
    return "_" in token or any(c.isdigit() for c in token)


# Tokens recur (a name on many lines, a summary summarized again): short ones are
# classified once; the cache holds at most 8192 of them (under a megabyte).
_cached_weight = lru_cache(maxsize=8192)(_token_weight)


def _path_kind(token: str) -> int:
    """0: not a path; 1: a path; 2: a path with a line (``src/a.py:12``,
    ``lib/x.ex:12:5:pattern``)."""
    head, _, rest = token.partition(":")
    if len(head) == 1 and rest.startswith("\\"):  # C:\dir\file
        head, _, rest = rest.partition(":")
        head = token[:2] + head
    with_line = rest[:1].isdigit() and rest.split(":", 1)[0].isdigit()
    if "/" not in head and "\\" not in head:
        last = head.rsplit(".", 1)
        named = len(last) == 2 and last[1].isalnum() and 0 < len(last[1]) <= 8
        return 2 if named and with_line and last[0] else 0
    if head.startswith(("/", "~/", "./", "../")):
        plain = len(head) > 1
    else:
        plain = head.count("/") >= 2 or "." in head.rsplit("/", 1)[-1]
    if not plain:
        return 0
    return 2 if with_line else 1
