"""The Compactor's goals, measured against its peers over several seeds.

``python -m benchmarks.policies.compactor_goals [--seeds 7 8 9] [--steps 2000]`` replays
the simulated loop (one per seed) and both recorded corpora under the Compactor, its
framework peers (LangChain's ``SummarizationMiddleware``, pydantic-ai's documented
history processor) and the reference points of the goals (the seed-004 baseline,
``csum`` and ``csum +qa +human summary``), all with the same offline extractive
handler. It prints each goal per seed with min and mean, the Compactor's overhead per
turn against chain length, and (unless ``--no-write``) rewrites the results section of
docs/compactor.md and its plot docs/img/compactor_peers.png.

What it does not measure: a real LLM's latency and summary quality (handler seconds are
modelled, see ``LatencyModel``), token-exact budgets (budgets are bytes here), and
timings under contention (overheads are wall-clock on a shared machine: read ratios,
not absolute values).
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio

from benchmarks.policies.baselines import FractionPartition
from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, OPENAI_FOLDER, find_corpus, load_folder
from benchmarks.policies.harness import RunResult, run_policy
from benchmarks.policies.peers import (
    CompactorPolicy,
    LangChainSummarization,
    PydanticAIHistoryProcessor,
    langchain_middleware_available,
    pydantic_ai_available,
)
from benchmarks.policies.policy import CsumPolicy, MeteredHandler, Policy, make_handler
from benchmarks.policies.simulate import Workload, simulate
from cast import Message, Role
from csum import Compactor

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "compactor.md"
PLOT = REPO / "docs" / "img" / "compactor_peers.png"
START, END = "<!-- compactor-goals:start -->", "<!-- compactor-goals:end -->"

COMPACTOR = "Compactor"
FEWEST_CALLS = "Compactor (target 30 %)"
SEED_004 = "fraction-0.85 keep-6 LLM (seed 004)"
CSUM = "csum"
CSUM_BOUNDED = "csum +qa +human summary"
LANGCHAIN = "SummarizationMiddleware (langchain)"
PYDANTIC_AI = "history processor (pydantic-ai)"
COMPACTORS = (COMPACTOR, FEWEST_CALLS)


def _metered() -> MeteredHandler:
    return MeteredHandler(make_handler("extractive"), time_scale=0.0)


def policies() -> list[tuple[str, Callable[[int], Policy]]]:
    """(name, budget -> fresh policy), in report order."""
    out: list[tuple[str, Callable[[int], Policy]]] = [
        (COMPACTOR, lambda b: CompactorPolicy(b, _metered())),
        (
            FEWEST_CALLS,
            lambda b: CompactorPolicy(
                b, _metered(), keep_ratio=0.3, name=FEWEST_CALLS, description="target 30 %"
            ),
        ),
        (SEED_004, lambda b: FractionPartition(b, _metered())),
        (CSUM, lambda b: CsumPolicy(b, _metered(), name=CSUM)),
        (
            CSUM_BOUNDED,
            lambda b: CsumPolicy(
                b, _metered(), use_qa=True, summarize_human_in_qa=True, name=CSUM_BOUNDED
            ),
        ),
    ]
    if langchain_middleware_available():
        out.append((LANGCHAIN, lambda b: LangChainSummarization(b, _metered())))
    if pydantic_ai_available():
        out.append((PYDANTIC_AI, lambda b: PydanticAIHistoryProcessor(b, _metered())))
    return out


@dataclass
class Run:
    result: RunResult
    calls_per_turn: list[int]


async def _run(policy: Policy, load: Workload) -> Run:
    calls: list[int] = []
    original = policy.apply

    async def counted(messages: Sequence[Message]) -> tuple[list[Message], object]:
        out, step = await original(messages)
        calls.append(step.handler_calls)
        return out, step

    policy.apply = counted  # type: ignore[method-assign,assignment]
    result = await run_policy(policy, load, lint=False)
    return Run(result, calls)


def _over(result: RunResult) -> int:
    return result.over_budget - result.over_budget_forced


def _facts(result: RunResult) -> float:
    return 100 * result.references_found / result.references if result.references else 0.0


def _cost_mb(result: RunResult) -> float:
    return (result.sent_bytes + result.handler_input_bytes) / 1e6


async def _timed_loop(
    load: Workload, compactor: Compactor, handler: MeteredHandler
) -> dict[int, list[float]]:
    """Seconds per ``compact`` call outside the handler, by chain length (power of 2)."""
    samples: dict[int, list[float]] = {}
    history: list[Message] = []
    for message in load.messages:
        if message.role is not Role.AI or not history:
            history.append(message)
            continue
        handler.reset()
        started = time.perf_counter()
        out = await compactor.compact(history)
        elapsed = time.perf_counter() - started - handler.busy_s
        bucket = 1 << max(0, len(history).bit_length() - 1)
        samples.setdefault(bucket, []).append(elapsed)
        history = [*out, message]
    return samples


def overhead_profile(steps: int, seed: int, budget: int) -> list[tuple[str, float, float, int]]:
    """The Compactor's time per call outside the handler, by chain length (messages):
    (bin, median µs, p90 µs, calls) on the simulated loop, then on a loop with a budget
    it never reaches (the chain grows without bound)."""
    rows: list[tuple[str, float, float, int]] = []
    for label, limit in (("bounded", budget), ("unbounded", 10**12)):
        handler = _metered()
        gc.collect()
        samples = anyio.run(
            _timed_loop, simulate(steps, seed, budget), Compactor(handler, budget=limit), handler
        )
        for bucket in sorted(samples):
            values = sorted(samples[bucket])
            p90 = values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]
            rows.append(
                (
                    f"{label} {bucket}-{2 * bucket - 1}",
                    1e6 * statistics.median(values),
                    1e6 * p90,
                    len(values),
                )
            )
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    align = ["---" if i == 0 else "--:" for i in range(len(header))]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(align) + "|",
        *("| " + " | ".join(str(c) for c in row) + " |" for row in rows),
    ]


def _minmean(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    return f"{fmt.format(min(values))} / {fmt.format(statistics.fmean(values))}"


def render(
    seeds: Sequence[int],
    steps: int,
    budget: int,
    sims: dict[str, list[Run]],
    replays: dict[str, dict[str, RunResult]],
    overhead: list[tuple[str, float, float, int]],
    seconds: float,
    plot: str | None,
) -> list[str]:
    names = list(sims)
    lines = [
        f"Generated by `python -m benchmarks.policies.compactor_goals` (seeds "
        f"{', '.join(map(str, seeds))}, {steps} AI turns each, budget {budget:,} bytes, "
        f"{seconds:.0f} s on Python {sys.version.split()[0]}); do not edit by hand. Every "
        "policy summarizes with the offline `extractive(4096)` handler; handler seconds "
        "are modelled (0.6 s + prompt tokens / 4000 + summary tokens / 60).",
        "",
        "### Simulated loop, per policy (min / mean over seeds)",
        "",
    ]
    rows = []
    for name in names:
        runs = [r.result for r in sims[name]]
        rows.append(
            [
                name,
                _minmean([_over(r) for r in runs]),
                _minmean([r.handler_calls for r in runs]),
                _minmean([r.modelled_s for r in runs]),
                _minmean([_cost_mb(r) for r in runs], "{:.1f}"),
                _minmean([r.peak_bytes / 1024 for r in runs]),
                _minmean([_facts(r) for r in runs], "{:.0f} %"),
                sum(r.invalid for r in runs),
                sum(r.last_pair_lost for r in runs),
            ]
        )
    lines += _table(
        [
            "policy",
            "over budget (not forced)",
            "handler calls",
            "modelled handler s",
            "sent + handler in MB",
            "peak KiB",
            "facts present when asked",
            "invalid outputs (all seeds)",
            "newest pair lost (all seeds)",
        ],
        rows,
    )
    lines += ["", "### Goals (the Compactor with its defaults, and tuned)", ""]
    goal_rows = []
    for name in (n for n in COMPACTORS if n in sims):
        sim_runs = sims[name]
        for goal, mine, ref, better in (
            ("0 turns over budget (not forced)", [_over(r.result) for r in sim_runs], None, "le0"),
            (
                "handler calls <= seed 004",
                [r.result.handler_calls for r in sim_runs],
                [r.result.handler_calls for r in sims[SEED_004]],
                "le",
            ),
            (
                "modelled handler s <= seed 004",
                [r.result.modelled_s for r in sim_runs],
                [r.result.modelled_s for r in sims[SEED_004]],
                "le",
            ),
            (
                "sent + handler in <= csum +qa +human summary",
                [_cost_mb(r.result) for r in sim_runs],
                [_cost_mb(r.result) for r in sims[CSUM_BOUNDED]],
                "le",
            ),
            (
                "facts present when asked >= best csum",
                [_facts(r.result) for r in sim_runs],
                [
                    max(_facts(a.result), _facts(b.result))
                    for a, b in zip(sims[CSUM], sims[CSUM_BOUNDED], strict=True)
                ],
                "ge",
            ),
            (
                "0 invalid outputs, newest pair never lost",
                [r.result.invalid + r.result.last_pair_lost for r in sim_runs],
                None,
                "le0",
            ),
        ):
            if better == "le0":
                met = all(v == 0 for v in mine)
                ratio = "-"
                reference = "0"
            else:
                assert ref is not None
                pairs = list(zip(mine, ref, strict=True))
                met = (
                    all(a <= b for a, b in pairs)
                    if better == "le"
                    else all(a >= b for a, b in pairs)
                )
                ratios = [a / b if b else float("inf") for a, b in pairs]
                ratio = _minmean(ratios, "{:.2f}")
                reference = _minmean(ref, "{:,.1f}")
            goal_rows.append(
                [
                    name,
                    goal,
                    _minmean(mine, "{:,.1f}"),
                    reference,
                    ratio,
                    "met" if met else "**missed**",
                ]
            )
    lines += _table(
        [
            "policy",
            "goal",
            "measured (min / mean)",
            "reference (min / mean)",
            "ratio (min / mean)",
            "",
        ],
        goal_rows,
    )
    lines += ["", "### Recorded corpora (one replay each)", ""]
    replay_rows = []
    for group, results in replays.items():
        for name, r in results.items():
            replay_rows.append(
                [
                    group,
                    name,
                    f"{r.budget:,}",
                    f"{_over(r)} ({r.over_budget_forced})",
                    r.handler_calls,
                    f"{r.modelled_s:,.0f}",
                    f"{_cost_mb(r):.1f}",
                    f"{r.peak_bytes / 1024:,.0f}",
                    r.invalid,
                    r.last_pair_lost,
                ]
            )
    lines += _table(
        [
            "corpus",
            "policy",
            "budget B",
            "over budget (forced)",
            "handler calls",
            "modelled handler s",
            "sent + handler in MB",
            "peak KiB",
            "invalid",
            "newest pair lost",
        ],
        replay_rows,
    )
    lines += [
        "",
        "### Overhead per call against chain length",
        "",
        "Time inside `Compactor.compact` outside the handler, by the number of messages "
        "it was given (seed "
        f"{seeds[0]}): *bounded* is the loop at the budget above, *unbounded* the same loop "
        "with a budget it never reaches, so the chain grows to thousands of messages. A "
        "call that compacts nothing checks only the messages added since the last call, "
        "so the median stays flat; the p90 holds the calls that compacted (they parse "
        "the whole chain).",
        "",
    ]
    lines += _table(
        ["run, messages given", "median µs", "p90 µs", "calls"],
        [[label, f"{median:,.0f}", f"{p90:,.0f}", count] for label, median, p90, count in overhead],
    )
    if plot:
        lines += ["", f"![chain size and handler calls per turn]({plot})"]
    return lines


def write_plot(sims: dict[str, list[Run]], budget: int, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for name, runs in sims.items():
        if name in (CSUM,):
            continue
        run = runs[0]
        top.plot([s / 1024 for s in run.result.sizes], label=name, linewidth=0.8)
        total, cumulative = 0, []
        for calls in run.calls_per_turn:
            total += calls
            cumulative.append(total)
        bottom.plot(cumulative, label=name, linewidth=1.0)
    top.axhline(budget / 1024, color="black", linestyle="--", linewidth=0.8, label="budget")
    top.set_ylabel("chain sent (KiB)")
    bottom.set_ylabel("handler calls (cumulative)")
    bottom.set_xlabel("AI turn (simulated loop, first seed)")
    top.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.relative_to(DOC.parent).as_posix()


async def measure(
    seeds: Sequence[int], steps: int, budget: int, small_budget: int, corpus: Path | None
) -> tuple[dict[str, list[Run]], dict[str, dict[str, RunResult]]]:
    sims: dict[str, list[Run]] = {}
    for seed in seeds:
        load = simulate(steps, seed, budget)
        for name, make in policies():
            gc.collect()
            run = await _run(make(budget), load)
            sims.setdefault(name, []).append(run)
            print(f"seed {seed} {name:40} {run.result.seconds:6.1f} s", flush=True)
    replays: dict[str, dict[str, RunResult]] = {}
    folder = find_corpus(corpus)
    if folder is not None:
        for group, limit in ((OPENAI_FOLDER, small_budget), (CLAUDE_CODE_FOLDER, budget)):
            chains = load_folder(folder, group)
            for name, make in policies():
                if name == CSUM:
                    continue
                total: RunResult | None = None
                for chain in chains:
                    one = (
                        await _run(make(limit), Workload(chain.name, chain.messages, limit))
                    ).result
                    if total is None:
                        total = one
                    else:
                        total.merge(one)
                assert total is not None
                replays.setdefault(group, {})[name] = total
                print(f"{group} {name:40} {total.seconds:6.1f} s", flush=True)
    return sims, replays


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.policies.compactor_goals")
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 8, 9])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--budget", type=int, default=131072)
    parser.add_argument("--small-budget", type=int, default=24576)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sims, replays = anyio.run(
        partial(measure, args.seeds, args.steps, args.budget, args.small_budget, args.corpus)
    )
    overhead = overhead_profile(args.steps, args.seeds[0], args.budget)
    plot = None if args.no_write else write_plot(sims, args.budget, PLOT)
    lines = render(
        args.seeds,
        args.steps,
        args.budget,
        sims,
        replays,
        overhead,
        time.perf_counter() - started,
        plot,
    )
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        doc = DOC.read_text(encoding="utf-8")
        head, _, rest = doc.partition(START)
        _, _, tail = rest.partition(END)
        DOC.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")
        print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
