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

Facts: a fact is a value tied to a subject, in one of six shapes (:data:`FACT_SHAPES`):
a path and a line, an error and its cause, a package pinned to a version, "do not use X
because Y", an id in a tool call's arguments, a number with its unit. Each shape has
several phrasings (some as JSON records), so no one format is the fact. They are planted
in 25 % of tool results (shapes 1-3 and 6), 50 % of answers (any but the call argument),
40 % of questions (mostly constraints) and 4 % of tool calls (the id shape). Later
messages ask about them (half the questions, 4 % of tool calls) by naming the subject
only; a fact counts as present when its value is found within :data:`FACT_WINDOW`
characters of its subject (:func:`fact_present`), so a subject kept without its value,
or a value cut loose from its subject, does not count. References pick a fact at a
log-uniform distance back, so both recent and old facts are asked for.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cast import Message, Reasoning, Role, TextPart, ToolCall, ToolResult
from cast.messages import utf8_len

__all__ = [
    "FACT_SHAPES",
    "FACT_TEMPLATES",
    "FACT_WINDOW",
    "PlantedFact",
    "Workload",
    "fact_present",
    "simulate",
    "turn_shape",
]

FACT_SHAPES = (
    "path:line",
    "error+cause",
    "package==version",
    "do-not",
    "call-arg id",
    "number+unit",
)
FACT_WINDOW = 200
"""A fact's value must be within this many characters of its subject to count."""

FACT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "path:line": (
        "{subject}:{value}: assertion failed in {w1}_{w2}",
        "The failing check is at line {value} of {subject}.",
        '{{"file": "{subject}", "line": {value}, "severity": "{w1}"}}',
    ),
    "error+cause": (
        "{subject} raised {exc} because {value}.",
        "ERROR {subject}: {exc}: caused by {value}",
        "{exc} in {subject} ({w1} {w2}); cause: {value}",
    ),
    "package==version": (
        "Pinned {subject}=={value} in requirements.txt",
        "  {subject} {value} (installed)",
        '{{"package": "{subject}", "version": "{value}"}}',
    ),
    "do-not": (
        "Do not use {subject} because {value}.",
        "Never call {subject}: {value}.",
        "Avoid {subject}, since {value}.",
    ),
    "call-arg id": ("{value}",),
    "number+unit": (
        "{subject} p99 latency: {value}",
        "Measured {subject} at {value} over {w1} runs.",
        '{{"metric": "{subject}", "value": "{value}"}}',
    ),
}
"""How each shape is phrased (``{subject}``, ``{value}``, filler words ``{w1}``...)."""

_EXCEPTIONS = ("ConnectionRefusedError", "TimeoutError", "PermissionError", "KeyError")
_CAUSES = (
    "{w}-{n} was not running",
    "the {w} disk on node {n} was full",
    "the {w} token for shard {n} had expired",
    "replica {n} of {w} rejected the schema",
)
_UNITS = ("ms", "MiB", "s", "req/s", "%")


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """A value tied to a subject, planted in one message and asked about later."""

    shape: str
    subject: str
    value: str
    index: int
    """Index of the message that planted it."""


def fact_present(text: str, fact: PlantedFact) -> bool:
    """Whether ``text`` holds the fact's value within :data:`FACT_WINDOW` characters of
    its subject."""
    start = text.find(fact.subject)
    while start >= 0:
        window = text[max(0, start - FACT_WINDOW) : start + len(fact.subject) + FACT_WINDOW]
        if fact.value in window:
            return True
        start = text.find(fact.subject, start + 1)
    return False


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
_RESULT_SHAPES = ("path:line", "error+cause", "package==version", "number+unit")
_QUESTION_SHAPES = (*_RESULT_SHAPES, "do-not")
_ID_KEYS = (("account", "booking_ref"), ("customer", "order_code"), ("user", "ticket"))
_PARALLEL = ((1, 0.82), (2, 0.11), (3, 0.05), (4, 0.005), (5, 0.005), (6, 0.005), (9, 0.005))


@dataclass
class Workload:
    """A recorded or simulated chain, with its planted facts and their references."""

    name: str
    messages: list[Message]
    budget: int
    facts: dict[str, PlantedFact] = field(default_factory=dict)
    """Fact key (its subject) -> the fact."""
    references: dict[int, list[str]] = field(default_factory=dict)
    """Message index -> keys of the facts that message asks about."""
    group: str = ""
    """Workloads of one group are reported together (a corpus folder)."""


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.used: set[str] = set()
        self.calls = 0

    def lognormal(self, median: float, sd: float, cap: int) -> int:
        return max(1, min(cap, int(self.rng.lognormvariate(math.log(median), sd))))

    def unique(self, make: Callable[[], str]) -> str:
        while True:
            value = make()
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


