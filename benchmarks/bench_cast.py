"""Speed and memory of cast, as ratios to baselines timed in the same run, with the
garbage collector on (as users run; ``--gc-off`` adds the figures with it paused).

Workloads:

- corpus: every chain of the shared corpus (25 tau-bench OpenAI chains, 18 Claude Code
  sessions), decoded by the codecs and repaired once, measured as one batch (each
  operation loops over all of them);
- synthetic: a chain of ~20,000 messages and ~25 MB shaped like the corpus, built from
  ``--seeds`` seeds.

Each measure runs ``--repeat`` rounds, each timing the baseline then ours, and prints
the min and mean of the per-round ratios (over all seeds for the synthetic chains) and
the fastest times.

Goals: parse <= 0.3x pydantic validation of the same chain; JSON text -> AST
(``ChainAST.from_json``, which pauses the cyclic collector inside the library while it
builds; ``json.loads`` runs as users run it, collector on) <= 3x ``json.loads``; id
normalization <= 1x pydantic validation of the same chain; memory of messages + AST
<= 1.1x the messages alone.

Not measured here: decoding provider payloads (``bench_codecs``), parsing with repair,
reading files, summarization (``bench_csum``); the corpus's Claude Code ids already fit
the normalization template, so there normalization mostly checks ids (the synthetic
chains rename every id).

Run: python -m benchmarks.bench_cast [--seeds 3] [--repeat 5] [--gc-off]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from benchmarks.chains import build_chain
from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, OPENAI_FOLDER, load_folder
from benchmarks.shared_corpus import CORPUS
from benchmarks.timing import Ratio, paired_ratio
from cast import ChainAST, Message
from cast.messages import MESSAGES_ADAPTER

TEMPLATE = "toolu_{r:24:b}"
"""The normalization target: Anthropic's id shape."""


@dataclass(frozen=True, slots=True)
class Goal:
    name: str
    limit: float


PARSE = Goal("from_messages / pydantic validate_python", 0.3)
JSON = Goal("JSON text -> ChainAST / json.loads", 3.0)
NORMALIZE = Goal(f"normalize_tool_call_ids({TEMPLATE!r}) / validate_python", 1.0)
MEMORY = Goal("memory: messages + AST / messages alone", 1.1)


@dataclass(frozen=True, slots=True)
class Workload:
    """Chains to measure together, in each form the measures start from."""

    name: str
    chains: list[list[Message]]

    def describe(self) -> str:
        messages = sum(len(chain) for chain in self.chains)
        calls = sum(len(m.tool_calls) for chain in self.chains for m in chain)
        size = sum(m.size for chain in self.chains for m in chain)
        return (
            f"{self.name}: {len(self.chains)} chain(s), {messages} messages, "
            f"{size / 1e6:.1f} MB of content, {calls} tool calls"
        )


def corpus_workload(corpus: Path) -> Workload:
    chains = [
        chain.messages
        for folder in (OPENAI_FOLDER, CLAUDE_CODE_FOLDER)
        for chain in load_folder(corpus, folder)
    ]
    return Workload("corpus", chains)


def synthetic_workloads(seeds: int, messages: int, megabytes: float) -> Iterator[Workload]:
    for seed in range(7, 7 + seeds):
        chain = build_chain(messages, int(megabytes * 1_000_000), seed=seed)
        yield Workload(f"synthetic seed {seed}", [chain])


Item = TypeVar("Item")


def loop(chains: list[Item], step: Callable[[Item], object]) -> Callable[[], None]:
    def run() -> None:
        for chain in chains:
            step(chain)

    return run


