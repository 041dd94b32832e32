"""Transforms of a ChainAST that are not methods of it, and helpers for messages.

Each returns a new tree or message; the receiver is never changed, and every section,
pair and message a transform does not touch is shared, not copied. The transforms that
are :class:`~cast.ChainAST` methods (``normalize_tool_call_ids``, ``clear_reasoning``,
``sanitize_tool_call_arguments``, ``append_human_message``, ``add_tool_response``) are
called as methods only.
"""

from __future__ import annotations

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
