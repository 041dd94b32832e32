"""What archive search looks at in a message: shared by the history archive, its
stores (which index and match stored JSON bodies) and re-insertion."""

from __future__ import annotations

from cast import Message, TextPart, ToolCall, ToolResult

__all__ = ["message_search_text", "search_text_of_json"]


def message_search_text(message: Message) -> str:
    """What search looks at: each text, tool call (name and arguments) and tool result."""
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(part.text)
        elif isinstance(part, ToolCall):
            lines.append(f"{part.name} {part.arguments}")
        elif isinstance(part, ToolResult):
            lines.append(part.content)
    return "\n".join(lines)


def search_text_of_json(body: bytes) -> str:
    """:func:`message_search_text` of a stored JSON body (what stores index and match)."""
    return message_search_text(Message.model_validate_json(body))
