"""The plan stage of a compaction: where the kept part of the chain starts and what the
one summary takes (sizes read from the AST); and how a summary pair of csum's is
recognized."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import xxhash

from cast import (
    SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    ChainAST,
    Message,
    ProviderPart,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
)
from csum.archive import own_question

if TYPE_CHECKING:
    from csum.tokens import Meter

__all__ = [
    "EARLIER_CONVERSATION_TEXT",
    "FROZEN_SHARE",
    "KEEP_USER_SHARE",
    "SUMMARIZED_CONTENT_PREFIX",
    "Plan",
    "Planner",
    "human_of",
    "is_breakpoint",
    "is_summarized",
    "is_summary_part",
    "messages_of",
    "summary_key",
    "summary_text",
    "without_cache_point",
]

EARLIER_CONVERSATION_TEXT: Final = "(The earlier conversation is summarized below.)"
"""The human message that opens the summary's own first turn (providers such as
Anthropic and Gemini want a conversation to open with a human message)."""

FROZEN_SHARE: Final = 0.25
"""Share of ``keep_units`` that summaries at the depth limit may take; older ones beyond
it are left out (counted in the event's ``dropped_summaries``)."""

KEEP_USER_SHARE: Final = 0.25
"""With ``keep_user_messages=True``: share of ``keep_units`` the user messages kept
verbatim may take; older ones beyond it are summarized in place as usual."""

Turn = tuple[Message | None, list[Message]]
"""A turn of the summarized part: (its question, or None, its messages)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Where the kept part of the chain starts (pair ``pair`` of section ``section``)
    and what goes into the summary."""

    section: int
    pair: int
    humans: list[Message]
    """The questions that leave the chain, in chain order."""
    summarized: list[Message]
    """The messages of the pairs summarized, in chain order."""
    resummarized: list[BodyPair]
    """Earlier summaries among them."""
    frozen: list[BodyPair]
    """Summaries at the depth limit, carried as they are."""
    dropped: int
    """Summaries at the depth limit left out for want of room."""
    replaced: list[Message]
    """Every message the summary takes the place of, in chain order (what the history
    archive stores): the questions and pairs summarized, and dropped summaries."""
    turns: list[Turn]
    """``humans`` and ``summarized`` by turn, in chain order."""
    pairs: list[BodyPair]
    """Every pair before the kept part, in chain order."""
    pinned: list[BodyPair]
    """Pinned pairs among ``pairs``: carried verbatim, never summarized."""
    carried: list[Any]
    """Parts of pinned questions (and of an earlier note's) that leave their turn: they
    open the summary's turn, after :data:`EARLIER_CONVERSATION_TEXT`."""


@dataclass(frozen=True, slots=True)
class Planner:
    """The settings a plan is made with (the Compactor's; :class:`~csum.compaction.Stages`
    adds the other stages' settings)."""

    meter: Meter
    keep_units: int
    summary_reserve: int
    max_depth: int | None
    depths: Mapping[str, int]
    """The depth of each summary of the last chain returned, by :func:`summary_key`."""
    pin: Callable[[Message], bool] | None
    keep_user_messages: bool

    def depth(self, pair: BodyPair) -> int:
        """How many compactions the summary ``pair`` went through (0: no summary)."""
        if not is_summarized(pair):
            return 0
        return self.depths.get(summary_key(pair), 1)

    def plan(self, ast: ChainAST) -> Plan | None:
        """The kept part: after the mandatory messages, the newest pairs that fit
        ``keep_units`` less the reserve. None when nothing is left to summarize."""
        meter = self.meter
        sections = ast.sections
        last = ast.current_section  # reminders after the question stay after it
        tail = sections[last]
        frozen, dropped = self.frozen(ast)
        pinned, carried = self.pins(ast)
        # What always stays: every system message, where it stands (docs/concepts.md), the
        # current question and the newest pair.
        room = self.keep_units - self.summary_reserve - meter.total(ast.system_messages())
        if tail.header.human_message is not None:
            room -= meter(tail.header.human_message)
        if tail.body:
            room -= meter.node(tail.body[-1])
        room -= sum(meter.node(pair) for pair in frozen)
        room -= sum(pinned.values()) + sum(carried.values())
        frozen_ids = {id(pair) for pair in frozen} | pinned.keys()
        start = (last, max(len(tail.body) - 1, 0))
        for s_index in range(last, -1, -1):
            section = sections[s_index]
            if s_index == last:
                newest = len(section.body) - 2
            else:
                human = section.header.human_message
                newest = len(section.body) - 1
                if human is not None and id(human) not in carried:
                    room -= meter(human)
            for p_index in range(newest, -1, -1):
                pair = section.body[p_index]
                cost = 0 if id(pair) in frozen_ids else meter.node(pair)
                if cost > room:
                    return self.split(ast, *start, frozen, dropped, pinned=pinned, carried=carried)
                room -= cost
                start = (s_index, p_index)
            if s_index != last and start[0] != s_index:
                break  # an empty section: its question goes into the summary
            start = (s_index, 0)
        return self.split(ast, *start, frozen, dropped, pinned=pinned, carried=carried)

    def pins(self, ast: ChainAST) -> tuple[dict[int, int], dict[int, int]]:
        """What a summary must not take, each by id with its size: the pinned pairs, and
        the questions carried (pinned, kept by ``keep_user_messages``, a note's)."""
        pinned: dict[int, int] = {}
        carried: dict[int, int] = {}
        pin = self.pin
        if pin is None and not self.keep_user_messages and len(ast.sections) < 2:
            return pinned, carried
        sections = ast.sections
        last = len(sections) - 1
        meter = self.meter
        if pin is not None:
            for s_index, section in enumerate(sections):
                body = section.body if s_index < last else section.body[:-1]
                for pair in body:
                    if not is_summarized(pair) and any(map(pin, pair.messages())):
                        pinned[id(pair)] = meter.node(pair)
        questions = [
            human
            for section in sections[:last]
            if (human := section.header.human_message) is not None
        ]
        room = int(self.keep_units * KEEP_USER_SHARE)
        for human in questions:
            if len(human.parts) > 1 and _is_note(human):
                room -= carried.setdefault(id(human), meter(human))
        task = sections[0].header.human_message  # carried in the note: still first
        mid_chain = len(ast.system_messages()) > (sections[0].header.system_message is not None)
        if mid_chain and task is not None and not _is_note(task) and meter(task) <= room:
            # With system messages sent mid-chain, the user's first task is never folded
            # into a summary while it fits: none of them may come to stand before it.
            room -= carried.setdefault(id(task), meter(task))
        for human in reversed(questions):
            if id(human) in carried or _is_note(human):
                continue
            if pin is not None and pin(human):
                carried[id(human)] = meter(human)
            elif self.keep_user_messages and meter(human) <= room:
                room -= carried.setdefault(id(human), meter(human))
        return pinned, carried

    def frozen(self, ast: ChainAST) -> tuple[list[BodyPair], list[BodyPair]]:
        """(kept, dropped): the summaries at the depth limit, the newest of them kept
        while they take at most :data:`FROZEN_SHARE` of ``keep_units``."""
        max_depth = self.max_depth
        found = [
            pair
            for section in ast.sections
            for pair in section.body
            if max_depth is not None and self.depth(pair) >= max_depth
        ]
        room = int(self.keep_units * FROZEN_SHARE)
        cut = len(found)  # found[cut:] is kept
        while cut and (cost := self.meter.node(found[cut - 1])) <= room:
            cut -= 1
            room -= cost
        return found[cut:], found[:cut]

    def split(
        self,
        ast: ChainAST,
        k: int,
        p: int,
        frozen: list[BodyPair],
        dropped: list[BodyPair],
        *,
        pinned: Collection[int],
        carried: Collection[int],
    ) -> Plan | None:
        """What goes into the summary when the kept part starts at pair ``p`` of section
        ``k`` (None: nothing)."""
        if k == 0 and p == 0:
            return None
        sections = ast.sections
        evicted_turns = [
            (None if q is not None and id(q) in carried else q, body)
            for q, body in _evicted(sections, k, p)
        ]
        pairs = [pair for _, body in evicted_turns for pair in body]
        frozen_ids = {id(pair) for pair in frozen}
        dropped_ids = {id(pair) for pair in dropped}
        gone = sum(1 for pair in pairs if id(pair) in dropped_ids)
        skipped = frozen_ids | dropped_ids | set(pinned)
        live = [pair for pair in pairs if id(pair) not in skipped]
        humans = [question for question, _ in evicted_turns if question is not None]
        if (pinned or carried) and not live and not humans and not gone:
            return None  # all that would leave is carried: nothing to summarize
        return Plan(
            section=k,
            pair=p,
            humans=humans,
            summarized=messages_of(live),
            resummarized=[pair for pair in live if is_summarized(pair)],
            frozen=[pair for pair in pairs if id(pair) in frozen_ids],
            dropped=gone,
            replaced=_replaced(evicted_turns, frozen_ids | set(pinned)),
            turns=[
                (question, messages_of([pair for pair in body if id(pair) not in skipped]))
                for question, body in evicted_turns
            ],
            pairs=pairs,
            pinned=[pair for pair in pairs if id(pair) in pinned],
            carried=_carried(sections[:k], carried),
        )


def _is_note(message: Message) -> bool:
    """Whether ``message`` opens a summary's turn (the note, then questions it carries)."""
    parts = message.parts
    return (
        len(parts) >= 1
        and type(parts[0]) is TextPart
        and parts[0].text == EARLIER_CONVERSATION_TEXT
        and parts[0].reasoning is None
    )


def _carried(sections: Sequence[Section], questions: Collection[int]) -> list[Any]:
    """The parts of the leaving questions the summary's turn carries (pinned, a note's)."""
    carried: list[Any] = []
    for section in sections:
        human = section.header.human_message
        if human is None:
            continue
        if _is_note(human):
            carried.extend(human.parts[1:])
        elif id(human) in questions and (own := own_question(human)) is not None:
            carried.extend(own.parts)
    return carried


def _evicted(
    sections: Sequence[Section], k: int, p: int
) -> Iterator[tuple[Message | None, tuple[BodyPair, ...]]]:
    """(question, pairs) of every turn before pair ``p`` of section ``k``; a note is no question."""
    for index in range(k + 1):
        section = sections[index]
        body = section.body if index < k else section.body[:p]
        if index == k and not body:
            return
        human = section.header.human_message
        yield (human if human is not None and not _is_note(human) else None), body


def _replaced(
    turns: Sequence[tuple[Message | None, Sequence[BodyPair]]], frozen_ids: set[int]
) -> list[Message]:
    """The messages the evicted ``turns`` take out of the chain (questions as their own text)."""
    out: list[Message] = []
    for question, body in turns:
        own = None if question is None else own_question(question)
        if own is not None:
            out.append(own)
        for pair in body:
            if id(pair) not in frozen_ids:
                out.extend(pair.messages())
    return out


# -- summary pairs ----------------------------------------------------------------------------

SUMMARIZED_CONTENT_PREFIX = "**summarized content:**\n"
"""Prefix of the text of COMPLETION summary pairs; marks them as already summarized."""


def is_summarized(pair: BodyPair) -> bool:
    """Whether a pair is a summary made by csum, judged by its exact shape: a COMPLETION
    of one text part without reasoning starting with ``SUMMARIZED_CONTENT_PREFIX``, or a
    SUMMARIZATION whose only call, last after reasoning-carrying texts, is
    ``SUMMARIZATION_TOOL_NAME`` with ``SUMMARIZATION_TOOL_ARGS``, answered by one result
    (a final cache point aside)."""
    parts = without_cache_point(pair.ai_message.parts)
    if pair.type is BodyPairType.COMPLETION:
        return len(parts) == 1 and is_summary_part(parts[0])
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
    results = without_cache_point(pair.tool_messages[0].parts)
    return (
        len(results) == 1
        and type(results[0]) is ToolResult
        and results[0].tool_call_id == call.id
        and results[0].name == SUMMARIZATION_TOOL_NAME
    )


def summary_key(pair: BodyPair) -> str:
    """A summary's identity for the depth records: its text (ids may be renamed)."""
    return xxhash.xxh3_64_hexdigest(summary_text(pair).encode("utf-8", "surrogatepass"))


def summary_text(pair: BodyPair) -> str:
    """The text a summary pair of csum's (:func:`is_summarized`) holds, without the
    COMPLETION prefix."""
    if pair.type is BodyPairType.SUMMARIZATION:
        result = pair.tool_messages[0].parts[0]
        return result.content if type(result) is ToolResult else ""
    return pair.ai_message.text.removeprefix(SUMMARIZED_CONTENT_PREFIX)


def is_summary_part(part: object) -> bool:
    """Whether ``part`` is the text of a COMPLETION summary of csum's."""
    return (
        type(part) is TextPart
        and part.reasoning is None
        and part.text.startswith(SUMMARIZED_CONTENT_PREFIX)
    )


def without_cache_point(parts: tuple[Any, ...]) -> tuple[Any, ...]:
    """``parts`` without a final Anthropic cache point (still the summary)."""
    if len(parts) > 1 and is_breakpoint(parts[-1]):
        return parts[:-1]
    return parts


def messages_of(pairs: Sequence[BodyPair]) -> list[Message]:
    """The pairs' messages in chain order (a quarter of the time of a comprehension over
    ``pair.messages()``: hot, once per summarized section)."""
    out: list[Message] = []
    append = out.append
    for pair in pairs:
        append(pair.ai_message)
        out += pair.tool_messages
    return out


def human_of(section: Section) -> list[Message]:
    human = section.header.human_message
    return [] if human is None else [human]


def is_breakpoint(part: object) -> bool:
    """Whether ``part`` is an Anthropic cache point (``cache_control``)."""
    kind = "cache_control"
    return type(part) is ProviderPart and part.provider == "anthropic" and part.kind == kind
