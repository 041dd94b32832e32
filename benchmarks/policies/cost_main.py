"""``python -m benchmarks.policies --cost [--sweep] [--quick]``: run, check, write.

The full run replays every policy of :func:`benchmarks.policies.cost_bench.cost_policies`
(and, when this tree's Compactor has the clearing stage, the Compactor with clearing at
its defaults and at the settings below) and rewrites the generated sections of
docs/cost.md; ``--sweep`` adds the sweep on the tuning half and the held-out check.
``--quick`` replays the smallest sessions at 32 KiB and a short simulated loop at
32 KiB, prints the tables and exits 1 when an invariant fails.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from benchmarks.policies.cost import STYLES
from benchmarks.policies.cost_bench import (
    BEFORE,
    KIB,
    MEMORY_GOAL,
    REFERENCES,
    CostConfig,
    Measured,
    PolicySpec,
    Setting,
    check_cost_invariants,
    clearing_available,
    cost_policies,
    cost_ratio,
    memory_floor,
    render_cost,
    render_sweep,
    run_cost,
    run_sweep,
    write_section,
)

__all__ = ["AFTER", "SETTINGS", "render_goals", "run_cost_command"]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cost.md"
QUICK_SESSIONS = 6
AFTER = "Compactor + clearing (Clearing(keep=3))"


def _low(label: str, keep: int = 3, **compactor: float) -> Setting:
    """A setting around LOW_COST: ``Clearing(keep=keep)``, summaries of 1/64 of the
    budget, a 10 % keep ratio unless ``compactor`` says otherwise."""
    return Setting(label, {"keep": keep}, {"keep_ratio": 0.1, "summary_ratio": 1 / 64, **compactor})


SETTINGS: tuple[Setting, ...] = (
    _low("keep 3, target 10 %, summary 1/64"),
    _low("keep 3, target 10 %, summary 1/32", summary_ratio=1 / 32),
    _low("keep 3, target 20 %, summary 1/64", keep_ratio=0.2),
    _low("keep 10, target 30 %, summary 1/64", keep=10, keep_ratio=0.3),
    _low("keep 3, target 10 %, summary 1/64, trigger 85 %", trigger=0.85),
    _low("keep 3, target 10 %, summary 1/64, trigger 80 %", trigger=0.8),
    _low("keep 3, target 10 %, summary 1/64, trigger 70 %", trigger=0.7),
    _low("keep 10, target 30 %, summary 1/64, trigger 85 %", keep=10, keep_ratio=0.3, trigger=0.85),
)
"""The sweep (chosen after the shorter prompt framing, on the tuning half only): around
the previous LOW_COST (keep 3, target 10 %, summaries of 1/64), the summary size, the
target, ``keep`` 10 at 30 % (the setting that remembered most in the sweep before), and
the Compactor's trigger below the budget (the references compact earlier than at the
budget: SummarizationMiddleware counts its own tokens and keeps 20 messages)."""


ISSUE_HANDLER_INPUT: dict[int, int] = {
    64 * KIB: 3_760_000,
    128 * KIB: 3_040_000,
    256 * KIB: 2_220_000,
}
"""The Compactor's handler input before clearing (bytes, all 17 sessions) as the last
run before the shorter prompt framing measured it (docs/cost.md of 2026-11-26): the
"today" of the goal. The framing and the cut question context shrink this run's
"before" row too, so the goal is read against these fixed figures (both are shown)."""


def low_cost_label(clearing_keep: int, options: dict[str, Any]) -> str:
    """The row name of the preset ``csum.config.LOW_COST`` (run by every full cost
    run), made from its values: ``LOW_COST: keep 3, target 10 %, summary 1/64``."""
    words = [f"LOW_COST: keep {clearing_keep}"]
    if "keep_ratio" in options:
        words.append(f"target {100 * options['keep_ratio']:g} %")
    if "summary_ratio" in options:
        words.append(f"summary 1/{round(1 / options['summary_ratio'])}")
    if options.get("trigger") is not None:
        words.append(f"trigger {100 * options['trigger']:g} %")
    return ", ".join(words)


def low_cost_setting() -> Setting | None:
    """``csum.config.LOW_COST`` as a setting (None when it clears nothing)."""
    from csum.config import LOW_COST

    options = LOW_COST.settings()
    clearing = LOW_COST.clearing
    if clearing is None:
        return None
    fields = {"keep": clearing.keep, "clear_tool_inputs": clearing.clear_tool_inputs}
    return Setting(low_cost_label(clearing.keep, options), fields, options)


def after_specs(extra: Sequence[Setting] = ()) -> list[PolicySpec]:
    """The Compactor with clearing keeping the newest 3 tool uses (``Clearing()`` before
    the one clearing default became 10: the row the earlier runs measured), the LOW_COST
    preset (and ``extra`` settings)."""
    if not clearing_available():
        return []
    low = low_cost_setting()
    presets = (
        [low] if low is not None and all(s.spec().name != low.spec().name for s in extra) else []
    )
    after = Setting("Clearing(keep=3)", {"keep": 3})
    return [after.spec(), *(s.spec() for s in (*presets, *extra))]


def _by(rows: Sequence[Measured], policy: str, group: str, budget: int) -> Measured | None:
    return next(
        (r for r in rows if r.policy == policy and r.group == group and r.budget == budget), None
    )


def render_goals(rows: Sequence[Measured], config: CostConfig, policy: str = AFTER) -> list[str]:
    """The issue's goals for ``policy`` against the Compactor before clearing."""
    body: list[list[object]] = []

    def goal(name: str, measured: str, target: str, met: bool) -> None:
        body.append([name, measured, target, "met" if met else "**missed**"])

    for budget in config.budgets:
        mine, before = (_by(rows, p, "claude code", budget) for p in (policy, BEFORE))
        if mine is None or before is None:
            continue
        where = f"{budget // KIB} KiB"
        ratios = [cost_ratio(rows, mine, s, cheap=c) for s in STYLES for c in (False, True)]
        goal(
            f"{where}: cost <= 0.95x the cheaper reference (every style, both summarizer rates)",
            f"{min(ratios):.2f}-{max(ratios):.2f}x",
            "<= 0.95x",
            max(ratios) <= 0.95,
        )
        h, h0 = mine.result.handler_input_bytes, before.result.handler_input_bytes
        today = ISSUE_HANDLER_INPUT.get(budget) if not config.quick else None
        base = today if today is not None else h0
        goal(
            f"{where}: handler input <= 0.3x before",
            f"{h / 1e6:.2f} MB ({h / base if base else 0:.2f}x of {base / 1e6:.2f}"
            + (
                f"; {h / h0 if h0 else 0:.2f}x of this run's before, {h0 / 1e6:.2f}"
                if today
                else ""
            )
            + ")",
            "<= 0.3x",
            h <= 0.3 * base,
        )
        c, c0 = mine.result.handler_calls, before.result.handler_calls
        goal(f"{where}: handler calls <= before", f"{c} (before {c0})", "<= before", c <= c0)
    everything = [r for r in rows if r.policy == policy]
    failures = check_cost_invariants(everything)
    goal(
        "0 over budget that could fit, 0 invalid, newest turn verbatim, no turn without a "
        "compaction that changes the previous payload (all runs)",
        f"{len(failures)} failures",
        "0",
        not failures,
    )
    lint_new = sum(sum(r.result.lint_new.values()) for r in everything)
    goal("0 new lint violations (anthropic, openai)", str(lint_new), "0", lint_new == 0)
    sim, sim0 = (_by(rows, p, "simulated", config.sim_budget) for p in (policy, BEFORE))
    if sim is not None and sim0 is not None and sim.facts and sim0.facts:
        peers = [r for r in rows if r.group == "simulated" and r.policy in REFERENCES and r.facts]
        named = ", ".join(f"{r.policy} {100 * min(r.facts):.1f} %" for r in peers)
        floor = memory_floor(rows)
        goal(
            f"facts present when asked, no archive (min over seeds) >= "
            f"{100 * MEMORY_GOAL:.0f} % and above every peer ({named}; the Compactor "
            f"before clearing {100 * min(sim0.facts):.1f} %)",
            f"{100 * min(sim.facts):.1f} %",
            f">= {100 * floor:.1f} %",
            min(sim.facts) >= floor,
        )
        if sim.facts_recall:
            before_recall = (
                f" (before {100 * min(sim0.facts_recall):.1f} %)" if sim0.facts_recall else ""
            )
            goal(
                "facts present when asked, archive + recall (min over seeds) >= 80 %",
                f"{100 * min(sim.facts_recall):.1f} %{before_recall}",
                ">= 80 %",
                min(sim.facts_recall) >= 0.8,
            )
    header = ["goal", "measured", "target", ""]
    return [
        "| " + " | ".join(header) + " |",
        "|---|--:|--:|--:|",
        *("| " + " | ".join(str(c) for c in line) + " |" for line in body),
    ]


