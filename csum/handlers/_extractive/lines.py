"""The scored lines of one text (a tool result, an answer, a request)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import regex

from csum.handlers._extractive.features import (
    _compact_answer_line,
    _log_message,
    _routine_score,
    _score,
)
from csum.handlers._extractive.reading import (
    _cleaned,
    _Field,
    _field_lines,
    _json_fields,
    _place_first,
    _read_text,
    _Text,
    _Unit,
)
from csum.handlers._extractive.rendering import _Line
from csum.handlers._extractive.runs import strip_colours
from csum.handlers._extractive.text import (
    _ERROR,
    _NUMBERED,
    _identifier_spans,
    _shorten_paths,
    _window,
)
from csum.handlers._extractive.weights import (
    _CHECK_EVERY,
    _COMPACT_SHARE,
    _EMPTY_EDGE_SCORE,
    _FILLER_SCORE,
    _LINE_SCAN,
    _LINE_WINDOW,
    _PATH_WEIGHTS,
    WEIGHTS,
)

_ERROR_LINE = 6.0  # a line scoring this with an error signal is an error (context below)
_LOCATION_ABOVE = 2  # lines above an error looked at for its place (a path with a line)
_SAME_START = 32  # characters two lines share at their start to count as one repeated

_EXIT_STATUS = regex.compile(
    r"(?i)\W{0,6}+exit(?:ed)?+[ ](?:with[ ])?+(?:code|status)[ ]?+\d{1,4}+\W{0,6}+"
)
_WORDS = regex.compile(r"\w++")


def _body_lines(
    content: str,
    block: int,
    check: Callable[[], None],
    *,
    tool: bool,
    width: int,
    said: frozenset[str] = frozenset(),
    compact: bool = False,
) -> Iterator[_Line]:
    """A text's scored lines; ``said``: pairs the call line shows; ``compact``: short forms."""
    if tool:
        content = strip_colours(content)
    documents: list[str] = []
    fields = _json_fields(content, said, documents) if tool else None
    if fields is not None:
        yield from _json_lines(fields, documents, block, check, width)
        return
    text = _read_text(content, check, tool=tool, width=width)
    scorer = _Scorer(text, block, width=width, compact=compact)
    seen: set[str] = set()
    for order, original in enumerate(text.raw):
        if order % _CHECK_EVERY == 0:
            check()
        scorer.see(original[: 4 * _LINE_SCAN])
        unit = _cleaned(order, original, text)
        if unit is None or unit.line in seen:
            continue
        seen.add(unit.line)
        yield scorer.line(unit)


def _json_lines(
    fields: list[_Field], documents: list[str], block: int, check: Callable[[], None], width: int
) -> Iterator[_Line]:
    """A JSON result's fields, then the lines of the documents inside it."""
    yield from _field_lines(fields, block, check, width)
    after = len(fields)
    for document in documents:
        read = list(_body_lines(document, block, check, tool=True, width=width))
        for piece in read:
            piece.order += after
            yield piece
        after += len(read) + 1


