"""A message's text as strings, one per part that has text: what a cut that keeps a
message's head (or head and tail) reads when the message must be shortened, and what
the fact memory reads facts from."""

from __future__ import annotations

import json
from collections.abc import Iterator

from cast import Message, TextPart, ToolCall, ToolResult

__all__ = ["message_strings"]


def message_strings(message: Message, *, argument_values: bool = False) -> list[str]:
    """The text of each text part, tool call (``name(arguments)``) and tool result.
    With ``argument_values`` a call gives the string values of its JSON arguments
    instead (what the agent passed, not the tool's parameter names, which are the same
    in every call); the raw arguments when they are not JSON."""
    out: list[str] = []
    for part in message.parts:
        if type(part) is TextPart:
            out.append(part.text)
        elif type(part) is ToolCall:
            if argument_values:
                out.extend(_argument_strings(part.arguments))
            else:
                out.append(f"{part.name}({part.arguments})")
        elif type(part) is ToolResult:
            out.append(part.content)
    return out


def _argument_strings(arguments: str) -> list[str]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return [arguments]
    return list(_json_strings(value))


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)
