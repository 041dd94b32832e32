"""What a line says, as scores: the signals of its kind, its place in a listing, a log's
routine lines."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

import regex

from csum.handlers._extractive.code_tools import declares_dependency
from csum.handlers._extractive.results import is_relevance_score
from csum.handlers._extractive.text import (
    _CONSTRAINT,
    _COUNTS,
    _ERROR,
    _NUMBERED,
    _UNIT,
    _cached_weight,
    _identifiers,
)
from csum.handlers._extractive.weights import _EMPTY_FIELD, _IDENT_CAP, _LINE_SCAN, WEIGHTS

_BOOL_FIELD = 0.8  # weight of a JSON field holding true or false
_CACHED_LINE = 400  # lines up to this long have their signals cached
_PROSE_SHARE = 0.8  # share of letters and spaces from which a tool's line reads as prose

# A word every match of _ERROR holds: a line without one is not read by _ERROR.
_ERROR_NEEDS = regex.compile(
    r"(?i:fail|error|fatal|panic|exception|exit|interrupt|fault|\*\*[ ]\(|assertion"
    r"|not[ ]found|denied|timed[ ]out|timeout|no[ ]such[ ]file|refused|could[ ]not|unable[ ]to)"
)
# A line that says it is a warning ("Warning: could not open the cache"): not an error.
_WARNING = regex.compile(r"\W{0,6}+(?i:warn(?:ing)?+)\b")
_OUTCOME = regex.compile(r"(?i)\b(?:passed|passing|failed|failing|failures?|errors?|skipped)\b")
_CODE_LINE = regex.compile(
    r"""
    ^\s{0,40}(?:def|class|import|from|return|const|let|var|function|fn|pub|if|elif|else
        |for|while|try|except|catch|case|switch|defp?|defmodule|end|@\w+|\#include)\b
  | ^\s{0,40}[.#][\w-]{1,60}[ ]?\{
  | ^\s{0,40}[\w-]{1,40}:[ ][^;]{0,200};\s*$
  | [{;]\s*$
    """,
    regex.VERBOSE,
)
_DIFF_LINE = regex.compile(r"^(?:@@[ ]-\d|[+-](?![+-]{2}[ ])\S?)")
_DIFF_FILE = regex.compile(r"^\+\+\+[ ](?!/dev/null)")  # "+++ b/src/a.py": the file changed
_DIFF_NOISE = regex.compile(r"^(?:diff[ ]--git[ ]|---[ ]|index[ ][0-9a-f]{4,40}+\.\.)")
_PIN = regex.compile(  # numpy==1.26.4, left-pad@1.3.0, serde 1.0.197, "Python 3.11.7"
    r"(?<![\w.-])[A-Za-z][\w.-]{0,80}+(?:(?:==|>=|<=|~=|!=|=|@)v?+\d++(?:\.\d++)++"
    r"|[ ]v?+\d++\.\d++\.\d++(?![.\d]))"  # three parts: "Trying 10.0.0.7" is an address
)
_MEASURED = regex.compile(  # a number with a unit of time, size, share or rate
    r"(?i:\b\d+(?:[.,]\d+)?+[ ]?(?:ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hours?"
    r"|[KMGT]i?B|bytes|%|req/s|ops/s|rps|qps|tok/s|tokens/s)(?![\w/]))"
)
_MEASURE_NAME = regex.compile(  # ... in a line that says it is a measurement of something
    r"(?i:\b(?:measured|latency|throughput|p\d{2}|peak|average|mean|median|rss|usage"
    r"|benchmark(?:ed)?)\b)"
)
# What every match of the pattern below holds, looked for first (the same result, sooner).
_PIN_NEEDS = regex.compile(r"\d\.\d")  # each of _PIN's versions has two parts at least
_LOCATED_NEEDS = regex.compile(r"(?i:line[ ]\d)")  # both of _LOCATED's forms say it
_LOCATED = regex.compile(  # "line 12 of src/a.py", "config.yaml, line 3", "a.py at line 7"
    r"(?i:\bline[ ]\d{1,7}[ ](?:of|in)[ ][\w./\\-]{1,200}\.\w{1,8}\b"
    r"|[\w./\\-]{1,200}\.\w{1,8},?[ ](?:at[ ])?line[ ]\d{1,7}\b)"
)
_ROUTINE_LOG = regex.compile(  # "2024-05-02 14:03 INFO", "12:00:01.5 [debug]", "[INFO] "
    r"^\W{0,4}(?:(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?+)?+)?+"
    r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?+)(?:Z|[+-]\d{2}:?\d{2})?+\]?[ ]{1,4}+"
    r"\[?(?i:info|debug|trace|notice|verbose)\]?:?(?:[ ]|$)"
    r"|\[(?:INFO|DEBUG|TRACE|NOTICE)\][ ]|(?:INFO|DEBUG|TRACE):[ ])"
)


def _score(
    line: str,
    *,
    listing: bool,
    diff: bool,
    prose: bool = False,
    named: dict[str, int] | None = None,
    routine: bool = False,
) -> float:
    """How much a line is worth keeping: its identifiers (less for names said), then its kind."""
    if routine and (match := _ROUTINE_LOG.match(line[:_LINE_SCAN])) is not None:
        line = line[match.end() :]  # its time and level: the clock's numbers count no tests
    scan = line[:_LINE_SCAN]
    score = min(_IDENT_CAP, WEIGHTS["identifier"] * _identifiers(scan, named))
    signals = _cached_signals if len(scan) <= _CACHED_LINE else _line_signals
    verdict, earned = signals(scan, listing, diff, prose)
    score = verdict if verdict is not None else score + earned
    return _routine_score(scan, score) if routine else score


class LineKind(NamedTuple):
    """What the caller knows of a line: an answer's (prose), code (a listing's), a diff's."""

    prose: bool
    code: bool
    diff: bool


LineFeature = Callable[[str, LineKind], bool]
"""A line feature: whether a line (its first :data:`_LINE_SCAN` characters) shows the
signal; what that is worth is its weight in :data:`WEIGHTS`, what it rewards in ``WHAT``."""

LINE_FEATURES: dict[str, LineFeature] = {
    "diff_hunk": lambda scan, kind: (
        kind.diff and scan.startswith("@@") and _DIFF_LINE.match(scan) is not None
    ),
    "diff_added": lambda scan, kind: (
        kind.diff and scan.startswith("+") and _DIFF_LINE.match(scan) is not None
    ),
    "error": lambda scan, kind: (
        not kind.code
        and not _WARNING.match(scan)
        and _ERROR_NEEDS.search(scan) is not None
        and _ERROR.search(scan) is not None
    ),
    # In an answer, a count of an outcome only.
    "counts": lambda scan, kind: (
        _COUNTS.search(scan) is not None and (not kind.prose or _OUTCOME.search(scan) is not None)
    ),
    "constraint": lambda scan, kind: not kind.code and _CONSTRAINT.search(scan) is not None,
    "pin": lambda scan, kind: (
        (_PIN_NEEDS.search(scan) is not None and _PIN.search(scan) is not None)
        or declares_dependency(scan)
    ),
    "measurement": lambda scan, kind: (
        _MEASURE_NAME.search(scan) is not None and _MEASURED.search(scan) is not None
    ),
    "located": lambda scan, kind: (
        _LOCATED_NEEDS.search(scan) is not None and _LOCATED.search(scan) is not None
    ),
}
"""The line features by name, in the order they are read."""


def _line_signals(scan: str, listing: bool, diff: bool, prose: bool) -> tuple[float | None, float]:
    """(the whole score when a line's kind alone says it, else None; what its features add)."""
    if diff:
        if _DIFF_FILE.match(scan):
            return WEIGHTS["diff_file"], 0.0  # which file a hunk changes: said once, here
        if _DIFF_NOISE.match(scan):
            return 0.0, 0.0  # the same file again, or blob hashes
    kind = LineKind(prose, listing or bool(_CODE_LINE.search(scan)), diff)
    return None, sum(
        WEIGHTS[name] for name, present in LINE_FEATURES.items() if present(scan, kind)
    )


# Lines recur (a summary summarized again, a log): short ones' signals are cached.
_cached_signals = lru_cache(maxsize=4096)(_line_signals)


def clear_caches() -> None:
    """Forget the cached token classes and line signals (after a weight changed)."""
    _cached_signals.cache_clear()
    _cached_weight.cache_clear()


def _is_routine_log(line: str) -> bool:
    """Whether ``line`` is a log line at a routine level (INFO, DEBUG, TRACE...)."""
    return _ROUTINE_LOG.match(line[:_LINE_SCAN]) is not None


def _routine_score(scan: str, score: float) -> float:
    """A routine log line's score without what its numbers with units and class features earned."""
    found = _identifiers(scan)
    numbers = len(_UNIT.findall(scan, endpos=_LINE_SCAN))
    weight = WEIGHTS["identifier"]
    earned = min(_IDENT_CAP, weight * found) - min(_IDENT_CAP, weight * (found - numbers))
    kind = LineKind(prose=False, code=False, diff=False)
    classes = ("pin", "measurement", "located")
    bonus = sum(WEIGHTS[name] for name in classes if LINE_FEATURES[name](scan, kind))
    return max(0.0, score - earned - bonus)


def _field_weight(key: str, value: object) -> float:
    """How much a field says: least for null, empty or a relevance score; less for a bool."""
    if value is None or value in ("", [], {}) or is_relevance_score(key, value):
        return _EMPTY_FIELD
    return _BOOL_FIELD if isinstance(value, bool) else 1.0


def _is_prose(line: str) -> bool:
    """Whether a line reads as prose: mostly letters and spaces, not numbered, not code."""
    scan = line[:_LINE_SCAN]
    if _NUMBERED.match(scan) or _CODE_LINE.search(scan):
        return False
    wordy = sum(1 for c in scan if c.isalpha() or c == " ")
    return wordy >= _PROSE_SHARE * len(scan)
