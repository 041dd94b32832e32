"""Hooks keeping a framework's agent history under budget, and what they share. Each of
``csum.integrations.pydantic_ai``, ``.langchain`` and ``.openai_agents`` needs its framework
(an optional extra) and loads only when imported (``docs/integrations.md``)."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, pairwise
from typing import Any, Generic, Literal, Protocol, TypedDict, TypeVar, runtime_checkable

from cast import Message
from csum._checks import check_count, check_handler
from csum._sync import run_sync
from csum.compactor import Compactor
from csum.config import DEFAULT_BUDGET, DEFAULT_MAX_EVENTS, DEFAULT_MODEL_SHARE, Budget, as_budget
from csum.request import Handler
from csum.summarizer import Summarizer
from csum.tokens import model_key

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_MODEL_SHARE",
    "BudgetLike",
    "HistoryHook",
    "HookEvent",
    "HookOptions",
    "Keeper",
    "OnError",
    "SummarizerKeeper",
    "default_keeper",
    "model_name",
    "provider_of",
]

T = TypeVar("T")
Decode = Callable[[list[T]], tuple[list[Message], list[int]]]
Encode = Callable[[list[Message]], list[T]]
OnError = Literal["continue", "raise"]
Outcome = Literal["compacted", "unchanged", "failed"]
BudgetLike = int | str | Budget
"""A budget as the hooks take it: an int (bytes), a size string (``"32KiB"``,
``"4000 tokens"``) or a :class:`~csum.Budget`."""

logger = logging.getLogger("csum.integrations")


@runtime_checkable
class Keeper(Protocol):
    """What a hook needs from a keeper: a chain in, a chain within its budget out."""

    async def compact(self, messages: list[Message], /) -> list[Message]: ...


KeeperOrHandler = Keeper | Handler | None


class SummarizerKeeper:
    """A :class:`~csum.Summarizer` and its handler behind the :class:`Keeper` protocol."""

    def __init__(self, summarizer: Summarizer, handler: Handler) -> None:
        if not isinstance(summarizer, Summarizer):
            raise TypeError(
                f"summarizer must be a csum.Summarizer, not {type(summarizer).__name__}: "
                f"SummarizerKeeper(Summarizer(SummarizerConfig(...)), extractive())"
            )
        check_handler(handler)
        self.summarizer = summarizer
        self.handler = handler

    async def compact(self, messages: list[Message], /) -> list[Message]:
        return await self.summarizer.summarize_chain(self.handler, messages)


def default_keeper(
    budget: BudgetLike | None = None, handler: Handler | None = None, *, target: str | None = None
) -> Keeper:
    """The keeper hooks use when given none (or given a handler): a
    :class:`~csum.Compactor` with ``handler`` (the offline extractive one by default)
    and ``budget`` (:data:`DEFAULT_BUDGET` bytes when ``None``)."""
    return Compactor(handler, budget=DEFAULT_BUDGET if budget is None else budget, target=target)


_PROVIDER_PREFIXES = {
    prefix: provider
    for provider, prefixes in {
        "openai": "openai azure_openai",
        "anthropic": "anthropic",
        "gemini": "google-gla google_genai google-genai gemini",
        "vertex": "google-vertex google_vertexai vertexai",
        "bedrock": "bedrock bedrock_converse",
        "mistral": "mistral mistralai",
        "groq": "groq",
        "deepseek": "deepseek",
    }.items()
    for prefix in prefixes.split()
}
"""Framework provider prefixes (pydantic-ai ``system``/model strings, LangChain
``init_chat_model`` providers) and the chaincast provider each stands for."""


def provider_of(model: object) -> str | None:
    """The chaincast provider a model name's framework prefix names (``"anthropic:..."``,
    ``"google-gla:..."``, ``"bedrock:..."``), or a Bedrock model id
    (``"us.anthropic.claude-..."``); ``None`` when the name does not say."""
    name = model_name(model)
    if name is None:
        return None
    prefix, colon, _ = name.partition(":")
    if colon and not prefix[:1].isdigit() and prefix.lower() in _PROVIDER_PREFIXES:
        return _PROVIDER_PREFIXES[prefix.lower()]
    if model_key(name) != name.strip().lower().rsplit("/", 1)[-1]:
        return "bedrock"  # a region or vendor prefix: a Bedrock model id
    return None


def model_name(model: object) -> str | None:
    """The name of a model given by name or as a framework's model object
    (``model_name``, ``model`` or ``model_id`` attribute), or ``None``."""
    if isinstance(model, str):
        return model or None
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True, slots=True)
class HookEvent:
    """What one hook call did: ``compacted`` (the framework got a new history),
    ``unchanged`` (the keeper left it as it was) or ``failed`` (the framework got its
    own history back; ``error`` says why).

    ``size_before``/``size_after`` and ``budget`` are in ``unit`` (``"bytes"`` or
    ``"tokens"``, the keeper's budget unit); ``over_budget`` says the history handed back
    is still over the budget (the system prompt, the current question and the newest
    tool call with its results alone do not fit, or the call failed on a history over
    it). ``budget`` is ``None`` for a keeper without a known budget."""

    framework: str
    outcome: Outcome
    messages_before: int
    messages_after: int
    size_before: int
    """Size of the history as chaincast messages, in ``unit`` (0 when decoding failed)."""
    size_after: int
    error: Exception | None = None
    unit: str = "bytes"
    budget: int | None = None
    over_budget: bool = False
    bytes_before: int = 0
    """UTF-8 bytes of the history as chaincast messages, whatever the unit."""
    bytes_after: int = 0

    def __str__(self) -> str:
        budget = "no budget" if self.budget is None else f"budget {self.budget:,} {self.unit}"
        over = ", STILL OVER BUDGET" if self.over_budget else ""
        return (
            f"{self.framework}: {self.outcome}, {self.size_before:,} -> {self.size_after:,} "
            f"{self.unit} ({budget}{over}), {self.messages_before} -> {self.messages_after} "
            f"messages" + ("" if self.error is None else f", error: {self.error}")
        )


class HookOptions(TypedDict, total=False):
    """The options every framework hook takes after its keeper (see :class:`HistoryHook`)."""

    budget: BudgetLike | None
    model: object | None
    target: str | None
    on_error: OnError
    on_event: Callable[[HookEvent], None] | None
    max_events: int | None


class HistoryHook:
    """The part of every framework hook that is not about the framework: run the keeper,
    apply the error policy, report events. Subclasses add the framework's own entry
    points.

    The first argument is a keeper (anything with ``async compact(messages)``) or a
    summarize handler (an async ``prompt -> summary`` callable), which is then run by
    the default keeper with ``budget``. Without ``budget``, the budget is
    :data:`DEFAULT_MODEL_SHARE` of ``model``'s context window when a model is given or
    the hook learns its agent's model, else :data:`DEFAULT_BUDGET` bytes.
    """

    framework = "chaincast"

    def __init__(
        self,
        keeper: KeeperOrHandler = None,
        *,
        budget: BudgetLike | None = None,
        model: object | None = None,
        target: str | None = None,
        on_error: OnError = "continue",
        on_event: Callable[[HookEvent], None] | None = None,
        max_events: int | None = DEFAULT_MAX_EVENTS,
        shown_as: str | None = None,
    ) -> None:
        self.shown_as = shown_as or type(self).__name__ + "({args})"
        """How error messages write a call of this hook (the public wrapper's form)."""
        if on_error not in ("continue", "raise"):
            raise ValueError(f"on_error must be 'continue' or 'raise', not {on_error!r}")
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
        check_count("max_events", max_events, least=0, none=True, type_error=False)
        self._learn = False
        self._handler: Handler | None = None
        self._target = target
        self.keeper: Keeper = self._keeper(keeper, budget, model, target)
        self.on_error = on_error
        self.on_event = on_event
        self.events: deque[HookEvent] = deque(maxlen=max_events)
        """The latest events (at most ``max_events``), oldest first; ``on_event`` gets
        every one."""
        self.last_event: HookEvent | None = None

    def _keeper(
        self, keeper: object, budget: BudgetLike | None, model: object | None, target: str | None
    ) -> Keeper:
        call = self.shown_as
        hook = call.split("(", 1)[0]
        if isinstance(keeper, HistoryHook):
            raise TypeError(
                f"{hook} takes a keeper or a handler, not the hook {type(keeper).__name__}: "
                f"pass its keeper, {call.format(args='other.keeper')}, or a budget, "
                f"{call.format(args='budget=32_000')}"
            )
        if isinstance(keeper, Keeper):
            if budget is not None or model is not None or target is not None:
                given = "budget=" if budget is not None else "model=" if model else "target="
                raise ValueError(
                    f"{type(keeper).__name__} is a keeper with its own budget, so {given} is "
                    f"not taken here: give it to the keeper, "
                    f"{call.format(args='Compactor(handler, budget=...)')}, or pass the "
                    f"handler, {call.format(args='handler, budget=...')}"
                )
            return keeper
        if keeper is not None:
            try:
                check_handler(keeper)
            except TypeError as exc:
                raise TypeError(
                    f"{hook} takes a keeper (async compact(messages)) or a summarize handler "
                    f"(async prompt -> summary), not {type(keeper).__name__}: write "
                    f"{call.format(args='budget=32_000')}, "
                    f"{call.format(args='extractive(), budget=32_000')} or "
                    f"{call.format(args='Compactor(handler, budget=32_000)')} ({exc})"
                ) from None
            self._handler = keeper  # type: ignore[assignment]
        if budget is not None and model is not None:
            raise ValueError(
                f"give budget= or model= (a share of its window), not both: "
                f"{call.format(args='budget=Budget.of_model(name, 0.25)')}"
            )
        if budget is not None:
            limit = as_budget(budget)
        elif model is not None:
            name = model_name(model)
            if name is None:
                raise TypeError(f"model must be a model name or a model object, not {model!r}")
            limit = Budget.of_model(name, DEFAULT_MODEL_SHARE)
            target = target or provider_of(name)
        else:
            limit = Budget.bytes(DEFAULT_BUDGET)
            self._learn = True
        return default_keeper(limit, self._handler, target=target)

    @property
    def awaits_model(self) -> bool:
        """Whether the hook still takes its budget from the first model it learns (it
        runs the default keeper and was given no budget nor model)."""
        return self._learn

    @property
    def compacted(self) -> bool:
        """Whether the latest call handed back a compacted history."""
        return self.last_event is not None and self.last_event.outcome == "compacted"

    def learn_model(self, model: object, target: str | None = None) -> None:
        """The agent's model, as the framework gives it at call time: when this hook
        runs the default keeper without a budget given, the budget becomes
        :data:`DEFAULT_MODEL_SHARE` of that model's window (once; a model without a known
        window keeps :data:`DEFAULT_BUDGET` bytes, with a warning saying how to give it).
        ``target`` (a provider name) then shapes the summaries for that provider."""
        if not self._learn:
            return
        self._learn = False
        name = model_name(model)
        try:
            limit = Budget.of_model(name, DEFAULT_MODEL_SHARE) if name else None
        except ValueError:
            limit = None
        if limit is None:
            logger.warning(
                "%s: model %r has no known context window; the hook keeps its default "
                "budget of %s bytes (give budget=..., or model=... with a known name)",
                self.framework,
                name or type(model).__name__,
                f"{DEFAULT_BUDGET:,}",
            )
            return
        self.keeper = default_keeper(limit, self._handler, target=self._target or target)

    def _report(self, event: HookEvent) -> None:
        self.last_event = event
        self.events.append(event)
        if event.outcome == "failed":
            logger.warning("%s history kept uncompacted: %s", event.framework, event.error)
        elif event.over_budget:
            logger.warning("%s history still over budget: %s", event.framework, event)
        if self.on_event is not None:
            self.on_event(event)

    def _sizes(
        self, before: list[Message], after: list[Message], error: Exception | None = None
    ) -> tuple[Any, ...]:
        """A :class:`HookEvent`'s fields from ``size_before`` on, in the keeper's unit (0
        where a failed call's fails)."""
        budget = getattr(self.keeper, "budget", None)
        unit, limit = (budget.unit, budget.limit) if isinstance(budget, Budget) else ("bytes", None)
        counter: Any = getattr(self.keeper, "counter", None)
        tokens = unit == "tokens" and counter is not None

        def size(messages: list[Message]) -> int:
            return sum(counter.count(m) if tokens else m.size for m in messages)

        try:
            size_before, size_after = size(before), size(after)
        except Exception:  # a counter failing on a failed call's history: report what is known
            if error is None:
                raise
            size_before = size_after = 0
        over = limit is not None and size_after > limit
        nbytes = (sum(m.size for m in before), sum(m.size for m in after))
        return (size_before, size_after, error, unit, limit, over, *nbytes)

    async def _run_keeper(self, messages: list[Message]) -> tuple[list[Message], tuple[Any, ...]]:
        """The keeper's output, and the event's fields holding the sizes before and after."""
        keeper = self.keeper
        if isinstance(keeper, Compactor):
            r = await keeper.run(messages)
            sizes = (r.size_before, r.size_after, None, r.unit, r.budget, r.over_budget)
            return r.messages, (*sizes, r.bytes_before, r.bytes_after)
        out = await keeper.compact(messages)
        return out, self._sizes(messages, out)

    async def compact_history(
        self, originals: Sequence[T], decode: Decode[T], encode: Encode[T]
    ) -> list[T]:
        """``originals`` kept under budget through the keeper: every run of output
        messages that one original decoded to is that original object, ``encode`` makes
        the rest; ``originals`` themselves when the keeper changed nothing or failed
        (then a ``failed`` event, unless ``on_error="raise"``)."""
        messages: list[Message] = []
        n = len(originals)
        try:
            messages, counts = decode(list(originals))
            out, sizes = await self._run_keeper(messages)
            unchanged = out == messages
            result = (
                list(originals) if unchanged else _rebuild(originals, counts, messages, out, encode)
            )
        except Exception as exc:  # the policy decides; the run must go on
            if self.on_error == "raise":
                raise
            failed = self._sizes(messages, messages, exc)
            self._report(HookEvent(self.framework, "failed", n, n, *failed))
            return list(originals)
        outcome: Outcome = "unchanged" if unchanged else "compacted"
        # reported outside the try: a failing on_event is not a failed call
        self._report(HookEvent(self.framework, outcome, n, len(result), *sizes))
        return result

    def compact_history_sync(
        self, originals: Sequence[T], decode: Decode[T], encode: Encode[T]
    ) -> list[T]:
        """:meth:`compact_history` for a framework's synchronous hook: runs its own event
        loop, in a worker thread when this thread already runs one (a notebook)."""
        return run_sync(partial(self.compact_history, originals, decode, encode))


H = TypeVar("H", bound=HistoryHook)


class _HistoryEvents(Generic[H]):
    """A framework object running its :class:`HistoryHook` as ``history``."""

    history: H

    @property
    def events(self) -> deque[HookEvent]:
        """The latest compaction events, oldest first (see ``HistoryHook.events``)."""
        return self.history.events


def _rebuild(
    originals: Sequence[T],
    counts: Sequence[int],
    decoded: list[Message],
    output: list[Message],
    encode: Encode[T],
) -> list[T]:
    """``output`` as originals where it holds what they decoded to, ``encode`` between."""
    groups = [decoded[a:b] for a, b in pairwise(accumulate(counts, initial=0))]
    exact = len(groups) * (len(output) + 1) <= EXACT_REBUILD_CELLS
    matched = (_best_alignment if exact else _greedy_alignment)(groups, output)
    result: list[T] = []
    i = 0
    for k, at in matched:
        if at > i:
            result.extend(encode(output[i:at]))
        result.append(originals[k])
        i = at + len(groups[k])
    if i < len(output):
        result.extend(encode(output[i:]))
    return result


EXACT_REBUILD_CELLS = 40_000
"""Above this many (group, position) pairs the alignment is greedy, not the best one."""


def _best_alignment(groups: list[list[Message]], output: list[Message]) -> list[tuple[int, int]]:
    """(group, position) pairs reusing as many groups as any in-order alignment can."""
    m, n = len(groups), len(output)
    best = [[0] * (n + 1) for _ in range(m + 1)]  # groups reused from (group, position) on
    take = [[False] * (n + 1) for _ in range(m)]  # whether the best reuses group k at i
    for k in range(m - 1, -1, -1):
        group, size, row, below = groups[k], len(groups[k]), best[k], best[k + 1]
        for i in range(n, -1, -1):
            value = max(below[i], row[i + 1] if i < n else 0)
            if (
                size
                and i + size <= n
                and 1 + below[i + size] >= value
                and output[i : i + size] == group
            ):
                take[k][i], value = True, 1 + below[i + size]
            row[i] = value
    pairs: list[tuple[int, int]] = []
    k = i = 0
    while k < m and i <= n and best[k][i]:
        if take[k][i]:
            pairs.append((k, i))
            k, i = k + 1, i + len(groups[k])
        elif best[k][i] == best[k + 1][i]:
            k += 1
        else:
            i += 1
    return pairs


def _greedy_alignment(groups: list[list[Message]], output: list[Message]) -> list[tuple[int, int]]:
    """(group, position) pairs: each position takes the next group it holds."""
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(output):
        for k in range(j, len(groups)):
            if groups[k] and output[i : i + len(groups[k])] == groups[k]:
                pairs.append((k, i))
                i, j = i + len(groups[k]), k + 1
                break
        else:
            i += 1
    return pairs
