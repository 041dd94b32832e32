"""Reading a text into scored lines: its units (lines, sentences, records, a message joined
with its place, a JSON result's fields), then what each says and what the lines around add."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import regex

from csum.handlers._extractive.code_tools import (
    CodeMark,
    code_lines,
    count_follows,
    drop_zero_counts,
    strip_banner,
    strip_colours,
)
from csum.handlers._extractive.features import (
    _field_weight,
    _is_prose,
    _is_routine_log,
    _score,
)
from csum.handlers._extractive.prose import compact_prose, is_fence, plain_links
from csum.handlers._extractive.rendering import _Line
from csum.handlers._extractive.results import labelled_records, literal_records, take_documents
from csum.handlers._extractive.text import (
    _ELLIPSIS,
    _ERROR,
    _HOME,
    _NUMBERED,
    _TRAIL,
    _clip_whole_words,
    _identifier_spans,
    _one_line,
    _path_kind,
    _scalar,
    _shorten_paths,
    _window,
)
from csum.handlers._extractive.weights import (
    _COMPACT_SHARE,
    _EMPTY_EDGE_SCORE,
    _EMPTY_FIELD,
    _FILLER_SCORE,
    _LINE_SCAN,
    _LINE_WINDOW,
    _PATH_WEIGHTS,
    _TOKEN_CAP,
    WEIGHTS,
)

_RECORD_LABEL = 40  # characters a label may take before a line's JSON list of records
_CHECK_EVERY = 256  # lines between two cancellation checkpoints
_SENTENCE_MIN = 80  # a prose line longer than this is split into its sentences
_SENTENCE_PIECE = 12  # ... at sentence ends at least this far apart ("Edit applied.")
_HUNK_CONTEXT = 40  # bytes of a diff hunk header's context (the enclosing function) kept
_LOCATION_TAIL = 48  # characters a location line may hold after its place
_LOCATION_WORDS = 2  # ... and words: more is a message of its own (grep's match)
_JSON_DEPTH = 12  # levels of a JSON value read; deeper is "…"
_Field = tuple[str, str, float]  # a flattened JSON value's ``key=value``: record path, text, weight

_LONG_LISTING = regex.compile(  # ls -l: mode, links, owner, group, size, date, name
    r"^(?P<type>[-dlcbps])[rwxsStT-]{9}+[@+.]?+[ ]++\d++[ ]++\S++[ ]++(?:\S++[ ]++)?+"
    r"\d++(?:,[ ]*+\d++)?+[ ]++\w{3}+[ ]++\d{1,2}+[ ]++(?:\d{1,2}:\d{2}|\d{4})[ ]++"
    r"(?P<name>.{1,400}+)$"
)
_TOTAL_LINE = regex.compile(r"total[ ]\d{1,12}+")
_EMPTY_NUMBERED = regex.compile(r"\d{1,7}(?:→|:|\t)?+\s*+")
_HUNK = regex.compile(r"@@[ ]-\d{1,9}+(?:,\d{1,9}+)?+[ ]\+\d{1,9}+(?:,\d{1,9}+)?+[ ]@@")
_MARKDOWN = regex.compile(r"\*\*|^#{1,6}[ ]|^[ ]*[-*+][ ](?=\S)")
# "__bold words__": a pair around a phrase (a dunder like __init__ holds no space).
_UNDERSCORE_BOLD = regex.compile(r"(?<!\w)__(?=\S)([^_\n]*?[ ][^_\n]*?)(?<=\S)__(?!\w)")
_BARE_TAG = regex.compile(r"</?+[A-Za-z][\w:-]{0,40}+[ ]?+/?+>")
# The end of a sentence: its mark, spaces, then a capital, a digit or a quote.
_SENTENCE_END = regex.compile(r"(?<=[a-z0-9)\]`*][.!?])[ ]++(?=[A-Z0-9\"'`(*])")
# A line naming a place: spaces or box rules, maybe an arrow, "at" or "in", then a token.
_LOCATION_LINE = regex.compile(
    r"[\s│┃║|>\u203a»•·]{0,40}+(?:-->[ ]?+|at[ ]++|in[ ]++)?+([^\s\"'`,;()\[\]{}<>|]++)"
)
# Leading box rules and quote marks (no information), a trailing printed "\r".
_DECORATION = regex.compile(r"^[\s│┃║|>\u203a»•·]{1,12}+(?=\S)|(?:\\r){1,4}+$")
_DECORATION_HEAD = regex.compile(r"[\s│┃║|>\u203a»•·]{1,12}+(?=\S)")  # its first form
# A log line's clock time and routine level: the same on every line, not what it says.
_LOG_PREFIX = regex.compile(
    r"^(?:\d{4}-\d{2}-\d{2}[T ])?+\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?+(?:Z|[+-]\d{2}:?\d{2})?+[ ]"
    r"(?:\[?(?i:info|debug|trace|notice)\]?:?[ ])?+"
)


def _undecorated(line: str) -> str:
    """``line`` without leading box rules, quote marks or bullets and a trailing ``\\r``."""
    if line[:1].isalnum() and not line.endswith("\\r"):
        return line
    if "\\r" not in line:  # no escaped carriage return: only the leading decoration
        head = _DECORATION_HEAD.match(line)
        return line if head is None else line[head.end() :]
    return _DECORATION.sub("", line)


def _sentences(lines: list[str], *, prose_only: bool = False) -> Iterator[str]:
    """Prose lines split into their sentences (``prose_only``: only lines that read as prose)."""
    for line in lines:
        if len(line) <= _SENTENCE_MIN or (prose_only and not _is_prose(line)):
            yield line
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line, endpos=4 * _LINE_SCAN):
            if match.start() - start >= _SENTENCE_PIECE and not count_follows(
                line[match.end() : match.end() + _SENTENCE_MIN]
            ):
                yield line[start : match.start()]
                start = match.end()
        yield line[start:]


def _reshape(lines: list[str], ranks: dict[str, int]) -> Iterator[str]:
    """A long listing's entry as its name, a JSON list of records as a line per record (ranked)."""
    for line in lines:
        entry = _LONG_LISTING.match(line, endpos=_LINE_SCAN)
        if entry is not None:
            if entry.group("name") not in (".", ".."):
                yield entry.group("name") + ("/" if entry.group("type") == "d" else "")
            continue
        if _TOTAL_LINE.fullmatch(line):
            continue  # "total 48": the listing's blocks
        records = _record_list(line)
        if records is None:
            yield line
            continue
        if not records[0].startswith("{"):
            yield records.pop(0)  # the list's label
        for rank, record in enumerate(records):
            ranks.setdefault(record, rank)
            yield record


