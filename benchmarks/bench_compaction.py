"""CPU time of one compaction (issue 36's goal: a compaction costs no more than before),
as a ratio against the former defaults measured in the same run, garbage collector on.

For each Claude Code session of the shared corpus that outgrows the budget, the chain
at the first turn whose history exceeds ``--budget`` (the first compaction a replay at
that budget makes) is compacted once by a fresh ``Compactor`` at its defaults (the
offline extractive handler, the facts step) and once by a fresh ``Compactor`` with
:data:`csum.config.LOW_COST`'s settings (the defaults before issue 36: clearing keep 10,
30 %, summaries 1/64, trigger 85 %), in turn, ``--repeat`` rounds. Each timed call is
process time (the machine is shared), after a full collection, with the handler's line
caches emptied (a compaction reads evicted content it has not read before). The table
gives, per policy, the least and the mean milliseconds per compaction over sessions and
rounds, and ours / baseline per round (least, mean).

Not measured: wall time under load, a turn within budget (``bench_clearing`` times it),
compactions after the first (their input holds a summary), model handlers (a model call
dwarfs this), token budgets, memory.

Run: python -m benchmarks.bench_compaction [--repeat 5] [--budget 131072] [--sessions 17]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

import anyio

from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, find_corpus, load_folder
from cast import Message
from csum import Budget, Compactor
from csum.config import LOW_COST
from csum.handlers._extractive.features import clear_caches
from csum.handlers._extractive.packing import _masked

Make = Callable[[int], Compactor]


def ours(limit: int) -> Compactor:
    return Compactor(budget=Budget.bytes(limit))


def former(limit: int) -> Compactor:
    return Compactor(budget=LOW_COST.budget(limit), clearing=LOW_COST.clearing)


POLICIES: dict[str, Make] = {"defaults": ours, "former defaults (LOW_COST)": former}


def first_over(messages: list[Message], limit: int) -> list[Message] | None:
    """The history up to the first message that takes it over ``limit`` bytes."""
    total = 0
    for index, message in enumerate(messages):
        total += message.size
        if total > limit:
            return messages[: index + 1]
    return None


def cpu_ms(make: Make, limit: int, chain: list[Message]) -> float:
    """Process milliseconds of one compaction of ``chain`` by a fresh keeper."""
    compactor = make(limit)
    clear_caches()
    _masked.cache_clear()
    gc.collect()
    start = time.process_time()
    result = anyio.run(compactor.run, chain)
    spent = (time.process_time() - start) * 1000
    if not result.compacted:
        raise SystemExit(f"no compaction at {limit} bytes: the benchmark's premise broke")
    return spent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--budget", type=int, default=128 * 1024)
    parser.add_argument("--sessions", type=int, default=17)
    args = parser.parse_args(argv)
    corpus = find_corpus()
    if corpus is None:
        raise SystemExit("real recorded data not found: the shared corpus (Claude Code sessions)")
    chains = [
        prefix
        for chain in load_folder(corpus, CLAUDE_CODE_FOLDER)
        if (prefix := first_over(chain.messages, args.budget)) is not None
    ][: args.sessions]
    times: dict[str, list[float]] = {name: [] for name in POLICIES}
    ratios: list[float] = []
    for _ in range(args.repeat):
        spent = dict.fromkeys(POLICIES, 0.0)
        for chain in chains:
            for name, make in POLICIES.items():
                ms = cpu_ms(make, args.budget, chain)
                times[name].append(ms)
                spent[name] += ms
        ratios.append(spent["defaults"] / spent["former defaults (LOW_COST)"])
    print(f"{len(chains)} sessions at {args.budget} bytes, {args.repeat} rounds (process time)")
    print("| policy | ms per compaction (least) | ms per compaction (mean) |")
    print("|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {min(values):.1f} | {statistics.fmean(values):.1f} |")
    print(
        f"defaults / former defaults, per round: least {min(ratios):.2f}x, "
        f"mean {statistics.fmean(ratios):.2f}x"
    )


if __name__ == "__main__":
    main()
