"""Summary pairs: recognising them, building them, and rebuilding sections around them."""

from __future__ import annotations

from collections.abc import Sequence

from cast import BodyPair, BodyPairType, IdTemplate, Message, Section, TextPart
from csum._style import SummaryStyle

__all__ = [
    "SUMMARIZED_CONTENT_PREFIX",
    "human_of",
    "is_summarized",
    "messages_of",
    "summary_pair",
    "summary_type",
]

SUMMARIZED_CONTENT_PREFIX = "**summarized content:**\n"
"""Prefix of the text of COMPLETION summary pairs; marks them as already summarized."""


def is_summarized(pair: BodyPair) -> bool:
    """Whether a pair already holds a summary (a SUMMARIZATION pair, or a COMPLETION whose
    first part is text starting with ``SUMMARIZED_CONTENT_PREFIX``)."""
    if pair.type is BodyPairType.SUMMARIZATION:
        return True
    if pair.type is BodyPairType.COMPLETION:
        parts = pair.ai_message.parts
        return (
            bool(parts)
            and type(parts[0]) is TextPart
            and parts[0].text.startswith(SUMMARIZED_CONTENT_PREFIX)
        )
    return False


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
    provider instead (see :mod:`csum._style`); ``before_human`` says a human message
    follows the pair.
    """
    if style is None:
        style = SummaryStyle(id_template)
    if before_human and style.completion_before_human():
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


def human_of(section: Section) -> list[Message]:
    human = section.header.human_message
    return [] if human is None else [human]