def _record_list(line: str) -> list[str] | None:
    """A line's JSON list of objects as one-line JSON records (its label first); else None."""
    start = line.find("[{", 0, _RECORD_LABEL)
    if start < 0 or len(line) > 16 * _LINE_SCAN or not line.rstrip().endswith("}]"):
        return None
    try:
        value = json.loads(line[start:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return None
    label = line[:start].strip()
    return ([label] if label else []) + [json.dumps(item, ensure_ascii=False) for item in value]


def _location(line: str) -> str | None:
    """The place (a path with a line) a line names when it names little else; else None."""
    match = _LOCATION_LINE.match(line, endpos=_LINE_SCAN)
    if match is None or len(line) - match.end() > _LOCATION_TAIL:
        return None
    if len(line[match.end() :].split(None, _LOCATION_WORDS)) > _LOCATION_WORDS:
        return None
    token = match.group(1).strip(_TRAIL)
    if len(token) > _TOKEN_CAP or _path_kind(token) != 2:
        return None
    return line[match.start(1) :].strip()


def _two_line_records(
    raw: Iterable[str], check: Callable[[], None], width: int, places: dict[int, str]
) -> list[str]:
    """A message and its place on the next line joined in one unit (``places``: the place)."""
    out: list[str] = []
    for index, line in enumerate(raw):
        if index % _CHECK_EVERY == 0:
            check()
        place = _location(line)
        if (
            place is not None
            and out
            and len(out) - 1 not in places
            # What the place locates: a line saying something, naming no place, in one window.
            and len(out[-1].strip()) < width - len(place)
            and any(c.isalnum() for c in out[-1][:200])
            and not any(w == _PATH_WEIGHTS[2] for _, _, w in _identifier_spans(out[-1]))
        ):
            out[-1] = f"{out[-1].strip()} {place}"
            places[len(out) - 1] = _HOME.sub("~/", _one_line(place))
            continue
        out.append(line)
    return out


def _hunk_header(line: str) -> str:
    """A diff hunk's header as its place and what encloses it (``def apply(…``)."""
    match = _HUNK.match(line)
    if match is None:
        return line
    context = line[match.end() :].strip()
    cut = context.find("(")
    if cut > 0:
        context = context[: cut + 1] + _ELLIPSIS
    return f"{match.group().strip()} {_clip_whole_words(context, _HUNK_CONTEXT) or ''}".strip()


# --- a text read into units ---------------------------------------------------------


_ERROR_LINE = 6.0  # a line scoring this with an error signal is an error (context below)
_LOCATION_ABOVE = 2  # lines above an error looked at for its place (a path with a line)
_SAME_START = 32  # characters two lines share at their start to count as one repeated

_EXIT_STATUS = regex.compile(
    r"(?i)\W{0,6}+exit(?:ed)?+[ ](?:with[ ])?+(?:code|status)[ ]?+\d{1,4}+\W{0,6}+"
)
_WORDS = regex.compile(r"\w++")


@dataclass(slots=True)
class _Text:
    """A text's units (``raw``) and its kind, scored in order: each line, then its neighbours."""

    raw: list[str]
    tool: bool
    width: int  # characters of a line's window
    compact: bool = False  # an answer's long lines in their compact form
    listing: bool = False
    diff: bool = False
    marks: dict[str, CodeMark] = field(default_factory=dict)  # the code tools' rules, by line
    ranks: dict[str, int] = field(default_factory=dict)  # a record's place in its list
    places: dict[int, str] = field(default_factory=dict)  # a message's place (line below it)
    named: dict[str, int] = field(default_factory=dict)  # identifiers seen so far, how often
    shapes: dict[str, int] = field(default_factory=dict)  # line shapes seen so far, how often
    after_error: float = 0.0  # what the next line below an error earns
    above: list[_Line] = field(default_factory=list)  # the last lines scored (an error's place)

    def scored(self, order: int, original: str, line: str, routine: bool, opening: bool) -> _Line:
        """A kept unit's scored line (``opening``: a section's): what it says, then around it."""
        mark = self.marks.get(original)
        # A numbered line of a file listing (the tool's own words are not).
        listed = self.listing and _NUMBERED.match(original) is not None
        score = _score(
            line,
            listing=listed,
            diff=self.diff,
            prose=not self.tool,
            named=self.named,
            routine=routine,
        )
        if mark is not None:  # (a routine log line has no mark: a mark's line has no space)
            score = max(0.0, score + mark.bonus)
        rank = self.ranks.get(original)
        if rank is not None:
            score += WEIGHTS["rank"] / (1 + rank)
        score = self._context(line, listed, score)
        score, placed = self._placed(order, line, mark, score)
        item = self._item(order, line, mark, score, placed and opening)
        self.above = [*self.above, item][-_LOCATION_ABOVE:]
        return item

    def _context(self, line: str, listed: bool, score: float) -> float:
        """What the lines above add: an error's context below it, fading, and its place above."""
        if score >= _ERROR_LINE and not listed and _ERROR.search(line[:_LINE_SCAN]):
            # An exit status alone ("Exit code 2") says how it ended, not what follows.
            self.after_error = 0 if _EXIT_STATUS.fullmatch(line[:80]) else WEIGHTS["error_context"]
            if self.tool:  # the lines just above naming a place (``a_test.exs:142``) rank up
                for above in self.above:
                    if any(w == _PATH_WEIGHTS[2] for _, _, w in _identifier_spans(above.text)):
                        above.score += WEIGHTS["error_context"]
        elif self.after_error and len(line) <= _LINE_WINDOW:
            score += self.after_error
            self.after_error -= 1
        else:
            self.after_error = 0.0
        return score

    def _placed(
        self, order: int, line: str, mark: CodeMark | None, score: float
    ) -> tuple[float, bool]:
        """The score with its shape's repeats and its place (first, last lines); whether placed."""
        edge = not self.listing and (order < 2 or order >= len(self.raw) - 2)
        # Repeated shapes (the same line but for its numbers) are worth less each time.
        shape = _WORDS.sub("w", line[:120])
        repeats = self.shapes.get(shape, 0)
        self.shapes[shape] = repeats + 1
        # A progress line printed again with its status: the same start as an earlier line.
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
        # A line with nothing in it is kept only when room is left (an edge line first).
        return (_EMPTY_EDGE_SCORE if edge else _FILLER_SCORE / (1 + order / 100)), False

    def _item(
        self, order: int, line: str, mark: CodeMark | None, score: float, opens: bool
    ) -> _Line:
        """The line as shown: place first, paths shortened, windowed, compact when asked."""
        width = self.width
        place = self.places.get(order)
        if place is not None and line.endswith(" " + place):
            # A joined message and place as ``place message``: the place survives a cut.
            line = f"{place} {line[: -len(place) - 1]}"
        text = _shorten_paths(line, width)
        if opens and order and len(text) <= width:
            # A section's first line says what it is about, when it is shown whole.
            score += WEIGHTS["section"]
        group = mark.group if mark is not None else None
        item = _Line(_window(text, width), score, group=group)
        if self.compact and len(text) > _COMPACT_SHARE * width:
            # An answer's long line by its clauses that carry something (whole if room is left),
            # unless it is an error.
            error = _ERROR.search(text[:_LINE_SCAN])
            short = _window(text if error else compact_prose(text[: 4 * _LINE_SCAN]), width)
            if short != item.text:
                item.text, item.whole = short, item.text
        return item


def _read_text(
    content: str, check: Callable[[], None], *, tool: bool, width: int, compact: bool
) -> _Text:
    """``content`` (not JSON) as units: sentences, records, a message joined with its place."""
    raw = content.splitlines()
    if "\\n" in content:  # an output printed as a string: its escaped newlines split too
        raw = [piece for line in raw for piece in line.split("\\n")]
    if not tool:
        return _Text(list(_sentences(raw)), tool=False, width=width, compact=compact)
    listing = sum(1 for line in raw[:50] if _NUMBERED.match(line)) >= min(5, len(raw))
    diff = any(line.startswith(("@@ -", "diff --git")) for line in raw[:200])
    raw, marks = code_lines(raw)
    text = _Text(raw, tool=True, width=width, listing=listing, diff=diff, marks=marks)
    if not diff:
        # A tool's prose is split into sentences as an answer is (its code and logs are not).
        text.raw = list(_sentences(literal_records(text.raw, _flatten_json), prose_only=True))
        text.raw = labelled_records(text.raw, text.ranks)
    if not diff and not listing:
        text.raw = _two_line_records(_reshape(text.raw, text.ranks), check, width, text.places)
    return text


def _cleaned(original: str, text: _Text) -> tuple[str, bool] | None:
    """A unit as shown (cleaned up in order) and whether it is a routine log line; None: empty."""
    line = original[: 4 * _LINE_SCAN]
    if not text.tool:
        if is_fence(line):
            return None  # a code block's fence ("```python"): it says nothing
        line = plain_links(_UNDERSCORE_BOLD.sub(r"\1", _MARKDOWN.sub("", line)))
    routine = _is_routine_log(_undecorated(line))  # (scored without its time and level)
    line = _one_line(_undecorated(_json_record(line)))
    if line[:1].isdigit():  # a log line's clock time and routine level (the same on every line)
        line = _LOG_PREFIX.sub("", line, count=1)
    if "/home/" in line or "/Users/" in line:
        line = _HOME.sub("~/", line)
    if text.tool and not text.diff:
        line = drop_zero_counts(strip_banner(line))
    # A line says something with a letter or digit, not markup alone or a listing's number.
    if len(line) < 2 or not any(c.isalnum() for c in line[:200]):
        return None
    if line[0] == "<" and not any(c.isalnum() for c in _BARE_TAG.sub("", line[:200])):
        return None
    if text.listing and len(line) <= 12 and _EMPTY_NUMBERED.fullmatch(line):
        return None
    if text.diff and line.startswith("@@"):
        line = _hunk_header(line)
    return line, routine


def _json_record(line: str) -> str:
    """A one-line JSON object of scalars as its ``key=value`` fields."""
    text = line.strip()
    if len(text) > _LINE_SCAN or not (text.startswith("{") and text.endswith("}")):
        return line
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return line
    if isinstance(value, dict) and len(value) >= 2 and not _nested(value):
        return " ".join(f"{key}={_scalar(item)}" for key, item in value.items())
    return line


def _nested(value: object) -> bool:
    """Whether an object's values or a list's items hold an object or a list."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(isinstance(item, dict | list) for item in items)


def _restates(parent: str, value: object) -> bool:
    """Whether ``value`` only repeats the key its record is filed under."""
    if not parent or not isinstance(value, str) or not value:
        return False
    return value == parent or parent.startswith((value + "_", value + "-"))


def _flatten_json(
    value: object,
    path: str = "",
    *,
    depth: int = 0,
    said: frozenset[str] = frozenset(),
    parent: str = "",
) -> Iterator[_Field]:
    """Every scalar as a field of its record; fields repeating the key or ``said`` left out."""
    if depth > _JSON_DEPTH:
        yield (path, "…", _EMPTY_FIELD)
    elif isinstance(value, dict):
        for name, item in value.items():
            key = str(name)
            if isinstance(item, dict) and not _nested(item):
                inner = [f"{k}={_scalar(v)}" for k, v in item.items() if not _restates(key, v)]
                weight = max(
                    (_field_weight(str(k), v) for k, v in item.items()), default=_EMPTY_FIELD
                )
                yield (path, f"{key}({' '.join(inner)})", weight)
            elif isinstance(item, list) and not _nested(item):
                weight = max((_field_weight(key, v) for v in item), default=_EMPTY_FIELD)
                yield (path, f"{key}={','.join(_scalar(v) for v in item)}", weight)
            elif not isinstance(item, dict | list) and not _restates(parent, item):
                text = f"{key}={_scalar(item)}"
                if text not in said:
                    yield (path, text, _field_weight(key, item))
        for key, item in value.items():  # (a list's items have no parent key to repeat)
            if _nested(item):
                child = f"{path}.{key}" if path else str(key)
                yield from _flatten_json(item, child, depth=depth + 1, said=said, parent=str(key))
    elif isinstance(value, list) and not _nested(value):
        weight = max((_field_weight("", v) for v in value), default=_EMPTY_FIELD)
        yield (path, ",".join(_scalar(v) for v in value), weight)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _flatten_json(item, f"{path}[{index}]", depth=depth + 1, said=said)
    else:
        yield (path, _scalar(value), _field_weight("", value))


def _json_fields(content: str, said: frozenset[str], documents: list[str]) -> list[_Field] | None:
    """A JSON result's fields (its documents taken out), or None when it is not JSON."""
    text = content.strip()
    if not text or text[0] not in "{[":
        return None
    try:  # a value starting with "{" or "[" is an object or a list
        return list(_flatten_json(take_documents(json.loads(text), documents), said=said))
    except (ValueError, RecursionError):
        return None


def _body_lines(
    content: str,
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
        yield from _json_lines(fields, documents, check, width)
        return
    text = _read_text(content, check, tool=tool, width=width, compact=compact)
    seen: set[str] = set()
    opens = True  # whether the next unit opens a section (after a blank line or a heading)
    for order, original in enumerate(text.raw):
        if order % _CHECK_EVERY == 0:
            check()
        opening, opens = opens, opens_section(original[: 4 * _LINE_SCAN])
        cleaned = _cleaned(original, text)
        if cleaned is None or cleaned[0] in seen:
            continue
        seen.add(cleaned[0])
        yield text.scored(order, original, *cleaned, opening)


def _json_lines(
    fields: list[_Field], documents: list[str], check: Callable[[], None], width: int
) -> Iterator[_Line]:
    """A JSON result's scored fields (units of their record's line), then its documents' lines."""
    repeats: dict[str, int] = {}
    for order, (group, pair, weight) in enumerate(fields):
        if order % _CHECK_EVERY == 0:
            check()
        text = _one_line(pair)
        # The same field in many records (a currency, a shared origin) says it once.
        seen = repeats.get(text, 0)
        repeats[text] = seen + 1
        yield _Line(_window(text, width), weight / (1 + seen), group=group)
    for document in documents:
        yield from _body_lines(document, check, tool=True, width=width)


def opens_section(line: str) -> bool:
    """Whether the line after ``line`` opens a section: ``line`` is blank or a heading."""
    text = line.strip()
    return not text or text.startswith("#")