class _Scorer:
    """Scores a text's units in order: what each line says, then what the lines around add."""

    def __init__(self, text: _Text, block: int, *, width: int, compact: bool) -> None:
        self.text, self.block, self.width = text, block, width
        self.compact = compact
        self.named: dict[str, int] = {}  # identifiers seen so far, and how often
        self.shapes: dict[str, int] = {}
        self.after_error = 0.0
        self.above: list[_Line] = []  # the last lines scored, for an error's place above
        self.opens = True  # whether the next line opens a section (after a blank line)
        self.opening = False
        self.last = len(text.raw) - 1

    def see(self, line: str) -> None:
        """Every unit, kept or not: whether it opens a section."""
        self.opening, self.opens = self.opens, opens_section(line)

    def line(self, unit: _Unit) -> _Line:
        """The scored line of a unit that the clean-ups kept and that is no repeat."""
        score = _line_features(unit, self.text, self.named)
        score = self._context(unit, score)
        score, placed = self._placed(unit, score)
        item = self._item(unit, score, placed)
        self.above = [*self.above[1 - _LOCATION_ABOVE :], item] if _LOCATION_ABOVE > 1 else [item]
        return item

    def _context(self, unit: _Unit, score: float) -> float:
        """What the lines above add: an error's context below it, fading, and its place above."""
        text, line = self.text, unit.line
        listed = _is_listed(unit, text)
        if score >= _ERROR_LINE and not listed and _ERROR.search(line[:_LINE_SCAN]):
            # An exit status alone ("Exit code 2") says how it ended, not what follows.
            self.after_error = 0 if _EXIT_STATUS.fullmatch(line[:80]) else WEIGHTS["error_context"]
            if text.tool:
                _locate_error(self.above)
        elif self.after_error and len(line) <= _LINE_WINDOW:
            score += self.after_error
            self.after_error -= 1
        else:
            self.after_error = 0.0
        return score

    def _placed(self, unit: _Unit, score: float) -> tuple[float, bool]:
        """The score with its shape's repeats and its place (first, last lines); whether placed."""
        order, line, mark = unit.order, unit.line, unit.mark
        edge = not self.text.listing and (order < 2 or order >= self.last - 1)
        # Repeated shapes (the same line but for its numbers) are worth less each time.
        shape = _WORDS.sub("w", line[:120])
        repeats = self.shapes.get(shape, 0)
        self.shapes[shape] = repeats + 1
        # A progress line printed again with its status ("Opening connection to h:
        # Trying", then ": Done"): the same start as an earlier line.
        start = "\0" + line[:_SAME_START] if len(line) > _SAME_START else ""
        if start:
            repeats = max(repeats, self.shapes.get(start, 0))
            self.shapes[start] = self.shapes.get(start, 0) + 1
        if mark is None or not mark.distinct:
            score /= 1 + repeats / 2
        if score > 0:
            if mark is None or not mark.placeless:
                return score + (WEIGHTS["edge"] if edge else 0.0) + WEIGHTS["early"] / (
                    1 + order / 10
                ), True
            return score, False
        # A line with nothing in it is kept only when room is left (an edge line
        # first), so that the budget is used.
        return (_EMPTY_EDGE_SCORE if edge else _FILLER_SCORE / (1 + order / 100)), False

    def _item(self, unit: _Unit, score: float, placed: bool) -> _Line:
        """The line as shown: place first, paths shortened, windowed, compact when asked."""
        line, width = unit.line, self.width
        if unit.order in self.text.places:
            line = _place_first(line, self.text.places[unit.order])
        text = _shorten_paths(line, width)
        if placed and self.opening and unit.order and len(text) <= width:
            # A section's first line says what it is about (a format-free prior), when
            # it is shown whole: a window of it may have left out what it was about.
            score += WEIGHTS["section"]
        item = _Line(self.block, unit.order, _window(text, width), score)
        if unit.mark is not None:
            item.group = unit.mark.group
        if self.compact and len(text) > _COMPACT_SHARE * width:
            # An answer's long sentence by its clauses that carry something (its
            # identifiers, numbers, causes and constraints): more of them fit. Its
            # whole form comes back if room is left.
            short = _window(_compact_answer_line(text), width)
            if short != item.text:
                item.text, item.whole = short, item.text
        return item


def _line_features(unit: _Unit, text: _Text, named: dict[str, int]) -> float:
    """What a line says whatever is around it: its score, its mark, a log's due, its rank."""
    line, mark = unit.line, unit.mark
    scored = _log_message(line) if unit.routine else line
    code = _is_listed(unit, text)
    score = _score(scored, listing=code, diff=text.diff, prose=not text.tool, named=named)
    if mark is not None:
        score = max(0.0, score + mark.bonus)
    if unit.routine:
        score = _routine_score(scored, score)
    rank = text.ranks.get(unit.original)
    if rank is not None:
        score += WEIGHTS["rank"] / (1 + rank)
    return score


def _is_listed(unit: _Unit, text: _Text) -> bool:
    """Whether a unit is a numbered line of a file listing (the tool's own words are not)."""
    return text.listing and _NUMBERED.match(unit.original) is not None


def _locate_error(above: list[_Line]) -> None:
    """The lines just above an error naming a place (``a_test.exs:142``) rank up with it."""
    for line in above:
        if any(weight == _PATH_WEIGHTS[2] for _, _, weight in _identifier_spans(line.text)):
            line.score += WEIGHTS["error_context"]


def opens_section(line: str) -> bool:
    """Whether the line after ``line`` opens a section: ``line`` is blank or a heading."""
    text = line.strip()
    return not text or text.startswith("#")
