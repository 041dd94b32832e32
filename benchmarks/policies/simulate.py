"""A seeded simulator of long agent loops, shaped like the recorded corpus.

Shape parameters (bytes; log-normal medians and log-sd) come from the corpus chains as
decoded by the library (Claude Code sessions for the tool loop, tau-bench for short
answers); :func:`benchmarks.policies.corpus` can recompute them. Turns:

* a user question opens a task; the agent works ``turns`` AI turns on it (log-normal,
  median 12: between tau-bench's 1.8 and Claude Code's 34 turns per question, so that
  a long loop holds many sections), the last one a text answer;
* an AI turn calls 1 tool (82 %), 2 (11 %), 3 (5 %) or 4-9 (2 %) tools in parallel, with
  a short preamble 60 % of the time and thinking 8 % of the time;
* tool results: median 260 B, log-sd 2.1, capped at 48 KB; 0.5 % are huge (32-80 KB);
* answers: median 600 B; arguments: median 110 B; questions: median 200 B.

Facts: unique ``FACT-xxxxxx`` tokens are planted in 25 % of tool results, 50 % of
answers and 15 % of questions, each on a line of filler. Later messages refer back to
them (half the questions, 4 % of tool calls) as ``fact xxxxxx``, without the
``FACT-`` prefix, so a reference never counts as the fact itself. References pick a
fact at a log-uniform distance back, so both recent and old facts are asked for.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field

from cast import Message, Reasoning, Role, TextPart, ToolCall, ToolResult
from cast.messages import utf8_len

__all__ = ["FACT_PATTERN", "Workload", "simulate", "turn_shape"]

FACT_PATTERN = r"FACT-[0-9a-f]{6}"
"""How planted facts look; anything matching it in a chain counts as that fact."""

_VOCABULARY = """
the agent checked config value result service build deploy cache index query request
response worker queue module function class handler retry timeout port host user token
session record table column schema migration commit branch test suite case error warning
output input stream buffer file path directory network latency memory disk cpu thread lock
event log metric trace span version release package dependency install update remove
create read write parse format encode decode validate check run start stop restart open
close send receive
"""
_WORDS = tuple(_VOCABULARY.split())
_TOOLS = ("bash", "read_file", "grep", "edit_file", "web_fetch", "list_dir", "run_tests")
_EXTS = ("py", "ts", "go", "rs", "md", "json", "yaml", "toml")
_PARALLEL = ((1, 0.82), (2, 0.11), (3, 0.05), (4, 0.005), (5, 0.005), (6, 0.005), (9, 0.005))


@dataclass
class Workload:
    """A recorded or simulated chain, with its planted facts and their references."""

    name: str
    messages: list[Message]
    budget: int
    facts: dict[str, int] = field(default_factory=dict)
    """Fact token -> index of the message that planted it."""
    references: dict[int, list[str]] = field(default_factory=dict)
    """Message index -> fact tokens that message refers back to."""
    group: str = ""
    """Workloads of one group are reported together (a corpus folder)."""


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.used: set[str] = set()
        self.calls = 0

    def lognormal(self, median: float, sd: float, cap: int) -> int:
        return max(1, min(cap, int(self.rng.lognormvariate(math.log(median), sd))))

    def token(self) -> str:
        while True:
            value = f"{self.rng.getrandbits(24):06x}"
            if value not in self.used:
                self.used.add(value)
                return value

    def line(self) -> str:
        rng = self.rng
        kind = rng.random()
        if kind < 0.15:
            path = "/".join(rng.choices(_WORDS, k=rng.randint(1, 3)))
            return (
                f"src/{path}_{rng.randint(1, 99)}.{rng.choice(_EXTS)}:{rng.randint(1, 900)}: "
                + (" ".join(rng.choices(_WORDS, k=rng.randint(3, 8))))
            )
        if kind < 0.25:
            day, hour, minute = rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
            return (
                f"2024-05-{day:02d} {hour:02d}:{minute:02d}"
                f" INFO {rng.choice(_WORDS)}-{rng.randint(1, 9)} processed {rng.randint(1, 999)}"
                f" items in {rng.randint(1, 900)} ms"
            )
        if kind < 0.30:
            return f"commit {rng.getrandbits(32):08x} {' '.join(rng.choices(_WORDS, k=5))}"
        words = rng.choices(_WORDS, k=rng.randint(6, 16))
        return " ".join(words).capitalize() + "."

    def text(self, size: int) -> str:
        lines: list[str] = []
        total = 0
        while total < size:
            line = self.line()
            lines.append(line)
            total += len(line) + 1
        return "\n".join(lines)[:size]

    def call_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls:05d}{self.rng.getrandbits(40):010x}"


def _with_fact(gen: _Gen, text: str, fact: str) -> str:
    """``text`` with a line stating ``fact`` inserted at a random line boundary."""
    lines = text.split("\n")
    where = gen.rng.randint(0, len(lines))
    value = gen.rng.randint(100, 99999)
    what = " ".join(gen.rng.choices(_WORDS, k=3))
    lines.insert(where, f"{fact}: {what} = {value}")
    return "\n".join(lines)


def simulate(steps: int, seed: int, budget: int) -> Workload:
    """A loop of ``steps`` AI turns (seeded, reproducible)."""
    gen = _Gen(seed)
    rng = gen.rng
    load = Workload(f"sim-{steps}-seed{seed}", [], budget, group="simulated")
    planted: list[str] = []
    messages = load.messages

    def plant(index: int) -> str:
        fact = f"FACT-{gen.token()}"
        load.facts[fact] = index
        planted.append(fact)
        return fact

    def pick_reference() -> str | None:
        if not planted:
            return None
        back = int(math.exp(rng.uniform(0, math.log(len(planted)))))
        return planted[-max(1, min(back, len(planted)))]

    messages.append(Message.system(gen.text(6000)))
    done = 0
    while done < steps:
        text = gen.text(gen.lognormal(200, 1.2, 8000))
        if rng.random() < 0.15:
            text = _with_fact(gen, text, plant(len(messages)))
        ref = pick_reference() if rng.random() < 0.5 else None
        if ref is not None:
            text += f"\nUse what you found earlier about fact {ref[5:]}."
            load.references.setdefault(len(messages), []).append(ref)
        messages.append(Message.human(text))
        turns = min(steps - done, gen.lognormal(12, 1.0, 150))
        for turn in range(turns):
            done += 1
            reasoning = None
            if rng.random() < 0.08:
                reasoning = Reasoning(
                    content=gen.text(gen.lognormal(400, 0.8, 4000)),
                    signature=rng.randbytes(96),
                )
            if turn == turns - 1:
                answer = gen.text(gen.lognormal(600, 1.2, 16000))
                if rng.random() < 0.5:
                    answer = _with_fact(gen, answer, plant(len(messages)))
                messages.append(
                    Message(role=Role.AI, parts=(TextPart(text=answer, reasoning=reasoning),))
                )
                continue
            n = rng.choices([n for n, _ in _PARALLEL], [w for _, w in _PARALLEL])[0]
            parts: list[TextPart | ToolCall] = []
            if rng.random() < 0.6:
                parts.append(
                    TextPart(text=gen.text(gen.lognormal(80, 1.0, 1200)), reasoning=reasoning)
                )
                reasoning = None
            calls: list[ToolCall] = []
            for _ in range(n):
                args: dict[str, str] = {"input": gen.text(gen.lognormal(110, 1.2, 8000))}
                ref = pick_reference() if rng.random() < 0.04 else None
                if ref is not None:
                    args["about"] = f"fact {ref[5:]}"
                    load.references.setdefault(len(messages), []).append(ref)
                call = ToolCall(
                    id=gen.call_id(),
                    name=rng.choice(_TOOLS),
                    arguments=json.dumps(args),
                    reasoning=reasoning,
                )
                reasoning = None
                calls.append(call)
            messages.append(Message(role=Role.AI, parts=(*parts, *calls)))
            for call in calls:
                if rng.random() < 0.005:
                    size = rng.randint(32000, 80000)
                else:
                    size = gen.lognormal(260, 2.1, 48000)
                content = gen.text(size)
                if rng.random() < 0.25:
                    content = _with_fact(gen, content, plant(len(messages)))
                result = ToolResult(tool_call_id=call.id, name=call.name, content=content)
                messages.append(Message(role=Role.TOOL, parts=(result,)))
    return load


def _quantile(values: list[int], q: float) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def turn_shape(chains: list[list[Message]]) -> dict[str, float]:
    """The shape statistics the simulator mimics, measured on ``chains``."""
    turns = questions = parallel = thinking = 0
    results: list[int] = []
    answers: list[int] = []
    for messages in chains:
        for message in messages:
            if message.role is Role.HUMAN:
                questions += 1
            elif message.role is Role.TOOL:
                results.extend(utf8_len(r.content) for r in message.tool_results)
            elif message.role is Role.AI:
                turns += 1
                calls = message.tool_calls
                parallel += len(calls) > 1
                thinking += any(getattr(p, "reasoning", None) for p in message.parts)
                if not calls:
                    answers.append(message.size)
    return {
        "AI turns": turns,
        "turns per question": turns / max(1, questions),
        "parallel-call turns %": 100 * parallel / max(1, turns),
        "thinking turns %": 100 * thinking / max(1, turns),
        "result p50 B": _quantile(results, 0.5),
        "result p90 B": _quantile(results, 0.9),
        "result p99 B": _quantile(results, 0.99),
        "result max B": max(results, default=0),
        "answer p50 B": _quantile(answers, 0.5),
    }
