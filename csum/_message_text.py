"""A message's text as strings, one per part that has text: what a cut that keeps a
message's head (or head and tail) reads when the message must be shortened."""

from __future__ import annotations

from cast import Message, TextPart, ToolCall, ToolResult

__all__ = ["message_strings"]


def message_strings(message: Message) -> list[str]:
    """The text of each text part, tool call (``name(arguments)``) and tool result."""
    out: list[str] = []
    for part in message.parts:
        if type(part) is TextPart:
            out.append(part.text)
        elif type(part) is ToolCall:
            out.append(f"{part.name}({part.arguments})")
        elif type(part) is ToolResult:
            out.append(part.content)
    return out
