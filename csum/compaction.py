"""One compaction of the Compactor, its stages in order on the chain parsed once
(:meth:`Stages.compact`: re-inserted copies out, clearing, plan, summary, assembly,
re-insertion, cache points), what it returns (:class:`CompactionResult`), and the tool
calls left pending at the end of a chain."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import xxhash
from pydantic import ValidationError

from cast import (
    FALLBACK_RESPONSE_CONTENT,
    BodyPair,
    ChainAST,
    ChainIssue,
    Message,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from csum.archive import (
    HistoryArchive,
    Insertion,
    is_reinserted,
    own_question,
    recalled_positions,
)
from csum.assemble import Assembler, SummaryStyle, with_breakpoints
from csum.cache import SummaryCache
from csum.clearing import ClearingPass, clear_chain, clear_evicted, edited
from csum.config import Budget, Clearing
from csum.events import CompactionEvent, CompactionReason
from csum.plan import SUMMARIZED_CONTENT_PREFIX, Plan, Planner, is_summarized, summary_key
from csum.prompt import with_fact_memory
from csum.request import (
    HandlerCalls,
    HandlerLedger,
    RobustHandler,
    ledger,
    question_context,
    summarize_in_pieces,
)
from csum.store_events import StoreEvent, StoreEventKind

__all__ = [
    "CompactionResult",
    "Outcome",
    "Stages",
    "pending_tail_calls",
    "question_key",
    "summarize_plan",
    "without_pending_fillers",
]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one :meth:`Compactor.run` returned and cost. Sizes are in ``unit``."""

    messages: list[Message]
    compacted: bool
    over_budget: bool
    """The chain returned exceeds the budget (it could not fit: see the event)."""
    unit: str
    budget: int
    size_before: int
    size_after: int
    bytes_before: int
    bytes_after: int
    handler_calls: int
    events: tuple[CompactionEvent, ...]
    repairs: tuple[ChainIssue, ...]
    seconds: float
    store_events: tuple[StoreEvent, ...] = ()
    """What the cache and the history archive reported in this call (hits, archived
    batches, failures), in order."""
    reinserted_bytes: int = 0
    """UTF-8 bytes of archived lines put back into the current question (re-insertion:
    on a compaction, or on the first call that sees a new question)."""
    cleared_results: int = 0
    """Tool results the clearing stage replaced with placeholders in this call."""
    cleared_units: int = 0
    """What clearing freed, in ``unit``."""
    summary_needed: bool = False
    """Clearing alone could not reach ``keep_units``, so a summary was made (or tried)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a call made of the chain: its messages, sizes and bytes (before, after), the
    event, and what the Compactor keeps (cooldown, depth records, question looked at)."""

    messages: list[Message]
    sizes: tuple[int, int]
    nbytes: tuple[int, int]
    event: CompactionEvent | None = None
    settled: bool = False
    depths: dict[str, int] | None = None
    asked: str | None = None
    """The question re-insertion looked at (its :func:`question_key`), if it did."""


@dataclass(slots=True)
class _Run:
    """One compaction: the chain given, its size, why, the handler calls, what clearing did."""

    chain: ChainAST
    size: int
    reason: CompactionReason
    calls: HandlerCalls
    turn: int
    started: float
    pending: frozenset[str]
    cleared: ClearingPass | None = None


