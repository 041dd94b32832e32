"""Replay a workload as an agent loop under a policy, and measure every step.

The loop appends the workload's messages one by one; before each AI message it hands
the history to the policy, sends what the policy returns (that is the cost: its size
in UTF-8 bytes), keeps it as the new history and appends the AI message. Each output
is checked: strict parse, the newest pair kept, planted facts asked for at that turn
(value next to its subject, see ``simulate.fact_present``).
Outputs the policy changed (and the final one) are linted for OpenAI and Anthropic.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from benchmarks.policies.policy import Policy
from benchmarks.policies.simulate import PlantedFact, Workload, fact_present
from cast import ChainAST, ChainError, Message, Part, Role

__all__ = [
    "LINT_TARGETS",
    "BeforeCall",
    "RunResult",
    "chain_names",
    "facts_in",
    "lint_available",
    "run_policy",
]

LINT_TARGETS = ("openai", "anthropic")
_TEXT_FIELDS = ("text", "arguments", "content")
_TEXTS_CACHE: dict[int, tuple[Message, tuple[str, ...]]] = {}

BeforeCall = Callable[[Sequence[Message], Sequence[str]], Awaitable[list[Message]]]
"""The agent's move before a tool call that asks about subjects: given the chain it was
just sent and the subjects, the messages of an extra turn (none: no extra turn)."""


def lint_available() -> bool:
    """Whether ``cast.lint`` exists in this tree."""
    try:
        from cast import lint  # noqa: F401
    except ImportError:
        return False
    return True


def _texts_of(part: Part) -> list[str]:
    texts = [text for name in _TEXT_FIELDS if isinstance(text := getattr(part, name, None), str)]
    reasoning = getattr(part, "reasoning", None)
    if reasoning is not None:
        texts.append(reasoning.content)
    return texts


def _message_texts(message: Message) -> tuple[str, ...]:
    hit = _TEXTS_CACHE.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    texts = tuple(text for part in message.parts for text in _texts_of(part))
    _TEXTS_CACHE[id(message)] = (message, texts)
    return texts


def facts_in(messages: Sequence[Message], facts: Sequence[PlantedFact]) -> set[str]:
    """Subjects of the ``facts`` whose value survives next to their subject in one of
    the messages' texts (kept as sent or inside summaries)."""
    texts = [text for message in messages for text in _message_texts(message)]
    return {
        fact.subject
        for fact in facts
        if any(fact.subject in text and fact_present(text, fact) for text in texts)
    }


def chain_names(messages: Sequence[Message], text: str) -> bool:
    """Whether any text of ``messages`` (text, arguments, results, reasoning) holds
    ``text``: what an agent reading the chain could see."""
    return any(text in t for message in messages for t in _message_texts(message))


def _invalid(messages: Sequence[Message]) -> str | None:
    """Why no provider would take this chain (strict parse failure, or nothing to send)."""
    if not messages:
        return "empty chain"
    try:
        ChainAST.from_messages(messages)
    except ChainError as exc:
        return str(exc)
    return None


def _last_pair_kept(before: Sequence[Message], after: Sequence[Message]) -> bool:
    """Whether ``after`` ends with the newest body pair of ``before`` (or, when a new
    question follows it, with that question), unchanged."""
    last_ai = next((i for i in range(len(before) - 1, -1, -1) if before[i].role is Role.AI), None)
    if last_ai is None or any(m.role is Role.HUMAN for m in before[last_ai:]):
        tail = list(before[-1:])
    else:
        tail = list(before[last_ai:])
    if len(after) < len(tail):
        return False
    return all(a is b or a == b for a, b in zip(after[len(after) - len(tail) :], tail, strict=True))


