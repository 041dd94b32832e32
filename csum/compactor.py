"""The Compactor: one object an agent loop calls before every model call to keep its
whole chain within a budget, with few handler calls.

    compactor = Compactor(handler, budget=Budget.of_model("gpt-4o", 0.5), target="openai")
    messages = await compactor.compact(messages)

How a call goes (docs/compactor.md has the full story):

1. The chain is parsed once, with repair (the output is always a valid chain), and
   measured in the budget's unit (bytes, or tokens by the counter) from the tree.
2. **Hysteresis**: nothing happens below the *trigger* (default: the budget itself,
   :data:`~csum.config.DEFAULT_TRIGGER`). Above it, the chain is brought down to
   *keep_ratio* of the budget (default 10 %), so the next compaction comes many turns
   later. Between the trigger and the budget a *cooldown* (turns since the last
   compaction) applies; over the budget never.
3. A compaction runs its stages on that tree (:mod:`csum.compaction`): clearing old
   tool results first when a clearing stage is set; when that cannot reach
   ``keep_units``, **one summary** of everything older than the newest pairs that fit
   (:mod:`csum.plan`), in one handler call, followed by the facts it lacks
   (:mod:`csum.prompt`), placed where the kept part starts and made to fit
   (:mod:`csum.assemble`).
   Whenever system prompt + current question + newest pair fit the budget, the chain
   returned fits it; otherwise the result and the event say ``over_budget``. Summaries
   at ``max_depth`` are carried verbatim while they fit.
4. ``target=`` shapes the summary for a provider (ids, reasoning, role order) so the
   output adds no ``cast.lint`` violation for it (see :mod:`csum._style`), and for a
   provider that merges same-role turns puts a text summary an AI message follows in
   the user turn before it, valid with Anthropic's thinking on; the next call reads it
   back (:mod:`csum._placement`).

Failures never lose the chain: when the handler (and its fallback) fail, a
:class:`~csum.errors.SummarizationError` is raised and the caller still holds its
messages, unchanged. Cancellation leaves everything as it was.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from types import MappingProxyType
from typing import Any

import anyio

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    ChainAST,
    ChainIssue,
    IdTemplate,
    Message,
    ProviderProfile,
    TemplateLike,
    open_with_human,
    parse_chain,
)
from csum._append import extends_validly
from csum._handler_check import check_handler
from csum._pending import pending_tail_calls, without_pending_fillers
from csum._placement import placed_for, unplaced
from csum._robust import RobustHandler
from csum._style import SummaryStyle, summary_style
from csum.compaction import CompactionResult, Outcome, Stages
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
from csum.reinsert import Insertion, question_key
from csum.request import Handler
from csum.store_events import StoreEvent
from csum.tokens import BYTES_PER_TOKEN, EstimatedTokens, Meter, TokenCounter

__all__ = [
    "Compactor",
    "summary_bytes",
]


class Compactor:
    """Keeps an agent's whole chain within a budget; see the module docstring.

    ``handler`` summarizes (default: the offline extractive handler). ``budget`` is the
    limit and how it is kept, one :class:`~csum.Budget` (or an int in bytes, or a size
    string, ``"32KiB"``, ``"4000 tokens"``: the limit with the default settings, see
    :mod:`csum.config`). Its settings: ``trigger``, the share of the limit where
    compaction starts; ``keep_ratio``, the share a compaction brings the chain down to
    (at most the trigger's); ``max_depth``, the depth limit of summaries (None: none,
    every summary is folded into the next); ``cooldown_turns``, the calls after a
    compaction during which the trigger (not the limit) is ignored; ``summary_reserve``,
    the share kept for the summary when choosing what to keep (``summary_ratio`` when
    larger); ``summary_ratio`` (at most 0.5), the share of the limit summaries take: it
    bounds the default handler's summaries (:func:`summary_bytes`) and sets the reserve
    when larger, so a summary that folds earlier summaries again and again has room in
    proportion to the window rather than a fixed 4 KB; a handler you pass keeps its own
    bound (``extractive(n)``, an LLM's output limit). For a long memory with the default
    handler, use a large share and no depth limit (:data:`~csum.config.LONG_MEMORY`): a
    summary at the depth limit larger than the room frozen summaries may take is
    otherwise left out whole. The values in use are the Compactor's attributes of the
    same names.

    ``target`` is the provider the chain is sent to (the only meaning of *target*).
    ``counter`` counts tokens (default :class:`~csum.tokens.EstimatedTokens`).
    ``on_event`` receives a :class:`~csum.events.CompactionEvent` per compaction.

    Settings given as one object each (the same objects the other engines take):
    ``stores`` (a :class:`~csum.config.Stores`): its ``cache`` serves summaries
    already made for the same prompt (a replayed or forked session; hits are counted in
    the events); its ``archive`` stores every message a compaction summarizes away, and
    the summary ends with the ``[archived: ...]`` line naming them; with the archive's
    ``reinsert_bytes`` > 0, archived lines the current question needs are put back
    within the room the budget leaves. Store failures are events, never a failed
    compaction. ``robustness`` (a :class:`~csum.config.Robustness`, the
    :class:`RobustHandler`'s settings): timeout, retries, the handler's input limit
    (``max_prompt_bytes``: an evicted part larger than it is summarized in pieces that
    fit, at most ``max_concurrency`` calls in flight, then merged, see
    :mod:`csum._pieces`), split depth and fallback. A :class:`RobustHandler` given as
    ``handler`` is used as it is (then ``robustness=`` is a ``TypeError``).

    ``clearing`` (a :class:`~csum.config.Clearing`, or None for none; default
    :data:`~csum.config.DEFAULT_CLEARING`) is the first stage of a compaction: old
    tool results become one-line placeholders without a handler call, and a summary is
    made only when that cannot reach ``keep_units``. ``pin`` (a predicate on messages)
    names messages never cleared or summarized; ``keep_user_messages`` keeps human
    messages verbatim while they take at most :data:`KEEP_USER_SHARE` of ``keep_units``.
    ``cache_breakpoints`` (Anthropic targets) marks the stable prefix after a
    compaction with ``cache_control`` breakpoints, at most four in all.
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
        if stores is not None and not isinstance(stores, Stores):
            raise TypeError(f"stores must be a csum.Stores or None, not {type(stores).__name__}")
        self._take_budget(as_budget(budget))  # an int (bytes), "32KiB", "4000 tokens", a Budget
        _check_options(counter, robustness, on_event, clearing, pin)
        _check_flags(keep_user_messages=keep_user_messages, cache_breakpoints=cache_breakpoints)
        self.clearing = clearing
        self.pin = pin
        self.keep_user_messages = keep_user_messages
        self.cache_breakpoints = cache_breakpoints
        clear_trigger = self.trigger if clearing is None else clearing.trigger_units(self.budget)
        self._start = min(self.trigger, clear_trigger)
        """Where a compaction starts: the lower of the trigger and clearing's."""
        self._clear_at_least = clearing.at_least_units(self.budget) if clearing else 0
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
        """Summaries go where a provider merging same-role turns takes them."""
        _check_breakpoints(cache_breakpoints, self.style.target, target)
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
        self._last_size = 0
        self._last_bytes = 0
        self._asked: str | None = None
        """Key of the last question re-insertion looked at (see :meth:`_new_question`)."""

    def _take_budget(self, sized: Budget) -> None:
        """The budget's settings as the Compactor's attributes, in the budget's unit."""
        self.budget = sized
        self.trigger = sized.trigger_units()
        self.keep_ratio = sized.keep_ratio
        self.keep_units = sized.keep_units()
        """What a compaction brings the chain down to, in the budget's unit."""
        self.summary_ratio = sized.summary_ratio
        self.summary_bytes = summary_bytes(sized, sized.summary_ratio)
        # The room summaries take: with a share of its own, the compacted chain lands on
        # the keep size, not above it.
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
        self._depths = dict(depths)

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
        """:meth:`compact` for synchronous code: runs its own event loop (``backend``)."""
        return anyio.run(partial(self.compact, messages, focus=focus), backend=backend)

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
                return await self._finished(
                    grown, frozenset(), (), started, shift=None, given=len(messages)
                )
        issues: list[ChainIssue] = []
        pending = pending_tail_calls(messages)  # the newest turn's calls stay pending
        # A replay that opens with an AI message gets a placeholder question first.
        ast = parse_chain(
            open_with_human(messages),  # type: ignore[arg-type]
            repair=True,
            issues=issues,
        )
        try:
            ast, shift = self._unplaced(ast)
            size = self._meter.chain(ast)
            reason = self._reason(size + shift, force)
            if reason is None:
                outcome = Outcome.unchanged(ast, size)
            else:
                outcome = await self._stages().compact(ast, size, reason, focus=focus)
                self._settle(outcome)
        finally:
            self._meter.rotate()
        return await self._finished(
            outcome, pending, tuple(issues), started, shift=shift, given=len(messages)
        )

    def _unplaced(self, ast: ChainAST) -> tuple[ChainAST, int]:
        """``ast`` with the summaries an earlier call placed for the target back in their
        own pairs (:mod:`csum._placement`), and what placing them saves (units, <= 0)."""
        if not self._places:
            return ast, 0
        own = unplaced(ast)
        if own is ast:
            return ast, 0
        return own, self._meter.chain(ast) - self._meter.chain(own)

    def _placed(self, messages: list[Message]) -> tuple[list[Message], int]:
        """``messages`` with their summaries where the target takes them (the units that
        saves, <= 0)."""
        if not self._places:
            return messages, 0
        out = placed_for(messages, self.style.target)
        if len(out) == len(messages) and all(map(operator.is_, out, messages)):
            return messages, 0
        given, taken = {id(m) for m in messages}, {id(m) for m in out}
        added = [m for m in out if id(m) not in given]
        removed = [m for m in messages if id(m) not in taken]
        return out, self._meter.total(added) - self._meter.total(removed)

    def _extended(self, messages: Sequence[Message | Mapping[str, Any]]) -> Outcome | None:
        """The chain unchanged when ``messages`` is the last result plus valid new
        messages (measured by the new ones); None otherwise."""
        last = self._last
        count = len(last)
        if not count or len(messages) < count:
            return None
        head = messages[:count]
        if not all(map(operator.is_, head, last)):
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

    def _stages(self) -> Stages:
        """What this call's compaction runs with."""
        return Stages(
            budget=self.budget,
            meter=self._meter,
            handler=self.handler,
            style=self.style,
            keep_units=self.keep_units,
            trigger=self.trigger,
            summary_reserve=self.summary_reserve,
            summary_bytes=self.summary_bytes,
            max_depth=self.max_depth,
            depths=self._depths,
            clearing=self.clearing,
            clear_at_least=self._clear_at_least,
            pin=self.pin,
            keep_user_messages=self.keep_user_messages,
            cache_breakpoints=self.cache_breakpoints,
            cache=self.cache,
            archive=self.archive,
            turn=self.turns,
        )

    def _settle(self, outcome: Outcome) -> None:
        """Keep what a compaction leaves for the next calls."""
        if outcome.settled:
            self._last_compaction = self.turns
        if outcome.depths is not None:
            self._depths = outcome.depths
        if outcome.looked:
            self._asked = outcome.asked

    async def _finished(
        self,
        outcome: Outcome,
        pending: frozenset[str],
        issues: tuple[ChainIssue, ...],
        started: float,
        *,
        shift: int | None,
        given: int,
    ) -> CompactionResult:
        """The call's result, built once: the outcome's chain without the fallback
        results repair gave the newest turn's ``pending`` calls (:mod:`csum._pending`),
        with the archived lines a question re-insertion has not looked at yet needs, its
        summaries placed for the target. ``shift``: what placing saved on the input
        (None: the outcome extends the last result, placed already); ``given``: how many
        messages the caller passed. A compaction's event gets the message counts of
        what was given and what is returned, and goes to ``on_event``."""
        (size_before, size_after), (bytes_before, bytes_after) = outcome.sizes, outcome.nbytes
        size_before += shift or 0
        compacted = bytes_before != bytes_after or size_before != size_after
        messages, fillers = without_pending_fillers(outcome.messages, pending)
        if fillers:
            units, nbytes = self._meter.total(fillers), sum(m.size for m in fillers)
            size_before, size_after = size_before - units, size_after - units
            bytes_before, bytes_after = bytes_before - nbytes, bytes_after - nbytes
        event = outcome.event
        events: list[StoreEvent] = [] if event is None else list(event.store_events)
        reinserted = 0 if event is None else event.reinserted_bytes
        insertion = await self._new_question(messages, size_after, events)
        if insertion is not None:
            messages = insertion.into(messages)
            added = sum(m.size for m in insertion.messages)
            size_after += self._meter.total(insertion.messages)
            bytes_after, reinserted = bytes_after + added, reinserted + added
        if shift is not None:
            messages, saved = self._placed(messages)
            size_after += saved
        self._last, self._last_size, self._last_bytes = tuple(messages), size_after, bytes_after
        event = self._announced(event, given, len(messages))
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

    def _announced(
        self, event: CompactionEvent | None, given: int, returned: int
    ) -> CompactionEvent | None:
        """A compaction's event with the message counts of what the caller gave and what
        the call returns, sent to ``on_event``."""
        if event is None:
            return None
        event = replace(event, messages_before=given, messages_after=returned)
        if self.on_event is not None:
            self.on_event(event)
        return event

    async def _new_question(
        self, messages: list[Message], size: int, events: list[StoreEvent]
    ) -> Insertion | None:
        """With re-insertion, when the current question is one re-insertion has not
        looked at yet (a compaction looks at every question): what it puts back."""
        archive = self.archive
        if archive is None or not archive.reinsert_bytes:
            return None
        key = question_key(messages)
        if key is None or key == self._asked:
            return None
        self._asked = key
        return await self._stages().reinsertion(messages, size, events)


def _check_options(
    counter: object, robustness: object, on_event: object, clearing: object, pin: object
) -> None:
    """The Compactor's options of their own types (None: the default)."""
    if counter is not None and not isinstance(counter, TokenCounter):
        raise TypeError(f"counter must have count(message) -> int, not {counter!r}")
    if robustness is not None and not isinstance(robustness, Robustness):
        raise TypeError(
            f"robustness must be a csum.Robustness or None, not {type(robustness).__name__}"
        )
    if on_event is not None and not callable(on_event):
        raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
    if clearing is not None and not isinstance(clearing, Clearing):
        raise TypeError(f"clearing must be a csum.Clearing or None, not {type(clearing).__name__}")
    if pin is not None and not callable(pin):
        raise TypeError(f"pin must be a predicate Message -> bool, not {pin!r}")


def _check_flags(**flags: object) -> None:
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, not {value!r}")


def _robust_handler(
    handler: Handler | None, robustness: Robustness | None, size: int
) -> RobustHandler:
    """``handler`` (default: the extractive handler sized by the Compactor's summaries of
    ``size`` bytes) wrapped in the retry policy of ``robustness``."""
    if handler is not None:
        check_handler(handler)
    if handler is None or getattr(handler, "sized_by_compactor", False):
        # extractive() without a size: the same summaries as no handler at all
        from csum.handlers import extractive

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


def _check_breakpoints(
    cache_breakpoints: bool, profile: ProviderProfile | None, target: object
) -> None:
    if cache_breakpoints and (profile is None or profile.wire_format != "anthropic"):
        raise ValueError(
            "cache_breakpoints=True places Anthropic cache_control breakpoints: it "
            f"needs an Anthropic target (target='anthropic'), not {target!r}"
        )


def summary_bytes(budget: Budget, ratio: float = DEFAULT_SUMMARY_RATIO) -> int:
    """The size bound (UTF-8 bytes) of a summary that may take ``ratio`` of ``budget``:
    a token budget is converted at :data:`~csum.tokens.BYTES_PER_TOKEN` of prose, and
    the bound is at least :data:`~csum.config.MIN_SUMMARY_BYTES`."""
    per_unit = 1.0 if budget.unit == "bytes" else BYTES_PER_TOKEN["text"]
    return max(MIN_SUMMARY_BYTES, int(budget.limit * ratio * per_unit))