def _with_line(gen: _Gen, text: str, line: str) -> str:
    """``text`` with ``line`` inserted at a random line boundary."""
    lines = text.split("\n")
    lines.insert(gen.rng.randint(0, len(lines)), line)
    return "\n".join(lines)


def _new_fact(gen: _Gen, shape: str, index: int) -> tuple[PlantedFact, str]:
    """A fresh fact of ``shape`` and the line stating it."""
    rng = gen.rng
    w1, w2, w3 = rng.choices(_WORDS, k=3)
    if shape == "path:line":
        subject = gen.unique(
            lambda: (
                f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}_{rng.randint(1, 999)}"
                f".{rng.choice(_EXTS)}"
            )
        )
        value = str(rng.randint(10, 4999))
    elif shape == "error+cause":
        subject = gen.unique(
            lambda: f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{rng.randint(1, 999)}"
        )
        value = rng.choice(_CAUSES).format(w=w3, n=rng.randint(1, 99))
    elif shape == "package==version":
        subject = gen.unique(
            lambda: f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}{rng.randint(1, 99)}"
        )
        value = f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
    elif shape == "do-not":
        subject = gen.unique(
            lambda: f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}{rng.randint(1, 99)}()"
        )
        verb = rng.choice(("corrupts", "locks", "drops", "leaks"))
        value = f"it {verb} the {w3} {rng.choice(_WORDS)}"
    elif shape == "call-arg id":
        subject = gen.unique(
            lambda: f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{rng.randint(1, 9999)}"
        )
        value = gen.unique(lambda: "".join(rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", k=6)))
    else:
        subject = gen.unique(
            lambda: f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
        )
        value = f"{rng.randint(2, 9999)} {rng.choice(_UNITS)}"
    template = rng.choice(FACT_TEMPLATES[shape])
    line = template.format(subject=subject, value=value, exc=rng.choice(_EXCEPTIONS), w1=w1, w2=w2)
    return PlantedFact(shape, subject, value, index), line


_QUESTIONS = {
    "path:line": "Go back to the failure in {subject}.",
    "error+cause": "Why did {subject} fail earlier?",
    "package==version": "Which version of {subject} did we settle on?",
    "do-not": "Can we use {subject} here after all?",
    "call-arg id": "Look up {subject} again.",
    "number+unit": "What did we measure for {subject}?",
}
"""How a later message refers to a fact: by its subject, never by its value."""


def simulate(steps: int, seed: int, budget: int) -> Workload:
    """A loop of ``steps`` AI turns (seeded, reproducible)."""
    gen = _Gen(seed)
    rng = gen.rng
    load = Workload(f"sim-{steps}-seed{seed}", [], budget, group="simulated")
    planted: list[str] = []
    messages = load.messages

    def plant(index: int, shapes: Sequence[str]) -> str:
        fact, line = _new_fact(gen, rng.choice(shapes), index)
        load.facts[fact.subject] = fact
        planted.append(fact.subject)
        return line

    def pick_reference() -> str | None:
        if not planted:
            return None
        back = int(math.exp(rng.uniform(0, math.log(len(planted)))))
        return planted[-max(1, min(back, len(planted)))]

    def ask(key: str) -> str:
        fact = load.facts[key]
        return _QUESTIONS[fact.shape].format(subject=fact.subject)

    messages.append(Message.system(gen.text(6000)))
    done = 0
    while done < steps:
        text = gen.text(gen.lognormal(200, 1.2, 8000))
        if rng.random() < 0.4:
            shapes = _QUESTION_SHAPES if rng.random() < 0.3 else ("do-not",)
            text = _with_line(gen, text, plant(len(messages), shapes))
        ref = pick_reference() if rng.random() < 0.5 else None
        if ref is not None:
            text += "\n" + ask(ref)
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
                    answer = _with_line(gen, answer, plant(len(messages), _QUESTION_SHAPES))
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
                if rng.random() < 0.04:
                    fact, value = _new_fact(gen, "call-arg id", len(messages))
                    load.facts[fact.subject] = fact
                    planted.append(fact.subject)
                    subject_key, value_key = rng.choice(_ID_KEYS)
                    args[subject_key] = fact.subject
                    args[value_key] = value
                ref = pick_reference() if rng.random() < 0.04 else None
                if ref is not None:
                    args["about"] = ask(ref)
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
                    content = _with_line(gen, content, plant(len(messages), _RESULT_SHAPES))
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
