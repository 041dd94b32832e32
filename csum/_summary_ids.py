"""Summary call ids made unique against the rest of the chain at the end of a run."""

from __future__ import annotations

from collections.abc import Sequence

from cast import (
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    ChainAST,
    IdTemplate,
    IdTemplateError,
    ToolCall,
)

__all__ = ["unique_summary_ids"]


def unique_summary_ids(
    ast: ChainAST, created: Sequence[BodyPair], template: IdTemplate
) -> ChainAST:
    """The chain with the summary pairs made in this run renamed where their call id
    repeats another id of the chain (summary ids are seeded by position and text, so two
    runs can make one twice); ids that were already there never change. Raises
    :class:`IdTemplateError` when the template cannot produce enough distinct ids."""
    new = {id(pair) for pair in created}
    fixed = {
        call.id
        for section in ast.sections
        for pair in section.body
        if id(pair) not in new
        for call in pair.tool_calls
    }
    needed = sum(1 for pair in created if pair.type is BodyPairType.SUMMARIZATION)
    capacity = template.capacity
    if capacity is not None and needed:
        taken = sum(1 for i in fixed if template.matches(i, SUMMARIZATION_TOOL_NAME))
        if capacity < taken + needed:
            raise IdTemplateError(
                f"id template {template.pattern!r} can produce only {capacity} distinct ids; "
                f"this chain needs {needed} new summary ids besides the {taken} of its ids "
                "that already fit the template"
            )
    seen = set(fixed)

    def unique(pair: BodyPair) -> BodyPair:
        if id(pair) not in new or pair.type is not BodyPairType.SUMMARIZATION:
            return pair
        call_id = pair.tool_calls[0].id
        if call_id not in seen:
            seen.add(call_id)
            return pair
        call_id = template.generate_unused(SUMMARIZATION_TOOL_NAME, seed=call_id, used=seen)
        ai, tool = pair.ai_message, pair.tool_messages[0]
        return pair.evolve(
            ai_message=ai.evolve(
                parts=[p.evolve(id=call_id) if type(p) is ToolCall else p for p in ai.parts]
            ),
            tool_messages=[tool.evolve(parts=[tool.parts[0].evolve(tool_call_id=call_id)])],
        )

    sections = []
    for section in ast.sections:
        body = [unique(pair) for pair in section.body]
        same = all(a is b for a, b in zip(body, section.body, strict=True))
        sections.append(section if same else section.evolve(body=body))
    changed = any(a is not b for a, b in zip(sections, ast.sections, strict=True))
    return ChainAST(sections) if changed else ast
