"""Transforms of one message (a new one sharing the parts it does not touch, or None when
nothing changes), which the ChainAST's transforms and port map over a chain, and the
reasoning and JSON helpers they read."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable
from typing import Any

from cast.messages import (
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    trusted_message,
    with_field,
)

__all__ = [
    "contains_tool_call_reasoning",
    "extract_reasoning_message",
    "has_reasoning",
    "loads_strict",
    "map_tool_call_arguments",
    "sanitize_arguments",
    "with_empty_reasoning",
    "without_reasoning",
]


def _reject_constant(name: str) -> object:
    # NaN and Infinity are not JSON (RFC 8259 section 6), though Python's parser takes them.
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """``json.loads`` that also rejects ``NaN`` and ``Infinity`` (``ValueError``), as the
    providers read JSON."""
    return json.loads(text, parse_constant=_reject_constant)


# -- reasoning ---------------------------------------------------------------------------


def has_reasoning(part: Any) -> bool:
    """Whether ``part`` is a text part or tool call that carries reasoning."""
    return (type(part) is TextPart or type(part) is ToolCall) and part.reasoning is not None


def without_reasoning(
    message: Message,
    *,
    unsigned_only: bool = False,
    as_text: bool = False,
    keep_empty: bool = False,
) -> Message | None:
    """The message without its (``unsigned_only``: unsigned) reasoning, or None when it
    has none; a text part that only carried reasoning (empty text) goes with it unless
    ``keep_empty``. With ``as_text``, readable reasoning stays as a text part before its
    part."""

    def drops(part: Any) -> bool:
        return has_reasoning(part) and not (unsigned_only and part.reasoning.signature)

    parts: tuple[Any, ...] = message.parts
    if not any(map(drops, parts)):
        return None
    kept: list[Any] = []
    for part in parts:
        if not drops(part):
            kept.append(part)
            continue
        if as_text and part.reasoning.content.strip():
            kept.append(TextPart(text=f"(thinking) {part.reasoning.content}"))
        if keep_empty or type(part) is ToolCall or part.text:
            kept.append(with_field(part, "reasoning", None))
    return trusted_message(message.role, tuple(kept))


def contains_tool_call_reasoning(messages: Iterable[Message]) -> bool:
    """Whether any tool call in ``messages`` carries reasoning."""
    return any(
        type(part) is ToolCall and part.reasoning is not None
        for message in messages
        for part in message.parts
    )


def extract_reasoning_message(messages: Iterable[Message]) -> Message | None:
    """The first text part with reasoning in the AI messages, as a new AI message holding
    only that part; None when there is none."""
    for message in messages:
        if message.role is not Role.AI:
            continue
        for part in message.parts:
            if type(part) is TextPart and part.reasoning is not None:
                return trusted_message(Role.AI, (part,))
    return None


# -- arguments ---------------------------------------------------------------------------

_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_control_in_strings(text: str) -> str:
    out: list[str] = []
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            elif char < " ":
                out.append(_CONTROL_ESCAPES.get(char) or f"\\u{ord(char):04x}")
                continue
        elif char == '"':
            in_string = True
        out.append(char)
    return "".join(out)


def _accepted(text: str, objects_only: bool) -> bool:
    try:
        value = loads_strict(text) if objects_only else json.loads(text)
    except (ValueError, RecursionError):
        return False
    return not objects_only or isinstance(value, dict)


def sanitize_arguments(arguments: str, *, objects_only: bool = False) -> str:
    """Arguments that are valid JSON text (nested no deeper than Python parses; with
    ``objects_only``, a strict JSON object): as they are, else with raw control
    characters inside strings escaped, else ``"{}"``."""
    if _accepted(arguments, objects_only):
        return arguments
    fixed = _escape_control_in_strings(arguments)
    return fixed if _accepted(fixed, objects_only) else "{}"


def map_tool_call_arguments(message: Message, fix: Callable[[str], str]) -> Message | None:
    """The AI message with each tool call's arguments replaced by ``fix(arguments)``;
    ``None`` when ``fix`` changes none of them (or the message is not an AI message)."""
    if message.role is not Role.AI:
        return None

    def fixed(part: Any) -> Any:
        if type(part) is not ToolCall:
            return part
        arguments = fix(part.arguments)
        return part if arguments == part.arguments else with_field(part, "arguments", arguments)

    parts = tuple(map(fixed, message.parts))
    return None if all(map(operator.is_, parts, message.parts)) else trusted_message(Role.AI, parts)


_EMPTY_REASONING = Reasoning()


def with_empty_reasoning(message: Message, *, whole_turn: bool = False) -> Message | None:
    """Empty reasoning on an AI message that calls tools (or any, ``whole_turn``) and
    carries none, where the OpenAI codec reads it back from: the first non-empty text,
    else the first tool call, else a new empty text part; None when nothing changes
    (DeepSeek and Kimi want it: port adds it, and so does the Compactor where it
    brings a call into a turn)."""
    parts = message.parts
    if message.role is not Role.AI or any(map(has_reasoning, parts)):
        return None
    texts = [at for at, part in enumerate(parts) if type(part) is TextPart and part.text]
    calls = [at for at, part in enumerate(parts) if type(part) is ToolCall]
    if not (whole_turn or calls):
        return None
    if not (texts or calls):
        return trusted_message(Role.AI, (TextPart(text="", reasoning=_EMPTY_REASONING), *parts))
    target = (texts or calls)[0]
    new_parts = list(parts)
    new_parts[target] = with_field(parts[target], "reasoning", _EMPTY_REASONING)
    return trusted_message(Role.AI, tuple(new_parts))
