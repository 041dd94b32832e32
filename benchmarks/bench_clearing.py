"""Overhead of the clearing stage (issue 25), as ratios against a baseline measured in
the same run, garbage collector on.

1. A turn within budget: an agent loop of calls that compact nothing, with the
   Compactor's clearing stage on (``Clearing()``) against ``clearing=None`` (today's
   path): the median time of a call in each, rounds taken in turn. Goal: <= 1.1x.
2. A clearing pass against chain length: :func:`csum.clearing.clear_tool_results` on
   chains of 100, 1,000 and 10,000 messages, CPU time per message (least and mean of
   ``--repeat``), next to the same pass with an empty gist (the placeholder pass before
   placeholders had a gist) and a full parse of the same chain (the cost every
   compaction already pays). Linear: the time per message stays flat as the chain grows.
3. The gist alone (:func:`csum.clearing.gist`) on every text of the gist gate
   (:mod:`benchmarks.gist_gate`: the corpus's tool results and arguments, synthetic
   texts), CPU microseconds per text, least and mean of ``--repeat``.

Chains: synthetic (tool results of 8-120 lines, one chain per ``--seeds`` seed: the
table gives the least time over seeds and repeats, and the mean of all) and real (the
tool uses of the Claude Code sessions in the shared corpus, tiled to the length with
fresh call ids).

Not measured: the archive (storing the originals, hashing their references), pins and
the summarize stage (a handler call dwarfs all of this); wall time of a compaction under
load (CPU time is taken: the machine is shared); memory.

Run: python -m benchmarks.bench_clearing [--repeat 5] [--turns 400] [--seeds 3]
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

import csum.clearing
from benchmarks.shared_corpus import CLAUDE_CODE
from cast import Message, Role, ToolCall, ToolResult, parse_chain
from csum import Clearing, Compactor
from csum.clearing import clear_tool_results, gist

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

    folder = folder or CLAUDE_CODE
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


def cpu_times(repeat: int, func: Callable[[], object]) -> list[float]:
    """CPU seconds (``time.process_time``) of ``repeat`` calls, collector on: on a shared
    machine, wall time also counts the other processes' turns."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return times


def no_gist(text: str, limit: int = 0) -> str:
    """The gist of nothing: placeholders as they were before they had a gist."""
    return ""


def pass_times(chain: list[Message], repeat: int, *, with_gist: bool) -> list[float]:
    """CPU seconds of ``repeat`` clearing passes over ``chain`` (every eligible result
    cleared), with the gist or with an empty one."""
    options = Clearing()

    def clear() -> None:
        clear_tool_results(chain, options, measure=lambda m: m.size, goal=None)

    if with_gist:
        return cpu_times(repeat, clear)
    saved = getattr(csum.clearing, "gist")  # noqa: B009 (the module does not export it)
    setattr(csum.clearing, "gist", no_gist)  # noqa: B010
    try:
        return cpu_times(repeat, clear)
    finally:
        setattr(csum.clearing, "gist", saved)  # noqa: B010


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)

    sources = {
        f"synthetic seed {seed}": synthetic_turns(max(LENGTHS[-1], args.turns), seed)
        for seed in range(7, 7 + args.seeds)
    }
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
    print(
        "2. a clearing pass against chain length (every eligible result cleared; CPU us per"
        " message, least / mean; synthetic: over seeds)"
    )
    print("| chain | messages | pass | pass, empty gist | ratio | parse | pass / parse |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    groups = {"synthetic": [n for n in sources if n.startswith("synthetic")]}
    if real:
        groups["claude code"] = ["claude code"]
    for group, names in groups.items():
        for length in LENGTHS:
            least: dict[str, list[float]] = {"pass": [], "empty": [], "parse": []}
            mean: dict[str, list[float]] = {"pass": [], "empty": [], "parse": []}
            count = 0
            for name in names:
                chain = tiled(sources[name], length)
                count = len(chain)

                def parse(chain: list[Message] = chain) -> None:
                    parse_chain(chain)

                runs = {
                    "pass": pass_times(chain, args.repeat, with_gist=True),
                    "empty": pass_times(chain, args.repeat, with_gist=False),
                    "parse": cpu_times(args.repeat, parse),
                }
                for key, times in runs.items():
                    least[key].append(min(times) / count * 1e6)
                    mean[key].append(statistics.fmean(times) / count * 1e6)
            low = {key: min(values) for key, values in least.items()}
            avg = {key: statistics.fmean(values) for key, values in mean.items()}
            print(
                f"| {group} | {count:,} | {low['pass']:.1f} / {avg['pass']:.1f} | "
                f"{low['empty']:.2f} / {avg['empty']:.2f} | "
                f"{low['pass'] / low['empty']:.0f}x / {avg['pass'] / avg['empty']:.0f}x | "
                f"{low['parse']:.2f} / {avg['parse']:.2f} | "
                f"{low['pass'] / low['parse']:.0f}x / {avg['pass'] / avg['parse']:.0f}x |"
            )

    print()
    print("3. the gist alone on the gist gate's texts (CPU us per text, least / mean)")
    gist_texts(args.repeat)
    return 0


def gist_texts(repeat: int) -> None:
    """Section 3: :func:`csum.clearing.gist` over the gate's texts, by size."""
    from benchmarks.gist_gate import texts

    try:
        every = [text for _, text in texts()]
    except SystemExit:  # no corpus: the synthetic texts only
        from benchmarks.gist_gate import _synthetic

        every = [text for _, text in _synthetic()]
    print("| texts | count | chars, mean | gist us, least / mean |")
    print("|---|--:|--:|--:|")
    for label, low, high in (
        ("all", 0, None),
        ("under 4 KiB", 0, 4_096),
        ("4-40 KiB", 4_096, 40_960),
        ("over 40 KiB", 40_960, None),
    ):
        group = [t for t in every if low <= len(t) and (high is None or len(t) < high)]
        if not group:
            continue

        def run(group: list[str] = group) -> None:
            for text in group:
                gist(text)

        times = [t / len(group) * 1e6 for t in cpu_times(repeat, run)]
        chars = statistics.fmean(len(t) for t in group)
        print(
            f"| {label} | {len(group):,} | {chars:,.0f} | {min(times):,.0f} / "
            f"{statistics.fmean(times):,.0f} |"
        )


if __name__ == "__main__":
    raise SystemExit(main())
