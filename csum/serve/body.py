"""A request body's JSON text parsed once (``json.loads``' own scanner per value), with
where its history items and fields lie in it; :func:`skim` reads a body against the
conversation's last one, parsing only the items that differ. Bounds on what the gateway
decodes, checked before the codec builds a message of each: nesting depth (400) and
items (413), refused in the provider's error shape."""

from __future__ import annotations

import json
import json.decoder
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "RefusedError",
    "ScannedBody",
    "check_depth",
    "check_items",
    "check_marks",
    "check_roles",
    "nesting_depth",
    "parse",
    "refusal",
    "scan",
    "skim",
    "with_offsets",
]

_SPACE = re.compile(r"[ \t\n\r]*")
_BLANKS = frozenset(" \t\n\r")
_DECODER = json.JSONDecoder()
_SCAN: Any = getattr(_DECODER, "scan_once")  # noqa: B009 -- the C scanner, not typed
_STRING: Any = getattr(json.decoder, "scanstring")  # noqa: B009


@dataclass(frozen=True, slots=True)
class ScannedBody:
    """The parsed body, its text, the span of each top-level field's value and of each
    history item (None when not an object with unique keys, or no list)."""

    payload: Any = field(repr=False)
    text: str = field(repr=False)
    fields: dict[str, tuple[int, int]] | None
    items: list[tuple[int, int]] | None
    marks: tuple[int, int] | None = None
    """How often ``"role"`` and ``"type"`` occur in a UTF-8 body (None: not counted)."""
    raw: tuple[bytes, list[int], tuple[int, int]] | None = field(
        default=None, repr=False, compare=False
    )
    """Once found (:func:`with_offsets`): a UTF-8 body's bytes, each history item's end
    offset in them and the list's byte span."""


def scan(body: bytes, list_key: str, max_depth: int, max_items: int | None = None) -> ScannedBody:
    """``body`` parsed as ``json.loads`` would (``ValueError``), refused as
    :func:`parse` refuses it but for its depth (the caller checks it)."""
    marks = None if max_items is None else check_roles(body, max_items)
    encoding = json.detect_encoding(body)
    text = body.decode(encoding, "surrogatepass")
    try:
        scanned = _object(text, list_key)
    except RecursionError:
        raise _too_deep(max_depth) from None
    return scanned if encoding != "utf-8" else replace(scanned, marks=marks)


def skim(
    body: bytes, earlier: Sequence[ScannedBody], list_key: str, max_items: int | None = None
) -> tuple[ScannedBody, int, int] | None:
    """``body`` read as :func:`scan` reads it, when it is one of ``earlier`` (the one
    sharing the longest start) but for its ``list_key`` items from some item on: only
    those are parsed. Returns the scan, which of ``earlier`` it was read against and
    how many of its first items are that one's byte for byte. None when unsure (the
    caller scans it whole); raises as :func:`scan` for the count of roles. Reads
    ``earlier``'s values, spans and raw bytes, not their text."""
    if not earlier or json.detect_encoding(body) != "utf-8":
        return None
    shares = [-1 if e.raw is None else _shared_prefix(body, e.raw[0]) for e in earlier]
    shared = max(shares)
    index = shares.index(shared)
    old_scan = earlier[index]
    raw, marks = old_scan.raw, old_scan.marks
    if old_scan.fields is None or old_scan.items is None or raw is None or marks is None:
        return None
    old_body, old_ends, (list_byte, list_byte_end) = raw
    span = old_scan.fields.get(list_key)
    if span is None or shared <= list_byte:
        return None  # a change before the list
    list_start, list_end = span
    # the items that end within the shared bytes are the same values: what follows the
    # last of them is parsed, and must be a delimiter (a number cannot run on)
    fresh = bisect_right(old_ends, shared)
    at = list_start + 1 if fresh == 0 else old_scan.items[fresh - 1][1]
    at_byte = list_byte + 1 if fresh == 0 else old_ends[fresh - 1]
    text = body.decode("utf-8", "surrogatepass")
    try:
        values, end, spans = _array_from(text, at, first=fresh == 0)
    except (ValueError, RecursionError):
        return None  # the full scan reports it
    ends, end_byte = _byte_ends(text, at, at_byte, [stop for _, stop in spans], end)
    after = memoryview(old_body)[list_byte_end:]
    if len(body) - end_byte != len(after) or not body.endswith(after):
        return None
    roles, types = marks  # counted again from the first item parsed
    roles += body.count(b'"role"', at_byte) - old_body.count(b'"role"', at_byte)
    types += body.count(b'"type"', at_byte) - old_body.count(b'"type"', at_byte)
    marks = roles, types
    if max_items is not None:
        check_marks(marks, max_items)
    shift = end - list_end
    payload = dict(old_scan.payload)
    payload[list_key] = [*old_scan.payload[list_key][:fresh], *values]
    fields = {
        key: _shifted(start, stop, list_start, shift)
        for key, (start, stop) in old_scan.fields.items()
    }
    items = [*old_scan.items[:fresh], *spans]
    offsets = body, [*old_ends[:fresh], *ends], (list_byte, end_byte)
    return ScannedBody(payload, text, fields, items, marks, offsets), index, fresh


