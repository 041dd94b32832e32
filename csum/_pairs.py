"""Summary pairs: recognising them, building them, and rebuilding sections around them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cast import (
    SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    IdTemplate,
    Message,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
)
from csum._breakpoints import is_breakpoint
from csum._style import SummaryStyle

__all__ = [
    "SUMMARIZED_CONTENT_PREFIX",
    "human_of",
    "is_summarized",
    "messages_of",
    "summary_floor",
    "summary_pair",
    "summary_text",
    "summary_type",
]

SUMMARIZED_CONTENT_PREFIX = "**summarized content:**\n"
"""Prefix of the text of COMPLETION summary pairs; marks them as already summarized."""


def is_summarized(pair: BodyPair) -> bool:
    """Whether a pair is a summary made by csum, judged by its exact shape, so that a
    pair that only looks like one is summarized like any other:

    - COMPLETION: one text part, without reasoning, starting with
      ``SUMMARIZED_CONTENT_PREFIX``;
    - SUMMARIZATION: an AI message whose only tool call is ``SUMMARIZATION_TOOL_NAME``
      with exactly ``SUMMARIZATION_TOOL_ARGS``, last, after nothing but reasoning-carrying
      text parts, answered by one tool message holding one result for that call.

    An AI text that merely starts with the prefix, or a call of a tool that happens to
    share the summary tool's name, is not a summary.
    """
    parts = _without_cache_point(pair.ai_message.parts)
    if pair.type is BodyPairType.COMPLETION:
        return (
            len(parts) == 1
            and type(parts[0]) is TextPart
            and parts[0].reasoning is None
            and parts[0].text.startswith(SUMMARIZED_CONTENT_PREFIX)
        )
    if pair.type is not BodyPairType.SUMMARIZATION or len(pair.tool_messages) != 1:
        return False
    call = parts[-1]
    if (
        type(call) is not ToolCall
        or call.name != SUMMARIZATION_TOOL_NAME
        or call.arguments != SUMMARIZATION_TOOL_ARGS
        or not all(type(p) is TextPart and p.reasoning is not None for p in parts[:-1])
    ):
        return False
    results = _without_cache_point(pair.tool_messages[0].parts)
    return (
        len(results) == 1
        and type(results[0]) is ToolResult
        and results[0].tool_call_id == call.id
        and results[0].name == SUMMARIZATION_TOOL_NAME
    )


def _without_cache_point(parts: tuple[Any, ...]) -> tuple[Any, ...]:
    """``parts`` without a final Anthropic cache point (``Compactor(cache_breakpoints=
    True)`` marks the end of a summary with one: it is still the summary)."""
    if len(parts) > 1 and is_breakpoint(parts[-1]):
        return parts[:-1]
    return parts


def summary_text(pair: BodyPair) -> str | None:
    """The summary a pair of csum's holds (without the COMPLETION prefix); None when
    the pair is not one of csum's summaries."""
    if not is_summarized(pair):
        return None
    if pair.type is BodyPairType.COMPLETION:
        part = pair.ai_message.parts[0]
        assert type(part) is TextPart
        return part.text[len(SUMMARIZED_CONTENT_PREFIX) :]
    result = pair.tool_messages[0].parts[0]
    assert type(result) is ToolResult
    return result.content


def summary_type(pairs: Sequence[BodyPair]) -> BodyPairType:
    """COMPLETION when every pair is a COMPLETION, else SUMMARIZATION."""
    if all(p.type is BodyPairType.COMPLETION for p in pairs):
        return BodyPairType.COMPLETION
    return BodyPairType.SUMMARIZATION


def messages_of(pairs: Sequence[BodyPair]) -> list[Message]:
    out: list[Message] = []
    for pair in pairs:
        out.append(pair.ai_message)
        out.extend(pair.tool_messages)
    return out


def summary_pair(
    text: str,
    kind: BodyPairType,
    summarized: list[Message],
    *,
    id_template: IdTemplate,
    keep_reasoning: bool,
    seed: str,
    style: SummaryStyle | None = None,
    before_human: bool = False,
) -> BodyPair:
    """The pair replacing ``summarized``: a prefixed COMPLETION or a SUMMARIZATION pair.

    With ``keep_reasoning`` (last sections only) a summary of pairs whose tool calls
    carried reasoning gets the fake Gemini signature and the first reasoning text part
    in front of its call. A ``style`` with a target provider shapes the pair for that
    provider instead (see :mod:`csum._style`: a plain-text summary where a tool call
    could be refused); ``before_human`` says a human message follows the pair.
    """
    if style is None:
        style = SummaryStyle(id_template)
    if (before_human and style.completion_before_human()) or style.text_summaries():
        kind = BodyPairType.COMPLETION
    if kind is BodyPairType.COMPLETION:
        return style.completion(SUMMARIZED_CONTENT_PREFIX + text)
    pair = BodyPair.summarization(
        text,
        id_template=id_template,
        fake_signature=style.fake_signature(summarized, keep_reasoning),
        reasoning_message=style.reasoning_message(summarized, keep_reasoning),
        seed=f"{seed}\x1f{text}",
    )
    return style.with_reasoning_content(pair) if style.needs_reasoning_content else pair


def summary_floor(style: SummaryStyle, kind: BodyPairType) -> int:
    """The size of a summary pair of this kind and style with an empty summary:
    replacing fewer bytes can only grow the chain (cached on the style)."""
    size = style._floor.get(kind)
    if size is None:
        pair = summary_pair(
            "",
            kind,
            [],
            id_template=style.id_template,
            keep_reasoning=False,
            seed="",
            style=style,
        )
        size = style._floor[kind] = pair.size
    return size


def human_of(section: Section) -> list[Message]:
    human = section.header.human_message
    return [] if human is None else [human]
