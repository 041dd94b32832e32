"""Edits of a parsed chain by message position, for the Compactor's stages.

A stage that changes messages (clearing shrinks tool results, cache points mark a
message's end) or takes out or adds whole body pairs (re-inserted copies, a recall
pair) edits the AST it was given: the nodes it touches are rebuilt (checked, sized from
their messages), every other node is shared, and the chain is never parsed again.
Positions are indices into :meth:`~cast.ChainAST.to_messages`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from cast import BodyPair, ChainAST, Header, Message, Section

__all__ = ["changed_positions", "edited", "inserted"]


def changed_positions(before: list[Message], after: list[Message]) -> dict[int, Message]:
    """position -> message of ``after`` where it holds another object than ``before``
    (two lists of the same length: a stage's output of the same chain)."""
    return {
        i: new for i, (old, new) in enumerate(zip(before, after, strict=True)) if new is not old
    }


def _header(header: Header, start: int, replaced: Mapping[int, Message]) -> Header:
    system, human = header.system_message, header.human_message
    at = start
    if system is not None:
        system = replaced.get(at, system)
        at += 1
    if human is not None:
        human = replaced.get(at, human)
    if system is header.system_message and human is header.human_message:
        return header
    return Header.build(system, human)


def _pair(pair: BodyPair, start: int, replaced: Mapping[int, Message]) -> BodyPair:
    ai = replaced.get(start, pair.ai_message)
    tools = tuple(replaced.get(start + 1 + i, m) for i, m in enumerate(pair.tool_messages))
    if ai is pair.ai_message and all(
        a is b for a, b in zip(tools, pair.tool_messages, strict=True)
    ):
        return pair
    return BodyPair.build(ai, tools)


def edited(
    ast: ChainAST, replaced: Mapping[int, Message], dropped: Collection[int] = ()
) -> ChainAST:
    """``ast`` with the message at each position of ``replaced`` replaced (by one of the
    same role that keeps its pair valid) and every body pair whose AI message is at a
    position of ``dropped`` left out, tool messages included."""
    if not replaced and not dropped:
        return ast
    sections: list[Section] = []
    position = 0
    for section in ast.sections:
        header = _header(section.header, position, replaced) if replaced else section.header
        position += len(section.header.messages())
        body: list[BodyPair] = []
        for pair in section.body:
            if position not in dropped:
                body.append(_pair(pair, position, replaced) if replaced else pair)
            position += 1 + len(pair.tool_messages)
        same = header is section.header and all(
            a is b for a, b in zip(body, section.body, strict=False)
        )
        if same and len(body) == len(section.body):
            sections.append(section)
        else:
            sections.append(Section.build(header, body))
    return ChainAST.build(sections)


def inserted(ast: ChainAST, position: int, pair: BodyPair) -> ChainAST:
    """``ast`` with ``pair`` put in at ``position``: in the body of the section whose body
    spans it (at the end of a body rather than before the next section's header)."""
    sections = list(ast.sections)
    start = 0
    for index, section in enumerate(sections):
        at = start + len(section.header.messages())
        end = start + sum(1 + len(p.tool_messages) for p in section.body) + (at - start)
        if at <= position <= end:
            body = list(section.body)
            offset = at
            slot = 0
            while offset < position:
                offset += 1 + len(body[slot].tool_messages)
                slot += 1
            body.insert(slot, pair)
            sections[index] = Section.build(section.header, body)
            return ChainAST.build(sections)
        start = end
    raise ValueError(f"position {position} is in no section's body")