def with_offsets(scanned: ScannedBody, body: bytes, list_key: str) -> ScannedBody:
    """``scanned`` (of ``body``) with its offsets in ``body`` (``raw``), for :func:`skim`."""
    span = None if scanned.fields is None else scanned.fields.get(list_key)
    if scanned.raw is not None or scanned.items is None or span is None or scanned.marks is None:
        return scanned
    start = len(scanned.text[: span[0]].encode("utf-8", "surrogatepass"))
    ends, end = _byte_ends(scanned.text, span[0], start, [e for _, e in scanned.items], span[1])
    return replace(scanned, raw=(body, ends, (start, end)))


def _byte_ends(
    text: str, at: int, at_byte: int, stops: Sequence[int], end: int
) -> tuple[list[int], int]:
    """The byte offsets of ``stops`` and ``end`` (text offsets from ``at``, at byte ``at_byte``)."""
    out = []
    for stop in [*stops, end]:
        at_byte += len(text[at:stop].encode("utf-8", "surrogatepass"))
        at = stop
        out.append(at_byte)
    return out[:-1], out[-1]


def _shifted(start: int, stop: int, list_start: int, shift: int) -> tuple[int, int]:
    """A field's span moved by the list's change of length: the list's own ends later."""
    if start < list_start:
        return start, stop
    return (start, stop + shift) if start == list_start else (start + shift, stop + shift)


def _shared_prefix(a: bytes, b: bytes) -> int:
    """How many bytes ``a`` and ``b`` start with alike (compared in halves, no copies)."""
    low, high = 0, min(len(a), len(b))
    view = memoryview(b)
    if a.startswith(view[:high]):
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


