"""The Compactor: what an agent loop calls before every model call to keep its whole
chain within a budget with few handler calls (docs/compactor.md), and its call loop."""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from functools import partial
from types import MappingProxyType
from typing import Any

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    ChainIssue,
    IdTemplate,
    Message,
    ProviderProfile,
    Role,
    TemplateLike,
    ToolResult,
    open_with_human,
    parse_chain,
)
from csum._checks import check_handler, check_instance
from csum._sync import run_sync
from csum.assemble import SummaryStyle, placed_for, summary_style, unplaced
from csum.compaction import CompactionResult, Outcome, Stages, pending_tail_calls
from csum.config import (
    DEFAULT_CLEARING,
    DEFAULT_SUMMARY_RATIO,
    MIN_SUMMARY_BYTES,
    Budget,
    Clearing,
    Robustness,
    Stores,
    as_budget,
)
from csum.events import CompactionEvent, CompactionReason
from csum.prompt import FACT_SHARE, check_focus
from csum.request import Handler, RobustHandler
from csum.store_events import StoreEvent
from csum.tokens import BYTES_PER_TOKEN, EstimatedTokens, Meter, TokenCounter

__all__ = [
    "Compactor",
    "extends_validly",
    "summary_bytes",
]


_ASSIGNABLE = frozenset(("on_event", "turns"))
"""The public attributes a made Compactor takes: every other one is a setting the stages
read once, so assigning it later raises."""


_STAGE_SETTINGS = tuple(
    f.name for f in fields(Stages) if f.name not in ("meter", "depths", "clear_at_least")
)
"""The settings the stages take from the Compactor's attributes of the same names."""


