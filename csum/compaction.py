"""One compaction of the Compactor, stage by stage on the chain parsed once.

:meth:`Stages.compact` runs them in order; each takes the chain (a
:class:`~cast.ChainAST`, whose nodes carry their sizes) and gives one back:

1. earlier re-inserted copies out (with re-insertion: the current question gets a fresh
   choice), :mod:`csum.reinsert`;
2. clearing: old tool results become placeholders, :mod:`csum.clearing`; when that
   reaches ``keep_units`` (or only clearing's trigger was passed), the compaction ends
   with the cache points;
3. plan: what is kept and what the one summary takes, :mod:`csum.plan`;
4. summary: one handler call (or pieces), :mod:`csum.summary`;
5. assembly: the summary in place, made to fit, :mod:`csum.assemble`;
6. re-insertion: archived lines the current question needs, :mod:`csum.reinsert`;
7. cache points at the end of the stable prefix, :mod:`csum._breakpoints`.

The Compactor keeps what lasts between calls (turns, depth records, the question
re-insertion looked at); a compaction reads it from :class:`Stages` and hands the
changes back in its :class:`Outcome`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import xxhash

from cast import BodyPair, BodyPairType, ChainAST, ChainIssue, Message, ToolResult
from csum._breakpoints import with_breakpoints
from csum._calls import HandlerCalls
from csum._chain_edits import edited, inserted
from csum._pairs import SUMMARIZED_CONTENT_PREFIX, is_summarized
from csum._robust import HandlerLedger, RobustHandler, ledger
from csum._style import SummaryStyle
from csum.archive import HistoryArchive
from csum.assemble import Assembler
from csum.cache import SummaryCache
from csum.clearing import ClearingPass, clear_chain, is_cleared
from csum.config import Budget, Clearing
from csum.events import CompactionEvent, CompactionReason
from csum.plan import Plan, Planner
from csum.prompt import with_fact_memory
from csum.reinsert import Insertion, question_key, recalled_positions, reinsertion_within
from csum.store_events import StoreEvent, StoreEventKind
from csum.summary import kept_after, summarize_plan
from csum.tokens import Meter

__all__ = ["CompactionResult", "Outcome", "Stages", "summary_key"]


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
    """What a call made of the chain (the fallback results of pending calls still in):
    its messages, sizes and bytes (before, after), the compaction's event, and what the
    Compactor keeps from it: whether it counts for the cooldown (``settled``), the depth
    records of the summaries in the chain, the key of the question re-insertion looked
    at (``looked``)."""

    messages: list[Message]
    sizes: tuple[int, int]
    nbytes: tuple[int, int]
    event: CompactionEvent | None = None
    settled: bool = False
    depths: dict[str, int] | None = None
    looked: bool = False
    asked: str | None = None

    @classmethod
    def unchanged(cls, ast: ChainAST, size: int, *, settled: bool = False) -> Outcome:
        return cls(ast.to_messages(), (size, size), (ast.size, ast.size), settled=settled)


@dataclass(frozen=True, slots=True)
class _Before:
    """The chain a compaction started from (as parsed), its size and the call's start."""

    chain: ChainAST
    size: int
    started: float


