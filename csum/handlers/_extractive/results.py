"""Records and search results for the extractive handler: ``Label: value`` blocks, nested
objects and documents inside JSON, a search hit's relevance score (its place says it)."""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Final

import regex

# Keys search APIs give each hit's relevance under (Tavily, Exa, LangChain's retrievers).
_RELEVANCE_KEY: Final = regex.compile(r"(?i:(?:^|_)(?:score|relevance|similarity)(?:_score)?)$")


# Keys of what a record is and where it is: a hit's title and address.
_TITLE_KEY: Final = regex.compile(r"(?i:title|url|link|href|uri)$")


def is_relevance_score(key: str, value: object) -> bool:
    """Whether a field is a search hit's relevance (``"score": 0.97``): its place says it."""
    return (
        isinstance(value, float)
        and 0.0 <= value <= 1.0
        and _RELEVANCE_KEY.search(key[:64]) is not None
    )


# A labelled line of a text record: "Title: ...", "URL: ...", "Published Date: ...".
_LABELLED: Final = regex.compile(
    r"([A-Z][A-Za-z]{0,20}+(?:[ _-][A-Za-z]{1,20}+){0,2}+):[ ]++(\S.*+)"
)
# Characters a field's value may take to join its record's line (a snippet's ~160).
_RECORD_FIELD: Final = 160
# Characters a record's joined line may take; the fields past it stay lines of their own.
_RECORD_LINE_MAX: Final = 220
# Labels a log's or a checker's messages start with: each line a message of its own.
_SEVERITY: Final = regex.compile(
    r"(?i:error|errors|warning|warn|fatal|fail|failed|failure|info|debug|trace|notice|note"
    r"|hint|help|panic|critical|exception|caused[ ]by|deprecated|deprecation[ _-]?warning)"
)
_NAME_LABEL: Final = regex.compile(r"(?i:title|name)$")
# Labels of a hit's text: a line of its own, so that the record's line stays short.
_TEXT_LABEL: Final = regex.compile(r"(?i:content|snippet|body|text|description|summary|excerpt)")
_MIN_RECORDS: Final = 2
_TEXT_RANK: Final = 1  # places a hit's text ranks below the hit's own line


def labelled_records(lines: list[str], ranks: dict[str, int]) -> list[str]:
    """``Label: value`` records with their short fields on one line each (``ranks``: places)."""
    matches = [_LABELLED.fullmatch(line[:4096]) for line in lines]
    found = _record_labels(matches)
    if found is None:
        return lines
    opener, labels = found
    out: list[str] = []
    records: list[tuple[list[str], list[str]]] = []  # each record's short fields, other lines
    for line, match in zip(lines, matches, strict=True):
        label, value = match.groups() if match is not None else ("", "")
        if label == opener:
            records.append(([], []))
        if not records:
            out.append(line)
            continue
        head, rest = records[-1]
        joined = sum(len(field) + 1 for field in head) + len(line.strip())
        if label not in labels:
            rest.append(line)
        elif _is_relevance_text(label, value):
            continue
        elif (
            len(value) <= _RECORD_FIELD
            and _TEXT_LABEL.fullmatch(label) is None
            and (not head or joined <= _RECORD_LINE_MAX)
        ):
            head.append(line.strip())
        else:
            rest.append(line)
    rank = 0
    for head, rest in records:  # the record's line (title and URL first), its other lines lower
        if head:
            line = " ".join(sorted(head, key=_field_place))
            ranks.setdefault(line, rank)
            out.append(line)
            for text in rest:
                ranks.setdefault(text, rank + _TEXT_RANK)
            rank += 1
        out.extend(rest)
    return out


def _record_labels(matches: list[regex.Match[str] | None]) -> tuple[str, set[str]] | None:
    """The opening label and the fields' labels of repeated records; None when there are none."""
    labels = [match.group(1) for match in matches if match is not None]
    counts = Counter(labels)
    opener = labels[0] if labels else ""
    if counts[opener] < _MIN_RECORDS or len(counts) < 2:
        return None
    if any(_SEVERITY.fullmatch(label) for label in counts):
        return None  # messages of a log or a checker ("Warning: ...")
    return opener, {label for label, count in counts.items() if count >= _MIN_RECORDS}


def _field_place(field: str) -> int:
    """Where a field goes in its record's line: its title, then its address, then the rest."""
    label = field.split(":", 1)[0]
    return 0 if _NAME_LABEL.search(label) else 1 if _TITLE_KEY.search(label) else 2


def _is_relevance_text(label: str, value: str) -> bool:
    try:
        number = float(value.strip())
    except ValueError:
        return False
    return is_relevance_score(label, number)


# A JSON string holding a document (a fetched page, a file): this many lines and chars.
_DOCUMENT_LINES: Final = 4
_DOCUMENT_CHARS: Final = 400


def take_documents(value: object, documents: list[str]) -> object:
    """``value`` (copied) without the documents its strings hold, each to ``documents``."""
    if isinstance(value, list):
        return [take_documents(item, documents) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, object] = {}
    for key, item in value.items():
        if (
            isinstance(item, str)
            and len(item) >= _DOCUMENT_CHARS
            and item.count("\n", 0, 4096) >= _DOCUMENT_LINES - 1
        ):
            documents.append(item)
        else:
            out[key] = take_documents(item, documents)
    return out


# A line holding a nested object after an optional label: "Content: {'location': {...}}".
_LITERAL: Final = regex.compile(r"((?:[A-Za-z][\w .-]{0,40}+:[ ]++)?+)(\{.*\})[ ]*+")
_LITERAL_MAX: Final = 32768  # characters of a line read as an object, at most
_RECORD_LINE: Final = 120  # characters of fields on one line of an object's record


def literal_records(
    lines: list[str], flatten: Callable[[object], Iterable[tuple[str, str, float]]]
) -> list[str]:
    """Lines holding a nested object (JSON or a Python dict) as a line per record's fields."""
    out: list[str] = []
    for line in lines:
        value = _literal(line)
        if value is None:
            out.append(line)
            continue
        label, parsed = value
        groups: dict[str, list[str]] = {}
        for group, text, _ in flatten(parsed):
            groups.setdefault(group, []).append(text)
        for group, texts in groups.items():
            path = ".".join(part for part in (label, group) if part)
            head = f"{path}: " if path else ""
            chunk: list[str] = []
            for text in texts:
                if chunk and sum(len(t) + 1 for t in chunk) + len(text) > _RECORD_LINE:
                    out.append(head + " ".join(chunk))
                    chunk = []
                chunk.append(text)
            out.append(head + " ".join(chunk))  # a group holds a field at least
    return out


def _literal(line: str) -> tuple[str, object] | None:
    """A line's label and the nested object it holds; None for any other line."""
    if len(line) > _LITERAL_MAX or "{" not in line[:64]:
        return None
    match = _LITERAL.fullmatch(line.strip())
    if match is None:
        return None
    text = match.group(2)
    try:
        value: object = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    if not isinstance(value, dict) or not any(isinstance(v, dict | list) for v in value.values()):
        return None  # a flat object: a one-line record already (``key=value`` fields)
    return match.group(1).strip().rstrip(":"), value
