"""What a line says, as scores: the signals of its kind, its place in a listing, a log's
routine lines."""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise

from csum.handlers._extractive.code_tools import (
    declares_dependency,
    focus_bonus,
)
from csum.handlers._extractive.patterns import (
    _AMOUNT_KEY,
    _CAUSE,
    _CODE_LINE,
    _CONSTRAINT,
    _COUNTS,
    _DATE,
    _DEFINITION,
    _DIFF_FILE,
    _DIFF_LINE,
    _DIFF_NOISE,
    _ERROR,
    _ID_KEY,
    _LOCATED,
    _MEASURE_NAME,
    _MEASURED,
    _NUMBERED,
    _OUTCOME,
    _PIN,
    _ROUTINE_LOG,
    _TIME_KEY,
    _UNIT,
    _WARNING,
    _WORD_VALUE,
)
from csum.handlers._extractive.prose import compact_prose
from csum.handlers._extractive.results import (
    is_contact,
    is_relevance_score,
    title_bonus,
)
from csum.handlers._extractive.runs import (
    braced_value_bonus,
    failure_header_bonus,
    refusal_bonus,
    total_row_bonus,
)
from csum.handlers._extractive.text import _scalar_or_json
from csum.handlers._extractive.tokens import _identifier_spans, _identifiers
from csum.handlers._extractive.weights import (
    _CACHED_LINE,
    _CLASS_BONUS,
    _DEFINITION_BONUS,
    _EMPTY_FIELD,
    _ERROR_SCORE,
    _IDENT_CAP,
    _IDENT_WEIGHT,
    _JSON_LINE,
    _LINE_SCAN,
    _LISTING_EDGE_BONUS,
    _PROSE_SHARE,
    _RISING_SHARE,
    _TOKEN_CAP,
    _WRITTEN_BONUS,
)


def _score(
    line: str,
    *,
    listing: bool,
    diff: bool,
    prose: bool = False,
    named: dict[str, int] | None = None,
) -> float:
    """How much a line is worth keeping (0: not at all): what its identifiers are worth
    (less for names said above, with ``named``), then what its kind earns."""
    scan = line[:_LINE_SCAN]
    score = min(_IDENT_CAP, _IDENT_WEIGHT * _identifiers(scan, named))
    signals = _cached_signals if len(scan) <= _CACHED_LINE else _line_signals
    verdict, earned = signals(scan, listing, diff, prose)
    return verdict if verdict is not None else score + earned


def _line_signals(scan: str, listing: bool, diff: bool, prose: bool) -> tuple[float | None, float]:
    """What a line's kind earns, apart from its identifiers: (the whole score when its
    kind alone says it, else None; what it adds to its identifiers' score)."""
    earned = 0.0
    if diff:
        if _DIFF_FILE.match(scan):
            return 9.0, 0.0  # which file a hunk changes: said once, by this line
        if _DIFF_NOISE.match(scan):
            return 0.0, 0.0  # the same file again, or blob hashes
        if _DIFF_LINE.match(scan):
            # The hunk's place, then what it adds (the new code), then what it removes.
            earned += 4.0 if scan.startswith("@@") else 3.5 if scan.startswith("+") else 2.0
    code = listing or bool(_CODE_LINE.search(scan))
    if not code and not _WARNING.match(scan) and _ERROR.search(scan):
        earned += _ERROR_SCORE
    if _COUNTS.search(scan):
        # In an answer, "3 tests added" counts work done; what was run and how it went
        # ("297 passed, 0 failures") is a result, as in any tool output.
        earned += 5.0 if not prose or _OUTCOME.search(scan) else 3.0
    if _CONSTRAINT.search(scan) and not code:
        earned += 4.0
    if _CAUSE.search(scan):
        earned += 2.0
    return None, earned + _class_bonus(scan) + _run_bonus(scan, code=code)


# Lines recur (a summary's lines when it is summarized again, a log's repeated lines):
# short ones have their signals cached, at most 4,096 of them (about two megabytes).
_cached_signals = lru_cache(maxsize=4096)(_line_signals)


def _run_bonus(scan: str, *, code: bool) -> float:
    """Score a command's line earns by its kind (:mod:`._extractive_runs`); a refusal
    only outside code (``raise ValueError("invalid id")`` is code, not an outcome)."""
    bonus = braced_value_bonus(scan) + failure_header_bonus(scan) + total_row_bonus(scan)
    return bonus if code else bonus + refusal_bonus(scan)


def _class_bonus(scan: str) -> float:
    """Score a line earns by its kind: a package pinned to a version, a measurement
    with its name, a place given in words (``line 12 of src/a.py``)."""
    bonus = 0.0
    if _PIN.search(scan) or declares_dependency(scan):
        bonus += _CLASS_BONUS
    if _MEASURED.search(scan) and _MEASURE_NAME.search(scan):
        bonus += _CLASS_BONUS
    if _LOCATED.search(scan):
        bonus += _CLASS_BONUS
    return bonus


def _is_routine_log(line: str) -> bool:
    """Whether ``line`` is a log line at a routine level (INFO, DEBUG, TRACE...)."""
    return _ROUTINE_LOG.match(line[:_LINE_SCAN]) is not None


