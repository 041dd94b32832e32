"""Whether messages appended to a valid chain keep it valid, by the parse rules applied to
the new messages only: a call that compacts nothing costs what was added, not the chain."""

from __future__ import annotations

from collections.abc import Sequence

from cast import Message, Role, ToolResult

__all__ = ["extends_validly"]


def extends_validly(previous: Sequence[Message], new: Sequence[object]) -> bool:
    """Whether ``previous`` (a strictly valid chain, not empty) followed by ``new``
    is strictly valid."""
    last_role = previous[-1].role
    pending: dict[str, int] = {}
    calls = False  # the current AI message made calls
    for message in new:
        if type(message) is not Message:
            return False
        role = message.role
        if role is Role.TOOL:
            if not calls or last_role not in (Role.AI, Role.TOOL):
                return False
            for part in message.parts:
                if type(part) is not ToolResult or not pending.get(part.tool_call_id):
                    return False
                pending[part.tool_call_id] -= 1
        elif any(pending.values()):
            return False
        elif role is Role.AI:
            pending = {}
            for call in message.tool_calls:
                pending[call.id] = pending.get(call.id, 0) + 1
            calls = bool(pending)
        elif role is Role.HUMAN:
            if last_role is Role.HUMAN:
                return False
            calls = False
        else:
            return False
        last_role = role
    return not any(pending.values())
