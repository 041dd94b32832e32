"""The Compactor: one object an agent loop calls before every model call to keep its
whole chain within a budget, with few handler calls.

    compactor = Compactor(handler, budget=Budget.of_model("gpt-4o", 0.5), target="openai")
    messages = await compactor.compact(messages)

How a call goes (docs/compactor.md has the full story):

1. The chain is parsed with repair (the output is always a valid chain) and measured
   in the budget's unit (bytes, or tokens by the counter).
2. **Hysteresis**: nothing happens below the *trigger* (default: 85 % of the budget,
   :data:`DEFAULT_TRIGGER`). Above it, the chain is brought down to *keep_ratio* of the
   budget (default 30 %), so the
   next compaction comes many turns later. Between the trigger and the budget a
   *cooldown* (turns since the last compaction) applies; over the budget never.
3. **One summary**: the system prompt, the current question and the newest body pair
   are kept verbatim (the newest pair keeps its reasoning); then the newest older
   pairs while they fit ``keep_units`` less a reserve for the summary. Everything older,
   earlier summaries included, is summarized in **one** handler call (split into
   chunks only when the prompt exceeds the handler's input limit). The summary is a
   summary pair placed where the kept part starts: after the kept question when the
   cut falls inside a turn, else in a first turn of its own opened by
   :data:`EARLIER_CONVERSATION_TEXT`.
4. **Depth limit**: a summary records how many compactions its content went through;
   one at ``max_depth`` is not summarized again but kept verbatim while it fits (and
   then left out, counted in the event).
5. **Bounded by construction**: whenever system prompt + current question + newest
   pair fit the budget, the chain returned fits it (the summary is cut if it must be);
   otherwise the result and the event say ``over_budget``. A summary never makes the
   chain larger than what it replaces.
6. ``target=`` shapes the summary for a provider (ids, reasoning, role order) so the
   output adds no ``cast.lint`` violation for it (see :mod:`csum._style`).

Failures never lose the chain: when the handler (and its fallback) fail, a
:class:`~csum.errors.SummarizationError` is raised and the caller still holds its
messages, unchanged. Cancellation leaves everything as it was.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import Any, Final

import anyio
import xxhash

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    BodyPair,
    BodyPairType,
    ChainAST,
    ChainIssue,
    Header,
    IdTemplate,
    Message,
    ProviderProfile,
    Role,
    Section,
    TemplateLike,
    TextPart,
    ToolResult,
    open_with_human,
    parse_chain,
)
from csum._append import extends_validly
from csum._breakpoints import add_breakpoints
from csum._calls import HandlerCalls, SummarizeHandler
from csum._deprecated import CompactorKeywords, deprecated
from csum._handler_check import check_handler
from csum._memory import FACT_SHARE, with_fact_memory
from csum._pairs import SUMMARIZED_CONTENT_PREFIX, is_summarized, messages_of, summary_pair
from csum._pending import pending_tail_calls, without_pending_fillers
from csum._pieces import summarize_in_pieces
from csum._question_context import question_context
from csum._robust import HandlerLedger, RobustHandler, ledger, robustness_of
from csum._style import SummaryStyle, summary_style
from csum._summary_ids import unique_summary_ids
from csum.archive import HistoryArchive, split_archive_line
from csum.budget import BYTES_PER_TOKEN, Budget, EstimatedTokens, TokenCounter, as_budget
from csum.clearing import (
    DEFAULT_CLEARING,
    Clearing,
    ClearingPass,
    clear_evicted,
    clear_tool_results,
    is_cleared,
)
from csum.events import CompactionEvent, CompactionReason
from csum.presets import Preset
from csum.prompt import check_focus
from csum.reinsert import is_reinserted, own_question, without_recalled
from csum.settings import Robustness, Stores
from csum.store_events import StoreEvent, StoreEventKind

__all__ = [
    "DEFAULT_KEEP_RATIO",
    "DEFAULT_RESERVE_RATIO",
    "DEFAULT_SUMMARY_RATIO",
    "DEFAULT_TARGET_RATIO",
    "DEFAULT_TRIGGER",
    "EARLIER_CONVERSATION_TEXT",
    "LONG_MEMORY",
    "LOW_COST",
    "MIN_SUMMARY_BYTES",
    "SUMMARY_ONLY",
    "CompactionResult",
    "Compactor",
    "summary_bytes",
]

EARLIER_CONVERSATION_TEXT = "(The earlier conversation is summarized below.)"
"""The human message that opens the summary's own first turn (providers such as
Anthropic and Gemini want a conversation to open with a human message)."""

_AI = Role.AI

DEFAULT_SUMMARY_RATIO = 1 / 8
"""Share of the budget a summary and its facts may take (``summary_ratio``): 16 KiB at
a 128 KiB budget, half of it the default handler's summary, half the facts it lacks
(:mod:`csum._memory`). The choice of issue 36's sweep on real sessions (docs/compactor.md,
"Defaults and why"; 1/64 before, with clearing)."""

DEFAULT_TARGET_RATIO = 0.1
"""Share of the budget a compaction brings the chain down to (``keep_ratio``): with
summaries of 1/8 it keeps the newest turn verbatim and puts the rest in the summary and
its facts, which carry more of what the agent reuses per byte than older turns kept
whole (0.3 before, 0.6 in :data:`SUMMARY_ONLY`)."""
DEFAULT_TRIGGER = 1.0
"""Share of the budget where compaction starts when the budget sets no ``trigger``: the
budget itself (fewer compactions, each a cache write; 0.85 before)."""
DEFAULT_RESERVE_RATIO = 0.05
"""Share of the budget set aside for the summary when choosing the kept pairs (the
default ``summary_reserve``; ``summary_ratio`` when larger)."""
DEFAULT_KEEP_RATIO = DEFAULT_TARGET_RATIO
"""The default ``keep_ratio`` under the name of the keyword (the same value as
:data:`DEFAULT_TARGET_RATIO`, kept under that name too)."""
MIN_SUMMARY_BYTES = 1024
"""The default handler's summaries are never bounded below this (tiny budgets)."""

LONG_MEMORY: Final = Preset(
    "LONG_MEMORY",
    clearing=None,
    keep_ratio=0.6,
    summary_ratio=7 / 16,
    max_depth=None,
    trigger=1.0,
)
"""Compactor settings for a long memory with the default (extractive) handler:
``Compactor(budget=LONG_MEMORY.budget(...), clearing=LONG_MEMORY.clearing)``. Summaries
take up to 7/16 of the budget and are folded again at every compaction (the extractive
handler keeps an earlier summary's lines verbatim, so there is no drift to limit); the
summary stage alone at a 60 % target, as measured (clearing would hand the summary
placeholders instead of the tool output it keeps facts from). On the simulated
2,000-turn loop at 128 KiB this keeps 59-63 % of all facts in the final chain
(:data:`SUMMARY_ONLY`: 10-12 %) for 7 % more bytes sent than :data:`SUMMARY_ONLY`
(docs/compactor.md)."""

