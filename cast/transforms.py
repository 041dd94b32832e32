"""Transforms of a ChainAST that are not methods of it, and helpers for messages.

Each returns a new tree or message; the receiver is never changed, and every section,
pair and message a transform does not touch is shared, not copied. The transforms that
are :class:`~cast.ChainAST` methods (``normalize_tool_call_ids``, ``clear_reasoning``,
``sanitize_tool_call_arguments``, ``append_human_message``, ``add_tool_response``) are
called as methods: their function forms here, ``f(ast, ...)``, still work for one
release with a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from typing import Any

from cast import _transforms
from cast._transforms import (
    contains_tool_call_reasoning,
    extract_reasoning_message,
    map_messages,
    map_tool_call_arguments,
    sanitize_arguments,
)

__all__ = [
    "contains_tool_call_reasoning",
    "extract_reasoning_message",
    "map_messages",
    "map_tool_call_arguments",
    "sanitize_arguments",
]

_METHODS = {
    "normalize_tool_call_ids": "ast.normalize_tool_call_ids(template)",
    "clear_reasoning": "ast.clear_reasoning()",
    "sanitize_tool_call_arguments": "ast.sanitize_tool_call_arguments()",
    "append_human_message": "ast.append_human_message(text)",
    "add_tool_response": "ast.add_tool_response(tool_call_id, name, content)",
}
"""The function forms kept for one release, each with the method that replaces it."""


def __getattr__(name: str) -> Any:
    if name in _METHODS:
        warnings.warn(
            f"cast.transforms.{name}(ast, ...) is deprecated and goes in the next release: "
            f"call the ChainAST method, {_METHODS[name]}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_transforms, name)
    raise AttributeError(f"module 'cast.transforms' has no attribute {name!r}")
