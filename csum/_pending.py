"""Tool calls still pending at the end of a chain.

A chain that ends in an AI message whose tool calls have no results yet is the normal
state between a model's call and the tool's answer (or a call waiting for a human's
approval). Parsing with repair gives every unanswered call a fallback result
(``FALLBACK_RESPONSE_CONTENT``), which is right for a call in the middle that can
never be answered, and wrong for the newest turn: the chain would grow, and the
agent's real results would then collide with the fillers. The summarizers and the
keeper note the pending calls before they parse, and take those fillers back out of
what they return (``ChainAST.from_messages(..., repair=True)`` keeps its contract).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from cast import FALLBACK_RESPONSE_CONTENT, Message, Role, ToolCall, ToolResult

__all__ = ["pending_tail_calls", "without_pending_fillers"]


def pending_tail_calls(messages: Sequence[Message | Mapping[str, Any]]) -> frozenset[str]:
    """Ids of the calls of the chain's last AI message that no tool message after it
    answers, when nothing but tool messages follows that AI message; else empty."""
    answered: set[str] = set()
    for index in range(len(messages) - 1, -1, -1):
        item = messages[index]
        try:
            message = item if isinstance(item, Message) else Message.model_validate(item)
        except ValidationError:
            return frozenset()  # the parser reports the bad message as documented
        if message.role is Role.TOOL:
            answered.update(p.tool_call_id for p in message.parts if type(p) is ToolResult)
            continue
        if message.role is not Role.AI:
            return frozenset()
        calls = {p.id for p in message.parts if type(p) is ToolCall}
        return frozenset(calls - answered)
    return frozenset()


def without_pending_fillers(
    messages: list[Message], pending: frozenset[str]
) -> tuple[list[Message], list[Message]]:
    """``(kept, removed)``: the trailing fallback results repair gave the ``pending``
    calls removed (each is a tool message of its own at the end of the chain)."""
    if not pending:
        return messages, []
    end = len(messages)
    while end > 0 and _is_filler(messages[end - 1], pending):
        end -= 1
    return messages[:end], messages[end:]


def _is_filler(message: Message, pending: frozenset[str]) -> bool:
    if message.role is not Role.TOOL or len(message.parts) != 1:
        return False
    part = message.parts[0]
    return (
        type(part) is ToolResult
        and part.tool_call_id in pending
        and part.content == FALLBACK_RESPONSE_CONTENT
    )
