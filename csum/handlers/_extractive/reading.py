"""Reading a text into units: lines, sentences, records, a message joined with its place."""

from __future__ import annotations

import json
from collections.abc import Callable

from csum.handlers._extractive.features import _is_prose
from csum.handlers._extractive.patterns import (
    _DECORATION,
    _HOME,
    _HUNK,
    _LOCATION_LINE,
    _LONG_LISTING,
    _SENTENCE_END,
    _TOTAL_LINE,
    _TRAIL,
)
from csum.handlers._extractive.runs import (
    count_follows,
)
from csum.handlers._extractive.text import _ELLIPSIS, _clip_whole_words, _one_line, _scalar
from csum.handlers._extractive.tokens import _identifier_spans, _path_kind
from csum.handlers._extractive.weights import (
    _CHECK_EVERY,
    _HUNK_CONTEXT,
    _LINE_SCAN,
    _LOCATION_TAIL,
    _LOCATION_WORDS,
    _PATH_WEIGHTS,
    _RECORD_LABEL,
    _SENTENCE_MIN,
    _SENTENCE_PIECE,
    _TOKEN_CAP,
)


def _undecorated(line: str) -> str:
    """``line`` without its leading box rules, quote marks or bullets and a trailing
    escaped carriage return (:data:`_DECORATION`); read only when it may hold them."""
    if line[:1].isalnum() and not line.endswith("\\r"):
        return line
    return _DECORATION.sub("", line)


def _record_text(line: str) -> str | None:
    """A one-line JSON object of scalars as ``key=value`` fields (its keys kept, its
    quotes and braces dropped); None for any other line."""
    text = line.strip()
    if len(text) > _LINE_SCAN or not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or len(value) < 2:
        return None
    if any(isinstance(item, dict | list) for item in value.values()):
        return None
    return " ".join(f"{key}={_scalar(item)}" for key, item in value.items())


def _split_lines(text: str) -> list[str]:
    """Lines, also splitting at escaped newlines (``\\n``) of an output printed as a string."""
    lines = text.splitlines()
    if "\\n" not in text:
        return lines
    return [piece for line in lines for piece in line.split("\\n")]


def _sentences(lines: list[str], *, prose_only: bool = False) -> list[str]:
    """Prose lines split into their sentences, each a unit of its own: a paragraph's
    one sentence that matters is kept without the others; with ``prose_only``, only the
    lines that read as prose (mostly words, not code, not a numbered listing's)."""
    out: list[str] = []
    for line in lines:
        if len(line) <= _SENTENCE_MIN or (prose_only and not _is_prose(line)):
            out.append(line)
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line, endpos=4 * _LINE_SCAN):
            if match.start() - start >= _SENTENCE_PIECE and not count_follows(
                line[match.end() : match.end() + _SENTENCE_MIN]
            ):
                out.append(line[start : match.start()])
                start = match.end()
        out.append(line[start:])
    return out


def _reshape(lines: list[str], ranks: dict[str, int]) -> list[str]:
    """A tool's lines with two shapes made compact: a long listing's entry
    (``drwxr-xr-x 2 ann staff 64 May 2 10:01 src``) as its name alone, a directory's
    marked ``/`` (the mode, owner, size and date columns say little and cost most of the
    line); and a line holding a JSON list of records (a web search's ``Links: [{"title":
    ..., "url": ...}]``) as one line per record, so that each record is kept or dropped
    whole, with its keys; ``ranks`` gets each such record's place in its list (a search
    lists its best matches first)."""
    out: list[str] = []
    for line in lines:
        entry = _LONG_LISTING.match(line, endpos=_LINE_SCAN)
        if entry is not None:
            if entry.group("name") not in (".", ".."):
                directory = entry.group("type") == "d"
                out.append(entry.group("name") + ("/" if directory else ""))
            continue
        if _TOTAL_LINE.fullmatch(line):
            continue  # "total 48": the listing's blocks
        records = _record_list(line)
        if records is None:
            out.append(line)
            continue
        if not records[0].startswith("{"):
            out.append(records.pop(0))  # the list's label
        for rank, record in enumerate(records):
            ranks.setdefault(record, rank)
            out.append(record)
    return out


def _record_list(line: str) -> list[str] | None:
    """The records of a line holding a JSON list of objects (after an optional label),
    each as a one-line JSON object; None for any other line."""
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
    """The place a line names when it names little else: a path with a line number,
    maybe after an arrow, ``at`` or ``in``, and a short tag (``test/a_test.exs:142``,
    ``--> src/main.rs:4:5``, ``lib/a.ex:9:5 #(App.start)``); None for any other line,
    such as grep's ``src/a.py:12: words of the match``, which says its own message."""
    match = _LOCATION_LINE.match(line, endpos=_LINE_SCAN)
    if match is None or len(line) - match.end() > _LOCATION_TAIL:
        return None
    if len(line[match.end() :].split(None, _LOCATION_WORDS)) > _LOCATION_WORDS:
        return None
    token = match.group(1).strip(_TRAIL)
    if len(token) > _TOKEN_CAP or _path_kind(token) != 2:
        return None
    return line[match.start(1) :].strip()


def _message_line(line: str, room: int) -> bool:
    """Whether a line could be what a location line locates: it says something, names
    no place of its own, and fits with the place in one window (``room`` characters)."""
    return (
        len(line.strip()) < room
        and any(c.isalnum() for c in line[:200])
        and not any(w == _PATH_WEIGHTS[2] for _, _, w in _identifier_spans(line))
    )


def _two_line_records(
    raw: list[str], check: Callable[[], None], width: int, places: dict[int, str]
) -> list[str]:
    """Tool output lines with a message and, on the next line, its place (a linter
    finding, a compiler error and its ``-->``, a failing test's header and its
    ``path:line``) joined into one unit, kept or left together, as either alone says
    half; only when both fit in one window (``width``). The message comes first, to be
    scored as it reads; ``places`` gets each joined line's place, by its index, to be
    written first (:func:`_place_first`)."""
    out: list[str] = []
    for index, line in enumerate(raw):
        if index % _CHECK_EVERY == 0:
            check()
        place = _location(line)
        if (
            place is not None
            and out
            and len(out) - 1 not in places
            and _message_line(out[-1], width - len(place))
        ):
            out[-1] = f"{out[-1].strip()} {place}"
            places[len(out) - 1] = _HOME.sub("~/", _one_line(place))
            continue
        out.append(line)
    return out


def _place_first(line: str, place: str) -> str:
    """A joined message and place as ``place message``: a compiler's own order, and the
    place survives a cut at the end."""
    if not line.endswith(" " + place):
        return line
    return f"{place} {line[: -len(place) - 1]}"


def _hunk_header(line: str) -> str:
    """A diff hunk's header as its place and the name of what encloses it:
    ``@@ -140,7 +140,8 @@ def apply_discounts(…``, not the whole signature."""
    match = _HUNK.match(line)
    if match is None:
        return line
    context = line[match.end() :].strip()
    cut = context.find("(")
    if cut > 0:
        context = context[: cut + 1] + _ELLIPSIS
    return f"{match.group().strip()} {_clip_whole_words(context, _HUNK_CONTEXT) or ''}".strip()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return _one_line(line)
    return ""
