"""Whether messages appended to a valid chain keep it valid, without parsing the chain.

An agent loop hands the Compactor the chain it returned last time plus the turn's new
messages. Checking only the new messages keeps the cost of a call that compacts nothing
proportional to what was added, not to the chain. The check follows the parse rules
(docs/concepts.md) for the tail: no system message; no human message right after a
human message or while tool calls wait for results; tool messages only after an AI
message with calls, each result answering one waiting call; nothing left unanswered at
the end. Anything else (or anything that is not a ``Message``) answers ``False`` and the
caller parses the whole chain, with repair.
"""

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
