"""Encoded payloads handed out a top-level item at a time, and their indented JSON text
(the command lines write each item as it comes, byte for byte what ``encode`` gives)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PayloadStream", "iter_indented_json"]


@dataclass(slots=True)
class PayloadStream:
    """A request body whose list (``key``, its first member) comes item by item; ``tail``
    holds the members after it, complete once ``items`` is exhausted."""

    key: str
    items: Iterator[Any]
    tail: dict[str, Any] = field(default_factory=dict)

    def whole(self) -> dict[str, Any]:
        """The payload as one value: what ``encode`` returns."""
        items = list(self.items)
        return {self.key: items, **self.tail}


def iter_indented_json(stream: PayloadStream, encoder: json.JSONEncoder) -> Iterator[str]:
    """The text ``encoder.iterencode(stream.whole())`` gives (``encoder`` has an ``indent``),
    in chunks, each item encoded on its own and indented by prefixing its line breaks
    (``json`` escapes those inside strings)."""
    indent = encoder.indent
    if indent is None:
        raise ValueError("iter_indented_json needs an encoder with an indent")
    step = indent if isinstance(indent, str) else " " * indent
    yield "{\n" + step + _key(stream.key, encoder)
    inner = "\n" + step + step
    first = True
    for item in stream.items:
        yield ("[" + inner) if first else encoder.item_separator + inner
        first = False
        yield from _indented(item, encoder, inner)
    yield "[]" if first else "\n" + step + "]"
    for key, value in stream.tail.items():
        yield encoder.item_separator + "\n" + step + _key(key, encoder)
        yield from _indented(value, encoder, "\n" + step)
    yield "\n}"


def _key(key: str, encoder: json.JSONEncoder) -> str:
    return json.dumps(key, ensure_ascii=encoder.ensure_ascii) + encoder.key_separator


def _indented(value: Any, encoder: json.JSONEncoder, line_break: str) -> Iterator[str]:
    for chunk in encoder.iterencode(value):
        yield chunk.replace("\n", line_break)
