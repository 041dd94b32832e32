"""How summary pairs look for the provider a chain is sent to (``target=``, see
:meth:`csum.Summarizer.summarize`): ids from its template, reasoning by its policy, a text
answer where it would refuse a human after a tool message or an undeclared tool; without a
target, the contract's reference shape. ``allow_growth=False`` keeps what would not shrink."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cast import (
    BodyPair,
    BodyPairType,
    IdTemplate,
    Message,
    ProviderProfile,
    Reasoning,
    ReasoningPolicy,
    Role,
    TextPart,
    ToolCall,
    contains_tool_call_reasoning,
    extract_reasoning_message,
    get_provider,
)

__all__ = ["SummaryStyle", "summary_style"]


@dataclass(frozen=True, slots=True)
class SummaryStyle:
    """The shape of the summary pairs of one run."""

    id_template: IdTemplate
    target: ProviderProfile | None = None
    allow_growth: bool = True
    _floor: dict[BodyPairType, int] = field(default_factory=dict, compare=False, repr=False)
    """Sizes of empty summary pairs by kind (``summary_floor``'s cache)."""

    @property
    def needs_reasoning_content(self) -> bool:
        return (
            self.target is not None
            and self.target.reasoning is ReasoningPolicy.REASONING_CONTENT_REQUIRED
        )

    def completion_before_human(self) -> bool:
        """Whether a summary followed by a human message must be a text answer."""
        return self.target is not None and self.target.needs_ai_between_tool_and_human

    def text_summaries(self) -> bool:
        """Whether every summary must be a text answer, not a call of the summary tool
        (the target refuses tool calls in a request that declares no tools)."""
        return self.target is not None and self.target.tools_with_tool_history

    def fake_signature(self, summarized: Sequence[Message], keep_reasoning: bool) -> bool:
        if self.target is None:
            return keep_reasoning and contains_tool_call_reasoning(summarized)
        return self.target.reasoning is ReasoningPolicy.THOUGHT_SIGNATURE

    def reasoning_message(
        self, summarized: Sequence[Message], keep_reasoning: bool
    ) -> Message | None:
        """The reasoning text carried in front of the summary call, if any."""
        if not keep_reasoning or not contains_tool_call_reasoning(summarized):
            return None
        policy = None if self.target is None else self.target.reasoning
        if policy is ReasoningPolicy.STRIP:
            return None
        message = extract_reasoning_message(summarized)
        if message is None or policy is not ReasoningPolicy.NATIVE_SIGNATURES:
            return message
        reasoning = message.parts[0].reasoning  # type: ignore[union-attr]
        return message if reasoning is not None and reasoning.signature else None

    def completion(self, text: str) -> BodyPair:
        """A COMPLETION summary pair holding ``text`` (already prefixed)."""
        if not self.needs_reasoning_content:
            return BodyPair.completion(text)
        return BodyPair.build(
            Message.from_parts(Role.AI, (TextPart(text=text, reasoning=Reasoning()),))
        )

    def with_reasoning_content(self, pair: BodyPair) -> BodyPair:
        """A SUMMARIZATION pair whose AI message carries (empty) reasoning content."""
        parts = pair.ai_message.parts
        if any(
            (type(p) is TextPart or type(p) is ToolCall) and p.reasoning is not None for p in parts
        ):
            return pair
        new_parts = tuple(
            p.evolve(reasoning=Reasoning()) if type(p) is ToolCall else p for p in parts
        )
        return pair.evolve(ai_message=pair.ai_message.evolve(parts=new_parts))

    def keeps_original(self, summary: int, replaced: int) -> bool:
        """Whether a summary of ``summary`` bytes replacing ``replaced`` bytes is refused."""
        return not self.allow_growth and summary >= replaced


def summary_style(
    id_template: IdTemplate,
    target: str | ProviderProfile | None,
    allow_growth: bool | None,
    *,
    template_given: bool,
) -> SummaryStyle:
    """The style for a run: a target's own template unless one was given (which must
    then produce ids the target accepts). ``allow_growth=None`` means: growth allowed
    only without a target (the contract's reference behaviour)."""
    profile = (
        target if target is None or isinstance(target, ProviderProfile) else get_provider(target)
    )
    if profile is not None:
        if not template_given:
            id_template = profile.id_template
        else:
            sample = id_template.generate("execute_task_and_return_summary", seed="csum.style")
            if not profile.accepts_id(sample):
                raise ValueError(
                    f"id_template {id_template.pattern!r} makes ids such as {sample!r}, "
                    f"which {profile.name} rejects ({profile.id_problem(sample)})"
                )
    if allow_growth is None:
        allow_growth = profile is None
    return SummaryStyle(id_template, profile, allow_growth)
