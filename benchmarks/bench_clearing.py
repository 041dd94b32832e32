"""Overhead of the clearing stage (issue 25), as ratios against a baseline measured in
the same run, garbage collector on.

1. A turn within budget: an agent loop of calls that compact nothing, with the
   Compactor's clearing stage on (``Clearing()``) against ``clearing=None`` (today's
   path): the median time of a call in each, rounds taken in turn. Goal: <= 1.1x.
2. A clearing pass against chain length: :func:`csum.clearing.clear_tool_results` on
   chains of 100, 1,000 and 10,000 messages, per message, next to a full parse of the
   same chain (the cost every compaction already pays), least CPU time of
   ``--repeat``. Linear: the time per message stays flat as the chain grows.

Chains: synthetic (tool results of 200-3,000 bytes) and real (the tool uses of the
Claude Code sessions in the shared corpus, tiled to the length with fresh call ids).

Run: python -m benchmarks.bench_clearing [--repeat 5] [--turns 400]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from cast import Message, Role, ToolCall, ToolResult, parse_chain
from csum import Clearing, Compactor
from csum.clearing import clear_tool_results


def _corpus() -> Path:
    """The nearest ``shared/corpus`` above the repository (a worktree sits deeper)."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "corpus"
        if candidate.is_dir():
            return candidate
    return Path("shared") / "corpus"


CORPUS = _corpus()
LENGTHS = (100, 1_000, 10_000)


def synthetic_turns(count: int, seed: int = 7) -> list[list[Message]]:
    """``count`` tool uses (an AI call, its result) with results of 200-3,000 bytes."""
    rng = random.Random(seed)
    turns = []
    for index in range(count):
        call_id = f"call_{index:06d}"
        arguments = json.dumps({"command": f"cat file_{index}.py"})
        output = "\n".join(f"line {n} of output {index}" for n in range(rng.randint(8, 120)))
        turns.append(
            [
                Message.ai(f"step {index}", ToolCall(id=call_id, name="bash", arguments=arguments)),
                Message.tool(call_id, "bash", output),
            ]
        )
    return turns


def corpus_turns(folder: Path | None = None) -> list[list[Message]]:
    """The tool uses (an AI message with one call, its result) of the Claude Code
    sessions in the corpus; [] when the corpus is missing."""
    from cast.chainio import decode_chain
    from cast.codecs import claude_code

    folder = folder or CORPUS / "anthropic_claudecode"
    turns: list[list[Message]] = []
    for path in sorted(folder.glob("claudecode_spotter_*.json")):
        if "sub_agent" in path.name:
            continue
        log = json.loads(path.read_text("utf-8"))
        body = {"system": "s", "messages": claude_code.to_api_messages(log)}
        chain = decode_chain(body, "anthropic")[0]
        for index, message in enumerate(chain[:-1]):
            follow = chain[index + 1]
            if (
                message.role is Role.AI
                and len(message.tool_calls) == 1
                and follow.role is Role.TOOL
                and len(follow.tool_results) == 1
            ):
                turns.append([message, follow])
    return turns


def tiled(turns: list[list[Message]], messages: int) -> list[Message]:
    """A chain of about ``messages`` messages: a system prompt, a question, then
    ``turns`` repeated in order, each copy with its own call id."""
    chain = [Message.system("you are an agent"), Message.human("the task")]
    index = 0
    while len(chain) < messages:
        ai, tool = turns[index % len(turns)]
        call = ai.tool_calls[0]
        result = tool.tool_results[0]
        call_id = f"c{index:07d}"
        parts = tuple(p.evolve(id=call_id) if p is call else p for p in ai.parts)
        chain.append(ai.evolve(parts=parts))
        chain.append(
            Message.from_parts(
                Role.TOOL,
                (ToolResult(tool_call_id=call_id, name=result.name, content=result.content),),
            )
        )
        index += 1
    return chain


def call_times(turns: list[list[Message]], clearing: Clearing | None, budget: int) -> list[float]:
    """Seconds of each ``compact`` call of an agent loop over ``turns`` (one call per
    turn) that never reaches ``budget``'s trigger: every call compacts nothing."""
    keeper = Compactor(budget=budget, clearing=clearing)
    times: list[float] = []

    async def loop() -> None:
        history: list[Message] = [Message.system("agent"), Message.human("task")]
        for turn in turns:
            grown = [*history, *turn]
            start = time.perf_counter()
            history = await keeper.compact(grown)
            times.append(time.perf_counter() - start)

    gc.collect()
    anyio.run(loop)
    return times


def cpu_best_of(repeat: int, func: Callable[[], object]) -> float:
    """The least CPU time (``time.process_time``) of ``repeat`` calls, collector on:
    on a shared machine, wall time also counts the other processes' turns."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        func()
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args(argv)

    sources = {"synthetic": synthetic_turns(max(LENGTHS[-1], args.turns))}
    real = corpus_turns()
    if real:
        sources["claude code"] = real
    else:
        print("(the corpus is missing: synthetic chains only)")

    print("1. a turn within budget: Clearing() against clearing=None (median us per call)")
    print("| chain | calls | clearing=None | Clearing() | ratio min | mean | max |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name, turns in sources.items():
        loop = turns[: args.turns]
        budget = 4 * sum(m.size for turn in loop for m in turn)  # never reached
        ratios, base, ours = [], [], []
        for _ in range(args.repeat):  # rounds: the baseline, then ours, close together
            base.append(statistics.median(call_times(loop, None, budget)))
            ours.append(statistics.median(call_times(loop, Clearing(), budget)))
            ratios.append(ours[-1] / base[-1])
        print(
            f"| {name} | {len(loop)} | {min(base) * 1e6:.1f} | {min(ours) * 1e6:.1f} | "
            f"{min(ratios):.2f}x | {statistics.fmean(ratios):.2f}x | {max(ratios):.2f}x |"
        )

    print()
    print("2. a clearing pass against chain length (all eligible results cleared; CPU time)")
    print("| chain | messages | pass ms | ns/message | parse ms | pass / parse |")
    print("|---|--:|--:|--:|--:|--:|")
    options = Clearing()
    for name, turns in sources.items():
        for length in LENGTHS:
            chain = tiled(turns, length)
            count = len(chain)

            def clear(chain: list[Message] = chain) -> None:
                clear_tool_results(chain, options, measure=lambda m: m.size, goal=None)

            def parse(chain: list[Message] = chain) -> None:
                parse_chain(chain)

            seconds = cpu_best_of(args.repeat, clear)
            parsing = cpu_best_of(args.repeat, parse)
            print(
                f"| {name} | {count:,} | {seconds * 1e3:.2f} | {seconds / count * 1e9:,.0f} | "
                f"{parsing * 1e3:.2f} | {seconds / parsing:.2f}x |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
