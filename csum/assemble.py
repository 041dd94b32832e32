"""The assembly stage of a compaction: the summary pair built and put where the kept part
starts, the chain made to fit, the summary pairs shaped for the provider the chain is sent to
(:class:`SummaryStyle`, call ids unique in the chain); Anthropic cache points at the end of
its stable prefix; and the summaries placed where a target that merges same-role turns
takes them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from cast import (
    SUMMARIZATION_TOOL_NAME,
    TOOL_BRIDGE_TEXT,
    AnyPart,
    BodyPair,
    BodyPairType,
    ChainAST,
    Header,
    IdTemplate,
    IdTemplateError,
    Message,
    ProviderPart,
    ProviderProfile,
    ReasoningPolicy,
    ReasoningScope,
    Role,
    Section,
    TextPart,
    ToolCall,
    contains_tool_call_reasoning,
    extract_reasoning_message,
    get_provider,
    with_empty_reasoning,
)
from cast.internals import clip_utf8, utf8_len
from csum.archive import split_archive_line
from csum.clearing import edited, is_cleared
from csum.plan import (
    EARLIER_CONVERSATION_TEXT,
    SUMMARIZED_CONTENT_PREFIX,
    Plan,
    is_breakpoint,
    is_summarized,
    is_summary_part,
    without_cache_point,
)

__all__ = [
    "EPHEMERAL",
    "FLOOR_SUMMARY_BYTES",
    "MAX_BREAKPOINTS",
    "Assembler",
    "SummaryStyle",
    "placed_for",
    "summary_floor",
    "summary_kind",
    "summary_pair",
    "summary_style",
    "unique_summary_ids",
    "unplaced",
    "with_breakpoints",
]


@dataclass(frozen=True, slots=True)
class SummaryStyle:
    """The shape of the summary pairs of one run: for a target provider (``target=``),
    ids from its template, reasoning by its policy, a text answer where it would refuse
    a human after a tool message or an undeclared tool; without one, the contract's
    reference shape. ``allow_growth=False`` keeps what would not shrink."""

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

    def with_reasoning_content(self, pair: BodyPair) -> BodyPair:
        """The pair with (empty) reasoning content on its AI message when it has none
        (:func:`cast.transforms.with_empty_reasoning`)."""
        message = with_empty_reasoning(pair.ai_message, whole_turn=True)
        return pair if message is None else pair.evolve(ai_message=message)

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


FLOOR_SUMMARY_BYTES = 512
"""Largest summary a compaction over the floor writes (the system prompt and the newest
turn alone exceed the budget): the turns it replaces are never dropped without one."""


@dataclass(frozen=True, slots=True)
class Assembler:
    """What a compacted chain is built with: the summary's style, the seed of its ids,
    the limit, and the measure of a chain in the budget's unit."""

    style: SummaryStyle
    seed: str
    limit: int
    measure: Callable[[ChainAST], int]

    def assemble(
        self, ast: ChainAST, plan: Plan, text: str | None, size_before: int
    ) -> tuple[ChainAST, int, BodyPair | None, bool, int]:
        """The compacted chain made to fit, its size, its summary pair (None: none), whether
        the summary was cut (or left out) to fit, how many summaries at the depth limit were
        left out. ``ast`` comes back unchanged when the summary would not make it smaller
        and it is within the limit."""
        measure, limit = self.measure, self.limit

        def built(
            text: str | None, frozen: list[BodyPair]
        ) -> tuple[ChainAST, BodyPair | None, int]:
            out, pair = self.build(ast, plan, text, frozen)
            return out, pair, measure(out)

        frozen = list(plan.frozen)
        out, pair, size = built(text, frozen)
        if size >= size_before and size_before <= limit:
            return ast, size_before, None, False, 0
        dropped = plan.dropped
        while frozen and size > limit:
            frozen.pop(0)
            dropped += 1
            out, pair, size = built(text, frozen)
        if size <= limit or text is None:
            return out, size, pair, False, dropped
        head, line = split_archive_line(text)  # the longest head that fits, its line kept
        low, high = 0, utf8_len(head) - 1
        best: tuple[ChainAST, BodyPair | None, int] | None = None
        while low <= high:
            middle = (low + high) // 2
            found = built("\n".join(filter(None, (clip_utf8(head, middle), line))), frozen)
            if found[2] <= limit:
                best, low = found, middle + 1
            else:
                high = middle - 1
        if best is not None:
            return best[0], best[2], best[1], True, dropped
        out, pair, size = built(None, [])  # not even an empty summary fits
        if size > limit:  # the floor is over the budget: a summary cut to FLOOR_SUMMARY_BYTES
            cut = clip_utf8(head, FLOOR_SUMMARY_BYTES)
            if len(cut) < len(head) and "\n" in cut:
                cut = cut[: cut.rindex("\n")]
            out, pair, size = built("\n".join(filter(None, (cut, line))), [])
        return out, size, pair, True, dropped + len(frozen)

    def build(
        self, ast: ChainAST, plan: Plan, text: str | None, frozen: list[BodyPair]
    ) -> tuple[ChainAST, BodyPair | None]:
        """The chain with the summarized part replaced by ``frozen`` and a summary pair
        holding ``text`` (none when ``text`` is None)."""
        sections = ast.sections
        k, p = plan.section, plan.pair
        style = self.style
        own_turn = p == 0 or bool(plan.carried)
        keep_ids = {id(pair) for pair in frozen} | {id(pair) for pair in plan.pinned}
        body: list[BodyPair] = [pair for pair in plan.pairs if id(pair) in keep_ids]
        pair: BodyPair | None = None
        target = style.target
        per_turn = (  # reasoning content on every AI message of a turn that calls a tool
            style.needs_reasoning_content
            and target is not None
            and target.reasoning_scope is ReasoningScope.TOOL_CALL_TURNS
        )
        # A call entering a turn of plain answers would make them need reasoning content
        # (DeepSeek's rule): kept calls of earlier turns then go in a turn of their own,
        # before the question, and a summary in the turn is a text answer.
        plain_turn = (
            per_turn
            and not own_turn
            and not any(kept.ai_message.tool_calls for kept in sections[k].body)
        )
        if plain_turn and any(kept.ai_message.tool_calls for kept in body):
            own_turn, plain_turn = True, False
        if text is not None:
            pair = summary_pair(
                style,
                text,
                plan.summarized,
                seed=self.seed,
                keep_reasoning=k == len(sections) - 1,
                before_human=own_turn,
                completion=plain_turn,
            )
            body.append(pair)
        if per_turn and any(
            kept.ai_message.tool_calls
            for kept in (body if own_turn else (*body, *sections[k].body[p:]))
        ):  # kept plain answers of turns without calls join a turn that has them
            body = [kept if kept is pair else style.with_reasoning_content(kept) for kept in body]
        if own_turn and body and body[-1].tool_messages and style.completion_before_human():
            body.append(BodyPair.completion(TOOL_BRIDGE_TEXT))  # pinned results end the turn
        out = ChainAST(_placed(sections, plan, body, own_turn))
        if pair is not None and pair.type is BodyPairType.SUMMARIZATION:
            out = unique_summary_ids(out, [pair], style.id_template)
        return out, pair


