"""Bounds on what the gateway decodes: nesting depth and items per request.

A body the gateway must decode (over the budget, or translated) is parsed with its
nesting bounded (:func:`parse`: deep nesting made the parser raise ``RecursionError``,
a plain-text 500; the depth is then measured in time linear in the body), and its
history's items (messages plus their content blocks) are counted before the codec
builds a message of each (100,000 tiny messages cost seconds and hundreds of MiB); a
body naming more roles than that is refused before it is parsed (:func:`check_roles`).
Over either bound the request is refused in the provider's error shape: 400 for the
depth, 413 for the items (:func:`refusal`).
"""

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
    """``body`` parsed as JSON (``ValueError`` when it is not JSON), refused
    (:class:`RefusedError`, 400) when it nests deeper than ``max_depth``: the parser's
    own recursion limit (about 1,000 levels) first, then :func:`nesting_depth`; with
    ``max_items``, :func:`check_roles` first."""
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
    """The deepest nesting of lists and dicts in ``value`` (1 for a flat list), level
    by level in time linear in its size; the walk ends as soon as it passes ``stop``."""
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
    """Raise :class:`RefusedError` (413) before ``body`` is parsed when its JSON text
    surely holds more than ``max_items`` messages, or names over twice as many roles
    and types as that (a flood of tiny messages or content blocks then costs no
    memory). Inside a JSON string a quote is escaped, so the bytes ``"role"`` and
    ``"type"`` occur only in the structure itself: a message has one role, a content
    block one type (tool schemas add a few types, hence the factor 2). Returns the
    two counts (:func:`check_marks` checks counts kept from an earlier body)."""
    marks = body.count(b'"role"'), body.count(b'"type"')
    check_marks(marks, max_items)
    return marks


def check_marks(marks: tuple[int, int], max_items: int) -> None:
    """:func:`check_roles`'s rule on the counts of ``"role"`` and ``"type"``."""
    roles, types = marks
    if roles > max_items or roles + types > 2 * max_items:
        raise RefusedError(413, f"the history holds over {max_items} messages and content blocks")


def check_items(history: Mapping[str, Any], list_key: str, max_items: int) -> None:
    """Raise :class:`RefusedError` (413) when the list ``history[list_key]`` holds more
    than ``max_items`` messages plus content blocks."""
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
    """The error body of a refused request in ``provider``'s shape (Anthropic's for
    ``anthropic``, OpenAI's for the others); ``kind`` defaults by ``status``."""
    if kind is None:
        kind = "request_too_large" if status == 413 else "invalid_request_error"
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
