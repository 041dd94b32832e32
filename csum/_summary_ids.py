"""Summary call ids made unique against the rest of the chain at the end of a run."""

from __future__ import annotations

from collections.abc import Sequence

from cast.ast import BodyPair, BodyPairType, ChainAST
from cast.constants import SUMMARIZATION_TOOL_NAME
from cast.errors import IdTemplateError
from cast.ids import IdTemplate
from cast.messages import Role, ToolCall, replace_field, trusted_message
from csum._pairs import rebuild_section

__all__ = ["unique_summary_ids"]


def unique_summary_ids(
    ast: ChainAST, created: Sequence[BodyPair], template: IdTemplate
) -> ChainAST:
    """The chain with the summary pairs made in this run renamed where their call id
    repeats another id of the chain; ids that were already there never change.

    Summary ids are seeded by position and summary text, so two runs (or a handler that
    always answers the same) can produce one id twice; providers reject repeated ids.
    Raises :class:`IdTemplateError` when the template cannot produce enough distinct
    ids (instead of searching forever).
    """
    new = {id(pair) for pair in created}
    fixed: set[str] = set()
    for section in ast.sections:
        for pair in section.body:
            if id(pair) not in new:
                fixed.update(call.id for call in pair.tool_calls)
    _check_capacity(template, fixed, sum(1 for p in created if p.type is _SUMMARY))
    seen = set(fixed)
    sections = list(ast.sections)
    changed = False
    for s_index, section in enumerate(sections):
        body = list(section.body)
        renamed = False
        for p_index, pair in enumerate(body):
            if id(pair) not in new or pair.type is not _SUMMARY:
                continue
            call_id = pair.tool_calls[0].id
            if call_id not in seen:
                seen.add(call_id)
                continue
            call_id = _free_id(template, pair.tool_calls[0].id, seen)
            seen.add(call_id)
            body[p_index] = _renamed_summary(pair, call_id)
            renamed = changed = True
        if renamed:
            sections[s_index] = rebuild_section(section.header, tuple(body))
    return ChainAST._trusted(tuple(sections)) if changed else ast


_SUMMARY = BodyPairType.SUMMARIZATION
_MAX_ATTEMPTS = 10_000


def _check_capacity(template: IdTemplate, fixed: set[str], needed: int) -> None:
    """Raise :class:`IdTemplateError` when ``template`` cannot give ``needed`` ids besides
    those of ``fixed`` it already produces (``--id-template x``: one id in all)."""
    capacity = template.capacity
    if capacity is None or needed == 0:
        return
    taken = sum(1 for i in fixed if template.matches(i, SUMMARIZATION_TOOL_NAME))
    if capacity < taken + needed:
        raise IdTemplateError(
            f"id template {template.pattern!r} can produce only {capacity} distinct ids; "
            f"this chain needs {needed} new summary ids besides the {taken} of its ids "
            "that already fit the template"
        )


def _free_id(template: IdTemplate, call_id: str, seen: set[str]) -> str:
    """A new id for a summary whose id ``call_id`` repeats one in ``seen``: seeded by
    it and an attempt counter, so the result is deterministic."""
    for attempt in range(1, _MAX_ATTEMPTS + 1):
        new_id = template.generate(SUMMARIZATION_TOOL_NAME, seed=f"{call_id}\x1f{attempt}")
        if new_id not in seen:
            return new_id
    raise IdTemplateError(
        f"id template {template.pattern!r} keeps producing ids already used in the chain"
    )


def _renamed_summary(pair: BodyPair, call_id: str) -> BodyPair:
    """A SUMMARIZATION pair with its call (and result) given a new id."""
    ai_parts = tuple(
        replace_field(p, "id", call_id) if type(p) is ToolCall else p for p in pair.ai_message.parts
    )
    result = pair.tool_messages[0].parts[0]
    ai = trusted_message(Role.AI, ai_parts)
    tool = trusted_message(Role.TOOL, (replace_field(result, "tool_call_id", call_id),))
    return BodyPair._trusted(pair.type, ai, (tool,), ai.size + tool.size)
