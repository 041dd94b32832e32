"""The benchmark suite: which policies run on which workloads, and the invariants.

Each group of workloads (tau-bench replays, Claude Code replays, the simulated loop)
is replayed under every policy; results of one group are summed per policy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from benchmarks.policies.baselines import DropOldest, FractionPartition, KeepLastSummarize
from benchmarks.policies.corpus import (
    CLAUDE_CODE_FOLDER,
    OPENAI_FOLDER,
    find_corpus,
    load_folder,
)
from benchmarks.policies.harness import RunResult, lint_available, run_policy
from benchmarks.policies.peers import (
    CompactorPolicy,
    LangChainSummarization,
    PydanticAIHistoryProcessor,
    langchain_middleware_available,
    pydantic_ai_available,
)
from benchmarks.policies.policy import (
    SUMMARY_MAX_BYTES,
    CsumPolicy,
    LangChainTrim,
    MeteredHandler,
    NoPolicy,
    Policy,
    langchain_available,
    make_handler,
)
from benchmarks.policies.simulate import Workload, simulate, turn_shape
from csum import Budget
from csum.compactor import summary_bytes
from csum.config import LONG_MEMORY, SUMMARY_ONLY

__all__ = [
    "GroupResult",
    "SuiteConfig",
    "SuiteResult",
    "build_policies",
    "build_workloads",
    "check_invariants",
    "run_suite",
    "select_policies",
]


@dataclass(frozen=True, slots=True)
class SuiteConfig:
    """What to run."""

    quick: bool = False
    steps: int = 2000
    seed: int = 7
    seeds: int = 3
    """Simulated loops to run, seeded ``seed``, ``seed + 1``...: results show min / mean."""
    budget: int = 131072
    """Window of the long loops (simulated, Claude Code), in UTF-8 bytes."""
    small_budget: int = 24576
    """Window of the tau-bench replays (8-33 KB chains with a 6 KB system prompt)."""
    time_scale: float = 0.001
    """Real sleep per modelled handler second (0 in quick mode)."""
    lint: bool = True
    corpus: Path | None = None
    only: tuple[str, ...] = ()
    """Run only the policies whose name contains one of these (case-insensitive), with
    ``none`` and drop-oldest as the baselines the tables compare against; empty: all."""
    simulated_only: bool = False
    """Replay only the simulated loops (no corpus replays)."""


@dataclass
class GroupResult:
    """One workload group: a result per policy, in policy order."""

    name: str
    description: str
    budget: int
    workloads: int
    results: list[RunResult]
    shape: dict[str, float] = field(default_factory=dict)
    """Turn-shape statistics of the group's chains (see ``simulate.turn_shape``)."""


@dataclass
class SuiteResult:
    """Everything a report needs."""

    config: SuiteConfig
    groups: list[GroupResult]
    policies: list[Policy]
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


PolicyFactory = Callable[[int], Policy]

REINSERT_BYTES = 2048
"""Bytes of archived lines the +archive policies put back per question."""
LARGE_SUMMARY_DIVISOR = 8
"""The larger-summary csum policy's handler writes up to budget / this many bytes."""

QUICK_CLAUDE_CODE = 12
"""Quick mode replays the 12 smallest Claude Code chains (the sub-agent runs, up to
190 KB); the five full sessions (420-610 KB) take most of the full mode's time."""