def _placed(
    sections: Sequence[Section], plan: Plan, body: list[BodyPair], own_turn: bool
) -> list[Section]:
    """The compacted chain's sections: ``body`` where the kept part starts."""
    k, p = plan.section, plan.pair
    system = sections[0].header.system_message
    kept = sections[k]
    carried = plan.carried
    new: list[Section] = []
    question = kept.header.human_message
    # The system messages sent mid-chain up to the kept part stay, in order, before the
    # kept question (docs/concepts.md).
    later = [s for x in sections[1 : k + 1] if (s := x.header.system_message) is not None]
    systems = [system, *later] if system is not None else later
    if own_turn and (body or (carried and later)):
        # the summary's turn (the note first), or the carried questions ahead of ``later``
        note = (TextPart(text=EARLIER_CONVERSATION_TEXT),) if body else ()
        opening = Message.from_parts(Role.HUMAN, (*note, *carried))
        new.append(Section(Header(system, opening), tuple(body)))
        new.extend(Section.opened_by(later, question, kept.body[p:]))
    elif own_turn:
        if carried:  # nothing fits before the question: it opens with them
            own = () if question is None else question.parts
            question = Message.from_parts(Role.HUMAN, (*carried, *own))
        new.extend(Section.opened_by(systems, question, kept.body[p:]))
    else:
        new.extend(Section.opened_by(systems, question, (*body, *kept.body[p:])))
    new.extend(sections[k + 1 :])
    return new


