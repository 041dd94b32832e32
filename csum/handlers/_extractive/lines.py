"""The scored lines of one text (a tool result, an answer, a request)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from csum.handlers._extractive.code_tools import (
    CodeMark,
    code_lines,
)
from csum.handlers._extractive.features import (
    _compact_answer_line,
    _is_routine_log,
    _listing_bonus,
    _log_message,
    _numbered_span,
    _routine_score,
    _score,
)
from csum.handlers._extractive.fields import _field_lines, _json_fields, _literal_fields
from csum.handlers._extractive.patterns import (
    _BARE_TAG,
    _EMPTY_NUMBERED,
    _ERROR,
    _EXCEPTION_NAME,
    _EXIT_STATUS,
    _FRAME,
    _HOME,
    _LOG_PREFIX,
    _MARKDOWN,
    _NUMBERED,
    _PENDING,
    _UNDERSCORE_BOLD,
    _WORDS,
)
from csum.handlers._extractive.prose import is_fence, plain_links
from csum.handlers._extractive.reading import (
    _hunk_header,
    _place_first,
    _record_text,
    _reshape,
    _sentences,
    _split_lines,
    _two_line_records,
    _undecorated,
)
from csum.handlers._extractive.results import (
    labelled_records,
    literal_records,
)
from csum.handlers._extractive.runs import (
    drop_zero_counts,
    echoed_command_bonus,
    strip_banner,
    strip_colours,
)
from csum.handlers._extractive.salience import SECTION_BONUS, opens_section
from csum.handlers._extractive.text import _one_line, _shorten_paths, _window
from csum.handlers._extractive.tokens import _identifier_spans
from csum.handlers._extractive.units import _Line
from csum.handlers._extractive.weights import (
    _CHECK_EVERY,
    _COMPACT_SHARE,
    _EARLY_BONUS,
    _EDGE_BONUS,
    _EMPTY_EDGE_SCORE,
    _ERROR_CONTEXT,
    _ERROR_SCORE,
    _FILLER_SCORE,
    _LINE_SCAN,
    _LINE_WINDOW,
    _LOCATION_ABOVE,
    _PATH_WEIGHTS,
    _PENDING_LINES,
    _PENDING_SCORE,
    _RANK_BONUS,
    _RECORD_BONUS,
    _SAME_START,
)


def _body_lines(
    content: str,
    block: int,
    check: Callable[[], None],
    *,
    tool: bool,
    width: int,
    said: frozenset[str] = frozenset(),
    written: frozenset[str] = frozenset(),
    focus: int | None = None,
    compact: bool = False,
) -> Iterator[_Line]:
    """The scored lines of one text (a tool result, an answer, a request); ``said``:
    ``key=value`` pairs the call line already shows; ``written``: lines the call wrote;
    ``compact``: long lines in their compact form (:func:`_compact_answer_line`)."""
    if tool:
        content = strip_colours(content)
    documents: list[str] = []
    fields = _json_fields(content, said, documents) if tool else None
    if fields is not None:
        yield from _field_lines(fields, block, check, width)
        # A page or a file inside the JSON: its lines, scored as a tool's output's are.
        after = len(fields)
        for document in documents:
            read = list(_body_lines(document, block, check, tool=True, width=width))
            for piece in read:
                piece.order += after
                yield piece
            after += len(read) + 1
        return
    raw = _split_lines(content)
    listing = False
    diff = False
    ranks: dict[str, int] = {}  # a record's place in its list
    marks: dict[str, CodeMark] = {}  # what the code tools' rules say of a line
    if not tool:
        raw = _sentences(raw)
    else:
        listing = sum(1 for line in raw[:50] if _NUMBERED.match(line)) >= min(5, len(raw))
        diff = any(line.startswith(("@@ -", "diff --git")) for line in raw[:200])
        raw, marks = code_lines(raw)
        if not diff:
            # A tool's prose (an agent's report, a fetched page, a tool's closing
            # advice) is split into sentences as an answer is; its code, logs and
            # listings are not (their lines are units already).
            raw = _sentences(literal_records(raw, _literal_fields), prose_only=True)
            raw = labelled_records(raw, ranks)
        if not diff and not listing:
            raw = _reshape(raw, ranks)
    places: dict[int, str] = {}  # a message's place, from the line below it
    numbered_span = _numbered_span(raw) if listing else None
    if tool and not listing and not diff:
        raw = _two_line_records(raw, check, width, places)
    seen: dict[str, int] = {}
    shapes: dict[str, int] = {}
    frame = ""
    after_error = 0
    above: list[_Line] = []  # the last lines yielded, for an error's location above it
    named: dict[str, int] = {}  # identifiers seen so far, and how often
    pending = 0
    last = len(raw) - 1
    opens = True  # whether the next line opens a section (after a blank line, a heading)
    for order, original in enumerate(raw):
        if order % _CHECK_EVERY == 0:
            check()
        line = original[: 4 * _LINE_SCAN]
        opening, opens = opens, opens_section(line)
        # What is still to do ("Next steps", "remaining tasks") is what the agent needs
        # next: a line saying so and the lines listed below it rank up, until a heading.
        if _PENDING.search(line[:_LINE_SCAN]):
            pending = _PENDING_LINES
        elif line.lstrip().startswith("#"):
            pending = 0
        if not tool:
            if is_fence(line):
                continue  # a code block's fence ("```python"): it says nothing
            # Markdown's marks, and its links as their url ("[a.com](https://a.com/x)").
            line = plain_links(_UNDERSCORE_BOLD.sub(r"\1", _MARKDOWN.sub("", line)))
        mark = marks.get(original)
        bare = _undecorated(line)
        routine = _is_routine_log(bare) and not (mark and mark.news)
        record = _record_text(line)
        if record is not None:
            line = record
            bare = _undecorated(line)
        line = _one_line(bare)
        if line[:1].isdigit():
            line = _LOG_PREFIX.sub("", line, count=1)
        if "/home/" in line or "/Users/" in line:
            line = _HOME.sub("~/", line)
        if tool and not diff:
            line = drop_zero_counts(strip_banner(line))
        if len(line) < 2 or not any(c.isalnum() for c in line[:200]):
            continue
        if line[0] == "<" and not any(c.isalnum() for c in _BARE_TAG.sub("", line[:200])):
            continue  # markup alone ("</output>"): it says nothing
        if listing and len(line) <= 12 and _EMPTY_NUMBERED.fullmatch(line):
            continue  # a file's empty line: its number alone
        if diff and line.startswith("@@"):
            line = _hunk_header(line)
        if seen.get(line):
            continue
        seen[line] = 1
        scored = _log_message(line) if routine else line
        score = _score(scored, listing=listing, diff=diff, prose=not tool, named=named)
        if mark is not None:
            score = max(0.0, score + mark.bonus)
        if routine:
            score = _routine_score(scored, score)
        elif record is not None:
            score += _RECORD_BONUS
        if numbered_span is not None:
            score += _listing_bonus(original, order, numbered_span, written, focus)
        if tool and not diff:
            score += echoed_command_bonus(line, order)
        rank = ranks.get(original)
        if rank is not None:
            score += _RANK_BONUS / (1 + rank)
        if pending and not listing:
            score += _PENDING_SCORE
            pending -= 1
        # The lines just below an error say what it was (the assertion, left and right,
        # the failing input): worth more while short, fading.
        if score >= _ERROR_SCORE and not listing and _ERROR.search(line[:_LINE_SCAN]):
            # An exit status alone ("Exit code 2") says how it ended, not what follows.
            after_error = 0 if _EXIT_STATUS.fullmatch(line[:80]) else _ERROR_CONTEXT
            if tool:
                _locate_error(above)
        elif after_error and len(line) <= _LINE_WINDOW:
            score += after_error
            after_error -= 1
        else:
            after_error = 0
        located = _FRAME.match(original)
        if located is not None:
            frame = f"{located.group(1)}:{located.group(2)}"
        elif frame and _EXCEPTION_NAME.match(line) and ":" in line[:120]:
            line = f"{frame}: {line}"
            frame = ""
            score += 2.0
        # The first and last lines of an output say most (commands, totals, verdicts).
        edge = not listing and (order < 2 or order >= last - 1)
        # Repeated shapes (the same line but for its numbers) are worth less each time.
        shape = _WORDS.sub("w", line[:120])
        repeats = shapes.get(shape, 0)
        shapes[shape] = repeats + 1
        # A progress line printed again with its status ("Opening connection to h:
        # Trying", then ": Done"): the same start as an earlier line.
        start = "\0" + line[:_SAME_START] if len(line) > _SAME_START else ""
        if start:
            repeats = max(repeats, shapes.get(start, 0))
            shapes[start] = shapes.get(start, 0) + 1
        if mark is None or not mark.distinct:
            score /= 1 + repeats / 2
        placed = False  # whether where the line sits adds to its score
        if score > 0:
            if mark is None or not mark.placeless:
                score += (_EDGE_BONUS if edge else 0.0) + _EARLY_BONUS / (1 + order / 10)
                placed = True
        else:
            # A line with nothing in it is kept only when room is left (an edge line
            # first), so that the budget is used.
            score = _EMPTY_EDGE_SCORE if edge else _FILLER_SCORE / (1 + order / 100)
        if order in places:
            line = _place_first(line, places[order])
        text = _shorten_paths(line, width)
        if placed and opening and order and len(text) <= width:
            # A section's first line says what it is about (a format-free prior), when
            # it is shown whole: a window of it may have left out what it was about.
            score += SECTION_BONUS
        item = _Line(block, order, _window(text, width), score)
        if mark is not None:
            item.group = mark.group
        if compact and len(text) > _COMPACT_SHARE * width:
            # An answer's long sentence by its clauses that carry something (its
            # identifiers, numbers, causes and constraints): more of them fit. Its
            # whole form comes back if room is left.
            short = _window(_compact_answer_line(text), width)
            if short != item.text:
                item.text, item.whole = short, item.text
        above = [*above[1 - _LOCATION_ABOVE :], item] if _LOCATION_ABOVE > 1 else [item]
        yield item


def _locate_error(above: list[_Line]) -> None:
    """The lines just above an error that name a place (``test/a_test.exs:142``, the
    failing test's file and line) say where it is: they rank up with it."""
    for line in above:
        if any(weight == _PATH_WEIGHTS[2] for _, _, weight in _identifier_spans(line.text)):
            line.score += _ERROR_CONTEXT