def build_policies(config: SuiteConfig) -> list[PolicyFactory]:
    """A factory per policy (budget -> fresh policy with its own metered handler)."""

    def metered(kind: str = "extractive", max_bytes: int = SUMMARY_MAX_BYTES) -> MeteredHandler:
        return MeteredHandler(make_handler(kind, max_bytes), time_scale=config.time_scale)

    factories: list[PolicyFactory] = [
        NoPolicy,
        DropOldest,
        lambda b: KeepLastSummarize(b, metered()),
        lambda b: FractionPartition(b, metered()),
        lambda b: FractionPartition(b, None, inline=True),
        lambda b: CsumPolicy(b, metered(), name="csum", description="SummarizerConfig defaults"),
        lambda b: CsumPolicy(
            b, metered(), use_qa=True, name="csum +qa", description="defaults, use_qa=True"
        ),
        lambda b: CsumPolicy(
            b,
            metered(),
            use_qa=True,
            summarize_human_in_qa=True,
            name="csum +qa +human summary",
            description="defaults, use_qa=True, summarize_human_in_qa=True",
        ),
        lambda b: CsumPolicy(
            b,
            metered(),
            use_qa=True,
            summarize_human_in_qa=True,
            reinsert_bytes=REINSERT_BYTES,
            name="csum +qa +human summary +archive",
            description=(
                f"as above, HistoryArchive(reinsert_bytes={REINSERT_BYTES}): re-insertion on"
            ),
        ),
        lambda b: CsumPolicy(
            b,
            metered(max_bytes=b // LARGE_SUMMARY_DIVISOR),
            use_qa=True,
            summarize_human_in_qa=True,
            reinsert_bytes=REINSERT_BYTES,
            summary_bytes=b // LARGE_SUMMARY_DIVISOR,
            name="csum +qa +human summary +archive, budget/8 summaries",
            description=(
                f"as above, the handler's summaries up to budget/{LARGE_SUMMARY_DIVISOR} "
                "bytes (16 KiB at 128 KiB), max_qa_bytes less the two summaries' growth"
            ),
        ),
        lambda b: CsumPolicy(
            b,
            metered("truncate"),
            name="csum [truncate]",
            description="defaults, handler cuts the text instead of extracting",
        ),
    ]
    if langchain_available():
        factories.append(LangChainTrim)
    # The Compactor's summary stage alone at its former defaults (SUMMARY_ONLY, what
    # CompactorPolicy pins): its default handler's summaries take ``summary_ratio``
    # (1/32) of the budget. The cost benchmark (--cost) measures the defaults.
    summary_share = SUMMARY_ONLY.summary_ratio
    factories.append(
        lambda b: CompactorPolicy(
            b,
            metered(max_bytes=summary_bytes(Budget.bytes(b), summary_share)),
            description=(
                "csum.Compactor, summary stage alone (SUMMARY_ONLY, the former defaults: "
                "trigger = budget, target 60 %, summaries up to summary_ratio = 1/32 of "
                "the budget)"
            ),
        )
    )
    factories.append(
        lambda b: CompactorPolicy(
            b,
            metered(max_bytes=summary_bytes(Budget.bytes(b), summary_share)),
            reinsert_bytes=REINSERT_BYTES,
            name="Compactor +archive",
            description=(
                f"Compactor (SUMMARY_ONLY), HistoryArchive(reinsert_bytes={REINSERT_BYTES}): "
                "re-insertion on"
            ),
        )
    )
    # The documented long-memory configuration (csum.config.LONG_MEMORY): summaries
    # up to 7/16 of the budget, folded again at every compaction (no depth limit).
    long_bytes = partial(summary_bytes, ratio=LONG_MEMORY.summary_ratio)
    factories.append(
        lambda b: CompactorPolicy(
            b,
            metered(max_bytes=long_bytes(Budget.bytes(b))),
            name="Compactor, long memory",
            description=(
                "Compactor(LONG_MEMORY preset): summaries up to summary_ratio = 7/16 of the "
                "budget, max_depth=None, summary_reserve = the summary's share"
            ),
            **LONG_MEMORY.settings(),
        )
    )
    factories.append(
        lambda b: CompactorPolicy(
            b,
            metered(max_bytes=long_bytes(Budget.bytes(b))),
            reinsert_bytes=REINSERT_BYTES,
            name="Compactor +archive, long memory",
            description=(
                f"Compactor(LONG_MEMORY preset), HistoryArchive(reinsert_bytes={REINSERT_BYTES})"
            ),
            **LONG_MEMORY.settings(),
        )
    )
    if langchain_middleware_available():
        factories.append(lambda b: LangChainSummarization(b, metered()))
    if pydantic_ai_available():
        factories.append(lambda b: PydanticAIHistoryProcessor(b, metered()))
    return factories


BASELINES = ("none", "drop-oldest")
"""Policies every run keeps, ``--policies`` or not: the report's tables compare
every other policy against them."""


def select_policies(factories: list[PolicyFactory], config: SuiteConfig) -> list[PolicyFactory]:
    """The factories of :attr:`SuiteConfig.only` (all without it), baselines first."""
    if not config.only:
        return factories
    wanted = [name.lower() for name in config.only]
    kept = []
    for factory in factories:
        name = factory(config.budget).name
        if name in BASELINES or any(w in name.lower() for w in wanted):
            kept.append(factory)
    return kept


def build_workloads(config: SuiteConfig) -> tuple[list[tuple[str, str, list[Workload]]], list[str]]:
    """Workload groups ``(name, description, workloads)`` and notes on what is missing."""
    notes: list[str] = []
    groups: list[tuple[str, str, list[Workload]]] = []
    corpus = None if config.simulated_only else find_corpus(config.corpus)
    if config.simulated_only:
        notes.append("simulated loops only (--simulated-only): replays skipped")
    elif corpus is None:
        notes.append("corpus not found beside the repository: replays skipped")
    else:
        for folder, budget, label, limit in (
            (OPENAI_FOLDER, config.small_budget, "tau-bench replays (OpenAI)", None),
            (
                CLAUDE_CODE_FOLDER,
                config.budget,
                "Claude Code replays (Anthropic)",
                QUICK_CLAUDE_CODE,
            ),
        ):
            chains = load_folder(corpus, folder, limit=limit if config.quick else None)
            loads = [Workload(c.name, c.messages, budget, group=folder) for c in chains]
            loaders = sorted({c.loader for c in chains})
            repairs = sum(c.repairs for c in chains)
            desc = (
                f"{label}: {len(chains)} chains, read by {', '.join(loaders)}; "
                f"{repairs} recording issues repaired before replay"
            )
            groups.append((folder, desc, loads))
    seeds = [config.seed + i for i in range(max(1, config.seeds))]
    loads = [simulate(config.steps, seed, config.budget) for seed in seeds]
    desc = (
        f"simulated loops: {len(loads)} x {config.steps} AI turns, seeds "
        f"{', '.join(map(str, seeds))}; "
        f"{sum(len(load.messages) for load in loads):,} messages, "
        f"{sum(m.size for load in loads for m in load.messages):,} bytes, "
        f"{sum(len(load.facts) for load in loads)} facts planted, "
        f"{sum(len(r) for load in loads for r in load.references.values())} references"
    )
    groups.append(("simulated", desc, loads))
    return groups, notes


async def run_suite(
    config: SuiteConfig, progress: Callable[[str], None] | None = None
) -> SuiteResult:
    """Run every policy on every workload group."""
    started = time.perf_counter()
    factories = select_policies(build_policies(config), config)
    workload_groups, notes = build_workloads(config)
    if not langchain_available():
        notes.append("langchain-core not installed (extra `bench`): trim_messages skipped")
    if config.lint and not lint_available():
        notes.append("lint unavailable: cast.lint is missing, lint columns are empty")
    groups: list[GroupResult] = []
    policies = [factory(config.budget) for factory in factories]  # names and promises
    for name, description, loads in workload_groups:
        budget = loads[0].budget
        results: list[RunResult] = []
        for factory in factories:
            policy = factory(budget)
            total: RunResult | None = None
            for load in loads:
                one = await run_policy(policy, load, lint=config.lint)
                if total is None:
                    total = one
                    total.workload = name
                else:
                    total.merge(one)
            assert total is not None
            results.append(total)
            if progress is not None:
                progress(f"{name:22} {policy.name:40} {total.seconds:7.2f} s")
        shape = turn_shape([load.messages for load in loads])
        groups.append(GroupResult(name, description, budget, len(loads), results, shape))
    return SuiteResult(config, groups, policies, notes, time.perf_counter() - started)


def check_invariants(suite: SuiteResult) -> list[str]:
    """What the policies promise by design and did not keep (empty: all held).

    Validity and the newest pair for the policies that guarantee them; no turn over
    budget for the bounded csum policies, on turns whose newest pair and header can
    fit at all. Timings are never checked.
    """
    failures: list[str] = []
    for group in suite.groups:
        for policy, result in zip(suite.policies, group.results, strict=True):
            where = f"{group.name} / {policy.name}"
            if policy.guarantees_valid and result.invalid:
                failures.append(
                    f"{where}: {result.invalid} invalid outputs ({result.first_invalid})"
                )
            if policy.keeps_last_pair and result.last_pair_lost:
                failures.append(f"{where}: newest pair lost on {result.last_pair_lost} turns")
            over = result.over_budget - result.over_budget_forced
            if policy.stays_in_budget and over:
                failures.append(f"{where}: {over} turns over budget")
    return failures