LOW_COST: Final = Preset(
    "LOW_COST",
    clearing=Clearing(keep=10),
    keep_ratio=0.3,
    summary_ratio=1 / 64,
    trigger=0.85,
)
"""Compactor settings for a low cost with prompt caching at the memory of the peers:
``Compactor(budget=LOW_COST.budget(...), clearing=LOW_COST.clearing)``. Old tool
results beyond the newest 10 are cleared to placeholders (with a short gist) before
anything is summarized, a compaction starts at 85 % of the budget and brings the chain
down to 30 % of it, and summaries take up to 1/64 of it. The choice of the cost sweep
(``python -m benchmarks.policies --cost --sweep``, docs/cost.md): the cheapest setting
on the tuning half of the Claude Code sessions that remembers at least 49 % of the facts
asked for on the simulated loop without an archive and more than every reference
(49.3 %, min over seeds; drop-oldest 48.3 %, SummarizationMiddleware 44.8 %). On all 17
sessions, worst pricing style: 1.00x / 0.84x / 1.12x the cheaper of LangChain's
SummarizationMiddleware and drop-oldest at 64 / 128 / 256 KiB (the cost goal, 0.95x, is
met at 128 KiB only). With a history archive, the placeholders name the archived
original and ``recall`` brings it back (99.3 %)."""

SUMMARY_ONLY: Final = Preset(
    "SUMMARY_ONLY", clearing=None, keep_ratio=0.6, summary_ratio=1 / 32, trigger=1.0
)
"""The Compactor's former defaults: no clearing stage (every compaction is a summary),
a compaction brings the chain to 60 % of the budget, summaries take up to 1/32 of it:
``Compactor(budget=SUMMARY_ONLY.budget(...), clearing=SUMMARY_ONLY.clearing)``. It
costs more than the defaults (the summarizer reads every evicted tool result whole)
and remembers more without a history archive (facts present when asked on the
simulated loop; docs/compactor.md, "Defaults and why")."""

FROZEN_SHARE = 0.25
"""Share of ``keep_units`` that summaries at the depth limit may take; older ones beyond
it are left out (counted in the event's ``dropped_summaries``)."""

KEEP_USER_SHARE = 0.25
"""With ``keep_user_messages=True``: share of ``keep_units`` the user messages kept
verbatim may take; older ones beyond it are summarized in place as usual."""


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