@dataclass
class RunResult:
    """Everything measured for one policy on one workload (or a group of them)."""

    policy: str
    workload: str
    budget: int
    turns: int = 0
    sent_bytes: int = 0
    peak_bytes: int = 0
    final_bytes: int = 0
    over_budget: int = 0
    over_budget_forced: int = 0
    """Turns over budget whose system prompt, question and newest pair alone exceed it."""
    handler_calls: int = 0
    handler_input_bytes: int = 0
    handler_output_bytes: int = 0
    summarizing_steps: int = 0
    summarize_wall_s: float = 0.0
    modelled_s: float = 0.0
    overhead_s: float = 0.0
    max_overhead_s: float = 0.0
    invalid: int = 0
    first_invalid: str = ""
    lint_outputs: int = 0
    lint_violations: dict[str, int] = field(default_factory=dict)
    """Target -> violations over all linted outputs."""
    lint_new: dict[str, int] = field(default_factory=dict)
    """Target -> violations of rules the replayed recording itself does not break."""
    lint_rules: dict[str, set[str]] = field(default_factory=dict)
    last_pair_lost: int = 0
    facts_planted: int = 0
    facts_final: int = 0
    references: int = 0
    references_found: int = 0
    by_shape: dict[str, list[int]] = field(default_factory=dict)
    """Fact shape -> [asked, found when asked, planted, kept at the end]."""
    per_workload: list[tuple[float, float, int]] = field(default_factory=list)
    """Per workload with facts: (share present when asked, share kept at the end,
    turns over budget that could fit), for min / mean over seeds."""
    sizes: list[int] = field(default_factory=list)
    """Bytes sent at each AI turn (the plotted series)."""
    seconds: float = 0.0
    extra_turns: int = 0
    """Turns the agent added before a call (``run_policy``'s ``before_call``)."""
    missed: list[tuple[int, str]] = field(default_factory=list)
    """(index of the asking message, fact key) of each reference not present when asked."""
    """Turns the agent added before a call (``run_policy``'s ``before_call``)."""

    def merge(self, other: RunResult) -> None:
        """Add ``other`` (same policy, another workload of the group) into this one."""
        for name in (
            "turns", "sent_bytes", "final_bytes", "over_budget", "over_budget_forced",
            "handler_calls",
            "handler_input_bytes", "handler_output_bytes", "summarizing_steps",
            "summarize_wall_s", "modelled_s", "overhead_s", "invalid", "lint_outputs",
            "last_pair_lost", "facts_planted", "facts_final", "references",
            "references_found", "seconds", "extra_turns",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.peak_bytes = max(self.peak_bytes, other.peak_bytes)
        self.max_overhead_s = max(self.max_overhead_s, other.max_overhead_s)
        self.first_invalid = self.first_invalid or other.first_invalid
        for mine, theirs in (
            (self.lint_violations, other.lint_violations),
            (self.lint_new, other.lint_new),
        ):
            for target, count in theirs.items():
                mine[target] = mine.get(target, 0) + count
        for target, rules in other.lint_rules.items():
            self.lint_rules.setdefault(target, set()).update(rules)
        self.sizes.extend(other.sizes)
        self.missed.extend(other.missed)
        self.per_workload.extend(other.per_workload)
        for shape, counts in other.by_shape.items():
            totals = self.by_shape.setdefault(shape, [0, 0, 0, 0])
            for i, count in enumerate(counts):
                totals[i] += count


class _Linter:
    """Lints outputs for every target; knows which rules the recording breaks itself."""

    def __init__(self, enabled: bool, workload: Workload) -> None:
        self.fn: Callable[[Sequence[Message], str], Sequence[object]] | None = None
        self.inherited: dict[str, set[str]] = {}
        if enabled and lint_available():
            from cast import lint

            self.fn = lint
            self.inherited = {t: self._rules(workload.messages, t) for t in LINT_TARGETS}

    def _rules(self, messages: Sequence[Message], target: str) -> set[str]:
        assert self.fn is not None
        return {str(getattr(v, "rule", v)) for v in self.fn(messages, target)}

    def check(self, messages: Sequence[Message], result: RunResult) -> None:
        if self.fn is None:
            return
        result.lint_outputs += 1
        for target in LINT_TARGETS:
            rules = [str(getattr(v, "rule", v)) for v in self.fn(messages, target)]
            if not rules:
                continue
            new = sum(1 for rule in rules if rule not in self.inherited[target])
            result.lint_violations[target] = result.lint_violations.get(target, 0) + len(rules)
            result.lint_new[target] = result.lint_new.get(target, 0) + new
            result.lint_rules.setdefault(target, set()).update(rules)


def _floor_size(history: Sequence[Message]) -> int:
    """The least any valid policy that keeps the newest pair can send: the system
    prompt, the newest question and everything from the newest AI message on."""
    size = history[0].size if history and history[0].role is Role.SYSTEM else 0
    last_ai: int | None = None
    for index in range(len(history) - 1, -1, -1):
        role = history[index].role
        if role is Role.HUMAN:
            if last_ai is None:  # a new question: the pair before it may go
                return size + sum(m.size for m in history[index:])
            return size + history[index].size + sum(m.size for m in history[last_ai:])
        if role is Role.AI and last_ai is None:
            last_ai = index
    start = 0 if last_ai is None else last_ai
    return size + sum(m.size for m in history[start:] if m.role is not Role.SYSTEM)


async def _send(
    policy: Policy,
    history: list[Message],
    workload: Workload,
    result: RunResult,
    linter: _Linter,
) -> list[Message]:
    """Hand ``history`` to ``policy`` for one model turn and measure what is sent."""
    t0 = time.perf_counter()
    out, step = await policy.apply(history)
    elapsed = time.perf_counter() - t0
    overhead = max(0.0, elapsed - step.handler_busy_s - step.glue_s)
    result.overhead_s += overhead
    result.max_overhead_s = max(result.max_overhead_s, overhead)
    if step.handler_calls:
        result.summarizing_steps += 1
        result.summarize_wall_s += elapsed - step.glue_s
    result.handler_calls += step.handler_calls
    result.handler_input_bytes += step.handler_input_bytes
    result.handler_output_bytes += step.handler_output_bytes
    result.modelled_s += step.modelled_s

    size = sum(m.size for m in out)
    result.turns += 1
    result.sent_bytes += size
    result.peak_bytes = max(result.peak_bytes, size)
    result.sizes.append(size)
    if size > workload.budget:
        result.over_budget += 1
        if _floor_size(history) > workload.budget:
            result.over_budget_forced += 1
    problem = _invalid(out)
    if problem is not None:
        result.invalid += 1
        if not result.first_invalid:
            result.first_invalid = f"{workload.name} turn {result.turns}: {problem}"
    if not _last_pair_kept(history, out):
        result.last_pair_lost += 1
    if step.changed:
        linter.check(out, result)
    return out


async def run_policy(
    policy: Policy,
    workload: Workload,
    *,
    lint: bool = True,
    before_call: BeforeCall | None = None,
) -> RunResult:
    """Replay ``workload`` under ``policy`` and measure it.

    With ``before_call``, an AI message whose tool calls ask about facts is preceded by
    what ``before_call`` returns for the chain just sent and the asked subjects (an
    extra turn of the agent's own, e.g. a recall call and its result): that is added to
    the history, the policy runs again and its output is sent and measured (a turn of
    its own, counted in ``turns`` and ``extra_turns``); the facts are checked in it.
    """
    started = time.perf_counter()
    result = RunResult(policy.name, workload.name, workload.budget)
    result.facts_planted = len(workload.facts)
    linter = _Linter(lint, workload)
    history: list[Message] = []
    pending: list[tuple[int, str]] = []  # (asking message, fact) since the last AI turn
    for index, message in enumerate(workload.messages):
        pending.extend((index, key) for key in workload.references.get(index, ()))
        if message.role is not Role.AI or not history:
            history.append(message)
            continue
        out = await _send(policy, history, workload, result, linter)
        asked_here = workload.references.get(index, ()) if before_call is not None else ()
        if before_call is not None and asked_here:
            extra = await before_call(out, [workload.facts[key].subject for key in asked_here])
            if extra:  # the agent's own turn before the call: its chain is sent too
                result.extra_turns += 1
                history = [*out, *extra]
                out = await _send(policy, history, workload, result, linter)
        if pending:
            asked = [workload.facts[key] for _, key in pending]
            present = facts_in(out, asked)
            result.missed.extend(pair for pair in pending if pair[1] not in present)
            result.references += len(asked)
            result.references_found += len(present)
            for fact in asked:
                counts = result.by_shape.setdefault(fact.shape, [0, 0, 0, 0])
                counts[0] += 1
                counts[1] += fact.subject in present
            pending.clear()
        history = [*out, message]
    result.final_bytes = sum(m.size for m in history)
    kept = facts_in(history, list(workload.facts.values()))
    result.facts_final = len(kept)
    for fact in workload.facts.values():
        counts = result.by_shape.setdefault(fact.shape, [0, 0, 0, 0])
        counts[2] += 1
        counts[3] += fact.subject in kept
    if workload.facts:
        result.per_workload.append(
            (
                result.references_found / result.references if result.references else 0.0,
                result.facts_final / result.facts_planted,
                result.over_budget - result.over_budget_forced,
            )
        )
    linter.check(history, result)
    result.seconds = time.perf_counter() - started
    _TEXTS_CACHE.clear()
    return result