def measure(workload: Workload, repeat: int, gc_paused: bool) -> dict[Goal, Ratio]:
    """Each measure with only its own inputs alive next to the chain: a collection's
    cost grows with the heap, and a program holds one form of its chain, not four."""
    chains = list(workload.chains)
    found: dict[Goal, Ratio] = {}

    dicts = [[m.model_dump() for m in chain] for chain in workload.chains]
    validate = loop(dicts, MESSAGES_ADAPTER.validate_python)
    found[PARSE] = paired_ratio(
        repeat, loop(chains, ChainAST.from_messages), validate, gc_paused=gc_paused
    )
    asts = [ChainAST.from_messages(chain) for chain in workload.chains]
    found[NORMALIZE] = paired_ratio(
        repeat,
        loop(asts, lambda ast: ast.normalize_tool_call_ids(TEMPLATE)),
        validate,
        gc_paused=gc_paused,
    )
    del dicts, validate, asts

    texts = [MESSAGES_ADAPTER.dump_json(chain).decode() for chain in workload.chains]
    found[JSON] = paired_ratio(
        repeat,
        loop(texts, ChainAST.from_json),
        loop(texts, json.loads),
        gc_paused=gc_paused,
    )
    return {goal: found[goal] for goal in (PARSE, JSON, NORMALIZE)}


def memory_ratio(workload: Workload) -> tuple[int, int]:
    """Bytes allocated by the messages alone, and by their ASTs on top of them."""
    dicts = [[m.model_dump() for m in chain] for chain in workload.chains]
    gc.collect()
    tracemalloc.start()
    built = [MESSAGES_ADAPTER.validate_python(chain) for chain in dicts]
    messages_bytes, _ = tracemalloc.get_traced_memory()
    asts = [ChainAST.from_messages(chain) for chain in built]
    total_bytes, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del asts
    return messages_bytes, total_bytes


def print_row(label: str, goal: Goal, ratio: Ratio) -> bool:
    mark = "ok" if ratio.mean <= goal.limit else "MISS"
    print(
        f"  {label:<11} {goal.name:<54} {ratio.ours * 1e3:9.1f}ms {ratio.baseline * 1e3:9.1f}ms "
        f"{ratio.min:6.2f} {ratio.mean:6.2f} {goal.limit:5.1f}x {mark}"
    )
    return mark == "ok"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--megabytes", type=float, default=25)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--gc-off", action="store_true", help="also measure with GC paused")
    args = parser.parse_args(argv)

    modes = [("GC on", False)] + ([("GC paused", True)] if args.gc_off else [])
    results: dict[str, dict[str, dict[Goal, Ratio]]] = {mode: {} for mode, _ in modes}
    memory: dict[str, tuple[int, int]] = {}

    workloads: list[Workload] = []
    if (args.corpus / OPENAI_FOLDER).is_dir():
        workloads.append(corpus_workload(args.corpus))
    else:
        print(f"no corpus at {args.corpus}: synthetic chains only")
    # One synthetic chain in memory at a time: a larger heap would make every garbage
    # collection dearer than in a program holding one chain.
    all_workloads = itertools.chain(
        workloads, synthetic_workloads(args.seeds, args.messages, args.megabytes)
    )
    for workload in all_workloads:
        print(workload.describe(), flush=True)
        kind = "corpus" if workload.name == "corpus" else "synthetic"
        for mode, paused in modes:
            merged = results[mode].setdefault(kind, {})
            for goal, ratio in measure(workload, args.repeat, paused).items():
                merged[goal] = merged[goal] + ratio if goal in merged else ratio
        used, total = memory_ratio(workload)
        before = memory.get(kind, (0, 0))
        memory[kind] = (before[0] + used, before[1] + total)
        del workload  # free this chain before the next one is built

    print(
        f"\n  {'workload':<11} {'measure':<54} {'ours':>11} {'baseline':>11} "
        f"{'min':>6} {'mean':>6} {'goal':>6}"
    )
    met = True
    for mode, kinds in results.items():
        print(f"{mode}:")
        for kind, found in kinds.items():
            for goal, ratio in found.items():
                ok = print_row(kind, goal, ratio)
                met &= ok or mode != "GC on"
    print("memory (tracemalloc):")
    for kind, (used, total) in memory.items():
        grown = total / used
        mark = "ok" if grown <= MEMORY.limit else "MISS"
        met &= mark == "ok"
        print(
            f"  {kind:<11} {MEMORY.name:<54} {total / 1e6:9.1f}MB {used / 1e6:9.1f}MB "
            f"{grown:6.3f} {grown:6.3f} {MEMORY.limit:5.1f}x {mark}"
        )
    print("\nratios: min and mean over rounds (and seeds); times: the fastest round")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