class Compactor:
    """Keeps an agent's whole chain within a budget: above the budget's trigger, old tool
    results are cleared and what that cannot bring down is summarized in one handler
    call, down to the budget's ``keep_ratio``; the newest turn stays verbatim. Whenever
    system prompt + current question + newest pair fit, the chain returned fits; else
    the result says ``over_budget``. Handler failures raise
    :class:`~csum.errors.SummarizationError` and the caller keeps its messages.

    ``handler`` summarizes (default: the offline extractive handler). ``budget`` is the
    limit and how it is kept, one :class:`~csum.Budget` (or an int in bytes, or a size
    string, ``"32KiB"``, ``"4000 tokens"``: the limit with the default settings); its
    settings (``trigger``, ``keep_ratio``, ``max_depth``, ``cooldown_turns``,
    ``summary_reserve``, ``summary_ratio``) are the Compactor's attributes of the same
    names, read-only like every setting (assigning one raises ``AttributeError``: the
    stages read them once). ``summary_ratio`` bounds the default handler's summaries
    (:func:`summary_bytes`); a handler you pass keeps its own bound. For a long memory
    with the default handler, use a large share and no depth limit
    (:data:`~csum.config.LONG_MEMORY`).

    ``target`` is the provider the chain is sent to: the summary is shaped for it (ids,
    reasoning, role order; for a provider that merges same-role turns, a text summary
    goes in the user turn before the AI message after it, read back on the next call).
    ``counter`` counts tokens (default :class:`~csum.tokens.EstimatedTokens`).
    ``on_event`` receives a :class:`~csum.events.CompactionEvent` per compaction.

    ``stores`` (a :class:`~csum.config.Stores`): its ``cache`` serves summaries already
    made for the same prompt; its ``archive`` stores what a compaction summarizes away
    (the summary names it, ``[archived: ...]``) and, with ``reinsert_bytes`` > 0, puts
    back archived lines the current question needs within the room the budget leaves.
    Store failures are events, never a failed compaction. ``robustness`` (a
    :class:`~csum.config.Robustness`): the :class:`RobustHandler`'s timeout, retries,
    input limit (an evicted part over ``max_prompt_bytes`` is summarized in pieces, then
    merged), split depth and fallback; a :class:`RobustHandler` given as ``handler`` is
    used as it is (then ``robustness=`` is a ``TypeError``).

    ``clearing`` (a :class:`~csum.config.Clearing`, None for none) is the first stage:
    old tool results become one-line placeholders, and a summary is made only when that
    cannot reach ``keep_units``. ``pin`` (a predicate on messages) names messages never
    cleared or summarized; ``keep_user_messages`` keeps human messages verbatim within
    :data:`~csum.plan.KEEP_USER_SHARE` of ``keep_units``. ``cache_breakpoints``
    (Anthropic targets) marks the stable prefix with ``cache_control`` breakpoints.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        budget: int | str | Budget,
        target: str | ProviderProfile | None = None,
        counter: TokenCounter | None = None,
        stores: Stores | None = None,
        robustness: Robustness | None = None,
        on_event: Callable[[CompactionEvent], None] | None = None,
        id_template: TemplateLike | None = None,
        clearing: Clearing | None = DEFAULT_CLEARING,
        pin: Callable[[Message], bool] | None = None,
        keep_user_messages: bool = False,
        cache_breakpoints: bool = False,
    ) -> None:
        check_instance("stores", stores, Stores)
        self._take_budget(as_budget(budget))  # an int (bytes), "32KiB", "4000 tokens", a Budget
        _check_options(counter, robustness, on_event, clearing, pin)
        _check_flags(keep_user_messages=keep_user_messages, cache_breakpoints=cache_breakpoints)
        self.clearing = clearing
        self.pin = pin
        self.keep_user_messages = keep_user_messages
        self.cache_breakpoints = cache_breakpoints
        clear_trigger = self.trigger if clearing is None else self.budget.scaled(clearing.trigger)
        self._start = min(self.trigger, clear_trigger)
        self.handler = _robust_handler(handler, robustness, self.summary_bytes)
        self.style: SummaryStyle = summary_style(
            IdTemplate(id_template if id_template is not None else DEFAULT_TOOL_CALL_ID_TEMPLATE),
            target,
            False,
            template_given=id_template is not None,
        )
        self.target = target
        profile = self.style.target
        self._places = profile is not None and profile.merges_same_role
        if cache_breakpoints and (profile is None or profile.wire_format != "anthropic"):
            raise ValueError(
                "cache_breakpoints=True places Anthropic cache_control breakpoints: it "
                f"needs an Anthropic target (target='anthropic'), not {target!r}"
            )
        self.counter: TokenCounter = counter if counter is not None else EstimatedTokens()
        self.stores = stores if stores is not None else Stores()
        self.cache = self.stores.cache
        self.archive = self.stores.archive
        self.on_event = on_event
        self.turns = 0
        self._last_compaction: int | None = None
        self._depths: dict[str, int] = {}
        self._meter = Meter(self.budget.unit, self.counter)
        self._last: tuple[Message, ...] = ()
        self._last_size = self._last_bytes = 0
        self._asked: str | None = None  # the last question re-insertion looked at
        self._stages = self._settings()

    def __setattr__(self, name: str, value: object) -> None:
        if name[0] != "_" and name not in _ASSIGNABLE and "_stages" in self.__dict__:
            raise AttributeError(
                f"Compactor.{name} is fixed when the Compactor is made; make a new Compactor "
                "with the setting (the budget's settings go in its Budget)"
            )
        object.__setattr__(self, name, value)

    def _take_budget(self, sized: Budget) -> None:
        self.budget = sized
        self.trigger = sized.trigger_units()
        self.keep_ratio = sized.keep_ratio
        self.keep_units = sized.keep_units()
        self.summary_ratio = sized.summary_ratio
        self.summary_bytes = summary_bytes(sized, sized.summary_ratio)
        self.summary_reserve = sized.reserve_units()
        if self.summary_reserve >= sized.limit:
            raise ValueError(
                f"Budget.summary_reserve leaves no room in a budget of {sized}: it sets "
                f"{self.summary_reserve} {sized.unit} aside for the summary"
            )
        self.max_depth = sized.max_depth
        self.cooldown_turns = sized.cooldown_turns

    def __repr__(self) -> str:
        return (
            f"Compactor(budget={self.budget}, trigger={self.trigger}, "
            f"keep_ratio={self.keep_ratio}, target={self.target!r})"
        )

    # -- public API -------------------------------------------------------------------------

    @property
    def summary_depths(self) -> Mapping[str, int]:
        """The depth of each summary in the last chain returned (a read-only view), keyed
        by the summary's text hash: what a keeper rebuilt per request (``csum serve``)
        carries to the next one with :meth:`restore_summary_depths`."""
        return MappingProxyType(self._depths)

    def restore_summary_depths(self, depths: Mapping[str, int]) -> None:
        """Take ``depths`` (a :attr:`summary_depths` kept from an earlier keeper of this
        conversation) as this keeper's own, so ``max_depth`` holds across keepers.
        Raises ``TypeError`` for a key or depth of another type, ``ValueError`` for a
        depth below 1."""
        for key, depth in depths.items():
            if not isinstance(key, str) or isinstance(depth, bool) or not isinstance(depth, int):
                raise TypeError(f"summary depth {key!r}: {depth!r} is not a str: int pair")
            if depth < 1:
                raise ValueError(f"summary depth {key!r} must be at least 1, got {depth}")
        fresh = dict(depths)  # before clearing: ``depths`` may be a view of our own
        self._depths.clear()
        self._depths.update(fresh)

    async def compact(
        self, messages: Sequence[Message | Mapping[str, Any]], *, focus: str | None = None
    ) -> list[Message]:
        """The chain to send instead of ``messages`` (never changed in place).
        ``focus``: what the next step needs, passed to the handler's prompt when this
        call summarizes (see :meth:`run`)."""
        return (await self.run(messages, focus=focus)).messages

    def compact_sync(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        backend: str = "asyncio",
        focus: str | None = None,
    ) -> list[Message]:
        """:meth:`compact` for synchronous code: runs its own event loop (``backend``), in a
        worker thread when this thread runs one (a notebook)."""
        return run_sync(partial(self.compact, messages, focus=focus), backend)

    async def run(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        force: bool = False,
        focus: str | None = None,
    ) -> CompactionResult:
        """Compact when due (or ``force``) and report what happened.

        ``focus`` says what the next step needs (\"the failing test in api/\"): when this
        call summarizes, the handler's prompt carries it as a delimited instruction
        (:func:`csum.prompt.messages_to_prompt`), and summary cache keys include it. It
        does not make a compaction due: use ``force=True`` for that.

        A chain that extends the previous result (the same message objects first, then
        messages that keep it valid) is measured by its new messages only, so a call
        that compacts nothing costs what was added, not the chain's length. Any other
        chain is parsed (with repair) once, and every stage of a compaction works on
        that tree (:mod:`csum.compaction`).
        """
        started = time.perf_counter()
        if focus is not None:
            check_focus(focus)
        self.turns += 1
        if not force:
            grown = self._extended(messages)
            if grown is not None and self._reason(grown.sizes[0], False) is None:
                self._meter.keep()
                return await self._finished(grown, (), started, shift=None, given=len(messages))
        issues: list[ChainIssue] = []
        pending = pending_tail_calls(messages)  # the newest turn's calls stay pending
        # A replay that opens with an AI message gets a placeholder question first.
        ast = parse_chain(
            open_with_human(messages),  # type: ignore[arg-type]
            repair=True,
            issues=issues,
        )
        try:  # placed summaries back in their pairs (``shift``: what placing them saved)
            own = unplaced(ast) if self._places else ast
            size = self._meter.chain(own)
            shift = 0 if own is ast else self._meter.chain(ast) - size
            reason = self._reason(size + shift, force)
            if reason is None:
                outcome = self._stages.outcome(own, (size, own.size), size, pending)
            else:
                outcome = await self._stages.compact(
                    own, size, reason, focus=focus, turn=self.turns, pending=pending
                )
        finally:
            self._meter.rotate()
        return await self._finished(
            outcome, tuple(issues), started, shift=shift, given=len(messages)
        )

    def _placed(self, messages: list[Message]) -> tuple[list[Message], int]:
        """``messages`` with their summaries placed for the target, and what that saves."""
        if not self._places:
            return messages, 0
        out = placed_for(messages, self.style.target)
        if len(out) == len(messages) and all(map(operator.is_, out, messages)):
            return messages, 0  # nothing placed: nothing measured
        return out, self._meter.total(out) - self._meter.total(messages)

    def _extended(self, messages: Sequence[Message | Mapping[str, Any]]) -> Outcome | None:
        """The chain unchanged when it is the last result plus valid new messages."""
        last = self._last
        count = len(last)
        if not count or len(messages) < count:
            return None
        if not all(map(operator.is_, messages[:count], last)):
            return None
        new = messages[count:]
        if not extends_validly(last, new):
            return None
        added: list[Message] = list(new)  # type: ignore[arg-type]
        size = self._last_size + self._meter.total(added)
        nbytes = self._last_bytes + sum(m.size for m in added)
        return Outcome([*last, *added], (size, size), (nbytes, nbytes))

    def _reason(self, size: int, force: bool) -> CompactionReason | None:
        if force:
            return CompactionReason.FORCED
        if size > self.budget.limit:
            return CompactionReason.OVER_BUDGET
        if size > self._start:
            last = self._last_compaction
            if last is None or self.turns - last >= self.cooldown_turns:
                return CompactionReason.TRIGGER
        return None

    def _settings(self) -> Stages:
        """The one value the stages of every compaction read: the Compactor's settings of
        the same names, its meter and its ``depths`` (shared)."""
        at_least = self.clearing.clear_at_least if self.clearing else 0.0
        return Stages(
            **{name: getattr(self, name) for name in _STAGE_SETTINGS},
            meter=self._meter,
            depths=self._depths,
            clear_at_least=self.budget.scaled(at_least) if at_least else 0,
        )

    async def _finished(
        self,
        outcome: Outcome,
        issues: tuple[ChainIssue, ...],
        started: float,
        *,
        shift: int | None,
        given: int,
    ) -> CompactionResult:
        """The call's result, built once (``shift`` None: the last result extended), and
        what the Compactor keeps of its outcome."""
        if outcome.settled:
            self._last_compaction = self.turns
        if outcome.depths is not None:
            self.restore_summary_depths(outcome.depths)
        self._asked = outcome.asked if outcome.asked is not None else self._asked
        (size_before, size_after), (bytes_before, bytes_after) = outcome.sizes, outcome.nbytes
        size_before += shift or 0
        compacted = bytes_before != bytes_after or size_before != size_after
        messages, event = outcome.messages, outcome.event
        events: list[StoreEvent] = [] if event is None else list(event.store_events)
        reinserted = 0 if event is None else event.reinserted_bytes
        asked, insertion, grown = await self._stages.reinsertion(
            messages, size_after, events, self._asked
        )
        self._asked = self._asked if asked is None else asked
        if insertion is not None:  # a question not looked at yet
            messages = insertion.into(messages)
            added = sum(m.size for m in insertion.messages)
            size_after += grown
            bytes_after, reinserted = bytes_after + added, reinserted + added
        if shift is not None:
            messages, saved = self._placed(messages)
            size_after += saved
        self._last, self._last_size, self._last_bytes = tuple(messages), size_after, bytes_after
        if event is not None:  # with the message counts given and returned, announced
            event = replace(event, messages_before=given, messages_after=len(messages))
            if self.on_event is not None:
                self.on_event(event)
        return CompactionResult(
            messages=messages,
            compacted=compacted,
            over_budget=size_after > self.budget.limit,
            unit=self.budget.unit,
            budget=self.budget.limit,
            size_before=size_before,
            size_after=size_after,
            bytes_before=bytes_before,
            bytes_after=bytes_after,
            handler_calls=0 if event is None else event.handler_calls,
            events=() if event is None else (event,),
            repairs=issues,
            seconds=time.perf_counter() - started,
            store_events=tuple(events),
            reinserted_bytes=reinserted,
            cleared_results=0 if event is None else event.cleared_results,
            cleared_units=0 if event is None else event.cleared_units,
            summary_needed=False if event is None else event.summary_needed,
        )


def _check_options(
    counter: object, robustness: object, on_event: object, clearing: object, pin: object
) -> None:
    if counter is not None and not isinstance(counter, TokenCounter):
        raise TypeError(f"counter must have count(message) -> int, not {counter!r}")
    check_instance("robustness", robustness, Robustness)
    if on_event is not None and not callable(on_event):
        raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
    check_instance("clearing", clearing, Clearing)
    if pin is not None and not callable(pin):
        raise TypeError(f"pin must be a predicate Message -> bool, not {pin!r}")


def _check_flags(**flags: object) -> None:
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, not {value!r}")


def _robust_handler(
    handler: Handler | None, robustness: Robustness | None, size: int
) -> RobustHandler:
    """``handler`` (default: extractive, sized ``size``) wrapped per ``robustness``."""
    if handler is not None:
        check_handler(handler)
    if handler is None or getattr(handler, "sized_by_compactor", False):
        from csum.handlers import extractive  # extractive() unsized: as no handler at all

        # the facts the summary lacks take the rest of its share (csum.prompt)
        handler = extractive(size - int(size * FACT_SHARE))
    if isinstance(handler, RobustHandler):
        if robustness is not None:
            raise TypeError(
                "handler is a RobustHandler, which has its own robustness: give "
                "robustness= to the RobustHandler or to the Compactor, not to both"
            )
        return handler
    return RobustHandler(handler, robustness if robustness is not None else Robustness())


def summary_bytes(budget: Budget, ratio: float = DEFAULT_SUMMARY_RATIO) -> int:
    """The size bound (UTF-8 bytes) of a summary that may take ``ratio`` of ``budget``:
    a token budget is converted at :data:`~csum.tokens.BYTES_PER_TOKEN` of prose, and
    the bound is at least :data:`~csum.config.MIN_SUMMARY_BYTES`."""
    per_unit = 1.0 if budget.unit == "bytes" else BYTES_PER_TOKEN["text"]
    return max(MIN_SUMMARY_BYTES, int(budget.limit * ratio * per_unit))


def extends_validly(previous: Sequence[Message], new: Sequence[object]) -> bool:
    """Whether ``previous`` (a strictly valid chain, not empty) followed by ``new`` is
    strictly valid, by the parse rules applied to ``new`` only (a call that compacts
    nothing costs what was added, not the chain)."""
    last_role = previous[-1].role
    pending: dict[str, int] = {}  # the current AI message's calls: results still due
    for message in new:
        if type(message) is not Message:
            return False
        role = message.role
        if role is Role.TOOL:
            if not pending:
                return False
            for part in message.parts:
                if type(part) is not ToolResult or not pending.get(part.tool_call_id):
                    return False
                pending[part.tool_call_id] -= 1
        elif any(pending.values()):
            return False
        elif role is Role.AI:
            pending = {}
            for call in message.tool_calls:
                pending[call.id] = pending.get(call.id, 0) + 1
        elif role is Role.HUMAN and last_role is not Role.HUMAN:
            pending = {}
        else:
            return False
        last_role = role
    return not any(pending.values())