@dataclass(frozen=True, slots=True)
class Stages:
    """What the stages of one compaction run with: the Compactor's settings and the
    state it keeps between calls."""

    budget: Budget
    meter: Meter
    handler: RobustHandler
    style: SummaryStyle
    keep_units: int
    trigger: int
    summary_reserve: int
    summary_bytes: int
    max_depth: int | None
    depths: Mapping[str, int]
    clearing: Clearing | None
    clear_at_least: int
    pin: Callable[[Message], bool] | None
    keep_user_messages: bool
    cache_breakpoints: bool
    cache: SummaryCache | None
    archive: HistoryArchive | None
    turn: int

    async def compact(
        self, ast: ChainAST, size: int, reason: CompactionReason, *, focus: str | None
    ) -> Outcome:
        """The compaction of ``ast`` (of ``size``), its stages in order."""
        before = _Before(ast, size, time.perf_counter())
        calls = HandlerCalls(self.handler, cache=self.cache, archive=self.archive)
        chain = self._without_recalled(ast)
        size = size if chain is ast else self.meter.chain(chain)
        forced = reason is CompactionReason.FORCED
        summarize = reason is not CompactionReason.TRIGGER or size > self.trigger
        cleared: ClearingPass | None = None
        if self.clearing is not None:
            done = await self._clear(chain, size, calls, summarize=summarize, forced=forced)
            if done is not None:
                (chain, cleared), size = done, size - done[1].units_freed
                if not summarize or (size <= self.keep_units and not forced):
                    return self._cleared_only(
                        before, chain, size, reason, cleared=cleared, calls=calls
                    )
        if not summarize:  # clearing's own trigger, and nothing worth clearing
            return Outcome.unchanged(chain, size, settled=True)
        plan = self._planner().plan(chain)
        if plan is None:
            return self._unplanned(before, chain, size, reason, cleared=cleared, calls=calls)
        # the chain as the agent sent it: a continuation handler's cached prefix
        conversation = tuple(ast.to_messages())
        made = await self._summarized(
            chain, size, plan, calls=calls, focus=focus, conversation=conversation
        )
        return made.outcome(self, before, reason, plan, cleared=cleared, calls=calls)

    def _without_recalled(self, ast: ChainAST) -> ChainAST:
        """With re-insertion: ``ast`` without the messages earlier re-insertions added
        (copies for earlier questions; the current question gets a fresh choice)."""
        archive = self.archive
        if archive is None or not archive.reinsert_bytes:
            return ast
        return edited(ast, {}, set(recalled_positions(ast.to_messages())))

    async def _clear(
        self, chain: ChainAST, size: int, calls: HandlerCalls, *, summarize: bool, forced: bool
    ) -> tuple[ChainAST, ClearingPass] | None:
        """The clearing stage (:func:`~csum.clearing.clear_chain`): enough old tool
        results cleared to reach ``keep_units`` (all that are eligible when forced)."""
        options = self.clearing
        assert options is not None
        pin = self.pin
        pinned = None if pin is None else (lambda _index, message: bool(pin(message)))
        return await clear_chain(
            chain,
            options,
            measure=self.meter,
            goal=None if forced else size - self.keep_units,
            pinned=pinned,
            archive=self.archive,
            emit=calls.events.append,
            at_least=None if summarize else self.clear_at_least,
        )

    def _cleared_only(
        self,
        before: _Before,
        chain: ChainAST,
        size: int,
        reason: CompactionReason,
        *,
        cleared: ClearingPass,
        calls: HandlerCalls,
    ) -> Outcome:
        """The outcome of a compaction that clearing alone brought to ``keep_units``."""
        out = self.with_breakpoints(chain)
        if out is not chain:
            size = self.meter.chain(out)
        event = self.event(reason, before, out, books=HandlerLedger(), calls=calls, cleared=cleared)
        return _outcome(out, before, size, event, settled=True)

    def _unplanned(
        self,
        before: _Before,
        chain: ChainAST,
        size: int,
        reason: CompactionReason,
        *,
        cleared: ClearingPass | None,
        calls: HandlerCalls,
    ) -> Outcome:
        """The outcome of a compaction with nothing left to summarize."""
        unfittable = size > self.budget.limit
        event = self.event(
            CompactionReason.UNFITTABLE if unfittable else reason,
            before,
            chain,
            books=HandlerLedger(),
            calls=calls,
            cleared=cleared,
            summary_needed=True,
        )
        return _outcome(chain, before, size, event)

    async def _summarized(
        self,
        chain: ChainAST,
        size: int,
        plan: Plan,
        *,
        calls: HandlerCalls,
        focus: str | None,
        conversation: tuple[Message, ...],
    ) -> _Summarized:
        """Summary, assembly, re-insertion and cache points of a planned compaction;
        the summary is asked in ``conversation`` (the chain the Compactor was given)."""
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
                    conversation=conversation,
                    kept=kept_after(chain, plan),
                )
                # the facts the summary lacks, in the rest of its share (csum.prompt)
                replaced = plan.replaced or [*plan.humans, *plan.summarized]
                text = with_fact_memory(text, replaced, self.summary_bytes)
        seed = f"compaction\x1f{self.turn}"
        assembler = Assembler(self.style, seed, self.budget.limit, self.meter.chain)
        made = assembler.assemble(chain, plan, text, size)
        messages = made.chain.to_messages()
        found = await self.reinsertion(messages, self.meter.chain(made.chain), calls.events)
        out, reinserted = made.chain, 0
        if found is not None:
            pair = BodyPair.build(found.messages[0], found.messages[1:])
            out = inserted(out, found.position, pair)
            reinserted = sum(m.size for m in found.messages)
        archived = any(e.kind is StoreEventKind.ARCHIVED for e in calls.events[mark:])
        return _Summarized(
            self.with_breakpoints(out),
            made.chain,
            made.pair,
            books,
            made.truncated,
            made.dropped,
            archived,
            reinserted,
            asked=question_key(messages) if self._reinserting else None,
        )

    def _planner(self) -> Planner:
        return Planner(
            self.meter,
            self.keep_units,
            self.summary_reserve,
            self.max_depth,
            self.depth,
            self.pin,
            self.keep_user_messages,
        )

    @property
    def _reinserting(self) -> bool:
        return self.archive is not None and bool(self.archive.reinsert_bytes)

    async def reinsertion(
        self, messages: list[Message], size: int, events: list[StoreEvent]
    ) -> Insertion | None:
        """With re-insertion: the archived lines the current question of ``messages``
        (of ``size``) needs, within the room the budget leaves."""
        if self.archive is None or not self._reinserting:
            return None
        return await reinsertion_within(
            self.archive,
            messages,
            room=self.budget.limit - size,
            unit=self.budget.unit,
            measure=self.meter.total,
            target=self.style.target,
            emit=events.append,
        )

    def with_breakpoints(self, ast: ChainAST) -> ChainAST:
        """With ``cache_breakpoints``: Anthropic cache points at the end of the system
        prompt, of the newest summary and of the newest cleared result (the prefix the
        next turns repeat), within the limit of four and the budget."""
        if not self.cache_breakpoints:
            return ast
        return with_breakpoints(ast, _cache_anchors(ast), self.meter.chain, self.budget.limit)

    def depth(self, pair: BodyPair) -> int:
        """How many compactions the summary ``pair`` went through (0: no summary)."""
        if not is_summarized(pair):
            return 0
        return self.depths.get(summary_key(pair), 1)

    def event(
        self,
        reason: CompactionReason,
        before: _Before,
        after: ChainAST,
        *,
        books: HandlerLedger,
        calls: HandlerCalls,
        cleared: ClearingPass | None,
        summary_needed: bool = False,
        made: _Summarized | None = None,
        plan: Plan | None = None,
    ) -> CompactionEvent:
        """The event of a compaction (the Compactor completes its message counts and
        sends it to ``on_event`` once the chain it returns is built)."""
        meter, limit = self.meter, self.budget.limit
        summary = _summary_figures(self, made, plan)
        return CompactionEvent(
            reason=reason,
            unit=self.budget.unit,
            budget=limit,
            keep_units=self.keep_units,
            over_budget=meter.chain(after) > limit,
            bytes_before=before.chain.size,
            bytes_after=after.size,
            tokens_before=meter.all_tokens(before.chain),
            tokens_after=meter.all_tokens(after),
            messages_before=before.chain.message_count,
            messages_after=after.message_count,
            handler_calls=books.calls,
            retries=books.retries,
            timeouts=books.timeouts,
            fallback_calls=books.fallback_calls,
            chunks=books.chunks,
            cache_hits=calls.cache_hits,
            prompt_bytes=calls.input_bytes,
            summary_bytes=calls.output_bytes,
            duration_s=time.perf_counter() - before.started,
            turn=self.turn,
            store_events=tuple(calls.events),
            cleared_results=cleared.results_cleared if cleared is not None else 0,
            cleared_inputs=cleared.inputs_cleared if cleared is not None else 0,
            cleared_reasoning=cleared.reasoning_cleared if cleared is not None else 0,
            cleared_units=cleared.units_freed if cleared is not None else 0,
            summary_needed=summary_needed,
            depth=summary.depth,
            summarized_messages=summary.summarized,
            summary_truncated=summary.truncated,
            dropped_summaries=summary.dropped,
            archived_messages=summary.archived,
            reinserted_bytes=summary.reinserted,
        )


