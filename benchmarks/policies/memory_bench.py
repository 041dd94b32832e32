"""Cost and needed-later memory on real sessions: the plane, the frontier, the defaults.

``python -m benchmarks.policies --memory [--quick] [--heldout] [--no-write]`` replays the
recorded Claude Code sessions of the corpus (the tuning part) at 64, 128 and 256 KiB under
every policy of the cost benchmark, drop-oldest at targets 10-60 %, the Compactor's
presets and its defaults; prices every request (:mod:`benchmarks.policies.cost`) and
measures needed-later memory (:mod:`benchmarks.policies.needed`). Per budget and
pricing style it draws the cost-memory plane (docs/img/memory_plane_*.png) with the
drop-oldest frontier, and gives the paired difference of the Compactor's defaults and
the frontier interpolated at the defaults' cost, with 95 % intervals from resampling
sessions (bootstrap over sessions, several seeds: min and mean). ``--heldout`` replays
the held-out sessions (``sessions-heldout``) instead, for the once-only report.
``--quick`` replays the smallest sessions at one budget and checks the invariants.
"""

from __future__ import annotations

import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from benchmarks.policies.baselines import DropOldest
from benchmarks.policies.corpus import (
    CLAUDE_CODE_FOLDER,
    CorpusChain,
    find_corpus,
    load_folder,
    load_heldout,
)
from benchmarks.policies.cost import ANTHROPIC, OPENAI, Pricing
from benchmarks.policies.cost_bench import (
    DROP,
    KIB,
    SUMMARIZATION,
    Measured,
    PolicySpec,
    SessionFigures,
    check_cost_invariants,
    compactor_spec,
    cost_policies,
    measure,
    write_section,
)
from benchmarks.policies.simulate import Workload

