"""Every setting of csum and every default, in one module (as httpx keeps its own in
``_config.py``): each group is one frozen value checked when it is made (a wrong type is
a ``TypeError``, a value out of range a ``ValueError``, each naming the field)."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from cast.chainio import parse_size
from csum._checks import check_count, check_handler, check_instance
from csum.archive import HistoryArchive
from csum.cache import SummaryCache
from csum.tokens import context_window

if TYPE_CHECKING:
    from csum.request import Handler

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_CLEARING",
    "DEFAULT_CLEAR_AT_LEAST",
    "DEFAULT_CLEAR_KEEP",
    "DEFAULT_CLEAR_TRIGGER",
    "DEFAULT_COOLDOWN_TURNS",
    "DEFAULT_KEEP_RATIO",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_MAX_PROMPT_BYTES",
    "DEFAULT_MAX_SPLIT_DEPTH",
    "DEFAULT_MODEL_SHARE",
    "DEFAULT_RESERVE_RATIO",
    "DEFAULT_SUMMARY_RATIO",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TRIGGER",
    "LONG_MEMORY",
    "LOW_COST",
    "MAX_SUMMARY_RATIO",
    "MIN_PROMPT_BYTES",
    "MIN_SUMMARY_BYTES",
    "SUMMARY_ONLY",
    "Budget",
    "BudgetUnit",
    "Clearing",
    "Preset",
    "RetryPolicy",
    "Robustness",
    "Stores",
    "SummarizerConfig",
    "as_budget",
]

# -- the defaults (docs/compactor.md, "Defaults and why") -----------------------------------

DEFAULT_TRIGGER: Final = 1.0
"""Share of the budget where compaction starts (``Budget.trigger``; 0.85 before issue 36)."""
DEFAULT_KEEP_RATIO: Final = 0.1
"""Share of the budget a compaction brings the chain down to (``Budget.keep_ratio``): the
newest turn verbatim, the rest in the summary and its facts (issue 36's sweep)."""
DEFAULT_SUMMARY_RATIO: Final = 1 / 8
"""Share of the budget a summary and its facts may take (``Budget.summary_ratio``): half
the default handler's summary, half the facts it lacks (:mod:`csum.prompt`)."""
MAX_SUMMARY_RATIO: Final = 0.5
"""Summaries take at most half of the budget (the rest is what they summarize for)."""
DEFAULT_RESERVE_RATIO: Final = 0.05
"""Share of the budget set aside for the summary when choosing the kept pairs
(``Budget.summary_reserve``)."""
DEFAULT_MAX_DEPTH: Final = 3
"""Compactions a summary's content goes through before it is kept as it is."""
DEFAULT_COOLDOWN_TURNS: Final = 4
"""Calls after a compaction during which the trigger (not the limit) is ignored."""
MIN_SUMMARY_BYTES: Final = 1024
"""The default handler's summaries are never bounded below this (tiny budgets)."""

DEFAULT_CLEAR_KEEP: Final = 10
"""Newest tool uses whose results are never cleared (``Clearing.keep``; Anthropic's is 3)."""
DEFAULT_CLEAR_TRIGGER: Final = 1.0
"""Share of the budget where clearing starts at the latest (1.0: with the compaction)."""
DEFAULT_CLEAR_AT_LEAST: Final = 0.0
"""Share of the budget a clearing pass must free to be applied alone (0: any)."""

DEFAULT_TIMEOUT: Final = 120.0
"""Seconds a handler call may take (``Robustness.timeout``)."""
DEFAULT_MAX_SPLIT_DEPTH: Final = 3
"""Merge rounds of a prompt split to fit the handler's input (``Robustness``)."""
DEFAULT_MAX_CONCURRENCY: Final = 4
"""Handler calls in flight for the pieces of one summary (``Robustness``)."""
MIN_PROMPT_BYTES: Final = 4096
"""Smallest accepted ``Robustness.max_prompt_bytes`` (the instructions take about 1.3 KB)."""
DEFAULT_MAX_PROMPT_BYTES: Final = 1 << 20
"""Largest prompt ``csum summarize --budget`` sends: more is summarized in pieces, then
merged, so memory does not grow with one prompt of the whole input."""

DEFAULT_BUDGET: Final = 65536
"""Byte budget of a framework hook's keeper given no budget, its model unknown."""
DEFAULT_MODEL_SHARE: Final = 0.5
"""Share of the model's context window a hook's keeper takes when it learns the model."""
DEFAULT_MAX_EVENTS: Final = 100
"""How many events ``hook.events`` holds (the latest ones); ``on_event`` sees them all."""


def _check_share(owner: str, value: object, *, high: float = 1.0, zero: bool = False) -> None:
    """A share of a limit: a number within (0, high] (or [0, high] with ``zero``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{owner} must be a number (a share of the limit), not {value!r}")
    low_ok = value >= 0 if zero else value > 0
    if not (low_ok and value <= high):
        bounds = f"[0, {high:g}]" if zero else f"(0, {high:g}]"
        raise ValueError(f"{owner} must be within {bounds} (a share of the limit), got {value!r}")


# -- Budget ---------------------------------------------------------------------------------

BudgetUnit = Literal["bytes", "tokens"]

_TOKENS = re.compile(r"\s*([0-9][0-9_]*)\s*tokens?\s*", re.IGNORECASE)


def as_budget(value: int | str | Budget) -> Budget:
    """The :class:`Budget` a budget argument stands for: a :class:`Budget` as it is, an
    int as bytes, a string as a size (``"32KiB"``, ``"2MB"``, ``"4096"``: bytes, read as
    ``csum summarize --budget`` reads it) or a token count (``"4000 tokens"``).

    Raises ``TypeError`` for another type and ``ValueError`` for a bad size.
    """
    if isinstance(value, Budget):
        return value
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(
            f"budget must be an int (bytes), a size string such as '32KiB' or '4000 tokens', "
            f"or a Budget, not {value!r}"
        )
    if isinstance(value, int):
        return Budget.bytes(value)
    tokens = _TOKENS.fullmatch(value)
    if tokens is not None:
        return Budget.tokens(int(tokens.group(1).replace("_", "")))
    try:
        return Budget.bytes(parse_size(value.strip()))
    except ValueError as exc:
        raise ValueError(f"{exc}, or a token count such as '4000 tokens'") from None


@dataclass(frozen=True, slots=True, repr=False)
class Budget:
    """A size limit on a whole chain, ``limit`` UTF-8 bytes or tokens, and how a
    :class:`~csum.Compactor` keeps it (keyword-only settings, each defaulting to its
    ``DEFAULT_*`` constant).

    ``trigger``: the share of the limit where compaction starts (over the limit it
    always does). ``keep_ratio``: the share a compaction brings the chain down to (at
    most the trigger's). ``summary_ratio``: the share summaries take, at most
    :data:`MAX_SUMMARY_RATIO`. ``summary_reserve``: the share kept for the summary when
    choosing what to keep (``summary_ratio`` when that is larger). ``max_depth``: the
    depth limit of summaries (None: every summary is folded into the next).
    ``cooldown_turns``: calls after a compaction during which the trigger is ignored.
    """

    limit: int
    unit: BudgetUnit = "bytes"
    _: KW_ONLY
    trigger: float = DEFAULT_TRIGGER
    keep_ratio: float = DEFAULT_KEEP_RATIO
    summary_ratio: float = DEFAULT_SUMMARY_RATIO
    summary_reserve: float = DEFAULT_RESERVE_RATIO
    max_depth: int | None = DEFAULT_MAX_DEPTH
    cooldown_turns: int = DEFAULT_COOLDOWN_TURNS

    def __post_init__(self) -> None:
        check_count("a budget", self.limit, type_error=False)
        if self.unit not in ("bytes", "tokens"):
            raise ValueError(f"budget unit must be 'bytes' or 'tokens', got {self.unit!r}")
        _check_share("Budget.trigger", self.trigger)
        _check_share("Budget.keep_ratio", self.keep_ratio)
        _check_share("Budget.summary_ratio", self.summary_ratio, high=MAX_SUMMARY_RATIO)
        reserve = self.summary_reserve
        _check_share("Budget.summary_reserve", reserve, high=MAX_SUMMARY_RATIO, zero=True)
        check_count("Budget.max_depth", self.max_depth, none=True)
        check_count("Budget.cooldown_turns", self.cooldown_turns, least=0)

    @classmethod
    def bytes(cls, limit: int, **settings: Any) -> Budget:
        """A limit in UTF-8 bytes (``Message.size`` summed over the chain), with any of
        the compaction ``settings`` (``keep_ratio=0.3``...)."""
        return cls(limit, "bytes", **settings)

    @classmethod
    def tokens(cls, limit: int, **settings: Any) -> Budget:
        """A limit in tokens, as the Compactor's token counter counts them, with any of
        the compaction ``settings``."""
        return cls(limit, "tokens", **settings)

    @classmethod
    def of_model(
        cls,
        model: str,
        fraction: float = 1.0,
        *,
        windows: Mapping[str, int] | None = None,
        **settings: Any,
    ) -> Budget:
        """``fraction`` (0 < fraction <= 1) of ``model``'s context window, in tokens
        (``model`` in any spelling :func:`~csum.context_window` reads), with any of the
        compaction ``settings``."""
        _check_share("fraction", fraction)
        return cls(max(1, int(context_window(model, windows) * fraction)), "tokens", **settings)

    def evolve(self, **changes: Any) -> Budget:
        """This budget with ``changes`` (any field: ``limit``, ``unit`` or a setting),
        checked as a new one is: ``as_budget("32KiB").evolve(keep_ratio=0.3)``."""
        return replace(self, **changes)

    def settings(self) -> dict[str, Any]:
        """The compaction settings this budget sets to other than their defaults, by
        field name."""
        return {
            name: getattr(self, name)
            for name, default in _BUDGET_DEFAULTS.items()
            if getattr(self, name) != default
        }

    def scaled(self, ratio: float) -> int:
        """``ratio`` of the limit, in the budget's unit (at least 1)."""
        return max(1, int(self.limit * ratio))

    def trigger_units(self) -> int:
        """Where compaction starts, in ``unit``."""
        return self.scaled(self.trigger)

    def keep_units(self) -> int:
        """What a compaction brings the chain down to, in ``unit`` (at most the trigger)."""
        return min(self.scaled(self.keep_ratio), self.trigger_units())

    def reserve_units(self) -> int:
        """The room kept for the summary when choosing what to keep, in ``unit``."""
        return self.scaled(max(self.summary_reserve, self.summary_ratio))

    def __str__(self) -> str:
        return f"{self.limit:,} {self.unit}"

    def __repr__(self) -> str:
        shown = "".join(f", {name}={value!r}" for name, value in self.settings().items())
        return f"Budget(limit={self.limit!r}, unit={self.unit!r}{shown})"


_BUDGET_DEFAULTS: Final = {f.name: f.default for f in fields(Budget)[2:]}
"""Each compaction setting of a :class:`Budget` and its default, in field order."""


# -- Clearing -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Clearing:
    """The clearing stage's options (``Compactor(clearing=Clearing(...))``, see
    :mod:`csum.clearing`).

    ``keep``: the newest tool uses whose results stay whole. ``trigger``: the share of
    the budget where clearing starts at the latest; a compaction (clearing first)
    starts at the lower of it and ``Budget.trigger``, so a lower one lets clearing run
    alone before summaries are due. ``clear_at_least``: a clearing pass that would free
    less (a share of the budget) is not applied, so the prompt cache is not broken for
    little (a pass followed by a summary always is). ``exclude_tools``: tool names whose
    results are never cleared. ``clear_tool_inputs``: the cleared calls' arguments
    become ``{"cleared_arguments_bytes": N}`` too. ``clear_reasoning``: old AI messages
    (before the newest ``keep`` tool uses) lose their reasoning.
    """

    keep: int = DEFAULT_CLEAR_KEEP
    trigger: float = DEFAULT_CLEAR_TRIGGER
    clear_at_least: float = DEFAULT_CLEAR_AT_LEAST
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    clear_tool_inputs: bool = False
    clear_reasoning: bool = False

    def __post_init__(self) -> None:
        check_count("Clearing.keep", self.keep, least=0)
        _check_share("Clearing.trigger", self.trigger)
        _check_share("Clearing.clear_at_least", self.clear_at_least, zero=True)
        tools: object = self.exclude_tools
        if isinstance(tools, str) or not isinstance(tools, Iterable):
            raise TypeError(f"Clearing.exclude_tools must be a set of tool names, not {tools!r}")
        names = frozenset(tools)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"Clearing.exclude_tools holds {name!r}, not a tool name")
        object.__setattr__(self, "exclude_tools", names)
        for flag in ("clear_tool_inputs", "clear_reasoning"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"Clearing.{flag} must be a bool, not {getattr(self, flag)!r}")


DEFAULT_CLEARING: Final[Clearing | None] = None
"""The Compactor's default ``clearing=``: none (issue 36: clearing blanked tool results the
kept window keeps whole and lost more than it saved); ``Clearing()`` turns it on."""


# -- Robustness and Stores ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait between attempts.

    The n-th retry waits ``min(backoff_max, backoff_base * 2 ** (n - 1))`` seconds, less
    up to ``jitter`` of it drawn at random (so clients that failed together spread
    out), and at least the provider's ``Retry-After`` (capped by ``backoff_max``).
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        check_count("max_retries", self.max_retries, least=0)
        if not self.backoff_base >= 0 or not math.isfinite(self.backoff_base):
            raise ValueError(f"backoff_base must be a finite number >= 0, got {self.backoff_base}")
        if not self.backoff_max >= self.backoff_base or not math.isfinite(self.backoff_max):
            raise ValueError(
                f"backoff_max must be finite and >= backoff_base, got {self.backoff_max}"
            )
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be within 0..1, got {self.jitter}")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        base = min(self.backoff_max, self.backoff_base * 2.0 ** min(retry - 1, 62))
        delay = base * (1.0 - self.jitter * rng.random())
        if retry_after is not None and retry_after > delay:
            delay = min(retry_after, self.backoff_max)
        return delay


@dataclass(frozen=True, slots=True)
class Robustness:
    """How a summarize handler is called (see :class:`~csum.RobustHandler`); the same
    object for ``RobustHandler(handler, Robustness(...))`` and
    ``Compactor(handler, robustness=Robustness(...))``.

    ``timeout``: seconds per call (None: none). ``retry``: how often and how long to
    wait between attempts of a transient failure (``RetryPolicy(max_retries=0)``: no
    retries). ``max_prompt_bytes``: the handler's input limit in UTF-8 bytes (None:
    unlimited; at least :data:`MIN_PROMPT_BYTES`); longer prompts are split and the
    pieces' summaries merged, at most ``max_split_depth`` merge rounds deep, with at
    most ``max_concurrency`` calls in flight. ``fallback``: a handler tried when the
    handler fails for good (None: none).
    """

    timeout: float | None = DEFAULT_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_prompt_bytes: int | None = None
    max_split_depth: int = DEFAULT_MAX_SPLIT_DEPTH
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    fallback: Handler | None = None

    def __post_init__(self) -> None:
        timeout: object = self.timeout
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise TypeError(f"Robustness.timeout must be seconds or None, not {timeout!r}")
            if not timeout > 0 or not math.isfinite(timeout):
                raise ValueError(
                    f"Robustness.timeout must be a positive number of seconds or None, "
                    f"got {timeout!r}"
                )
        check_instance("Robustness.retry", self.retry, RetryPolicy, none=False)
        limit = self.max_prompt_bytes
        check_count("Robustness.max_prompt_bytes", limit, least=MIN_PROMPT_BYTES, none=True)
        check_count("Robustness.max_split_depth", self.max_split_depth)
        check_count("Robustness.max_concurrency", self.max_concurrency)
        if self.fallback is not None:
            check_handler(self.fallback, "Robustness.fallback")


@dataclass(frozen=True, slots=True)
class Stores:
    """Where a keeper keeps what outlives one call (None: not kept).

    ``cache`` (a :class:`~csum.SummaryCache`) serves summaries already made for the same
    prompt (a replayed or forked session). ``archive`` (a :class:`~csum.HistoryArchive`)
    keeps every message summarized away, and each summary then ends with the
    ``[archived: ...]`` line naming them. Store failures are events, never a failed
    summarization.
    """

    cache: SummaryCache | None = None
    archive: HistoryArchive | None = None

    def __post_init__(self) -> None:
        check_instance("Stores.cache", self.cache, SummaryCache)
        check_instance("Stores.archive", self.archive, HistoryArchive)


# -- presets --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Preset:
    """Compactor settings with a name: the :class:`Budget` settings it sets
    (``trigger``, ``keep_ratio``, ``summary_ratio``, ``max_depth``) and its clearing
    stage (None: none)::

        Compactor(handler, budget=LOW_COST.budget("128KiB"), clearing=LOW_COST.clearing)

    :meth:`budget` puts the settings on a budget of yours. Change one with
    ``LOW_COST.budget(limit).evolve(...)`` or ``dataclasses.replace(LOW_COST, ...)``.
    """

    name: str
    clearing: Clearing | None = DEFAULT_CLEARING
    trigger: float = DEFAULT_TRIGGER
    keep_ratio: float = DEFAULT_KEEP_RATIO
    summary_ratio: float = DEFAULT_SUMMARY_RATIO
    max_depth: int | None = DEFAULT_MAX_DEPTH

    def __post_init__(self) -> None:
        self.budget(1 << 40)  # each bad setting is an error naming it
        check_instance("Preset.clearing", self.clearing, Clearing)

    def settings(self) -> dict[str, Any]:
        """The budget settings of the preset, by :class:`Budget` field name."""
        return {f.name: getattr(self, f.name) for f in fields(self)[2:]}

    def budget(self, budget: int | str | Budget) -> Budget:
        """``budget`` (an int in bytes, a size string such as ``"128KiB"`` or
        ``"4000 tokens"``, or a :class:`Budget`) with this preset's settings in place of
        its own."""
        return as_budget(budget).evolve(**self.settings())


LONG_MEMORY: Final = Preset(
    "LONG_MEMORY", clearing=None, keep_ratio=0.6, summary_ratio=7 / 16, max_depth=None, trigger=1.0
)
"""Compactor settings for a long memory with the default (extractive) handler: summaries
take up to 7/16 of the budget and are folded again at every compaction, no clearing, a
60 % target. On the simulated 2,000-turn loop at 128 KiB it keeps 59-63 % of all facts
(:data:`SUMMARY_ONLY`: 10-12 %) for 7 % more bytes sent (docs/compactor.md)."""

LOW_COST: Final = Preset(
    "LOW_COST", clearing=Clearing(keep=10), keep_ratio=0.3, summary_ratio=1 / 64, trigger=0.85
)
"""Compactor settings for a low cost with prompt caching: old tool results beyond the
newest 10 cleared to placeholders first, compaction from 85 % of the budget down to 30 %,
summaries up to 1/64 of it. The cost sweep's choice (docs/cost.md): the cheapest setting
remembering at least 49 % of the facts asked for on the simulated loop without an
archive, more than drop-oldest and LangChain's SummarizationMiddleware."""

SUMMARY_ONLY: Final = Preset(
    "SUMMARY_ONLY", clearing=None, keep_ratio=0.6, summary_ratio=1 / 32, trigger=1.0
)
"""The Compactor's former defaults: no clearing stage, a compaction brings the chain to
60 % of the budget, summaries take up to 1/32 of it. It costs more than the defaults and
remembers more without a history archive (docs/compactor.md, "Defaults and why")."""


# -- the Summarizer ---------------------------------------------------------------------------


class SummarizerConfig(BaseModel):
    """Budgets of the summarization algorithm (sizes in UTF-8 bytes).

    Defaults follow the algorithm's reference values. Sizes and counts must be positive
    and ``reserve_percent`` within 0..99; anything else (including ``True`` or ``"100"``
    for a number) is a ``ValidationError``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    preserve_last: bool = True
    """Rotate the last sections: summarize oversized and oldest pairs to fit budgets."""
    last_section_bytes: int = Field(default=51200, gt=0)
    """Budget of each of the last ``keep_qa_sections`` sections."""
    max_body_pair_bytes: int = Field(default=16384, gt=0)
    """A pair over this size (except a section's last) is summarized on its own."""
    use_qa: bool = False
    """Fold the oldest sections into one summary section when over the QA limits."""
    max_qa_sections: int = Field(default=10, gt=0)
    """QA limit on the number of sections."""
    max_qa_bytes: int = Field(default=65536, gt=0)
    """QA limit on the chain size."""
    summarize_human_in_qa: bool = False
    """Summarize the folded human messages too, instead of concatenating them."""
    keep_qa_sections: int = Field(default=1, gt=0)
    """How many newest sections keep their body pairs (all others get one pair)."""
    reserve_percent: int = Field(default=25, ge=0, le=99)
    """Share of ``last_section_bytes`` (and ``max_qa_bytes``) left free after a rotation,
    so the next turns do not trigger another one at once."""
