"""Helpers for chaincast's sibling packages (``csum``, the benchmarks), not for users:
``utf8_len(text)``, the UTF-8 byte length of ``text``, the unit of every size;
``clip_utf8(text, max_bytes)``, its longest start within a size;
``map_messages(ast, change)``, the chain with messages replaced, sharing what stays; and
``map_tool_call_arguments(message, fix)``, an AI message's calls with fixed arguments."""

from __future__ import annotations

from cast.ast import map_messages
from cast.messages import utf8_len
from cast.transforms import map_tool_call_arguments

__all__ = ["clip_utf8", "map_messages", "map_tool_call_arguments", "utf8_len"]


def clip_utf8(text: str, max_bytes: int) -> str:
    """The longest start of ``text`` within ``max_bytes`` UTF-8 bytes (none below 0),
    never a character cut in two."""
    return text.encode("utf-8", "surrogatepass")[: max(0, max_bytes)].decode("utf-8", "ignore")