def _object(text: str, list_key: str) -> ScannedBody:
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("{", at):
        return ScannedBody(json.loads(text), text, None, None)
    payload: dict[str, Any] = {}
    fields: dict[str, tuple[int, int]] | None = {}
    items: list[tuple[int, int]] | None = None
    at = _space(text, at + 1)
    if text.startswith("}", at):
        return ScannedBody(payload, text, fields, None)
    while True:
        if not text.startswith('"', at):
            message = "Expecting property name enclosed in double quotes"
            raise json.JSONDecodeError(message, text, at)
        key, at = _STRING(text, at + 1, True)
        at = _space(text, at)
        if not text.startswith(":", at):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
        start = _space(text, at + 1)
        if key == list_key and text.startswith("[", start):
            value, at, spans = _array_from(text, start + 1, first=True)
        else:
            value, at, spans = (*_value(text, start), None)
        if fields is not None and key in fields:
            fields = None  # a repeated key: the last one counts, spans are ambiguous
        if fields is not None:
            fields[key] = (start, at)
        if key == list_key:
            items = spans
        payload[key] = value
        at = _space(text, at)
        if text.startswith(",", at):
            at = _space(text, at + 1)
            continue
        if not text.startswith("}", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        break
    if _space(text, at + 1) != len(text):
        raise json.JSONDecodeError("Extra data", text, _space(text, at + 1))
    return ScannedBody(payload, text, fields, items if fields is not None else None)


def _array_from(text: str, at: int, *, first: bool) -> tuple[list[Any], int, list[tuple[int, int]]]:
    """The items of an array from ``at`` (just after its ``[`` or an item)."""
    values: list[Any] = []
    spans: list[tuple[int, int]] = []
    at = _space(text, at)
    if text.startswith("]", at):
        return values, at + 1, spans
    if not first:
        if not text.startswith(",", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        at = _space(text, at + 1)
    while True:
        value, end = _value(text, at)
        values.append(value)
        spans.append((at, end))
        at = end if text[end : end + 1] in (",", "]") else _space(text, end)  # compact JSON
        if text.startswith(",", at):
            at = at + 1 if text[at + 1 : at + 2] not in _BLANKS else _space(text, at + 1)
            continue
        if not text.startswith("]", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        return values, at + 1, spans


def _value(text: str, at: int) -> tuple[Any, int]:
    try:
        return _SCAN(text, at)  # type: ignore[no-any-return]
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None


def _space(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


class RefusedError(Exception):
    """A request the gateway refuses to decode: ``status`` and ``message`` say why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse(body: bytes, max_depth: int, max_items: int | None = None) -> Any:
    """``body`` parsed as JSON (``ValueError``), refused (:class:`RefusedError`, 400) when
    it nests deeper than ``max_depth``; with ``max_items``, :func:`check_roles` first."""
    payload = scan(body, "", max_depth, max_items).payload
    check_depth(payload, max_depth)
    return payload


def check_depth(value: Any, max_depth: int) -> None:
    """Raise :class:`RefusedError` (400) when ``value`` nests deeper than ``max_depth``."""
    if nesting_depth(value, max_depth) > max_depth:
        raise _too_deep(max_depth)


def nesting_depth(value: Any, stop: int | None = None) -> int:
    """The deepest nesting of lists and dicts in ``value`` (1 for a flat list), in linear
    time; the walk ends as soon as it passes ``stop``."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if stop is not None and depth > stop:
            return depth
        below: list[Any] = []
        for node in level:
            children = node.values() if type(node) is dict else node
            below.extend([c for c in children if type(c) is dict or type(c) is list])
        level = below
    return depth


def check_roles(body: bytes, max_items: int) -> tuple[int, int]:
    """Raise :class:`RefusedError` (413) before ``body`` is parsed when it names over
    twice ``max_items`` roles and types (``"role"`` and ``"type"`` occur only in the
    structure: a quote is escaped in a string); returns the two counts."""
    return check_marks((body.count(b'"role"'), body.count(b'"type"')), max_items)


def check_marks(marks: tuple[int, int], max_items: int) -> tuple[int, int]:
    """:func:`check_roles`'s rule on the counts of ``"role"`` and ``"type"``; returns them."""
    roles, types = marks
    if roles > max_items or roles + types > 2 * max_items:
        raise _too_many(max_items)
    return marks


def check_items(history: Mapping[str, Any], list_key: str, max_items: int) -> None:
    """Raise :class:`RefusedError` (413) over ``max_items`` messages plus content blocks."""
    turns = history.get(list_key)
    if not isinstance(turns, list):
        return
    count = len(turns)
    for turn in turns:
        content = turn.get("content") if isinstance(turn, dict) else None
        if isinstance(content, list):
            count += len(content)
        if count > max_items:
            raise _too_many(max_items)


def refusal(provider: str, status: int, message: str, kind: str | None = None) -> dict[str, Any]:
    """An error body in ``provider``'s shape (``kind`` by default from ``status``)."""
    if kind is None:
        kind = "request_too_large" if status == 413 else "invalid_request_error"
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _too_deep(max_depth: int) -> RefusedError:
    return RefusedError(400, f"the body nests over {max_depth} levels deep")


def _too_many(max_items: int) -> RefusedError:
    return RefusedError(413, f"the history holds over {max_items} messages and content blocks")
