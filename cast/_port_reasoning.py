"""Port's reasoning step: reasoning kept only where the target takes it back from this
source, then what the target's policy requires added (see :mod:`cast._port`, step 2,
and docs/providers.md's reasoning policies)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cast._fast import trusted_chain, trusted_message, trusted_pair, trusted_section, with_field
from cast._rules import FIX_REASONING, implements
from cast._transforms import map_messages
from cast.ast import BodyPair, BodyPairType, ChainAST, Section
from cast.constants import FAKE_GEMINI_SIGNATURE
from cast.messages import Message, Reasoning, Role, TextPart, ToolCall
from cast.providers import ProviderProfile, ReasoningPolicy, ReasoningScope

__all__ = ["fix_reasoning"]

_FAKE_SIGNATURE = FAKE_GEMINI_SIGNATURE.encode()
_FAKE_SIGNED = Reasoning(signature=_FAKE_SIGNATURE)
_EMPTY_REASONING = Reasoning()
_AI = Role.AI
_COMPLETION = BodyPairType.COMPLETION

Change = Callable[[Message], Message | None]


@implements(FIX_REASONING)
def fix_reasoning(ast: ChainAST, profile: ProviderProfile, same_source: bool) -> ChainAST:
    """Reasoning kept only where the target takes it back from this source, then what
    the target's policy requires added (a thought signature, empty reasoning content)."""
    policy = profile.reasoning
    if not same_source or policy is ReasoningPolicy.STRIP:
        ast = map_messages(ast, _drop_reasoning)
    elif policy is ReasoningPolicy.NATIVE_SIGNATURES:
        ast = map_messages(ast, _drop_unsigned_reasoning)
    if policy is ReasoningPolicy.THOUGHT_SIGNATURE:
        return _map_ai_messages(ast, _with_thought_signature, whole_turn=False)
    if policy is ReasoningPolicy.REASONING_CONTENT_REQUIRED:
        whole_turn = profile.reasoning_scope is ReasoningScope.TOOL_CALL_TURNS
        return _map_ai_messages(ast, _with_reasoning_content, whole_turn=whole_turn)
    return ast


def _map_ai_messages(ast: ChainAST, change: Change, *, whole_turn: bool) -> ChainAST:
    """``change`` applied to the AI messages that call tools, or with ``whole_turn`` to
    every AI message of a section (a turn) in which one does; shares what stays."""
    sections: list[Section] = []
    changed = False
    for section in ast.sections:
        turn_has_calls = whole_turn and any(p.type is not _COMPLETION for p in section.body)
        body: list[BodyPair] = []
        for pair in section.body:
            new = None
            if turn_has_calls or pair.type is not _COMPLETION:
                new = change(pair.ai_message)
            if new is None:
                body.append(pair)
                continue
            body.append(trusted_pair(pair.type, new, pair.tool_messages))
        if all(map(_same, body, section.body)):
            sections.append(section)
            continue
        changed = True
        sections.append(trusted_section(section.header, tuple(body)))
    return trusted_chain(tuple(sections)) if changed else ast


def _same(a: object, b: object) -> bool:
    return a is b


def _without_reasoning(message: Message, drops: Callable[[Reasoning], bool]) -> Message | None:
    """The message without the reasoning ``drops`` selects, or None when it has none.

    A text part that only carried reasoning (empty text) goes with its reasoning.
    """
    parts = message.parts
    if not any(
        (type(p) is TextPart or type(p) is ToolCall)
        and p.reasoning is not None
        and drops(p.reasoning)
        for p in parts
    ):
        return None
    kept: list[Any] = []
    for part in parts:
        cls = type(part)
        reasoning = part.reasoning if cls is TextPart or cls is ToolCall else None  # type: ignore[union-attr]
        if reasoning is None or not drops(reasoning):
            kept.append(part)
        elif cls is ToolCall or part.text:  # type: ignore[union-attr]
            kept.append(with_field(part, "reasoning", None))
    return trusted_message(message.role, tuple(kept))


def _drop_reasoning(message: Message) -> Message | None:
    return _without_reasoning(message, _always)


def _drop_unsigned_reasoning(message: Message) -> Message | None:
    return _without_reasoning(message, _unsigned)


def _always(reasoning: Reasoning) -> bool:
    return True


def _unsigned(reasoning: Reasoning) -> bool:
    return not reasoning.signature


def _with_thought_signature(message: Message) -> Message | None:
    """The first tool call signed (with the placeholder Gemini accepts) when it is not."""
    parts = message.parts
    for position, part in enumerate(parts):
        if type(part) is not ToolCall:
            continue
        reasoning = part.reasoning
        if reasoning is not None and reasoning.signature:
            return None
        content = reasoning.content if reasoning is not None else ""
        # One shared (frozen) signature for the common case: a copy per call costs
        # a few hundred bytes each, a third of the file on a 100 MB chain.
        signed = Reasoning(content=content, signature=_FAKE_SIGNATURE) if content else _FAKE_SIGNED
        new_parts = list(parts)
        new_parts[position] = with_field(part, "reasoning", signed)
        return trusted_message(_AI, tuple(new_parts))
    return None


def _with_reasoning_content(message: Message) -> Message | None:
    """Empty reasoning on an AI message that carries none, where the OpenAI codec reads
    it back from: the first non-empty text, else the first tool call, else a new empty
    text part."""
    parts = message.parts
    first_text = first_call = -1
    for position, part in enumerate(parts):
        cls = type(part)
        if cls is TextPart:
            if part.reasoning is not None:  # type: ignore[union-attr]
                return None
            if first_text < 0 and part.text:  # type: ignore[union-attr]
                first_text = position
        elif cls is ToolCall:
            if part.reasoning is not None:  # type: ignore[union-attr]
                return None
            if first_call < 0:
                first_call = position
    target = first_text if first_text >= 0 else first_call
    if target < 0:
        return trusted_message(_AI, (TextPart(text="", reasoning=_EMPTY_REASONING), *parts))
    new_parts = list(parts)
    new_parts[target] = with_field(parts[target], "reasoning", _EMPTY_REASONING)
    return trusted_message(_AI, tuple(new_parts))
