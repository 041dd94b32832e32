"""Summary call ids made unique against the rest of the chain at the end of a run."""

from __future__ import annotations

from collections.abc import Sequence

from cast import SUMMARIZATION_TOOL_NAME, BodyPair, BodyPairType, ChainAST, IdTemplate, ToolCall

__all__ = ["unique_summary_ids"]


def unique_summary_ids(
    ast: ChainAST, created: Sequence[BodyPair], template: IdTemplate
) -> ChainAST:
    """The chain with the summary pairs made in this run renamed where their call id
    repeats another id of the chain; ids that were already there never change.

    Summary ids are seeded by position and summary text, so two runs (or a handler that
    always answers the same) can produce one id twice; providers reject repeated ids.
    """
    new = {id(pair) for pair in created}
    fixed: set[str] = set()
    for section in ast.sections:
        for pair in section.body:
            if id(pair) not in new:
                fixed.update(call.id for call in pair.tool_calls)
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