class _Meter:
    """Measures messages in the budget's unit; token counts are cached per message
    object for the messages of the last call (so the cache stays the chain's size)."""

    def __init__(self, unit: str, counter: TokenCounter) -> None:
        self.unit = unit
        self.counter = counter
        self._cache: dict[int, tuple[Message, int]] = {}
        self._fresh: dict[int, tuple[Message, int]] = {}

    def tokens(self, message: Message) -> int:
        key = id(message)
        hit = self._cache.get(key) or self._fresh.get(key)
        if hit is not None and hit[0] is message:
            self._fresh[key] = hit
            return hit[1]
        count = self.counter.count(message)
        self._fresh[key] = (message, count)
        return count

    def __call__(self, message: Message) -> int:
        return message.size if self.unit == "bytes" else self.tokens(message)

    def total(self, messages: Sequence[Message]) -> int:
        return sum(map(self, messages))

    def all_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` (for the events); with a byte budget they are counted
        without being cached, so the cache does not hold an entry per message of the
        whole chain for a figure read once."""
        if self.unit == "bytes":
            return sum(map(self.counter.count, messages))
        return sum(map(self.tokens, messages))

    def rotate(self) -> None:
        """End a call that measured the whole chain: keep only what it measured."""
        self._cache, self._fresh = self._fresh, {}

    def keep(self) -> None:
        """End a call that measured only new messages: keep everything."""
        self._cache.update(self._fresh)
        self._fresh = {}


@dataclass
class _Plan:
    """Where the kept part of the chain starts and what goes into the summary."""

    section: int
    pair: int
    humans: list[Message]
    summarized: list[Message]
    resummarized: list[BodyPair]
    frozen: list[BodyPair]
    evicted_units: int
    dropped: int = 0
    """Summaries at the depth limit left out for want of room."""
    replaced: list[Message] = field(default_factory=list)
    """Every message the summary takes the place of, in chain order (what the history
    archive stores): the questions and pairs summarized, and dropped summaries."""
    turns: list[tuple[Message | None, list[Message]]] = field(default_factory=list)
    """``humans`` and ``summarized`` by turn, in chain order: (question, its messages)
    (see :func:`_turns_in_place`)."""
    pairs: list[BodyPair] = field(default_factory=list)
    """Every pair before the kept part, in chain order."""
    pinned: list[BodyPair] = field(default_factory=list)
    """Pinned pairs among ``pairs``: carried verbatim, never summarized."""
    carried: list[Any] = field(default_factory=list)
    """Parts of pinned questions (and of an earlier note's) that leave their turn: they
    open the summary's turn, after :data:`EARLIER_CONVERSATION_TEXT`."""


class Compactor:
    """Keeps an agent's whole chain within a budget; see the module docstring.

    ``handler`` summarizes (default: the offline extractive handler). ``budget`` is the
    limit and how it is kept, one :class:`~csum.budget.Budget` (or an int in bytes, or
    a size string, ``"32KiB"``, ``"4000 tokens"``: the limit with default settings).
    Its settings: ``trigger``, where compaction starts: None (:data:`DEFAULT_TRIGGER`
    of the limit), a ratio of the limit (a float in (0, 1]) or an int in the budget's
    unit; ``keep_ratio``, what
    a compaction brings the chain down to (a ratio of the limit, at most the trigger's;
    None: :data:`DEFAULT_KEEP_RATIO`); ``max_depth``, the depth limit of summaries
    (None: none, every summary is folded into the next); ``cooldown_turns``, the calls
    after a compaction during which the trigger (not the limit) is ignored;
    ``summary_reserve``, the room kept for the summary when choosing what to keep (in
    the budget's unit; None: 5 % of the limit, or ``summary_ratio`` when larger);
    ``summary_ratio`` (None: :data:`DEFAULT_SUMMARY_RATIO`, at most 0.5), the share of
    the limit summaries take: it bounds the default handler's summaries
    (:func:`summary_bytes`) and sets the reserve when larger than 5 %, so a summary
    that folds earlier summaries again and again has room in proportion to the window
    rather than a fixed 4 KB; a handler you pass keeps its own bound
    (``extractive(n)``, an LLM's output limit). For a long memory with the default
    handler, use a large share and no depth limit (:data:`LONG_MEMORY`): a summary at
    the depth limit larger than the room frozen summaries may take is otherwise left
    out whole. The values in use are the Compactor's attributes of the same names.

    ``target`` is the provider the chain is sent to (the only meaning of *target*).
    ``counter`` counts tokens (default :class:`~csum.budget.EstimatedTokens`).
    ``on_event`` receives a :class:`~csum.events.CompactionEvent` per compaction.

    Settings given as one object each (the same objects the other engines take):
    ``stores`` (a :class:`~csum.settings.Stores`): its ``cache`` serves summaries
    already made for the same prompt (a replayed or forked session; hits are counted in
    the events); its ``archive`` stores every message a compaction summarizes away, and
    the summary ends with the ``[archived: ...]`` line naming them; with the archive's
    ``reinsert_bytes`` > 0, archived lines the current question needs are put back
    within the room the budget leaves. Store failures are events, never a failed
    compaction. ``robustness`` (a :class:`~csum.settings.Robustness`, the
    :class:`RobustHandler`'s settings): timeout, retries, the handler's input limit
    (``max_prompt_bytes``: an evicted part larger than it is summarized in pieces that
    fit, at most ``max_concurrency`` calls in flight, then merged, see
    :mod:`csum._pieces`), split depth and fallback. A :class:`RobustHandler` given as
    ``handler`` is used as it is (then ``robustness=`` is a ``TypeError``).

    Old spellings, for one release, each with a ``DeprecationWarning``:
    ``trigger=``, ``keep_ratio=`` (and its older ``target_ratio=``),
    ``summary_ratio=``, ``summary_reserve=``, ``max_depth=``, ``cooldown_turns=`` (now
    ``budget=Budget(..., keep_ratio=...)``; one also set inside the Budget is a
    ``TypeError``), ``cache=`` / ``archive=`` (now ``stores=Stores(...)``),
    ``timeout=``, ``retry=``, ``max_prompt_bytes=``, ``max_split_depth=``,
    ``max_concurrency=``, ``fallback=`` (now ``robustness=Robustness(...)``).

    ``clearing`` (a :class:`~csum.clearing.Clearing`, or None for none; default
    :data:`~csum.clearing.DEFAULT_CLEARING`) is the first stage of a compaction: old
    tool results become one-line placeholders without a handler call, and a summary is
    made only when that cannot reach ``keep_units``. ``pin`` (a predicate on messages)
    names messages never cleared or summarized; ``keep_user_messages`` keeps human
    messages verbatim while they take at most :data:`KEEP_USER_SHARE` of ``keep_units``.
    ``cache_breakpoints`` (Anthropic targets) marks the stable prefix after a
    compaction with ``cache_control`` breakpoints, at most four in all.
    """

    def __init__(
        self,
        handler: SummarizeHandler | None = None,
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
        **old_spellings: Any,
    ) -> None:
        old = CompactorKeywords.sort(old_spellings)
        stores = old.stores_with(stores)
        robustness_given = robustness is not None
        # an int (bytes), "32KiB", "4000 tokens", a Budget; then the old loose settings
        sized = self.budget = old.budget_with(as_budget(budget))
        limit = sized.limit
        if sized.trigger is None:
            sized = sized.evolve(trigger=DEFAULT_TRIGGER)
        self.trigger = sized.trigger_units()
        keep_ratio = DEFAULT_TARGET_RATIO if sized.keep_ratio is None else sized.keep_ratio
        self.keep_ratio = keep_ratio
        self.keep_units = min(sized.scaled(keep_ratio), self.trigger)
        """What a compaction brings the chain down to, in the budget's unit."""
        summary_ratio = sized.summary_ratio
        if summary_ratio is None:
            summary_ratio = DEFAULT_SUMMARY_RATIO
        self.summary_ratio = summary_ratio
        self.summary_bytes = summary_bytes(sized, summary_ratio)
        summary_reserve = sized.summary_reserve
        if summary_reserve is None:
            # The room summaries take, at least 5 % of the budget: with a larger share
            # the compacted chain lands on the target, not above it.
            summary_reserve = sized.scaled(max(DEFAULT_RESERVE_RATIO, summary_ratio))
            if summary_reserve >= limit:
                raise ValueError(
                    f"Budget.summary_reserve must be within 0..{limit - 1} {sized.unit}; "
                    f"the default for a budget of {sized} is {summary_reserve}"
                )
        if counter is not None and not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must have count(message) -> int, not {counter!r}")
        if robustness is not None and not isinstance(robustness, Robustness):
            raise TypeError(
                f"robustness must be a csum.Robustness or None, not {type(robustness).__name__}"
            )
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
        if clearing is not None and not isinstance(clearing, Clearing):
            raise TypeError(
                f"clearing must be a csum.Clearing or None, not {type(clearing).__name__}"
            )
        if pin is not None and not callable(pin):
            raise TypeError(f"pin must be a predicate Message -> bool, not {pin!r}")
        for flag, value in (
            ("keep_user_messages", keep_user_messages),
            ("cache_breakpoints", cache_breakpoints),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be a bool, not {value!r}")
        self.clearing = clearing
        self.pin = pin
        self.keep_user_messages = keep_user_messages
        self.cache_breakpoints = cache_breakpoints
        clear_trigger = clearing.trigger_units(self.budget) if clearing is not None else None
        if clear_trigger is not None and not 0 < clear_trigger <= limit:
            raise ValueError(
                f"Clearing.trigger must be within 1..{limit} {self.budget.unit}, "
                f"got {clear_trigger}"
            )
        self._start = min(self.trigger, clear_trigger or self.trigger)
        """Where a compaction starts: the lower of the trigger and clearing's."""
        self._clear_at_least = clearing.at_least_units(self.budget) if clearing else 0
        if handler is not None:
            check_handler(handler)
        robustness = robustness_of("Compactor", robustness, old.robustness)
        if handler is None or getattr(handler, "sized_by_compactor", False):
            # extractive() without a size: the same summaries as no handler at all
            from csum.handlers import extractive

            # the facts the summary lacks take the rest of its share (csum._memory)
            handler = extractive(self.summary_bytes - int(self.summary_bytes * FACT_SHARE))
        if isinstance(handler, RobustHandler):
            if robustness_given:
                raise TypeError(
                    "handler is a RobustHandler, which has its own robustness: give "
                    "robustness= to the RobustHandler or to the Compactor, not to both"
                )
            self.handler = handler
        else:
            self.handler = RobustHandler(handler, robustness)
        template_given = id_template is not None
        self.style: SummaryStyle = summary_style(
            IdTemplate(id_template if id_template is not None else DEFAULT_TOOL_CALL_ID_TEMPLATE),
            target,
            False,
            template_given=template_given,
        )
        self.target = target
        profile = self.style.target
        if cache_breakpoints and (profile is None or profile.wire_format != "anthropic"):
            raise ValueError(
                "cache_breakpoints=True places Anthropic cache_control breakpoints: it "
                f"needs an Anthropic target (target='anthropic'), not {target!r}"
            )
        self.counter: TokenCounter = counter if counter is not None else EstimatedTokens()
        self.stores = stores
        self.cache = stores.cache
        self.archive = stores.archive
        self.on_event = on_event
        self.max_depth = sized.max_depth
        self.cooldown_turns = sized.cooldown_turns
        self.summary_reserve = summary_reserve
        self.turns = 0
        self._last_compaction: int | None = None
        self._depths: dict[str, int] = {}
        self._meter = _Meter(self.budget.unit, self.counter)
        self._last: tuple[Message, ...] = ()
        self._last_size = 0
        self._last_bytes = 0
        self._asked: str | None = None
        """Key of the last question re-insertion looked at (see :meth:`_reinsert_new`)."""

    def __repr__(self) -> str:
        return (
            f"Compactor(budget={self.budget}, trigger={self.trigger}, "
            f"keep_ratio={self.keep_ratio}, target={self.target!r})"
        )

    @property
    def target_ratio(self) -> float:
        """Deprecated spelling of :attr:`keep_ratio`."""
        deprecated("Compactor.target_ratio", "Compactor.keep_ratio")
        return self.keep_ratio

    @property
    def target_units(self) -> int:
        """Deprecated spelling of :attr:`keep_units`."""
        deprecated("Compactor.target_units", "Compactor.keep_units")
        return self.keep_units

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
        chain is parsed (with repair) and measured whole.
        """
        started = time.perf_counter()
        if focus is not None:
            check_focus(focus)
        self.turns += 1
        meter = self._meter
        if not force:
            grown = self._extended(messages)
            if grown is not None and self._reason(grown[1], False) is None:
                chain, size, nbytes = grown
                meter.keep()
                result = self._unchanged(chain, size, [], started, None, nbytes=nbytes)
                return self._remember(await self._reinsert_new(result))
        issues: list[ChainIssue] = []
        pending = pending_tail_calls(messages)  # the newest turn's calls stay pending
        # A replay that opens with an AI message gets a placeholder question first.
        ast = parse_chain(
            open_with_human(messages),  # type: ignore[arg-type]
            repair=True,
            issues=issues,
        )
        chain = ast.to_messages()
        size = meter.total(chain)
        reason = self._reason(size, force)
        try:
            if reason is None:
                result = self._unchanged(chain, size, issues, started, None)
            else:
                result = await self._compact(
                    ast, chain, size, reason, issues=issues, started=started, focus=focus
                )
            result = self._without_fillers(result, pending)
        finally:
            meter.rotate()
        return self._remember(await self._reinsert_new(result))

    def _without_fillers(
        self, result: CompactionResult, pending: frozenset[str]
    ) -> CompactionResult:
        """The result with the fallback results repair gave the pending calls of the
        newest turn taken back out (see csum._pending)."""
        kept, fillers = without_pending_fillers(result.messages, pending)
        if not fillers:
            return result
        size = self._meter.total(fillers)
        nbytes = sum(m.size for m in fillers)
        return replace(
            result,
            messages=kept,
            size_before=result.size_before - size,
            size_after=result.size_after - size,
            bytes_before=result.bytes_before - nbytes,
            bytes_after=result.bytes_after - nbytes,
            over_budget=result.size_after - size > self.budget.limit,
        )

    def _extended(
        self, messages: Sequence[Message | Mapping[str, Any]]
    ) -> tuple[list[Message], int, int] | None:
        """(chain, size, bytes) when ``messages`` is the last result plus valid new
        messages; None otherwise."""
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
        chain = [*last, *added]
        return (
            chain,
            self._last_size + self._meter.total(added),
            self._last_bytes + sum(m.size for m in added),
        )

    def _remember(self, result: CompactionResult) -> CompactionResult:
        self._last = tuple(result.messages)
        self._last_size = result.size_after
        self._last_bytes = result.bytes_after
        return result

    # -- the steps --------------------------------------------------------------------------

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

    def _unchanged(
        self,
        chain: list[Message],
        size: int,
        issues: list[ChainIssue],
        started: float,
        event: CompactionEvent | None,
        *,
        nbytes: int | None = None,
    ) -> CompactionResult:
        if nbytes is None:
            nbytes = sum(m.size for m in chain)
        return self._result(
            chain, (size, size), (nbytes, nbytes), event, issues=issues, started=started
        )

    def _result(
        self,
        messages: list[Message],
        sizes: tuple[int, int],
        nbytes: tuple[int, int],
        event: CompactionEvent | None,
        *,
        issues: list[ChainIssue],
        started: float,
    ) -> CompactionResult:
        """The result of a call: sizes and bytes are (before, after)."""
        return CompactionResult(
            messages=messages,
            compacted=nbytes[0] != nbytes[1] or sizes[0] != sizes[1],
            over_budget=sizes[1] > self.budget.limit,
            unit=self.budget.unit,
            budget=self.budget.limit,
            size_before=sizes[0],
            size_after=sizes[1],
            bytes_before=nbytes[0],
            bytes_after=nbytes[1],
            handler_calls=0 if event is None else event.handler_calls,
            events=() if event is None else (event,),
            repairs=tuple(issues),
            seconds=time.perf_counter() - started,
            store_events=() if event is None else event.store_events,
            reinserted_bytes=0 if event is None else event.reinserted_bytes,
            cleared_results=0 if event is None else event.cleared_results,
            cleared_units=0 if event is None else event.cleared_units,
            summary_needed=False if event is None else event.summary_needed,
        )

    async def _compact(
        self,
        ast: ChainAST,
        chain: list[Message],
        size: int,
        reason: CompactionReason,
        *,
        issues: list[ChainIssue],
        started: float,
        focus: str | None = None,
    ) -> CompactionResult:
        original, size_before = chain, size
        if self.archive is not None and self.archive.reinsert_bytes:
            # Earlier re-inserted messages are copies for earlier questions: out, and
            # the current question gets a fresh choice below.
            fresh = without_recalled(chain)
            if fresh is not chain:
                chain = fresh
                ast, size = parse_chain(chain), self._meter.total(chain)
        calls = HandlerCalls(self.handler, cache=self.cache, archive=self.archive)
        forced = reason is CompactionReason.FORCED
        summarize = reason is not CompactionReason.TRIGGER or size > self.trigger
        cleared: ClearingPass | None = None
        if self.clearing is not None:
            cleared = await self._clear(chain, size, calls, summarize=summarize, forced=forced)
            if cleared is not None:
                chain, size = cleared.messages, size - cleared.units_freed
                if not summarize or (size <= self.keep_units and not forced):
                    return self._after_clearing(
                        original,
                        chain,
                        (size_before, size),
                        reason,
                        cleared=cleared,
                        calls=calls,
                        issues=issues,
                        started=started,
                    )
                ast = parse_chain(chain)
        if not summarize:  # clearing's own trigger, and nothing worth clearing
            self._last_compaction = self.turns
            return self._unchanged(chain, size, issues, started, None)
        plan = self._plan(ast)
        if plan is None:
            event = self._event(
                CompactionReason.UNFITTABLE if size > self.budget.limit else reason,
                original,
                chain,
                started,
                books=HandlerLedger(),
                calls=calls,
                cleared=cleared,
                summary_needed=True,
            )
            self._emit(event)
            sizes = (size_before, size)
            nbytes = (event.bytes_before, event.bytes_after)
            return self._result(chain, sizes, nbytes, event, issues=issues, started=started)

        depth = 1 + max((self._depth(p) for p in plan.resummarized), default=0)
        mark = len(calls.events)  # what clearing archived comes before
        text: str | None = None
        with ledger() as books:
            if plan.summarized or plan.humans:
                text = await self._summarize(calls, plan, focus)
                replaced = plan.replaced or [*plan.humans, *plan.summarized]
                text = with_fact_memory(text, replaced, self.summary_bytes)
        out_ast, truncated, dropped, pair = self._assemble(ast, plan, text, size)
        out = out_ast.to_messages() if out_ast is not ast else chain
        reinserted = 0
        if self.archive is not None and self.archive.reinsert_bytes:
            out, reinserted = await self._reinsert(self.archive, out, calls.events)
        out = self._with_breakpoints(out)
        archived = any(e.kind is StoreEventKind.ARCHIVED for e in calls.events[mark:])
        self._last_compaction = self.turns
        if pair is not None:
            self._depths = self._live_depths(out_ast)
            self._depths[_summary_key(pair)] = depth
        event = self._event(
            reason,
            original,
            out,
            started,
            calls=calls,
            books=books,
            depth=depth,
            summarized=len(plan.summarized) + len(plan.humans),
            truncated=truncated,
            dropped=dropped,
            archived=len(plan.replaced) if archived else 0,
            reinserted=reinserted,
            cleared=cleared,
            summary_needed=True,
        )
        self._emit(event)
        size_after = self._meter.total(out)
        return self._result(
            out,
            (size_before, size_after),
            (event.bytes_before, event.bytes_after),
            event,
            issues=issues,
            started=started,
        )

    async def _clear(
        self, chain: list[Message], size: int, calls: HandlerCalls, *, summarize: bool, forced: bool
    ) -> ClearingPass | None:
        """The clearing pass of a compaction (:mod:`csum.clearing`): enough old tool
        results cleared to reach ``keep_units`` (all that are eligible when forced); None
        when it clears nothing, or frees less than ``clear_at_least`` and no summary
        follows. With an archive, the originals are archived first and the placeholders
        name them (without their references when the store fails)."""
        options = self.clearing
        assert options is not None
        pin = self.pin
        pinned = None if pin is None else (lambda _index, message: bool(pin(message)))
        goal = None if forced else size - self.keep_units
        archive = self.archive
        run = partial(
            clear_tool_results, chain, options, measure=self._meter, goal=goal, pinned=pinned
        )
        done = run(references=archive is not None)
        if not done.changed or (done.units_freed < self._clear_at_least and not summarize):
            return None
        if archive is not None and done.originals:
            line = await archive.add_summarized(done.originals, calls.events.append)
            if line is None:  # the store failed: placeholders without references
                done = run(references=False)
        return done

    def _after_clearing(
        self,
        original: list[Message],
        chain: list[Message],
        sizes: tuple[int, int],
        reason: CompactionReason,
        *,
        cleared: ClearingPass,
        calls: HandlerCalls,
        issues: list[ChainIssue],
        started: float,
    ) -> CompactionResult:
        """The result of a compaction that clearing alone brought to ``keep_units``."""
        self._last_compaction = self.turns
        chain = self._with_breakpoints(chain)
        if chain is not cleared.messages:
            sizes = (sizes[0], self._meter.total(chain))
        event = self._event(
            reason, original, chain, started, books=HandlerLedger(), calls=calls, cleared=cleared
        )
        self._emit(event)
        nbytes = (event.bytes_before, event.bytes_after)
        return self._result(chain, sizes, nbytes, event, issues=issues, started=started)

    async def _summarize(self, calls: HandlerCalls, plan: _Plan, focus: str | None) -> str:
        """The summary of what ``plan`` evicts: one prompt when its messages fit the
        handler's ``max_prompt_bytes`` (the robust handler still splits a prompt their
        tags make too long), else pieces that fit, merged: the prompt of it all is
        never built. With clearing, the handler reads the evicted tool results as their
        placeholders (:func:`~csum.clearing.clear_evicted`)."""
        if self.clearing is not None:
            plan = self._cleared_plan(plan, self.clearing)
        limit = self.handler.max_prompt_bytes
        evicted = sum(m.size for m in plan.humans) + sum(m.size for m in plan.summarized)
        if limit is not None and evicted > limit:
            staying, turns = _turns_in_place(plan)
            text = await summarize_in_pieces(
                calls,
                turns,
                staying=staying,
                max_bytes=limit,
                concurrency=self.handler.max_concurrency,
                phase="compaction",
                section=plan.section,
                focus=focus,
            )
            return await calls.archived(text, plan.replaced)
        context, summarized = _in_chain_order(plan)
        return await calls.summarize(
            context,
            summarized,
            phase="compaction",
            section=plan.section,
            replaced=plan.replaced,
            focus=focus,
        )

    @staticmethod
    def _cleared_plan(plan: _Plan, options: Clearing) -> _Plan:
        """``plan`` with the messages its summary reads cleared (what the archive
        stores, ``plan.replaced``, stays whole)."""
        summarized = clear_evicted(plan.summarized, options)
        if all(a is b for a, b in zip(summarized, plan.summarized, strict=True)):
            return plan
        # the turns hold the same messages: each is cleared (and gisted) once
        done = {id(a): b for a, b in zip(plan.summarized, summarized, strict=True)}
        turns = [
            (q, [done[id(m)] if id(m) in done else clear_evicted([m], options)[0] for m in ms])
            for q, ms in plan.turns
        ]
        return replace(plan, summarized=summarized, turns=turns)

    async def _reinsert_new(self, result: CompactionResult) -> CompactionResult:
        """``result`` with archived lines put back when its current question is one
        re-insertion has not looked at yet (a compaction looks at every question)."""
        archive = self.archive
        if archive is None or not archive.reinsert_bytes:
            return result
        key = _question_key(result.messages)
        if key is None or key == self._asked:
            return result
        events: list[StoreEvent] = []
        out, added = await self._reinsert(archive, result.messages, events)
        if out is result.messages and not events:
            return result
        size = self._meter.total(out)
        return replace(
            result,
            messages=out,
            over_budget=size > self.budget.limit,
            size_after=size,
            bytes_after=result.bytes_after + added,
            store_events=(*result.store_events, *events),
            reinserted_bytes=result.reinserted_bytes + added,
        )

    async def _reinsert(
        self, archive: HistoryArchive, out: list[Message], events: list[StoreEvent]
    ) -> tuple[list[Message], int]:
        """``out`` with archived lines the current question needs put back, only within
        the room the budget leaves (so the chain still fits); (chain, bytes added)."""
        self._asked = _question_key(out)
        meter = self._meter
        size = meter.total(out)
        room = self.budget.limit - size
        limit = archive.reinsert_bytes
        if self.budget.unit == "bytes":
            limit = min(limit, room)
        while limit > 0 and room > 0:
            new = await archive.reinsert_reporting(
                out, max_bytes=limit, emit=events.append, target=self.style.target
            )
            if new is out:
                break
            grown = meter.total(new) - size
            if grown <= room:
                return new, sum(m.size for m in new) - sum(m.size for m in out)
            limit = min(limit - 1, limit * room // grown)  # the part's framing costs too
        return out, 0

    def _plan(self, ast: ChainAST) -> _Plan | None:
        """Choose the kept part: after the mandatory messages (system prompt, current
        question, newest pair), the newest pairs that fit ``keep_units`` less the summary
        reserve. None when nothing is left to summarize."""
        meter = self._meter
        sections = ast.sections
        last = len(sections) - 1
        tail = sections[last]
        system = sections[0].header.system_message
        mandatory = meter(system) if system is not None else 0
        if tail.header.human_message is not None:
            mandatory += meter(tail.header.human_message)
        if tail.body:
            mandatory += meter.total(tail.body[-1].messages())
        frozen, dropped = self._frozen(ast)
        pins = self._pins(ast)
        room = self.keep_units - self.summary_reserve - mandatory
        room -= sum(meter.total(pair.messages()) for pair in frozen)
        room -= pins.units
        frozen_ids = {id(pair) for pair in frozen} | pins.pair_ids
        start = (last, max(len(tail.body) - 1, 0))
        for s_index in range(last, -1, -1):
            section = sections[s_index]
            if s_index == last:
                newest = len(section.body) - 2
            else:
                human = section.header.human_message
                newest = len(section.body) - 1
                if human is not None and id(human) not in pins.human_ids:
                    room -= meter(human)
            for p_index in range(newest, -1, -1):
                pair = section.body[p_index]
                cost = 0 if id(pair) in frozen_ids else meter.total(pair.messages())
                if cost > room:
                    return self._split(ast, *start, frozen, dropped, pins=pins)
                room -= cost
                start = (s_index, p_index)
            if s_index != last and start[0] != s_index:
                break  # an empty section: its question goes into the summary
            start = (s_index, 0)
        if start == (0, 0):
            return None
        return self._split(ast, *start, frozen, dropped, pins=pins)

    def _pins(self, ast: ChainAST) -> _Pins:
        """What a summary must not take, before the newest pair: pairs holding a pinned
        message, pinned questions, questions kept by ``keep_user_messages`` (newest
        first, within :data:`KEEP_USER_SHARE` of the target) and an earlier note's
        carried questions."""
        pins = _Pins()
        pin = self.pin
        if pin is None and not self.keep_user_messages and len(ast.sections) < 2:
            return pins
        sections = ast.sections
        last = len(sections) - 1
        meter = self._meter
        if pin is not None:
            for s_index, section in enumerate(sections):
                body = section.body if s_index < last else section.body[:-1]
                for pair in body:
                    if not is_summarized(pair) and any(map(pin, pair.messages())):
                        pins.pair_ids.add(id(pair))
                        pins.units += meter.total(pair.messages())
        questions = [
            human
            for section in sections[:last]
            if (human := section.header.human_message) is not None
        ]
        room = int(self.keep_units * KEEP_USER_SHARE)
        for human in questions:
            if len(human.parts) > 1 and _is_note(human):
                pins.human_ids.add(id(human))
                pins.units += meter(human)
                room -= meter(human)
        for human in reversed(questions):
            if id(human) in pins.human_ids or _is_note(human):
                continue
            if pin is not None and pin(human):
                pins.human_ids.add(id(human))
                pins.units += meter(human)
            elif self.keep_user_messages and meter(human) <= room:
                room -= meter(human)
                pins.human_ids.add(id(human))
                pins.units += meter(human)
        return pins

    def _frozen(self, ast: ChainAST) -> tuple[list[BodyPair], list[BodyPair]]:
        """(kept, dropped): the summaries at the depth limit, the newest of them kept
        while they take at most :data:`FROZEN_SHARE` of ``keep_units``."""
        found = [
            pair
            for section in ast.sections
            for pair in section.body
            if self.max_depth is not None and self._depth(pair) >= self.max_depth
        ]
        room = int(self.keep_units * FROZEN_SHARE)
        kept: list[BodyPair] = []
        for index in range(len(found) - 1, -1, -1):
            cost = self._meter.total(found[index].messages())
            if cost > room:
                return kept[::-1], found[: index + 1]
            room -= cost
            kept.append(found[index])
        return kept[::-1], []

    def _split(
        self,
        ast: ChainAST,
        k: int,
        p: int,
        frozen: list[BodyPair],
        dropped: list[BodyPair],
        *,
        pins: _Pins | None = None,
    ) -> _Plan | None:
        """What goes into the summary when the kept part starts at pair ``p`` of
        section ``k``; None when that is nothing. ``frozen`` summaries are carried as
        they are, ``dropped`` ones left out, ``pins`` carried verbatim."""
        if k == 0 and p == 0:
            return None
        pins = pins if pins is not None else _Pins()
        sections = ast.sections
        carried: list[Any] = []
        for index in range(k):  # the questions that leave the chain
            human = sections[index].header.human_message
            if human is None:
                continue
            if _is_note(human):
                carried.extend(human.parts[1:])
            elif id(human) in pins.human_ids and (own := own_question(human)) is not None:
                carried.extend(own.parts)
        evicted_turns = [
            (None if q is not None and id(q) in pins.human_ids else q, body)
            for q, body in _evicted(sections, k, p)
        ]
        humans = [question for question, _ in evicted_turns if question is not None]
        pairs = [pair for _, body in evicted_turns for pair in body]
        frozen_ids = {id(pair) for pair in frozen}
        dropped_ids = {id(pair) for pair in dropped}
        pinned = [pair for pair in pairs if id(pair) in pins.pair_ids]
        replaced = _replaced(evicted_turns, frozen_ids | pins.pair_ids)
        frozen = [pair for pair in pairs if id(pair) in frozen_ids]
        gone = sum(1 for pair in pairs if id(pair) in dropped_ids)
        skipped = frozen_ids | dropped_ids | pins.pair_ids
        live = [pair for pair in pairs if id(pair) not in skipped]
        if (pins.pair_ids or pins.human_ids) and not live and not humans and not gone:
            return None  # all that would leave is carried: nothing to summarize
        resummarized = [pair for pair in live if is_summarized(pair)]
        evicted = self._meter.total(
            [m for s in sections[:k] for m in s.messages() if m.role is not Role.SYSTEM]
        ) + self._meter.total(messages_of(sections[k].body[:p]))
        plan = _Plan(k, p, humans, messages_of(live), resummarized, frozen, evicted, gone, replaced)
        plan.pairs, plan.pinned, plan.carried = pairs, pinned, carried
        plan.turns = [
            (question, messages_of([pair for pair in body if id(pair) not in skipped]))
            for question, body in evicted_turns
        ]
        return plan

    def _assemble(
        self, ast: ChainAST, plan: _Plan, text: str | None, size_before: int
    ) -> tuple[ChainAST, bool, int, BodyPair | None]:
        """The compacted chain, made to fit: (chain, summary cut, summaries dropped,
        summary pair). The original chain comes back when the summary would not make
        it smaller and it is within budget."""
        meter = self._meter

        def total(chain: ChainAST) -> int:
            return meter.total(chain.to_messages())

        frozen = list(plan.frozen)
        out, pair = self._build(ast, plan, text, frozen)
        size = total(out)
        if size >= size_before and size_before <= self.budget.limit:
            return ast, False, 0, None
        limit = self.budget.limit
        dropped = plan.dropped
        while frozen and size > limit:
            frozen.pop(0)
            dropped += 1
            out, pair = self._build(ast, plan, text, frozen)
            size = total(out)
        if size <= limit or text is None:
            return out, False, dropped, pair
        head, line = split_archive_line(text)
        data = head.encode("utf-8")
        low, high = 0, len(data) - 1
        best: tuple[ChainAST, BodyPair | None] | None = None
        while low <= high:  # the longest prefix of the summary that fits, with its line
            middle = (low + high) // 2
            cut = data[:middle].decode("utf-8", "ignore")
            candidate = self._build(ast, plan, "\n".join(filter(None, (cut, line))), frozen)
            if total(candidate[0]) <= limit:
                best, low = candidate, middle + 1
            else:
                high = middle - 1
        if best is None:  # not even an empty summary fits: the summarized part goes
            out, _ = self._build(ast, plan, None, [])
            return out, True, dropped + len(frozen), None
        return best[0], True, dropped, best[1]

    def _build(
        self, ast: ChainAST, plan: _Plan, text: str | None, frozen: list[BodyPair]
    ) -> tuple[ChainAST, BodyPair | None]:
        """The chain with the summarized part replaced by ``frozen`` and a summary pair
        holding ``text`` (none when ``text`` is None)."""
        sections = ast.sections
        k, p = plan.section, plan.pair
        style = self.style
        system = sections[0].header.system_message
        kept = sections[k]
        carried = plan.carried
        own_turn = p == 0 or bool(carried)
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
                seed=f"compaction\x1f{self.turns}",
                style=style,
                before_human=own_turn,
            )
            body.append(pair)
        new: list[Section] = []
        question = kept.header.human_message
        if own_turn and body:
            note = Message.from_parts(
                Role.HUMAN, (TextPart(text=EARLIER_CONVERSATION_TEXT), *carried)
            )
            new.append(Section.build(Header.build(system, note), tuple(body)))
            new.append(Section.build(Header.build(None, question), kept.body[p:]))
        elif own_turn:
            if carried:  # nothing fits before the question: it opens with them
                own = () if question is None else question.parts
                question = Message.from_parts(Role.HUMAN, (*carried, *own))
            new.append(Section.build(Header.build(system, question), kept.body[p:]))
        else:
            header = Header.build(system, kept.header.human_message)
            new.append(Section.build(header, (*body, *kept.body[p:])))
        new.extend(sections[k + 1 :])
        out = ChainAST.build(new)
        if pair is not None and pair.type is BodyPairType.SUMMARIZATION:
            out = unique_summary_ids(out, [pair], style.id_template)
        return out, pair

    def _with_breakpoints(self, out: list[Message]) -> list[Message]:
        """With ``cache_breakpoints``: Anthropic cache points at the end of the system
        prompt, of the newest summary and of the newest cleared result (the prefix the
        next turns repeat), within the limit of four and the budget."""
        if not self.cache_breakpoints:
            return out
        anchors: list[int] = []
        if out and out[0].role is Role.SYSTEM:
            anchors.append(0)
        summary = placeholder = -1
        index = 0
        for section in parse_chain(out).sections:
            index += len(section.header.messages())
            for pair in section.body:
                index += 1 + len(pair.tool_messages)
                if is_summarized(pair):
                    summary = index - 1
                elif any(is_cleared(r) for m in pair.tool_messages for r in m.tool_results):
                    placeholder = index - 1
        anchors.extend(i for i in (summary, placeholder) if i >= 0)
        marked, added = add_breakpoints(out, anchors)
        if added and self._meter.total(marked) > self.budget.limit >= self._meter.total(out):
            return out  # the points would push the chain over its budget
        return marked

    # -- bookkeeping ------------------------------------------------------------------------

    def _depth(self, pair: BodyPair) -> int:
        if not is_summarized(pair):
            return 0
        return self._depths.get(_summary_key(pair), 1)

    def _live_depths(self, ast: ChainAST) -> dict[str, int]:
        live: dict[str, int] = {}
        for section in ast.sections:
            for pair in section.body:
                if is_summarized(pair):
                    key = _summary_key(pair)
                    if key in self._depths:
                        live[key] = self._depths[key]
        return live

    def _event(
        self,
        reason: CompactionReason,
        before: list[Message],
        after: list[Message],
        started: float,
        *,
        books: HandlerLedger,
        calls: HandlerCalls | None = None,
        depth: int = 0,
        summarized: int = 0,
        truncated: bool = False,
        dropped: int = 0,
        archived: int = 0,
        reinserted: int = 0,
        cleared: ClearingPass | None = None,
        summary_needed: bool = False,
    ) -> CompactionEvent:
        meter = self._meter
        after_units = meter.total(after)
        return CompactionEvent(
            reason=reason,
            unit=self.budget.unit,
            budget=self.budget.limit,
            keep_units=self.keep_units,
            over_budget=after_units > self.budget.limit,
            bytes_before=sum(m.size for m in before),
            bytes_after=sum(m.size for m in after),
            tokens_before=meter.all_tokens(before),
            tokens_after=meter.all_tokens(after),
            messages_before=len(before),
            messages_after=len(after),
            summarized_messages=summarized,
            handler_calls=books.calls,
            retries=books.retries,
            timeouts=books.timeouts,
            fallback_calls=books.fallback_calls,
            chunks=books.chunks,
            cache_hits=calls.cache_hits if calls is not None else 0,
            prompt_bytes=calls.input_bytes if calls is not None else 0,
            summary_bytes=calls.output_bytes if calls is not None else 0,
            depth=depth,
            summary_truncated=truncated,
            dropped_summaries=dropped,
            duration_s=time.perf_counter() - started,
            turn=self.turns,
            archived_messages=archived,
            reinserted_bytes=reinserted,
            store_events=tuple(calls.events) if calls is not None else (),
            cleared_results=cleared.results_cleared if cleared is not None else 0,
            cleared_inputs=cleared.inputs_cleared if cleared is not None else 0,
            cleared_reasoning=cleared.reasoning_cleared if cleared is not None else 0,
            cleared_units=cleared.units_freed if cleared is not None else 0,
            summary_needed=summary_needed,
        )

    def _emit(self, event: CompactionEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)


def summary_bytes(budget: Budget, ratio: float = DEFAULT_SUMMARY_RATIO) -> int:
    """The size bound (UTF-8 bytes) of a summary that may take ``ratio`` of ``budget``:
    a token budget is converted at :data:`~csum.budget.BYTES_PER_TOKEN` of prose, and
    the bound is at least :data:`MIN_SUMMARY_BYTES`."""
    per_unit = 1.0 if budget.unit == "bytes" else BYTES_PER_TOKEN["text"]
    return max(MIN_SUMMARY_BYTES, int(budget.limit * ratio * per_unit))


def _kind(summarized: Sequence[Message]) -> BodyPairType:
    """SUMMARIZATION when a summarized AI message called tools, else COMPLETION."""
    if any(m.role is _AI and m.tool_calls for m in summarized):
        return BodyPairType.SUMMARIZATION
    return BodyPairType.COMPLETION


def _summary_key(pair: BodyPair) -> str:
    """A summary's identity for the depth records: its text (ids may be renamed)."""
    if pair.type is BodyPairType.SUMMARIZATION:
        result = pair.tool_messages[0].parts[0]
        text = result.content if type(result) is ToolResult else ""
    else:
        text = pair.ai_message.text.removeprefix(SUMMARIZED_CONTENT_PREFIX)
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))


def _is_note(message: Message) -> bool:
    """Whether ``message`` opens a summary's turn: the note, then any questions it
    carries (pinned, or kept by ``keep_user_messages``)."""
    parts = message.parts
    return (
        len(parts) >= 1
        and type(parts[0]) is TextPart
        and parts[0].text == EARLIER_CONVERSATION_TEXT
        and parts[0].reasoning is None
    )


@dataclass
class _Pins:
    """What :meth:`Compactor._pins` found: ids of carried pairs and questions, and
    their total size in the budget's unit."""

    pair_ids: set[int] = field(default_factory=set)
    human_ids: set[int] = field(default_factory=set)
    units: int = 0


def _evicted(
    sections: Sequence[Section], k: int, p: int
) -> Iterator[tuple[Message | None, tuple[BodyPair, ...]]]:
    """(question, pairs) of every turn before pair ``p`` of section ``k``, in chain
    order; the note opening an earlier summary is no question."""
    for index in range(k + 1):
        section = sections[index]
        body = section.body if index < k else section.body[:p]
        if index == k and not body:
            return
        human = section.header.human_message
        yield (human if human is not None and not _is_note(human) else None), body


def _in_chain_order(plan: _Plan) -> tuple[list[Message], list[Message]]:
    """(context, summarized) of one summary prompt: the questions that leave the chain
    are summarized in their place among the turns' messages (the user's requests and
    constraints are gone from the chain after the compaction, so the summary must say
    them); only the question of the turn the cut falls in stays in the chain, and is
    context."""
    staying, turns = _turns_in_place(plan)
    summarized: list[Message] = []
    for question, messages in turns:
        if question is not None:
            summarized.append(question)
        summarized.extend(messages)
    return ([question_context(staying)] if staying is not None else []), summarized


def _turns_in_place(
    plan: _Plan,
) -> tuple[Message | None, list[tuple[Message | None, list[Message]]]]:
    """(the question that stays, the turns summarized): the question of the turn the cut
    falls in stays in the chain; the others leave it, each summarized in its place as
    its own text (:func:`csum.reinsert.own_question`)."""
    staying: Message | None = None
    turns: list[tuple[Message | None, list[Message]]] = []
    last = len(plan.turns) - 1
    for index, (question, messages) in enumerate(plan.turns):
        if question is not None and index == last and plan.pair > 0:
            staying = question
            turns.append((None, messages))
        else:
            turns.append((None if question is None else own_question(question), messages))
    return staying, turns


def _replaced(
    turns: Sequence[tuple[Message | None, Sequence[BodyPair]]], frozen_ids: set[int]
) -> list[Message]:
    """The messages of the evicted ``turns`` (from :func:`_evicted`) that a compaction
    takes out of the chain, in chain order: the questions (not the note opening an
    earlier summary), each as its own text without the lines re-insertion put back into
    it (those are archived already, under their own references), and every pair not
    carried as a frozen summary (dropped summaries included)."""
    out: list[Message] = []
    for question, body in turns:
        own = None if question is None else own_question(question)
        if own is not None:
            out.append(own)
        for pair in body:
            if id(pair) not in frozen_ids:
                out.extend(pair.messages())
    return out


def _question_key(messages: Sequence[Message]) -> str | None:
    """A hash of the last human message's own text (without re-inserted lines); None
    without a human message."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role is Role.HUMAN:
            own = "\x1f".join(
                p.text for p in message.parts if type(p) is TextPart and not is_reinserted(p)
            )
            return xxhash.xxh3_64_hexdigest(own.encode("utf-8", "surrogatepass"))
    return None