@dataclass(frozen=True, slots=True)
class Stages(Planner):
    """What the stages of a compaction run with: the Compactor's settings (one value per
    Compactor; ``depths`` is its record, updated in place)."""

    budget: Budget
    handler: RobustHandler
    style: SummaryStyle
    trigger: int
    summary_bytes: int
    clearing: Clearing | None
    clear_at_least: int
    cache_breakpoints: bool
    cache: SummaryCache | None
    archive: HistoryArchive | None

    async def compact(
        self,
        ast: ChainAST,
        size: int,
        reason: CompactionReason,
        *,
        focus: str | None,
        turn: int,
        pending: frozenset[str],
    ) -> Outcome:
        """The compaction of ``ast`` (of ``size``) in the Compactor's ``turn``, its stages
        in order (``pending``: the newest turn's calls, left pending)."""
        calls = HandlerCalls(self.handler, cache=self.cache, archive=self.archive)
        run = _Run(ast, size, reason, calls, turn, time.perf_counter(), pending)
        chain = ast
        if self._reinserting:  # without the copies earlier re-insertions added
            messages = ast.to_messages()
            recalled = recalled_positions(messages)
            chain = edited(ast, {}, set(recalled))
            size -= self.meter.total(messages[i] for i in recalled)
        forced = reason is CompactionReason.FORCED
        summarize = reason is not CompactionReason.TRIGGER or size > self.trigger
        if self.clearing is not None:  # enough old tool results cleared (all when forced)
            done = await clear_chain(
                chain,
                self.clearing,
                measure=self.meter,
                goal=None if forced else size - self.keep_units,
                pin=self.pin,
                archive=self.archive,
                emit=calls.events.append,
                at_least=None if summarize else self.clear_at_least,
            )
            if done is not None:
                (chain, run.cleared), size = done, size - done[1].units_freed
                if not summarize or (size <= self.keep_units and not forced):  # clearing did it
                    return self._outcome(run, *self.marked(chain, size), settled=True)
        if not summarize:  # clearing's own trigger, and nothing worth clearing
            return self.outcome(chain, (size, chain.size), size, pending, settled=True)
        plan = self.plan(chain)
        if plan is None:  # nothing left to summarize
            if size > self.budget.limit:
                run.reason = CompactionReason.UNFITTABLE
            return self._outcome(run, chain, size, summary_needed=True)
        return await self._summarized(run, chain, size, plan, focus=focus)

    async def _summarized(
        self, run: _Run, chain: ChainAST, size: int, plan: Plan, *, focus: str | None
    ) -> Outcome:
        """Summary, assembly, re-insertion and cache points of a planned compaction."""
        calls = run.calls
        mark = len(calls.events)  # what clearing archived comes before
        text: str | None = None
        with ledger() as books:
            if plan.summarized or plan.humans:
                text = await summarize_plan(
                    calls,
                    plan,
                    handler=self.handler,
                    clearing=self.clearing,
                    focus=focus,
                    # the chain as the agent sent it: a continuation handler's cached prefix
                    conversation=tuple(run.chain.to_messages()),
                    kept=_kept_after(chain, plan),
                )
                # the facts the summary lacks, in the rest of its share (csum.prompt)
                replaced = plan.replaced or [*plan.humans, *plan.summarized]
                text = with_fact_memory(text, replaced, self.summary_bytes)
        seed = f"compaction\x1f{run.turn}"
        assembler = Assembler(self.style, seed, self.budget.limit, self.meter.chain)
        made, size, summary, truncated, dropped = assembler.assemble(chain, plan, text, size)
        messages = made.to_messages()
        asked, found, grown = await self.reinsertion(messages, size, calls.events, None)
        out, size, reinserted = made, size + grown, 0
        if found is not None:
            pair = BodyPair.build(found.messages[0], found.messages[1:])
            out = edited(out, {}, added=(found.position, pair))
            reinserted = sum(m.size for m in found.messages)
        out, size = self.marked(out, size)
        depth = 1 + max((self.depth(p) for p in plan.resummarized), default=0)
        depths = None
        if summary is not None:  # the depths of the summaries still in the chain
            depths = {
                key: self.depths[key]
                for section in made.sections
                for pair in section.body
                if is_summarized(pair) and (key := summary_key(pair)) in self.depths
            }
            depths[summary_key(summary)] = depth
        archived = any(e.kind is StoreEventKind.ARCHIVED for e in calls.events[mark:])
        outcome = self._outcome(
            run,
            out,
            size,
            settled=True,
            books=books,
            summary_needed=True,
            depth=depth,
            summarized_messages=len(plan.summarized) + len(plan.humans),
            summary_truncated=truncated,
            dropped_summaries=dropped,
            archived_messages=len(plan.replaced) if archived else 0,
            reinserted_bytes=reinserted,
        )
        return replace(outcome, depths=depths, asked=asked)

    @property
    def _reinserting(self) -> bool:
        return self.archive is not None and bool(self.archive.reinsert_bytes)

    async def reinsertion(
        self, messages: list[Message], size: int, events: list[StoreEvent], asked: str | None
    ) -> tuple[str | None, Insertion | None, int]:
        """With re-insertion, for a current question other than ``asked`` (by
        :func:`question_key`): its key, what it needs within the room the budget leaves,
        and that size in the budget's unit; store failures go to ``events``."""
        archive, room = self.archive, self.budget.limit - size
        key = question_key(messages) if self._reinserting else None
        if archive is None or key is None or key == asked:
            return None, None, 0
        limit = archive.reinsert_bytes
        if self.budget.unit == "bytes":
            limit = min(limit, room)
        while limit > 0 and room > 0:
            found = await archive.insertion_reporting(
                messages, max_bytes=limit, emit=events.append, target=self.style.target
            )
            if found is None:
                break
            grown = self.meter.total(found.messages)
            if grown <= room:
                return key, found, grown
            limit = min(limit - 1, limit * room // grown)  # the part's framing costs too
        return key, None, 0

    def marked(self, ast: ChainAST, size: int) -> tuple[ChainAST, int]:
        """``ast`` and its size, with ``cache_breakpoints`` its cache points placed."""
        if not self.cache_breakpoints:
            return ast, size
        return with_breakpoints(ast, size, self.meter, self.budget.limit)

    def _outcome(
        self,
        run: _Run,
        after: ChainAST,
        size: int,
        *,
        settled: bool = False,
        books: HandlerLedger | None = None,
        **summary: Any,
    ) -> Outcome:
        """The outcome ``after`` (of ``size``) and its event (``summary``: its summary fields)."""
        meter, limit, calls, cleared = self.meter, self.budget.limit, run.calls, run.cleared
        books = books if books is not None else HandlerLedger()
        fields: dict[str, Any] = {
            "summarized_messages": 0,
            "depth": 0,
            "summary_truncated": False,
            "dropped_summaries": 0,
            **summary,
        }
        event = CompactionEvent(
            reason=run.reason,
            unit=self.budget.unit,
            budget=limit,
            keep_units=self.keep_units,
            over_budget=size > limit,
            bytes_before=run.chain.size,
            bytes_after=after.size,
            tokens_before=meter.all_tokens(run.chain),
            tokens_after=meter.all_tokens(after),
            messages_before=run.chain.message_count,
            messages_after=after.message_count,
            handler_calls=books.calls,
            retries=books.retries,
            timeouts=books.timeouts,
            fallback_calls=books.fallback_calls,
            chunks=books.chunks,
            cache_hits=calls.cache_hits,
            prompt_bytes=calls.input_bytes,
            summary_bytes=calls.output_bytes,
            duration_s=time.perf_counter() - run.started,
            turn=run.turn,
            store_events=tuple(calls.events),
            cleared_results=cleared.results_cleared if cleared is not None else 0,
            cleared_inputs=cleared.inputs_cleared if cleared is not None else 0,
            cleared_reasoning=cleared.reasoning_cleared if cleared is not None else 0,
            cleared_units=cleared.units_freed if cleared is not None else 0,
            **fields,
        )
        return self.outcome(
            after, (run.size, run.chain.size), size, run.pending, event, settled=settled
        )

    def outcome(
        self,
        after: ChainAST,
        before: tuple[int, int],
        size: int,
        pending: frozenset[str],
        event: CompactionEvent | None = None,
        *,
        settled: bool = False,
    ) -> Outcome:
        """The chain ``after`` (of ``size``) as sent, from one of ``before`` (its size, its
        bytes): without the fallback results repair gave the ``pending`` calls (they stay
        pending), the sizes without them."""
        messages, fillers = without_pending_fillers(after.to_messages(), pending)
        units, cut = self.meter.total(fillers), sum(m.size for m in fillers)
        sizes, nbytes = (before[0] - units, size - units), (before[1] - cut, after.size - cut)
        return Outcome(messages, sizes, nbytes, event, settled)


def question_key(messages: Sequence[Message]) -> str | None:
    """A hash of the last human message's own text (which question re-insertion looked
    at last); None without one."""
    human = next((m for m in reversed(messages) if m.role is Role.HUMAN), None)
    if human is None:
        return None
    own = "\x1f".join(
        p.text
        for p in human.parts
        if type(p) is TextPart
        and not is_reinserted(p)
        and not p.text.startswith(SUMMARIZED_CONTENT_PREFIX)
    )
    return xxhash.xxh3_64_hexdigest(own.encode("utf-8", "surrogatepass"))


# -- tool calls still pending at the end of a chain -----------------------------------------


def pending_tail_calls(messages: Sequence[Message | Mapping[str, Any]]) -> frozenset[str]:
    """Ids of the calls of the chain's last AI message that no tool message after it
    answers, when nothing but tool messages follows that AI message; else empty."""
    answered: set[str] = set()
    for item in reversed(messages):
        try:
            message = item if isinstance(item, Message) else Message.model_validate(item)
        except ValidationError:
            return frozenset()  # the parser reports the bad message as documented
        if message.role is Role.TOOL:
            answered.update(p.tool_call_id for p in message.parts if type(p) is ToolResult)
            continue
        if message.role is not Role.AI:
            return frozenset()
        calls = {p.id for p in message.parts if type(p) is ToolCall}
        return frozenset(calls - answered)
    return frozenset()


def without_pending_fillers(
    messages: list[Message], pending: frozenset[str]
) -> tuple[list[Message], list[Message]]:
    """``(kept, removed)``: the trailing fallback results repair gave the ``pending``
    calls removed. (Repair answers every call; the newest turn's stay pending.)"""
    if not pending:
        return messages, []
    end = len(messages)
    while end > 0 and _is_filler(messages[end - 1], pending):
        end -= 1
    return messages[:end], messages[end:]


def _is_filler(message: Message, pending: frozenset[str]) -> bool:
    part = message.parts[0] if message.role is Role.TOOL and len(message.parts) == 1 else None
    return (
        type(part) is ToolResult
        and part.tool_call_id in pending
        and part.content == FALLBACK_RESPONSE_CONTENT
    )


# -- the summary stage ------------------------------------------------------------------------


async def summarize_plan(
    calls: HandlerCalls,
    plan: Plan,
    *,
    handler: RobustHandler,
    clearing: Clearing | None,
    focus: str | None,
    conversation: tuple[Message, ...] = (),
    kept: int = 0,
) -> str:
    """The summary of what ``plan`` evicts, questions in their place: one prompt when it
    fits the handler's ``max_prompt_bytes`` (with ``conversation`` and ``kept``), else
    pieces, merged; with ``clearing``, evicted results read as their placeholders."""
    limit = handler.robustness.max_prompt_bytes
    turns = [(q, ms if clearing is None else clear_evicted(ms, clearing)) for q, ms in plan.turns]
    evicted = sum(m.size for m in plan.humans) + sum(m.size for _, ms in turns for m in ms)
    # the question of the turn the cut falls in stays (context); the others as their own text
    staying = turns[-1][0] if plan.pair > 0 and turns else None
    turns = [(None if q is None else own_question(q), ms) for q, ms in turns]
    if staying is not None:
        turns[-1] = (None, turns[-1][1])
    if limit is not None and evicted > limit:
        text = await summarize_in_pieces(
            calls,
            turns,
            staying=staying,
            max_bytes=limit,
            concurrency=handler.robustness.max_concurrency,
            phase="compaction",
            section=plan.section,
            focus=focus,
        )
        return await calls.archived(text, plan.replaced)
    summarized = [  # one prompt, in chain order; the question that stays is context
        message
        for question, messages in turns
        for message in (messages if question is None else [question, *messages])
    ]
    return await calls.summarize(
        [] if staying is None else [question_context(staying)],
        summarized,
        phase="compaction",
        section=plan.section,
        replaced=plan.replaced,
        focus=focus,
        conversation=conversation,
        kept=kept,
    )


def _kept_after(chain: ChainAST, plan: Plan) -> int:
    """How many of ``chain``'s last messages ``plan`` keeps after what it evicts."""
    section = chain.sections[plan.section]
    kept = sum(1 + len(pair.tool_messages) for pair in section.body[plan.pair :])
    if plan.pair == 0:
        kept += len(section.header.messages())
    return kept + sum(len(later.messages()) for later in chain.sections[plan.section + 1 :])
