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
    sections = list(ast.sections)
    changed = False
    for s_index, section in enumerate(sections):
        body = list(section.body)
        renamed = False
        for p_index, pair in enumerate(body):
            if id(pair) not in new or pair.type is not BodyPairType.SUMMARIZATION:
                continue
            call_id = pair.tool_calls[0].id
            if call_id not in seen:
                seen.add(call_id)
                continue
            call_id = template.generate_unused(SUMMARIZATION_TOOL_NAME, seed=call_id, used=seen)
            body[p_index] = _renamed_summary(pair, call_id)
            renamed = changed = True
        if renamed:
            sections[s_index] = section.evolve(body=body)
    return ChainAST.build(sections) if changed else ast


def _renamed_summary(pair: BodyPair, call_id: str) -> BodyPair:
    """A SUMMARIZATION pair with its call (and result) given a new id."""
    ai = pair.ai_message
    tool = pair.tool_messages[0]
    return pair.evolve(
        ai_message=ai.evolve(
            parts=[p.evolve(id=call_id) if type(p) is ToolCall else p for p in ai.parts]
        ),
        tool_messages=[tool.evolve(parts=[tool.parts[0].evolve(tool_call_id=call_id)])],
    )
