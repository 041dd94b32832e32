"""Speed of csum, as ratios measured in one run (best of N; machines are noisy).

1. Concurrency: 50 sections to summarize with a handler that sleeps 100 ms, unbounded
   concurrency: wall time against one handler call (goal <= 1.2x).
2. Overhead: summarize_chain with an instant handler against json.dumps of the same
   chain (goal <= 1x), on the ~25 MB chain of bench_cast and on 200 sections of 30 tool
   uses each; paired rounds (json.dumps then ours) after one warm-up call, in several
   fresh interpreters with shifted type layouts (benchmarks.timing.shift_layout), ratios
   min and mean over every round. Not measured: a first call's imports and caches.
3. Bounded cost: handler input bytes per step of a 200-step simulated agent loop with
   the default config, next to the chain size.

Run: python -m benchmarks.bench_csum [--repeat 3] [--steps 200] [--layouts 5]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

import anyio

from benchmarks.chains import build_chain
from benchmarks.timing import Ratio, paired_ratio, ratio_in_layouts
from cast import Message, ToolCall
from cast.messages import MESSAGES_ADAPTER
from csum import Summarizer

HANDLER_SECONDS = 0.1


async def sleeping_handler(prompt: str) -> str:
    await anyio.sleep(HANDLER_SECONDS)
    return f"summary of {len(prompt)} characters"


async def instant_handler(prompt: str) -> str:
    return f"summary of {len(prompt)} characters"


def sections_chain(sections: int) -> list[Message]:
    """``sections`` small question/answer sections (each will need a summary)."""
    chain = [Message.system("agent")]
    for index in range(sections):
        chain.append(Message.human(f"question {index}"))
        chain.append(Message.ai(f"answer {index}"))
    return chain


def sections_of_pairs(sections: int = 200, pairs: int = 30) -> list[Message]:
    """``sections`` questions, each followed by ``pairs`` tool uses (a call and a ~1 KB
    result)."""
    chain = [Message.system("You are an agent. " * 20)]
    for section in range(sections):
        chain.append(Message.human(f"question {section}: " + "details " * 20))
        for pair in range(pairs):
            call_id = f"call_{section}_{pair}"
            call = ToolCall(id=call_id, name="bash", arguments='{"c": "ls -la /tmp"}')
            chain.append(Message.ai(f"step {pair}", call))
            chain.append(Message.tool(call_id, "bash", f"output line {pair} of {section}\n" * 40))
    return chain


CHAINS: dict[str, Callable[[], list[Message]]] = {
    "large": build_chain,
    "sections": sections_of_pairs,
}
"""The chains of the overhead measure, by name (each built in the interpreter measuring)."""


def overhead_ratio(name: str, repeat: int) -> Ratio:
    """summarize_chain with an instant handler against json.dumps of chain ``name``."""
    chain = CHAINS[name]()
    payload = MESSAGES_ADAPTER.dump_python(chain, mode="json")
    summarizer = Summarizer()
    anyio.run(summarizer.summarize_chain, instant_handler, chain)  # imports, caches
    return paired_ratio(
        repeat,
        lambda: anyio.run(summarizer.summarize_chain, instant_handler, chain),
        lambda: json.dumps(payload),
    )


def overhead(name: str, repeat: int, layouts: int) -> str:
    """:func:`overhead_ratio` in ``layouts`` fresh interpreters, one layout seed each
    (see ``benchmarks.timing.shift_layout``: one layout alone can be 10 % off)."""
    chain = CHAINS[name]()
    described = f"{len(chain)} messages ({sum(m.size for m in chain) / 1e6:.1f} MB)"
    del chain
    expression = (
        f"from benchmarks.bench_csum import overhead_ratio\n"
        f"RATIO = overhead_ratio({name!r}, {repeat})"
    )
    ratio, means = ratio_in_layouts(expression, layouts)
    return (
        f"summarize_chain on {described} with an instant handler: {ratio.ours * 1e3:.0f} ms; "
        f"json.dumps: {ratio.baseline * 1e3:.0f} ms (fastest); ratio min {ratio.min:.2f}x, "
        f"mean {ratio.mean:.2f}x over {repeat} rounds in each of {layouts} layouts (layout "
        f"means {min(means):.2f}-{max(means):.2f}x; goal <= 1x)"
    )


def agent_loop_costs(steps: int, seed: int = 3) -> list[tuple[int, int, int]]:
    """(step, chain bytes sent, handler input bytes) for each step of a simulated loop
    that summarizes with the default config before every model call."""
    rng = random.Random(seed)
    summarizer = Summarizer()
    chain: list[Message] = [Message.system("You are an agent. " * 50), Message.human("task 0")]
    rows = []
    for step in range(steps):
        if rng.random() < 0.08:
            chain.append(Message.human(f"next task {step}: " + "details " * rng.randint(5, 50)))
        call_id = f"call_{step}"
        chain.append(Message.ai("", ToolCall(id=call_id, name="bash", arguments='{"c": "ls"}')))
        size = int(rng.expovariate(1 / 3000)) + (40_000 if rng.random() < 0.03 else 0)
        chain.append(Message.tool(call_id, "bash", "x" * size))
        result = anyio.run(summarizer.summarize, instant_handler, chain)
        chain = result.messages
        sent = sum(m.size for m in chain)
        rows.append((step, sent, result.handler_input_bytes))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--layouts", type=int, default=5, help="layout seeds of the overhead")
    args = parser.parse_args(argv)

    chain50 = sections_chain(51)  # 50 sections summarized, the last one kept
    walls = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = anyio.run(Summarizer().summarize, sleeping_handler, chain50)
        walls.append(time.perf_counter() - start)
    wall = min(walls)
    print(
        f"1. {result.handler_calls} handler calls of {HANDLER_SECONDS * 1e3:.0f} ms, "
        f"unbounded concurrency: {wall * 1e3:.0f} ms wall, "
        f"ratio {wall / HANDLER_SECONDS:.2f}x one call (goal <= 1.2x)"
    )

    print(f"2. {overhead('large', args.repeat, args.layouts)}")
    print(f"   {overhead('sections', args.repeat, args.layouts)}")

    rows = agent_loop_costs(args.steps)
    print(f"3. {args.steps}-step agent loop, default config: handler input bytes per step")
    print(f"   {'step':>5} {'chain bytes':>12} {'handler input':>14}")
    for step, sent, handler_bytes in rows:
        if step % 20 == 19 or step == len(rows) - 1:
            print(f"   {step + 1:>5} {sent:>12,} {handler_bytes:>14,}")
    peak = max(sent for _, sent, _ in rows)
    peak_input = max(h for _, _, h in rows)
    mean_input = sum(h for _, _, h in rows) / len(rows)
    print(
        f"   peak chain {peak:,} B; handler input per step: mean {mean_input:,.0f} B, "
        f"max {peak_input:,} B"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
