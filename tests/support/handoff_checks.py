"""What a handoff must keep, as comparable facts: every user and assistant text, every
tool call (name and arguments) and every tool result (and whether it failed), in order."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cast import Message, TextPart, ToolCall, ToolResult
from cast._port import TOOL_ERROR_PREFIX

Fact = tuple[str, ...]


def _arguments(text: str) -> str:
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text


def facts(messages: Iterable[Message]) -> list[Fact]:
    """The texts, calls and results of ``messages``, in order (empty texts left out)."""
    out: list[Fact] = []
    for message in messages:
        for part in message.parts:
            if type(part) is TextPart and part.text.strip():
                out.append(("text", message.role.value, part.text.strip()))
            elif type(part) is ToolCall:
                out.append(("call", part.name, _arguments(part.arguments)))
            elif type(part) is ToolResult:
                # The error flag, or the prefix carrying it where the wire has no flag.
                content = part.content
                failed = part.is_error or content.startswith(TOOL_ERROR_PREFIX)
                content = content.removeprefix(TOOL_ERROR_PREFIX)
                out.append(("result", content.strip(), "error" if failed else "ok"))
    return out


def missing_in_order(expected: Sequence[Fact], found: Sequence[Fact]) -> list[Fact]:
    """The facts of ``expected`` not found in ``found`` as a subsequence (a fact may
    match a text of ``found`` that contains it: agents add their own reminders)."""
    missing: list[Fact] = []
    position = 0
    for fact in expected:
        for at in range(position, len(found)):
            other = found[at]
            if other == fact or (
                fact[0] == other[0] == "text" and fact[1] == other[1] and fact[2] in other[2]
            ):
                position = at + 1
                break
        else:
            missing.append(fact)
    return missing


def lines_of(path: Path) -> list[Any]:
    """The JSON values of a JSON lines file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