def run_cost_command(
    *,
    quick: bool,
    sweep: bool,
    write: bool,
    out: Path | None,
    corpus: Path | None,
    lint: bool,
    steps: int | None,
    seeds: int | None,
    seed: int,
) -> int:
    """Run the cost benchmark (and the sweep); 0 when every invariant held."""
    started = time.perf_counter()
    config = CostConfig(
        quick=quick,
        budgets=(32 * KIB,) if quick else (64 * KIB, 128 * KIB, 256 * KIB),
        steps=steps or (400 if quick else 2000),
        seeds=tuple(range(seed, seed + (seeds or (1 if quick else 3)))),
        sim_budget=32 * KIB if quick else 128 * KIB,
        sessions=QUICK_SESSIONS if quick else None,
        corpus=corpus,
        lint=lint,
    )

    def progress(line: str) -> None:
        print(line, flush=True)

    sweep_lines: list[str] = []
    extra: list[Setting] = []
    if sweep and clearing_available():
        result = anyio.run(partial(run_sweep, config, SETTINGS, progress))
        sweep_lines = render_sweep(result, config)
        if result.chosen is not None:
            extra.append(result.chosen)
    specs = cost_policies(after_specs(extra))
    rows = anyio.run(partial(run_cost, config, specs, progress))
    seconds = time.perf_counter() - started
    lines = render_cost(rows, config, seconds)
    low = low_cost_setting()
    recommended = extra[0].spec().name if extra else low.spec().name if low else AFTER
    goals = render_goals(rows, config, recommended) if clearing_available() else []
    if goals:
        goals = [f"Measured for **{recommended}**.", "", *goals]
    failures = check_cost_invariants(rows)
    target = out or DOC
    if write:
        write_section(target, "cost", lines)
        if goals:
            write_section(target, "cost-goals", goals)
        if sweep_lines:
            write_section(target, "cost-sweep", sweep_lines)
        print(f"wrote {target}")
    else:
        print("\n".join([*lines, "", *goals, "", *sweep_lines]))
    for failure in failures:
        print(f"INVARIANT FAILED: {failure}", file=sys.stderr)
    print(f"cost run: {seconds:.1f} s")
    return 1 if failures else 0
