"""Load OpenAI Chat Completions chains (the tau-bench corpus) as cast Messages.

A small test helper, not a codec: string content becomes one TextPart, ``tool_calls``
become ToolCalls, and a tool message becomes a ToolResult named after the call it
answers (the latest call with that id, since tau-bench reuses ids).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cast import Message, Role, TextPart, ToolCall, ToolResult

__all__ = ["load_openai_chain", "openai_to_messages"]


def openai_to_messages(items: Iterable[dict[str, Any]]) -> list[Message]:
    """Map OpenAI chat messages to cast Messages (roles go through ``Role``)."""
    out: list[Message] = []
    call_names: dict[str, str] = {}
    for item in items:
        role = Role(item["role"])
        if role is Role.TOOL:
            call_id = item["tool_call_id"]
            name = call_names[call_id]
            result = ToolResult(tool_call_id=call_id, name=name, content=item["content"] or "")
            out.append(Message(role=role, parts=[result]))
            continue
        parts: list[Any] = []
        if item.get("content"):
            parts.append(TextPart(text=item["content"]))
        for call in item.get("tool_calls") or ():
            function = call["function"]
            call_names[call["id"]] = function["name"]
            parts.append(
                ToolCall(id=call["id"], name=function["name"], arguments=function["arguments"])
            )
        out.append(Message(role=role, parts=parts))
    return out


def load_openai_chain(path: Path) -> list[Message]:
    """The chain stored in ``path`` (a JSON array of OpenAI chat messages)."""
    return openai_to_messages(json.loads(path.read_text(encoding="utf-8")))