@dataclass(frozen=True, slots=True)
class _Summarized:
    """What the summary stages made: the chain (re-inserted lines and cache points in),
    the assembled chain, the summary pair, and the figures of the event."""

    chain: ChainAST
    assembled: ChainAST
    pair: BodyPair | None
    books: HandlerLedger
    truncated: bool
    dropped: int
    archived: bool
    reinserted: int
    asked: str | None

    def outcome(
        self,
        stages: Stages,
        before: _Before,
        reason: CompactionReason,
        plan: Plan,
        *,
        cleared: ClearingPass | None,
        calls: HandlerCalls,
    ) -> Outcome:
        depths = None
        if self.pair is not None:
            depths = _live_depths(self.assembled, stages.depths)
            depths[summary_key(self.pair)] = _new_depth(stages, plan)
        event = stages.event(
            reason,
            before,
            self.chain,
            books=self.books,
            calls=calls,
            cleared=cleared,
            summary_needed=True,
            made=self,
            plan=plan,
        )
        out = _outcome(self.chain, before, stages.meter.chain(self.chain), event, settled=True)
        return Outcome(
            out.messages,
            out.sizes,
            out.nbytes,
            event,
            settled=True,
            depths=depths,
            looked=stages._reinserting,
            asked=self.asked,
        )