def _log_message(line: str) -> str:
    """A routine log line without its time and level (scored on what it says: the
    clock's numbers are no count of tests)."""
    match = _ROUTINE_LOG.match(line[:_LINE_SCAN])
    return line if match is None else line[match.end() :]


def _routine_score(line: str, score: float) -> float:
    """A routine log line's score without what its numbers with units earned: timings
    and counts are what such lines always print. What it names (a migration, a
    module), an error, a test count or a constraint in it still counts."""
    scan = line[:_LINE_SCAN]
    found = _identifiers(scan)
    numbers = len(_UNIT.findall(scan, endpos=_LINE_SCAN))
    earned = min(_IDENT_CAP, _IDENT_WEIGHT * found) - min(
        _IDENT_CAP, _IDENT_WEIGHT * (found - numbers)
    )
    return max(0.0, score - earned - _class_bonus(scan))


def _field_weight(key: str, value: object) -> float:
    """How much a field says: identifiers and codes most, then what a key marks as an id,
    a name, a state or an amount; timestamps and empty values least."""
    if value is None or value in ("", [], {}) or is_relevance_score(key, value):
        return _EMPTY_FIELD  # nothing, or a search hit's relevance (its place says it)
    key = key[:_TOKEN_CAP]
    text = value if isinstance(value, str) else _scalar_or_json(value)
    weight = 1.0
    if isinstance(value, bool):
        weight = 0.8
    elif isinstance(value, int | float):
        if _AMOUNT_KEY.search(key):
            weight += 1.5
    elif _DATE.match(text):
        weight += 1.0
    elif _has_digit_and_letter(text[:_TOKEN_CAP]) and not is_contact(key, text):
        weight += 2.0  # an id or a code: user_42, ORD7731QX, K9QX2Z
    elif _WORD_VALUE.fullmatch(text):
        weight += 1.0  # a state or a choice: active, economy, yes
    if _ID_KEY.search(key):
        weight += 1.0
    weight += title_bonus(key)
    if _TIME_KEY.search(key):
        weight -= 1.0  # when a record was made says little about what it is
    if len(text) > _JSON_LINE:
        weight -= 0.5  # prose: said better by the fields around it
    if _ERROR.search(text[:_LINE_SCAN]):
        weight += 3.0
    return max(0.2, weight)


def _has_digit_and_letter(text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _is_prose(line: str) -> bool:
    """Whether a line reads as prose: mostly letters and spaces, not numbered, not code."""
    scan = line[:_LINE_SCAN]
    if _NUMBERED.match(scan) or _CODE_LINE.search(scan):
        return False
    wordy = sum(1 for c in scan if c.isalpha() or c == " ")
    return wordy >= _PROSE_SHARE * len(scan)


def _compact_answer_line(line: str) -> str:
    """An answer's line in its compact form (:func:`compact_prose`), unless it reports
    an error: an error keeps its whole message."""
    if _ERROR.search(line[:_LINE_SCAN]):
        return line
    return compact_prose(line[: 4 * _LINE_SCAN], _identifier_spans)


def _numbered_span(raw: list[str]) -> tuple[int, int] | None:
    """The first and last numbered line of a file listing, whose numbers rise line by
    line; None when they do not (clock times ``16:45:25`` opening log lines look
    numbered too, and are no file)."""
    orders: list[int] = []
    numbers: list[int] = []
    for order, line in enumerate(raw):
        match = _NUMBERED.match(line)
        if match is not None:
            orders.append(order)
            numbers.append(int(line[: match.end()].strip(" \t→:")))
    rising = sum(1 for a, b in pairwise(numbers) if b > a)
    if not orders or rising < _RISING_SHARE * (len(numbers) - 1):
        return None
    return orders[0], orders[-1]


def _listing_bonus(
    line: str,
    order: int,
    numbered_span: tuple[int, int],
    written: frozenset[str],
    focus: int | None = None,
) -> float:
    """What a line of a numbered file listing (a read, an edit's echo) is worth beyond
    its identifiers: its definitions say what the file holds, the lines the call wrote
    what it changed, and the unnumbered lines before and after the numbered ones
    (``numbered_span``: the first and last numbered line) which file it is and how the
    tool ended (``[File: a.py (23 lines total)]``, ``Edit applied.``), fading from the
    output's start and from the listing's end; and the lines near the one the call
    asked to see (``focus``, :func:`focus_bonus`)."""
    numbered = _NUMBERED.match(line)
    if numbered is None:
        first, last = numbered_span
        distance = order if order < first else order - last - 1
        return _LISTING_EDGE_BONUS / (1 + distance) if distance >= 0 else 0.0
    body = line[numbered.end() : numbered.end() + _LINE_SCAN]
    bonus = _DEFINITION_BONUS if _DEFINITION.match(body) else 0.0
    if written and body.strip() in written:
        bonus += _WRITTEN_BONUS
    if focus is not None:
        bonus += focus_bonus(line[: numbered.end()], focus)
    return bonus
