"""The assembly stage of a compaction: the compacted chain, made to fit.

The summarized part is replaced by the summary pair (and the frozen and pinned pairs
carried verbatim), placed where the kept part starts: after the kept question when the
cut falls inside a turn, else in a first turn of its own opened by
:data:`~csum.plan.EARLIER_CONVERSATION_TEXT`. When the result exceeds the limit, frozen
summaries go first (oldest first), then the summary is cut to the longest prefix that
fits, keeping its archive line. When not even an empty summary fits, the summarized
part goes if that brings the chain within the limit; when the system prompt and the
newest turn alone exceed it (the floor), it still gets a summary of at most
:data:`FLOOR_SUMMARY_BYTES`: turns are never dropped without one for nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cast import (
    BodyPair,
    BodyPairType,
    ChainAST,
    Header,
    Message,
    Role,
    Section,
    TextPart,
)
from csum._pairs import summary_pair
from csum._style import SummaryStyle
from csum._summary_ids import unique_summary_ids
from csum.archive import split_archive_line
from csum.plan import EARLIER_CONVERSATION_TEXT, Plan

__all__ = ["FLOOR_SUMMARY_BYTES", "Assembled", "Assembler"]

FLOOR_SUMMARY_BYTES = 512
"""Largest summary a compaction over the floor writes (the system prompt and the newest
turn alone exceed the budget): short, but the turns it replaces are never dropped
without one."""


@dataclass(frozen=True, slots=True)
class Assembled:
    """The compacted chain and how it was made to fit."""

    chain: ChainAST
    truncated: bool
    """The summary was cut (or left out) to fit."""
    dropped: int
    """Summaries at the depth limit left out."""
    pair: BodyPair | None
    """The summary pair in the chain (None when there is none)."""


@dataclass(frozen=True, slots=True)
class Assembler:
    """What a compacted chain is built with: the summary's style, the seed of its ids,
    the limit, and the measure of a chain in the budget's unit."""

    style: SummaryStyle
    seed: str
    limit: int
    measure: Callable[[ChainAST], int]

    def assemble(self, ast: ChainAST, plan: Plan, text: str | None, size_before: int) -> Assembled:
        """The compacted chain, made to fit. ``ast`` comes back unchanged when the
        summary would not make it smaller and it is within the limit."""
        measure, limit = self.measure, self.limit
        frozen = list(plan.frozen)
        out, pair = self.build(ast, plan, text, frozen)
        size = measure(out)
        if size >= size_before and size_before <= limit:
            return Assembled(ast, False, 0, None)
        dropped = plan.dropped
        while frozen and size > limit:
            frozen.pop(0)
            dropped += 1
            out, pair = self.build(ast, plan, text, frozen)
            size = measure(out)
        if size <= limit or text is None:
            return Assembled(out, False, dropped, pair)
        best = self._longest_fitting(ast, plan, text, frozen)
        if best is None:  # not even an empty summary fits
            out, pair = self.build(ast, plan, None, [])
            if measure(out) > limit:  # the floor is over the budget: a short summary
                out, pair = self._floor_summary(ast, plan, text)
            return Assembled(out, True, dropped + len(frozen), pair)
        return Assembled(best[0], True, dropped, best[1])

    def _floor_summary(
        self, ast: ChainAST, plan: Plan, text: str
    ) -> tuple[ChainAST, BodyPair | None]:
        """Over the budget whatever is summarized (the system prompt and the newest turn
        are larger): the summarized part still gets a summary, cut to
        :data:`FLOOR_SUMMARY_BYTES` (at a line end where one is), never left out."""
        head, line = split_archive_line(text)
        cut = head.encode("utf-8")[:FLOOR_SUMMARY_BYTES].decode("utf-8", "ignore")
        if len(cut) < len(head) and "\n" in cut:
            cut = cut[: cut.rindex("\n")]
        return self.build(ast, plan, "\n".join(filter(None, (cut, line))), [])

    def _longest_fitting(
        self, ast: ChainAST, plan: Plan, text: str, frozen: list[BodyPair]
    ) -> tuple[ChainAST, BodyPair | None] | None:
        """The chain with the longest prefix of the summary that fits, its archive line
        kept; None when none does."""
        head, line = split_archive_line(text)
        data = head.encode("utf-8")
        low, high = 0, len(data) - 1
        best: tuple[ChainAST, BodyPair | None] | None = None
        while low <= high:
            middle = (low + high) // 2
            cut = data[:middle].decode("utf-8", "ignore")
            candidate = self.build(ast, plan, "\n".join(filter(None, (cut, line))), frozen)
            if self.measure(candidate[0]) <= self.limit:
                best, low = candidate, middle + 1
            else:
                high = middle - 1
        return best

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
        if text is not None:
            pair = summary_pair(
                text,
                _kind(plan.summarized),
                plan.summarized,
                id_template=style.id_template,
                keep_reasoning=k == len(sections) - 1,
                seed=self.seed,
                style=style,
                before_human=own_turn,
            )
            body.append(pair)
        new = _placed(sections, plan, body, own_turn)
        out = ChainAST.build(new)
        if pair is not None and pair.type is BodyPairType.SUMMARIZATION:
            out = unique_summary_ids(out, [pair], style.id_template)
        return out, pair


def _placed(
    sections: Sequence[Section], plan: Plan, body: list[BodyPair], own_turn: bool
) -> list[Section]:
    """The sections of the compacted chain: ``body`` (the carried pairs and the summary)
    where the kept part starts, in a turn of its own or after the kept question."""
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
    if own_turn and body:
        note = Message.from_parts(Role.HUMAN, (TextPart(text=EARLIER_CONVERSATION_TEXT), *carried))
        new.append(Section.build(Header.build(system, note), tuple(body)))
        new.extend(Section.opened_by(later, question, kept.body[p:]))
    elif own_turn and carried and later:  # the carried questions stay ahead of them
        opening = Message.from_parts(Role.HUMAN, carried)
        new.append(Section.build(Header.build(system, opening)))
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


def _kind(summarized: Sequence[Message]) -> BodyPairType:
    """SUMMARIZATION when a summarized AI message called tools, else COMPLETION."""
    if any(m.role is Role.AI and m.tool_calls for m in summarized):
        return BodyPairType.SUMMARIZATION
    return BodyPairType.COMPLETION
