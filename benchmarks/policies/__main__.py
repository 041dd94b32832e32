"""Command line: ``python -m benchmarks.policies [--quick] [--no-write] ...``.

The full mode replays every workload and rewrites ``docs/benchmarks.md`` and its plots,
the fidelity section (``python -m benchmarks.fidelity``) included.
``--quick`` (for CI) runs a smaller loop and a corpus subset with no simulated latency,
prints the tables, and exits 1 when an invariant fails; it never checks timings and
writes nothing unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import anyio

from benchmarks.fidelity import markdown as fidelity_markdown
from benchmarks.fidelity import run as run_fidelity
from benchmarks.fidelity_items import DEV_PATH, FRESH_PATH, HELDOUT_PATH, load_items
from benchmarks.policies.report import render_markdown, render_tables, write_plots
from benchmarks.policies.suite import SuiteConfig, check_invariants, run_suite
from benchmarks.shared_corpus import FIDELITY, require

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "docs" / "benchmarks.md"
QUICK_STEPS = 400


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.policies",
        description="Replay agent loops under context policies; report cost, quality, validity.",
    )
    parser.add_argument("--quick", action="store_true", help="CI mode: invariants only, < 1 min")
    parser.add_argument(
        "--steps", type=int, help="AI turns of the simulated loop (2000; quick 400)"
    )
    parser.add_argument("--seed", type=int, default=7, help="first simulator seed (7)")
    parser.add_argument(
        "--seeds", type=int, help="simulated loops, seeds SEED, SEED+1, ... (3; quick 1)"
    )
    parser.add_argument(
        "--budget", type=int, default=131072, help="window of the long loops, bytes (131072)"
    )
    parser.add_argument(
        "--small-budget", type=int, default=24576, help="window of the tau-bench replays (24576)"
    )
    parser.add_argument(
        "--latency-scale",
        type=float,
        help="real seconds slept per modelled handler second (0.001; quick 0)",
    )
    parser.add_argument(
        "--out", type=Path, help=f"markdown report (default {DEFAULT_OUT.relative_to(REPO)})"
    )
    parser.add_argument("--no-write", action="store_true", help="write no markdown and no plots")
    parser.add_argument("--no-plots", action="store_true", help="write no plots")
    parser.add_argument("--no-lint", action="store_true", help="skip cast.lint (faster)")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default ../shared/corpus)")
    parser.add_argument(
        "--policies",
        help="comma-separated parts of policy names: run only those (with none and "
        "drop-oldest as baselines); e.g. 'Compactor,human summary +archive'",
    )
    parser.add_argument(
        "--simulated-only",
        action="store_true",
        help="replay only the simulated loops (skip the corpus replays)",
    )
    parser.add_argument(
        "--cache-replay",
        action="store_true",
        help="replay each workload twice through a summary cache instead (prints a table)",
    )
    parser.add_argument(
        "--reinsert",
        action="store_true",
        help="run the simulated loop with and without archive re-insertion (prints a table)",
    )
    parser.add_argument(
        "--cost",
        action="store_true",
        help="price every request with prompt caching, Compactor against the peers at "
        "64/128/256 KiB (rewrites docs/cost.md; --quick: a small run, prints only)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="with --cost: sweep the clearing settings on the tuning half of the Claude "
        "Code sessions and check the chosen one on the held-out half",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="cost and needed-later memory on the real sessions at 64/128/256 KiB, the "
        "cost-memory plane and the paired differences (rewrites docs/cost.md; --quick: "
        "the smallest sessions at 32 KiB, prints only)",
    )
    parser.add_argument(
        "--heldout",
        action="store_true",
        help="with --memory: the held-out sessions (sessions-heldout), reported once",
    )
    parser.add_argument(
        "--recall",
        action="store_true",
        help="run the simulated loop with the agent calling the recall tool (prints a table)",
    )
    return parser


def fidelity_section() -> str:
    """The fidelity benchmark's section (``benchmarks.fidelity``), appended to the report
    so that one command regenerates the whole of ``docs/benchmarks.md``."""
    require(FIDELITY)
    items = load_items(heldout=HELDOUT_PATH, dev=DEV_PATH, fresh=FRESH_PATH)
    return fidelity_markdown(run_fidelity(items), items)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when every invariant held, 1 otherwise."""
    args = _parser().parse_args(argv)
    quick: bool = args.quick
    config = SuiteConfig(
        quick=quick,
        steps=args.steps or (QUICK_STEPS if quick else 2000),
        seed=args.seed,
        seeds=args.seeds or (1 if quick else 3),
        budget=args.budget,
        small_budget=args.small_budget,
        time_scale=args.latency_scale
        if args.latency_scale is not None
        else (0.0 if quick else 0.001),
        lint=not args.no_lint,
        corpus=args.corpus,
        only=tuple(p.strip() for p in (args.policies or "").split(",") if p.strip()),
        simulated_only=args.simulated_only,
    )
    started = time.perf_counter()
    if args.cost:
        from benchmarks.policies.cost_main import run_cost_command

        return run_cost_command(
            quick=quick,
            sweep=args.sweep,
            write=not (args.no_write or quick) or args.out is not None,
            out=args.out,
            corpus=args.corpus,
            lint=not args.no_lint,
            steps=args.steps,
            seeds=args.seeds,
            seed=args.seed,
        )
    if args.memory and args.sweep:
        from benchmarks.policies.memory_bench import run_sweep_command

        return run_sweep_command(corpus=args.corpus)
    if args.memory:
        from benchmarks.policies.memory_bench import run_memory_command

        return run_memory_command(
            quick=quick,
            heldout=args.heldout,
            write=not (args.no_write or quick),
            corpus=args.corpus,
            lint=not args.no_lint,
        )
    if args.cache_replay:
        from benchmarks.policies.cache_replay import render_replay, run_cache_replay

        replay_rows = anyio.run(
            partial(run_cache_replay, config, lambda line: print(line, flush=True))
        )
        print("\n".join(render_replay(replay_rows)))
        print(f"cache replay: {time.perf_counter() - started:.1f} s")
        return 0 if all(r.second_calls == 0 and r.same_output for r in replay_rows) else 1
    if args.reinsert:
        from benchmarks.policies.reinsert_replay import render_reinsert, run_reinsert

        reinsert_rows = anyio.run(
            partial(run_reinsert, config, lambda line: print(line, flush=True))
        )
        print("\n".join(render_reinsert(reinsert_rows)))
        print(f"re-insertion run: {time.perf_counter() - started:.1f} s")
        return 0 if all(row.result.invalid == 0 for row in reinsert_rows) else 1
    if args.recall:
        from benchmarks.policies.recall_replay import render_recall, run_recall

        recall_rows = anyio.run(partial(run_recall, config, lambda line: print(line, flush=True)))
        print("\n".join(render_recall(recall_rows)))
        print(f"recall run: {time.perf_counter() - started:.1f} s")
        return 0 if all(row.result.invalid == 0 for row in recall_rows) else 1
    suite = anyio.run(partial(run_suite, config, lambda line: print(line, flush=True)))
    failures = check_invariants(suite)

    partial_run = bool(config.only) or config.simulated_only
    # A partial run never overwrites the whole report unless ``--out`` says where.
    out: Path | None = (
        None
        if args.no_write or (partial_run and not args.out)
        else (args.out or (None if quick else DEFAULT_OUT))
    )
    if out is None:
        print("\n".join(render_tables(suite)))
        for note in suite.notes:
            print(f"note: {note}")
    else:
        plots: list[str] = []
        if not args.no_plots:
            paths, why = write_plots(suite, out.parent / "img")
            if why is not None:
                suite.notes.append(why)
            plots = [p.relative_to(out.parent).as_posix() for p in paths]
        out.parent.mkdir(parents=True, exist_ok=True)
        text = render_markdown(suite, failures, plots) + "\n" + fidelity_section()
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}")
    for failure in failures:
        print(f"INVARIANT FAILED: {failure}", file=sys.stderr)
    print(f"{'quick' if quick else 'full'} run: {time.perf_counter() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
