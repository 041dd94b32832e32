"""A request body's JSON text parsed once, with where its history items lie in it.

The gateway recognises a conversation's compacted prefix by the raw text of the items
the client sent before (:mod:`csum.serve.conversation`), so it needs, besides the parsed
body, the span of each item of the history list and of each top-level field. Python's
own C scanner (the one ``json.loads`` runs) parses each value; only the top-level
object and the history list are walked here, so the cost is one ``json.loads``.
"""

from __future__ import annotations

import json
import json.decoder
import re
from dataclasses import dataclass, field
from typing import Any

from csum.serve.limits import RefusedError, check_roles, nesting_depth

__all__ = ["ScannedBody", "check_depth", "scan"]

_SPACE = re.compile(r"[ \t\n\r]*")
_BLANKS = frozenset(" \t\n\r")
_DECODER = json.JSONDecoder()
_SCAN: Any = getattr(_DECODER, "scan_once")  # noqa: B009 -- the C scanner, not typed
_STRING: Any = getattr(json.decoder, "scanstring")  # noqa: B009


@dataclass(frozen=True, slots=True)
class ScannedBody:
    """The parsed body (``payload``), its text, the span of each top-level field's
    value (``fields``; None when the body is not an object or repeats a key) and of
    each item of the history list (``items``; None when that field is not a list)."""

    payload: Any = field(repr=False)
    text: str = field(repr=False)
    fields: dict[str, tuple[int, int]] | None
    items: list[tuple[int, int]] | None


def scan(body: bytes, list_key: str, max_depth: int, max_items: int | None = None) -> ScannedBody:
    """``body`` parsed as ``json.loads`` would (``ValueError`` when it is not JSON),
    refused as :func:`csum.serve.limits.parse` refuses it (:class:`RefusedError`) but
    for its nesting depth, which the caller checks (:func:`check_depth`) on what it
    decodes: a reused request's prefix was checked when it was compacted."""
    if max_items is not None:
        check_roles(body, max_items)
    text = body.decode(json.detect_encoding(body), "surrogatepass")
    try:
        scanned = _object(text, list_key)
    except RecursionError:
        raise RefusedError(400, f"the body nests over {max_depth} levels deep") from None
    return scanned


def check_depth(value: Any, max_depth: int) -> None:
    """Raise :class:`RefusedError` (400) when ``value`` (a body or the part of it that
    is decoded) nests deeper than ``max_depth``."""
    if nesting_depth(value, max_depth) > max_depth:
        raise RefusedError(400, f"the body nests over {max_depth} levels deep")


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
            value, at, spans = _array(text, start)
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


def _array(text: str, start: int) -> tuple[list[Any], int, list[tuple[int, int]]]:
    values: list[Any] = []
    spans: list[tuple[int, int]] = []
    at = _space(text, start + 1)
    if text.startswith("]", at):
        return values, at + 1, spans
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