__all__ = [
    "DEFAULTS",
    "DROP_TARGETS",
    "Difference",
    "MemoryConfig",
    "defaults_spec",
    "drop_name",
    "frontier_at",
    "memory_specs",
    "paired_difference",
    "render_memory",
    "run_memory",
    "run_memory_command",
]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cost.md"
IMG = REPO / "docs" / "img"
DEFAULTS = "Compactor defaults"
DEFAULTS_FRESH = "Compactor defaults, summary as a fresh prompt"
DROP_TARGETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""The issue names 10-60 %; 70-90 % extend the frontier to the costs the Compactor
reaches at 64 KiB, where every target up to 60 % is cheaper (no extrapolation)."""
PLANE_STYLES: tuple[Pricing, ...] = (ANTHROPIC, OPENAI)
QUICK_SESSIONS = 12
QUICK_BUDGET = 32 * KIB
BOOTSTRAP_SEEDS = (1, 2, 3, 4, 5)
BOOTSTRAP_SAMPLES = 1000


def drop_name(target: float) -> str:
    """The row name of drop-oldest down to ``target`` of the budget."""
    return f"drop-oldest (to {target:.0%})"


def _defaults_options() -> dict[str, Any]:
    """What ``Compactor(budget=...)`` sets when given nothing else, read from the
    library so the row follows its defaults."""
    from csum import config

    return {
        "clearing": config.DEFAULT_CLEARING,
        "keep_ratio": config.DEFAULT_KEEP_RATIO,
        "summary_ratio": config.DEFAULT_SUMMARY_RATIO,
        "trigger": config.DEFAULT_TRIGGER,
    }


def defaults_spec(*, continuation: bool = True) -> PolicySpec:
    """The Compactor at its defaults (its own default extractive handler's size), its
    summary calls priced as continuations of the cached prefix (what the model handlers
    send, issue 36 item 3) or, with ``continuation=False``, as fresh prompts."""
    if continuation:
        return compactor_spec(DEFAULTS, continuation=True, **_defaults_options())
    return compactor_spec(DEFAULTS_FRESH, **_defaults_options())


def _preset_specs() -> list[PolicySpec]:
    """The presets' rows, read from csum.config (their one home)."""
    from csum.config import LONG_MEMORY, LOW_COST

    return [
        compactor_spec(f"Compactor preset {name}", clearing=preset.clearing, **preset.settings())
        for name, preset in (("LOW_COST", LOW_COST), ("LONG_MEMORY", LONG_MEMORY))
    ]


def memory_specs(extra: Sequence[PolicySpec] = ()) -> list[PolicySpec]:
    """Every policy of the cost run (its drop-oldest is the 60 % point), drop-oldest at
    the other targets, the presets, the defaults, then ``extra``."""
    specs = cost_policies()
    specs += [
        PolicySpec(drop_name(t), partial(_drop, target=t))
        for t in DROP_TARGETS
        if drop_name(t) != DROP
    ]
    specs += _preset_specs()
    specs += [defaults_spec(), defaults_spec(continuation=False)]
    specs.extend(extra)
    return specs


def _drop(budget: int, *, target: float) -> DropOldest:
    return DropOldest(budget, target_ratio=target)


@dataclass
class MemoryConfig:
    """What one memory run replays."""

    budgets: tuple[int, ...] = (64 * KIB, 128 * KIB, 256 * KIB)
    sessions: int | None = None
    """Only the this many smallest sessions (quick mode)."""
    heldout: bool = False
    corpus: Path | None = None
    lint: bool = True
    seeds: tuple[int, ...] = BOOTSTRAP_SEEDS
    samples: int = BOOTSTRAP_SAMPLES


def load_sessions(config: MemoryConfig) -> list[CorpusChain]:
    """The tuning sessions (the 17 Claude Code ones) or, with ``heldout``, the
    held-out ones."""
    folder = find_corpus(config.corpus)
    if folder is None:
        return []
    if config.heldout:
        return load_heldout(folder, limit=config.sessions)
    return load_folder(folder, CLAUDE_CODE_FOLDER, limit=config.sessions)


async def run_memory(
    config: MemoryConfig,
    specs: Sequence[PolicySpec],
    progress: Callable[[str], None] | None = None,
) -> list[Measured]:
    """Every policy on every session at every budget."""
    chains = load_sessions(config)
    group = "held out" if config.heldout else "claude code"
    rows: list[Measured] = []
    for budget in config.budgets:
        loads = [Workload(c.name, c.messages, budget) for c in chains]
        if not loads:
            continue
        for spec in specs:
            started = time.perf_counter()
            rows.append(await measure(spec, group, loads, lint=config.lint))
            if progress is not None:
                progress(
                    f"{group} {budget // KIB:>3} KiB {spec.name:58} "
                    f"{time.perf_counter() - started:6.1f} s"
                )
    return rows


# --- the frontier and the paired difference ------------------------------------------


def _cost(row_sessions: Sequence[SessionFigures], style: Pricing) -> float:
    return sum(s.meter.total_cost(style) for s in row_sessions)


def _memory(row_sessions: Sequence[SessionFigures]) -> float:
    needed = sum(s.memory.needed for s in row_sessions)
    return sum(s.memory.remembered for s in row_sessions) / needed if needed else 0.0


def frontier_at(points: Sequence[tuple[float, float]], cost: float) -> float | None:
    """Memory of the (cost, memory) ``points``' upper frontier at ``cost``: the points
    no cheaper point remembers more than, joined by straight lines. Below the cheapest
    point, that point's memory (forgetting more cheaply remembers no more: an upper
    bound, so a difference to it is conservative); above the dearest, None (no
    extrapolation)."""
    ordered = sorted(points)
    hull: list[tuple[float, float]] = []
    for point in ordered:
        if hull and point[1] <= hull[-1][1]:
            continue  # dominated: a cheaper point remembers as much
        hull.append(point)
    if not hull:
        return None
    if cost < hull[0][0]:
        return hull[0][1]
    if cost >= hull[-1][0]:
        return hull[-1][1] if cost <= ordered[-1][0] else None
    for (c0, m0), (c1, m1) in itertools.pairwise(hull):
        if c0 <= cost <= c1:
            return m0 + (m1 - m0) * (cost - c0) / (c1 - c0) if c1 > c0 else max(m0, m1)
    return None


@dataclass(frozen=True, slots=True)
class Difference:
    """A policy's memory minus the drop-oldest frontier's at its cost (points)."""

    policy: str
    budget: int
    style: str
    cost: float
    memory: float
    frontier: float | None
    low: tuple[float, ...]
    """Lower ends of the 95 % interval, one per bootstrap seed."""
    high: tuple[float, ...]

    @property
    def point(self) -> float | None:
        return None if self.frontier is None else 100 * (self.memory - self.frontier)

    @property
    def goal(self) -> float | None:
        """The issue's goal in points: 5, or half of what forgetting misses when less."""
        return None if self.frontier is None else min(5.0, 50 * (1 - self.frontier))


def _drop_rows(rows: Sequence[Measured], budget: int) -> list[Measured]:
    names = {drop_name(t) for t in DROP_TARGETS}
    return [r for r in rows if r.budget == budget and r.policy in names]


def paired_difference(
    rows: Sequence[Measured],
    policy: str,
    budget: int,
    style: Pricing,
    *,
    seeds: Sequence[int] = BOOTSTRAP_SEEDS,
    samples: int = BOOTSTRAP_SAMPLES,
) -> Difference | None:
    """``policy``'s memory minus the drop-oldest frontier interpolated at its cost, on all
    sessions, and its 95 % interval from resampling sessions (the same resample for
    every policy: paired) for each seed."""
    mine = next((r for r in rows if r.policy == policy and r.budget == budget), None)
    drops = _drop_rows(rows, budget)
    if mine is None or not drops:
        return None
    names = [s.name for s in mine.sessions]
    by_name = [{s.name: s for s in r.sessions} for r in drops]
    own = {s.name: s for s in mine.sessions}

    def diff(sample: Sequence[str]) -> float | None:
        cost = _cost([own[n] for n in sample], style)
        points = [
            (_cost([d[n] for n in sample], style), _memory([d[n] for n in sample])) for d in by_name
        ]
        at = frontier_at(points, cost)
        return None if at is None else 100 * (_memory([own[n] for n in sample]) - at)

    memory = _memory(mine.sessions)
    cost = _cost(mine.sessions, style)
    frontier = frontier_at([(_cost(r.sessions, style), _memory(r.sessions)) for r in drops], cost)
    lows: list[float] = []
    highs: list[float] = []
    for seed in seeds:
        rng = random.Random(seed)
        values = sorted(
            v for _ in range(samples) if (v := diff([rng.choice(names) for _ in names])) is not None
        )
        if len(values) < samples // 2:
            continue  # the frontier does not reach the policy's cost on most resamples
        lows.append(values[int(0.025 * len(values))])
        highs.append(values[min(len(values) - 1, int(0.975 * len(values)))])
    return Difference(policy, budget, style.name, cost, memory, frontier, tuple(lows), tuple(highs))


# --- rendering -----------------------------------------------------------------------


def _table(header: Sequence[str], body: Sequence[Sequence[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|",
        *("| " + " | ".join(str(c) for c in line) + " |" for line in body),
    ]


def _age(row: Measured, label: str) -> str:
    counts = row.memory.by_age.get(label)
    return f"{100 * counts[1] / counts[0]:.1f}" if counts and counts[0] else "-"


def render_rows(rows: Sequence[Measured], budget: int) -> list[str]:
    """One budget's table: memory (all, by age), cost in both styles, calls, budget."""
    body = [
        [
            r.policy,
            f"{100 * r.memory.share:.1f} %",
            " / ".join(_age(r, label) for label in ("1-5", "6-20", "21+")),
            f"{r.meter.total_cost(ANTHROPIC) / 1e6:.2f}",
            f"{r.meter.total_cost(OPENAI) / 1e6:.2f}",
            f"{r.meter.summarizer_cost(ANTHROPIC) / 1e6:.2f}",
            r.result.handler_calls,
            f"{r.result.over_budget} ({r.over_not_forced})",
            r.result.invalid,
        ]
        for r in rows
        if r.budget == budget
    ]
    return _table(
        [
            "policy",
            "memory",
            "by age 1-5 / 6-20 / 21+ turns (%)",
            "cost, Anthropic prefix",
            "cost, OpenAI gpt-5",
            "of it summarizer (Anthropic)",
            "handler calls",
            "turns over budget (not forced)",
            "invalid",
        ],
        body,
    )


def _interval(d: Difference) -> str:
    if not d.low:
        return "-"
    return (
        f"[{statistics.fmean(d.low):+.1f}, {statistics.fmean(d.high):+.1f}] "
        f"(lowest low {min(d.low):+.1f})"
    )


def render_differences(diffs: Sequence[Difference]) -> list[str]:
    """The paired differences with their intervals and the goal."""
    body = []
    for d in diffs:
        point = "-" if d.point is None else f"{d.point:+.1f}"
        frontier = "outside" if d.frontier is None else f"{100 * d.frontier:.1f} %"
        goal = d.goal
        met = (
            "-" if goal is None or d.point is None else ("met" if d.point >= goal else "**missed**")
        )
        body.append(
            [
                d.policy,
                f"{d.budget // KIB} KiB",
                d.style,
                f"{d.cost / 1e6:.2f}",
                f"{100 * d.memory:.1f} %",
                frontier,
                point,
                _interval(d),
                "-" if goal is None else f">= {goal:+.1f}",
                met,
            ]
        )
    return _table(
        [
            "policy",
            "budget",
            "pricing",
            "cost",
            "memory",
            "drop-oldest frontier at that cost",
            "difference (points)",
            "95 % interval, mean of seeds",
            "goal",
            "",
        ],
        body,
    )


def plot_plane(rows: Sequence[Measured], budget: int, folder: Path, stem: str) -> Path | None:
    """The cost-memory plane of one budget (both pricing styles) as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    mine = [r for r in rows if r.budget == budget]
    drops = sorted(_drop_rows(rows, budget), key=lambda r: r.meter.total_cost(ANTHROPIC))
    fig, axes = plt.subplots(1, len(PLANE_STYLES), figsize=(12, 5))
    for ax, style in zip(axes, PLANE_STYLES, strict=True):
        xs = [r.meter.total_cost(style) / 1e6 for r in drops]
        ys = [100 * r.memory.share for r in drops]
        ax.plot(xs, ys, "-o", color="grey", label="drop-oldest, targets 10-90 %")
        for r in drops:
            ax.annotate(r.policy[-4:-1], (r.meter.total_cost(style) / 1e6, 100 * r.memory.share),
                        fontsize=7, color="grey")  # fmt: skip
        for r in mine:
            if r in drops:
                continue
            marker = "*" if r.policy == DEFAULTS else "s" if "Compactor" in r.policy else "^"
            size = 14 if r.policy == DEFAULTS else 7
            ax.plot(
                r.meter.total_cost(style) / 1e6,
                100 * r.memory.share,
                marker,
                markersize=size,
                label=r.policy[:48],
            )
        ax.set_xlabel(f"cost, {style.name} (M base input tokens)")
        ax.set_ylabel("needed-later memory (%)")
        ax.set_title(f"{budget // KIB} KiB, {style.name}")
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}_{budget // KIB}k.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def differences(
    rows: Sequence[Measured], config: MemoryConfig, policies: Sequence[str]
) -> list[Difference]:
    out = []
    for budget in config.budgets:
        for policy in policies:
            for style in PLANE_STYLES:
                d = paired_difference(
                    rows, policy, budget, style, seeds=config.seeds, samples=config.samples
                )
                if d is not None:
                    out.append(d)
    return out


def summarization_goal(rows: Sequence[Measured], budget: int, policy: str = DEFAULTS) -> list[str]:
    """At 128 and 256 KiB: cheaper than SummarizationMiddleware (both styles) and
    remembering at least as much, with 0 turns over the budget."""
    mine = next((r for r in rows if r.policy == policy and r.budget == budget), None)
    peer = next((r for r in rows if r.policy == SUMMARIZATION and r.budget == budget), None)
    if mine is None or peer is None:
        return []
    cheaper = all(mine.meter.total_cost(s) < peer.meter.total_cost(s) for s in PLANE_STYLES)
    more = mine.memory.share >= peer.memory.share
    ok = cheaper and more and mine.result.over_budget == 0
    costs = ", ".join(
        f"{mine.meter.total_cost(s) / 1e6:.2f} vs {peer.meter.total_cost(s) / 1e6:.2f} ({s.name})"
        for s in PLANE_STYLES
    )
    return [
        f"- {budget // KIB} KiB, {policy} against {SUMMARIZATION}: cost {costs}; memory "
        f"{100 * mine.memory.share:.1f} vs {100 * peer.memory.share:.1f} %; turns over "
        f"budget {mine.result.over_budget} vs {peer.result.over_budget}: "
        + ("**met**" if ok else "**missed**")
    ]


def render_memory(
    rows: Sequence[Measured],
    config: MemoryConfig,
    plots: dict[int, Path],
    seconds: float,
    compared: Sequence[str] = (DEFAULTS,),
) -> list[str]:
    """Every budget's table, plane and paired differences, as markdown."""
    sessions = sorted({s.name for r in rows for s in r.sessions})
    first = next(iter(rows), None)
    needed = first.memory.needed if first else 0
    group = "held-out sessions" if config.heldout else "Claude Code sessions (the tuning part)"
    lines = [
        f"{len(sessions)} {group}, {needed:,} needed facts at each budget. Memory: share of "
        "the facts the agent reused at a turn that the policy sent for that turn "
        "(benchmarks/policies/needed.py); by age: AI turns since the fact was last seen. "
        "Cost: millions of base input tokens (summarizer at the main model's rate).",
        "",
    ]
    diffs = differences(rows, config, compared)
    for budget in config.budgets:
        if not any(r.budget == budget for r in rows):
            continue
        lines += [f"### {group[0].upper()}{group[1:]} at {budget // KIB} KiB", ""]
        lines += render_rows(rows, budget)
        lines.append("")
        if budget in plots:
            rel = plots[budget].relative_to(DOC.parent).as_posix()
            lines += [f"![cost-memory plane at {budget // KIB} KiB]({rel})", ""]
    lines += [
        "### Paired differences against forgetting at the same cost",
        "",
        f"Bootstrap over sessions ({config.samples} resamples per seed, seeds "
        f"{', '.join(map(str, config.seeds))}); the frontier is drop-oldest over targets "
        "10-90 %, interpolated at the policy's cost on each resample (the issue names "
        "10-60 %; at 64 KiB the Compactor's cost lies above 60 %'s).",
        "",
        *render_differences(diffs),
        "",
    ]
    for budget in config.budgets:
        if budget >= 128 * KIB:
            for policy in compared:
                lines += summarization_goal(rows, budget, policy)
    failures = check_cost_invariants(rows)
    lines += [
        "",
        f"Invariants (no invalid chain; for the policies that promise the budget: no turn "
        f"over it that could fit, the newest turn verbatim, no change without a "
        f"compaction): {len(failures)} failures. Run time {seconds:,.0f} s.",
    ]
    return lines


def run_memory_command(
    *,
    quick: bool,
    heldout: bool,
    write: bool,
    corpus: Path | None,
    lint: bool,
    extra: Sequence[PolicySpec] = (),
) -> int:
    """Run the memory benchmark; 0 when every invariant held."""
    started = time.perf_counter()
    config = MemoryConfig(
        budgets=(QUICK_BUDGET,) if quick else (64 * KIB, 128 * KIB, 256 * KIB),
        sessions=QUICK_SESSIONS if quick else None,
        heldout=heldout,
        corpus=corpus,
        lint=lint,
        seeds=BOOTSTRAP_SEEDS[:2] if quick else BOOTSTRAP_SEEDS,
        samples=200 if quick else BOOTSTRAP_SAMPLES,
    )

    def progress(line: str) -> None:
        print(line, flush=True)

    specs = memory_specs(extra)
    rows = anyio.run(partial(run_memory, config, specs, progress))
    stem = "memory_plane_heldout" if heldout else "memory_plane"
    plots: dict[int, Path] = {}
    if write:
        for budget in config.budgets:
            path = plot_plane(rows, budget, IMG, stem)
            if path is not None:
                plots[budget] = path
    lines = render_memory(rows, config, plots, time.perf_counter() - started)
    if write:
        write_section(DOC, "memory-heldout" if heldout else "memory", lines)
        print(f"wrote {DOC}")
    else:
        print("\n".join(lines))
    failures = check_cost_invariants(rows)
    for failure in failures:
        print(f"INVARIANT FAILED: {failure}", file=sys.stderr)
    print(f"memory run: {time.perf_counter() - started:.1f} s")
    return 1 if failures else 0


# --- the sweep that chooses the defaults (tuning part only) --------------------------


@dataclass(frozen=True, slots=True)
class MemorySetting:
    """One candidate of the defaults: Compactor options (clearing, shares, trigger)."""

    label: str
    options: dict[str, Any]

    def spec(self) -> PolicySpec:
        return compactor_spec(f"Compactor ({self.label})", continuation=True, **self.options)


def _setting(keep: float, summary: float, trigger: float = 0.85) -> MemorySetting:
    label = f"keep {keep:.0%}, summary 1/{round(1 / summary)}, trigger {trigger:.0%}"
    options = {"clearing": None, "keep_ratio": keep, "summary_ratio": summary, "trigger": trigger}
    return MemorySetting(label, options)


MEMORY_SETTINGS: tuple[MemorySetting, ...] = (
    _setting(0.2, 1 / 16),
    _setting(0.2, 1 / 8),
    _setting(0.1, 1 / 16, trigger=1.0),
    _setting(0.1, 1 / 12, trigger=1.0),
    _setting(0.1, 1 / 8, trigger=1.0),
    _setting(0.15, 1 / 10, trigger=1.0),
    _setting(0.2, 1 / 12, trigger=1.0),
    _setting(0.2, 1 / 8, trigger=1.0),
)
"""The candidates (issue 36 item 2: the newest part verbatim, no clearing inside it, the
rest as a summary with its facts; summaries continue the cached prefix): keep ratio,
summary share and trigger around the point where forgetting's frontier bends."""


def margin(rows: Sequence[Measured], policy: str, budgets: Sequence[int]) -> float:
    """The least, over budgets and both pricing styles, of the paired difference to the
    frontier less the issue's goal (points; -inf when outside the frontier's range)."""
    worst = float("inf")
    for budget in budgets:
        for style in PLANE_STYLES:
            d = paired_difference(rows, policy, budget, style, seeds=(), samples=0)
            if d is None or d.point is None or d.goal is None:
                return float("-inf")
            worst = min(worst, d.point - d.goal)
    return worst


def choose_setting(
    rows: Sequence[Measured], settings: Sequence[MemorySetting], budgets: Sequence[int]
) -> tuple[MemorySetting | None, list[tuple[MemorySetting, float, int]]]:
    """The rule: among the settings that keep every invariant, the one with the largest
    least margin over the goal (:func:`margin`); (its margin, its failures) for each."""
    table = []
    for setting in settings:
        name = setting.spec().name
        failures = len(check_cost_invariants([r for r in rows if r.policy == name]))
        table.append((setting, margin(rows, name, budgets), failures))
    valid = [(s, m) for s, m, f in table if f == 0]
    best = max(valid, key=lambda pair: pair[1])[0] if valid else None
    return best, table


def run_sweep_command(*, corpus: Path | None, budgets: Sequence[int] | None = None) -> int:
    """Every candidate on the tuning sessions with the drop-oldest frontier; prints the
    margins and the choice (the held-out part is never read here)."""
    config = MemoryConfig(budgets=tuple(budgets or MemoryConfig().budgets), corpus=corpus)
    config.lint = False
    drops = [s for s in memory_specs() if s.name.startswith("drop-oldest")]
    specs = [*drops, *(s.spec() for s in MEMORY_SETTINGS)]
    rows = anyio.run(partial(run_memory, config, specs, lambda line: print(line, flush=True)))
    best, table = choose_setting(rows, MEMORY_SETTINGS, config.budgets)
    for setting, value, failures in table:
        mine = [r for r in rows if r.policy == setting.spec().name]
        cells = "  ".join(
            f"{r.budget // KIB}K {100 * r.memory.share:.1f}% "
            f"A {r.meter.total_cost(ANTHROPIC) / 1e6:.2f} O {r.meter.total_cost(OPENAI) / 1e6:.2f}"
            f" calls {r.result.handler_calls}"
            for r in mine
        )
        print(f"{setting.label:40} margin {value:+.1f} failures {failures}  {cells}")
    print(f"chosen: {best.label if best else None}")
    return 0