def summary_kind(summarized: Sequence[Message]) -> BodyPairType:
    """The kind of the summary pair of ``summarized``: SUMMARIZATION when one of its AI
    messages called tools, else COMPLETION."""
    if any(m.role is Role.AI and m.tool_calls for m in summarized):
        return BodyPairType.SUMMARIZATION
    return BodyPairType.COMPLETION


def summary_pair(
    style: SummaryStyle,
    text: str,
    summarized: list[Message],
    *,
    seed: str,
    keep_reasoning: bool,
    before_human: bool = False,
    completion: bool = False,
) -> BodyPair:
    """The pair replacing ``summarized``, shaped by ``style``: a prefixed COMPLETION or a
    SUMMARIZATION pair (:func:`summary_kind`; with ``keep_reasoning``, the fake Gemini
    signature and first reasoning text of ``summarized``); ``before_human``: a human
    message follows; ``completion``: a COMPLETION whatever ``summarized`` holds."""
    target = style.target
    kind = BodyPairType.COMPLETION if completion else summary_kind(summarized)
    # a text answer where the target refuses tool calls in a request declaring no tools
    if (before_human and style.completion_before_human()) or (
        target is not None and target.tools_with_tool_history
    ):
        kind = BodyPairType.COMPLETION
    if kind is BodyPairType.COMPLETION:
        pair = BodyPair.completion(SUMMARIZED_CONTENT_PREFIX + text)
    else:
        pair = BodyPair.summarization(
            text,
            id_template=style.id_template,
            fake_signature=keep_reasoning and contains_tool_call_reasoning(summarized)
            if target is None
            else target.reasoning is ReasoningPolicy.THOUGHT_SIGNATURE,
            reasoning_message=style.reasoning_message(summarized, keep_reasoning),
            seed=f"{seed}\x1f{text}",
        )
    return style.with_reasoning_content(pair) if style.needs_reasoning_content else pair


def summary_floor(style: SummaryStyle, summarized: list[Message]) -> int:
    """The size of the summary pair of ``summarized`` in this style with an empty summary:
    replacing fewer bytes can only grow the chain (cached on the style, by kind)."""
    kind = summary_kind(summarized)
    size = style._floor.get(kind)
    if size is None:
        pair = summary_pair(style, "", summarized, seed="", keep_reasoning=False)
        size = style._floor[kind] = pair.size
    return size


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


# -- cache points ----------------------------------------------------------------------------

MAX_BREAKPOINTS: Final = 4
"""Anthropic's limit of ``cache_control`` blocks per request."""
EPHEMERAL: Final = '{"type":"ephemeral"}'
_CACHE_POINT: Final = ProviderPart(provider="anthropic", kind="cache_control", data=EPHEMERAL)


