"""Bounds on what the gateway decodes: nesting depth (400) and items per request (413),
checked before the codec builds a message of each; refused in the provider's error shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ITEMS",
    "RefusedError",
    "check_items",
    "check_marks",
    "check_roles",
    "nesting_depth",
    "parse",
    "refusal",
]

DEFAULT_MAX_DEPTH = 100
"""Deepest JSON nesting of a body the gateway decodes (400 beyond)."""
DEFAULT_MAX_ITEMS = 20_000
"""Most messages plus content blocks in a history the gateway decodes (413 beyond)."""


class RefusedError(Exception):
    """A request the gateway refuses to decode: ``status`` and ``message`` say why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse(body: bytes, max_depth: int, max_items: int | None = None) -> Any:
    """``body`` parsed as JSON (``ValueError``), refused (:class:`RefusedError`, 400) when
    it nests deeper than ``max_depth``; with ``max_items``, :func:`check_roles` first."""
    if max_items is not None:
        check_roles(body, max_items)
    try:
        payload = json.loads(body)
    except RecursionError:
        raise RefusedError(400, f"the body nests over {max_depth} levels deep") from None
    depth = nesting_depth(payload, max_depth)
    if depth > max_depth:
        raise RefusedError(400, f"the body nests over {max_depth} levels deep")
    return payload


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
    marks = body.count(b'"role"'), body.count(b'"type"')
    check_marks(marks, max_items)
    return marks


def check_marks(marks: tuple[int, int], max_items: int) -> None:
    """:func:`check_roles`'s rule on the counts of ``"role"`` and ``"type"``."""
    roles, types = marks
    if roles > max_items or roles + types > 2 * max_items:
        raise RefusedError(413, f"the history holds over {max_items} messages and content blocks")


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
            break
    if count > max_items:
        raise RefusedError(413, f"the history holds over {max_items} messages and content blocks")


def refusal(provider: str, status: int, message: str, kind: str | None = None) -> dict[str, Any]:
    """The error body of a refused request in ``provider``'s shape."""
    if kind is None:
        kind = "request_too_large" if status == 413 else "invalid_request_error"
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