def _new_depth(stages: Stages, plan: Plan) -> int:
    """The depth of the new summary: one more than the deepest summary it folds."""
    return 1 + max((stages.depth(p) for p in plan.resummarized), default=0)


@dataclass(frozen=True, slots=True)
class _Figures:
    """The event's figures of the summary (zero without one)."""

    depth: int = 0
    summarized: int = 0
    truncated: bool = False
    dropped: int = 0
    archived: int = 0
    reinserted: int = 0


def _summary_figures(stages: Stages, made: _Summarized | None, plan: Plan | None) -> _Figures:
    if made is None or plan is None:
        return _Figures()
    return _Figures(
        depth=_new_depth(stages, plan),
        summarized=len(plan.summarized) + len(plan.humans),
        truncated=made.truncated,
        dropped=made.dropped,
        archived=len(plan.replaced) if made.archived else 0,
        reinserted=made.reinserted,
    )


def _outcome(
    out: ChainAST, before: _Before, size: int, event: CompactionEvent, *, settled: bool = False
) -> Outcome:
    """A compaction's outcome: ``out`` (of ``size``) from ``before``."""
    nbytes = (event.bytes_before, event.bytes_after)
    return Outcome(out.to_messages(), (before.size, size), nbytes, event, settled=settled)


def _live_depths(ast: ChainAST, depths: Mapping[str, int]) -> dict[str, int]:
    """The depth records of the summaries still in ``ast``."""
    live: dict[str, int] = {}
    for section in ast.sections:
        for pair in section.body:
            if is_summarized(pair):
                key = summary_key(pair)
                if key in depths:
                    live[key] = depths[key]
    return live


def _cache_anchors(ast: ChainAST) -> list[int]:
    """Where cache points go, in priority order: the end of the system prompt, of the
    newest summary and of the newest cleared result (positions in the chain)."""
    anchors: list[int] = []
    if ast.sections and ast.sections[0].header.system_message is not None:
        anchors.append(0)
    summary = placeholder = -1
    index = 0
    for section in ast.sections:
        index += len(section.header.messages())
        for pair in section.body:
            index += 1 + len(pair.tool_messages)
            if is_summarized(pair):
                summary = index - 1
            elif any(is_cleared(r) for m in pair.tool_messages for r in m.tool_results):
                placeholder = index - 1
    anchors.extend(i for i in (summary, placeholder) if i >= 0)
    return anchors


def summary_key(pair: BodyPair) -> str:
    """A summary's identity for the depth records: its text (ids may be renamed)."""
    if pair.type is BodyPairType.SUMMARIZATION:
        result = pair.tool_messages[0].parts[0]
        text = result.content if type(result) is ToolResult else ""
    else:
        text = pair.ai_message.text.removeprefix(SUMMARIZED_CONTENT_PREFIX)
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))