def with_breakpoints(
    ast: ChainAST, size: int, measure: Callable[[Message], int], limit: int
) -> tuple[ChainAST, int]:
    """``ast`` (of ``size``, by ``measure`` of a message) with a cache point at the end of
    each message of its stable prefix, by priority (system prompt, newest summary, newest
    cleared result), within :data:`MAX_BREAKPOINTS`, and its size; ``ast`` when they would
    push it over ``limit`` while it fits."""
    messages = ast.to_messages()
    room = MAX_BREAKPOINTS - sum(1 for m in messages for p in m.parts if is_breakpoint(p))
    # where they go, by priority: the system prompt, the newest summary, the newest cleared result
    system = 0 if ast.sections and ast.sections[0].header.system_message is not None else -1
    summary = placeholder = at = -1
    for section in ast.sections:
        at += len(section.header.messages())
        for pair in section.body:
            at += 1 + len(pair.tool_messages)
            if is_summarized(pair):
                summary = at
            elif any(is_cleared(r) for m in pair.tool_messages for r in m.tool_results):
                placeholder = at
    marked: dict[int, Message] = {}
    for index in (i for i in (system, summary, placeholder) if i >= 0):
        message = messages[index]
        if len(marked) >= room:
            break
        if not message.parts or is_breakpoint(message.parts[-1]):
            continue
        if message.role is Role.AI and getattr(message.parts[-1], "text", None) == "":
            continue  # a point after reasoning alone would mark a thinking block: refused
        marked[index] = Message.from_parts(message.role, (*message.parts, _CACHE_POINT))
    grown = size + sum(measure(new) - measure(messages[i]) for i, new in marked.items())
    if not marked or grown > limit >= size:
        return ast, size
    return edited(ast, marked), grown


# -- placement for a target that merges same-role turns ----------------------------------------


def placed_for(messages: Sequence[Message], target: ProviderProfile | None) -> list[Message]:
    """``messages`` (a new list) with each run of text summaries an AI message follows
    moved into the user turn before it, for a ``target`` that merges same-role turns
    (a summary opening an AI turn is refused with Anthropic's thinking on)."""
    if target is None or not target.merges_same_role:
        return list(messages)
    out: list[Message] = []
    run: list[Message] = []
    for message in messages:
        parts = without_cache_point(message.parts)  # a text summary's (a cache point aside)
        if message.role is Role.AI and len(parts) == 1 and is_summary_part(parts[0]):
            run.append(message)
            continue
        if run and message.role is Role.AI:
            moved = tuple(part for summary in run for part in summary.parts)
            if out and out[-1].role is Role.HUMAN:
                out[-1] = out[-1].evolve(parts=(*out[-1].parts, *moved))
            else:
                out.append(Message.from_parts(Role.HUMAN, moved))
        else:
            out.extend(run)
        run = []
        out.append(message)
    out.extend(run)
    return out


def _placed_summaries(parts: Sequence[AnyPart]) -> tuple[int, list[BodyPair]]:
    """Where the placed summaries (each perhaps with its cache point) end ``parts``, and
    the summary pairs they came from."""
    start = len(parts)
    pairs: list[BodyPair] = []
    while start:
        text = start - 2 if is_breakpoint(parts[start - 1]) else start - 1
        if text < 0 or not is_summary_part(parts[text]):
            break
        pairs.insert(0, BodyPair.build(Message.from_parts(Role.AI, parts[text:start])))
        start = text
    return start, pairs


def unplaced(ast: ChainAST) -> ChainAST:
    """``ast`` with the summaries :func:`placed_for` moved back in their own pairs before
    the AI message after them (``ast`` itself when there are none)."""
    out: list[Section] = []
    changed = False
    for section in ast.sections:
        human = section.header.human_message
        parts = human.parts if human is not None and section.body else ()
        cut, pairs = _placed_summaries(parts)
        if not pairs:
            out.append(section)
            continue
        if cut:
            question = Message.from_parts(Role.HUMAN, parts[:cut])
            out.append(
                Section(section.header.evolve(human_message=question), (*pairs, *section.body))
            )
        elif out and section.header.system_message is None:  # after tool results
            before = out.pop()
            out.append(before.evolve(body=(*before.body, *pairs, *section.body)))
        else:
            out.append(section)
            continue
        changed = True
    return ChainAST(out) if changed else ast
