"""A JSON result as ``key=value`` fields of its records, each a unit with its weight."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from csum.handlers._extractive.features import _field_weight
from csum.handlers._extractive.results import (
    take_documents,
)
from csum.handlers._extractive.text import _one_line, _scalar, _window
from csum.handlers._extractive.units import _Line
from csum.handlers._extractive.weights import (
    _CHECK_EVERY,
    _EMPTY_FIELD,
    _JSON_DEPTH,
)


@dataclass(frozen=True, slots=True)
class _Field:
    """One ``key=value`` of a flattened JSON result: fields of one record share a line
    headed by the record's path (``group``), so the path is written once."""

    group: str
    text: str
    weight: float


def _restates(parent: str, value: object) -> bool:
    """Whether ``value`` only repeats the key its record is filed under (``"id"`` equal to
    it, or ``"source": "paypal"`` under ``paypal_5521904``)."""
    if not parent or not isinstance(value, str) or not value:
        return False
    return value == parent or parent.startswith((value + "_", value + "-"))


def _flatten_json(
    value: object,
    path: str,
    out: list[_Field],
    *,
    depth: int = 0,
    said: frozenset[str] = frozenset(),
    parent: str = "",
) -> None:
    """Every scalar as a ``key=value`` field of its record (``path``); a small object of
    scalars (``paypal_1(amount=41)``) and a list of scalars are one field of the record
    holding them. Fields that repeat the record's key, or the call's own arguments
    (``said``, on the line above), are left out."""
    if depth > _JSON_DEPTH:
        out.append(_Field(path, "…", _EMPTY_FIELD))
        return
    if isinstance(value, dict):
        for name, item in value.items():
            key = str(name)
            if isinstance(item, dict) and all(
                not isinstance(v, dict | list) for v in item.values()
            ):
                inner = [f"{k}={_scalar(v)}" for k, v in item.items() if not _restates(key, v)]
                weight = max(
                    (_field_weight(str(k), v) for k, v in item.items()), default=_EMPTY_FIELD
                )
                out.append(_Field(path, f"{key}({' '.join(inner)})", weight))
            elif isinstance(item, list) and all(not isinstance(v, dict | list) for v in item):
                text = f"{key}={','.join(_scalar(v) for v in item)}"
                weight = max((_field_weight(key, v) for v in item), default=_EMPTY_FIELD)
                out.append(_Field(path, text, weight))
            elif isinstance(item, dict | list):
                continue
            elif not _restates(parent, item):
                text = f"{key}={_scalar(item)}"
                if text not in said:
                    out.append(_Field(path, text, _field_weight(key, item)))
        for key, item in value.items():
            if isinstance(item, list) and any(isinstance(v, dict | list) for v in item):
                child = f"{path}.{key}" if path else str(key)
                _flatten_json(item, child, out, depth=depth + 1, said=said)
            elif isinstance(item, dict) and any(isinstance(v, dict | list) for v in item.values()):
                child = f"{path}.{key}" if path else str(key)
                _flatten_json(item, child, out, depth=depth + 1, said=said, parent=str(key))
    elif isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            text = ",".join(_scalar(v) for v in value)
            out.append(
                _Field(path, text, max((_field_weight("", v) for v in value), default=_EMPTY_FIELD))
            )
            return
        for index, item in enumerate(value):
            _flatten_json(item, f"{path}[{index}]", out, depth=depth + 1, said=said)
    else:
        out.append(_Field(path, _scalar(value), _field_weight("", value)))


def _json_fields(
    content: str, said: frozenset[str] = frozenset(), documents: list[str] | None = None
) -> list[_Field] | None:
    """The fields of a JSON result, or None when ``content`` is not a JSON object or list;
    ``documents`` gets the texts it holds (:func:`take_documents`), left out of them."""
    text = content.strip()
    if not text or text[0] not in "{[":
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | list):
        return None
    out: list[_Field] = []
    try:
        if documents is not None:
            value = take_documents(value, documents)
        _flatten_json(value, "", out, said=said)
    except RecursionError:
        return None
    return out


def _literal_fields(value: object) -> list[tuple[str, str]]:
    """An object's fields as (record path, ``key=value``), as a JSON result's are."""
    out: list[_Field] = []
    try:
        _flatten_json(value, "", out)
    except RecursionError:
        return []
    return [(item.group, item.text) for item in out]


def _field_lines(
    fields: list[_Field], block: int, check: Callable[[], None], width: int
) -> Iterator[_Line]:
    """The scored fields of a JSON result, each a unit of its record's line."""
    repeats: dict[str, int] = {}
    for order, item in enumerate(fields):
        if order % _CHECK_EVERY == 0:
            check()
        text = _one_line(item.text)
        # The same field in many records (a currency, a shared origin) says it once.
        seen = repeats.get(text, 0)
        repeats[text] = seen + 1
        score = item.weight / (1 + seen)
        yield _Line(block, order, _window(text, width), score, group=item.group)
