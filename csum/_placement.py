"""Where a text summary goes for a provider that merges consecutive same-role turns.

Anthropic, Bedrock, Gemini and Vertex make consecutive messages of one role one turn. A
text summary (a COMPLETION pair of csum's) right before a kept AI message would open
that AI turn; with Anthropic's ``thinking`` on, the final assistant turn must open with
its thinking block, so such a request is refused (400 "Expected `thinking` or
`redacted_thinking`, but found `text`"; ``cast.lint(..., thinking=True)`` reports
``thinking-not-first``). For such a target the Compactor sends a run of text summaries
followed by an AI message in the user turn before it (:func:`placed_for`): appended to
the human message before it, or a human message of its own after tool results
(Anthropic puts text after the results of that user turn). Summaries a user turn
follows stay where they are: they break no rule.

The Compactor works on the reference shape (the summary its own pair in the body) and
places the summaries when it hands a chain back; the next call reads its own placed
summaries back into that shape (:func:`unplaced`), so a placed summary is folded into
the next one like any other summary, never read as the user's words, and the user's
question stays verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence

from cast import (
    AnyPart,
    BodyPair,
    ChainAST,
    Message,
    ProviderProfile,
    Role,
    Section,
    TextPart,
)
from csum._breakpoints import is_breakpoint
from csum._pairs import SUMMARIZED_CONTENT_PREFIX

__all__ = ["placed_for", "unplaced"]


def _is_summary_part(part: object) -> bool:
    return (
        type(part) is TextPart
        and part.reasoning is None
        and part.text.startswith(SUMMARIZED_CONTENT_PREFIX)
    )


def _is_text_summary(message: Message) -> bool:
    """A COMPLETION summary turn of csum's (a final cache point aside)."""
    parts = message.parts
    if len(parts) == 2 and is_breakpoint(parts[1]):
        parts = parts[:1]
    return message.role is Role.AI and len(parts) == 1 and _is_summary_part(parts[0])


def placed_for(messages: Sequence[Message], target: ProviderProfile | None) -> list[Message]:
    """``messages`` with their text summaries where ``target`` takes them (see the
    module docstring); for a target that does not merge same-role turns, and for
    summaries a user turn follows, ``messages`` come back as they are (a new list)."""
    if target is None or not target.merges_same_role:
        return list(messages)
    out: list[Message] = []
    run: list[Message] = []
    for message in messages:
        if _is_text_summary(message):
            run.append(message)
            continue
        if run and message.role is Role.AI:
            parts = tuple(part for summary in run for part in summary.parts)
            if out and out[-1].role is Role.HUMAN:
                out[-1] = out[-1].evolve(parts=(*out[-1].parts, *parts))
            else:
                out.append(Message.from_parts(Role.HUMAN, parts))
        else:
            out.extend(run)
        run = []
        out.append(message)
    out.extend(run)
    return out


def _summary_tail(parts: Sequence[AnyPart]) -> int:
    """Where the placed summaries at the end of a human message's ``parts`` start (each
    a summary text, perhaps followed by its cache point); ``len(parts)`` for none."""
    start = len(parts)
    while start:
        text = start - 2 if is_breakpoint(parts[start - 1]) else start - 1
        if text < 0 or not _is_summary_part(parts[text]):
            break
        start = text
    return start


def _summary_pairs(parts: Sequence[AnyPart]) -> tuple[BodyPair, ...]:
    """The summary pairs the placed ``parts`` came from, one per summary text."""
    groups: list[list[AnyPart]] = []
    for part in parts:
        if _is_summary_part(part):
            groups.append([part])
        else:  # a summary's cache point
            groups[-1].append(part)
    return tuple(BodyPair.build(Message.from_parts(Role.AI, group)) for group in groups)


def unplaced(ast: ChainAST) -> ChainAST:
    """``ast`` with the summaries :func:`placed_for` moved into a user turn back in the
    reference shape: their own pairs before the AI message that follows them. A human
    message made of summaries alone (after tool results) goes; one that holds the
    user's words keeps them. ``ast`` itself when it holds no placed summary."""
    out: list[Section] = []
    changed = False
    for section in ast.sections:
        human = section.header.human_message
        cut = len(human.parts) if human is not None else 0
        if human is not None and section.body:
            cut = _summary_tail(human.parts)
        if human is None or cut == len(human.parts):
            out.append(section)
            continue
        pairs = _summary_pairs(human.parts[cut:])
        if cut:
            header = section.header.evolve(human_message=human.evolve(parts=human.parts[:cut]))
            out.append(Section.build(header, (*pairs, *section.body)))
        elif out and section.header.system_message is None:  # after tool results
            before = out.pop()
            out.append(before.evolve(body=(*before.body, *pairs, *section.body)))
        else:
            out.append(section)
            continue
        changed = True
    return ChainAST.build(out) if changed else ast
