"""The recall tool measured: the simulated loop with the agent calling ``recall_archived``.

About two thirds of the simulated loop's questions are asked by the agent itself, in a
tool call's arguments (``"about": "Look up X again."``): no human message names them,
so re-insertion cannot serve them. Here the agent is modelled as using the recall tool
(``csum.RecallTool``) for them: before a tool call that names a subject the chain it was
just sent does not hold anywhere (:func:`benchmarks.policies.harness.chain_names`), it
takes one extra turn, an AI message calling ``recall_archived`` with the subject as the
query (one call per such subject, in parallel), answered with ``RecallTool``'s real
answer from the policy's own archive. That pair joins the chain, the policy runs again,
its output is sent (a turn, counted in bytes sent) and the facts are checked in it.

The decision sees only what an agent could: the chain it was sent and the subject it is
about to write. It never reads a fact's value or whether the value is present, so a
subject the chain still names without its value is not recalled (a miss that stays).
Not modelled: a real model may not call the tool, may phrase the query differently, or
may recall when it need not; the extra turn's latency; recall for human questions
(re-insertion serves those).
Run: ``python -m benchmarks.policies --recall [--seed S] [--seeds N] [--steps N]``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.policies.harness import RunResult, chain_names, run_policy
from benchmarks.policies.peers import CompactorPolicy
from benchmarks.policies.policy import MeteredHandler, Policy, make_handler
from benchmarks.policies.reinsert_replay import REINSERT_BYTES, ArchivedCsumPolicy
from benchmarks.policies.simulate import Workload, fact_present, simulate
from benchmarks.policies.suite import SuiteConfig
from cast import Message, Role, ToolCall, ToolResult
from csum import RECALL_TOOL_NAME, Budget, HistoryArchive, RecallTool
from csum.compactor import summary_bytes
from csum.config import LONG_MEMORY

__all__ = [
    "RECALL_POLICIES",
    "RecallRow",
    "RecallingAgent",
    "render_recall",
    "run_recall",
    "run_recall_policy",
]

_EMPTY_ANSWER = "no archived message contains "
"""How ``RecallTool`` starts an answer that found nothing."""


@dataclass
class RecallingAgent:
    """The modelled agent's use of ``recall_archived`` before a call naming subjects.

    Called with the chain just sent and the subjects the call names (the harness's
    ``before_call``); returns the extra turn (the AI message with one recall call per
    subject the chain does not name, and a tool message per call), or nothing.
    """

    tool: RecallTool
    decisions: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)
    """Per call that names subjects: (the subjects, those recalled)."""
    answers: dict[str, list[str]] = field(default_factory=dict)
    """Subject -> the recall answers it got."""
    calls: int = 0
    empty: int = 0

    async def __call__(self, sent: Sequence[Message], subjects: Sequence[str]) -> list[Message]:
        wanted = tuple(dict.fromkeys(subjects))
        missing = tuple(s for s in wanted if not chain_names(sent, s))
        self.decisions.append((wanted, missing))
        if not missing:
            return []
        calls = []
        results = []
        for subject in missing:
            self.calls += 1
            call = ToolCall(
                id=f"call_recall{self.calls:06d}",
                name=RECALL_TOOL_NAME,
                arguments=json.dumps({"query": subject}),
            )
            answer = await self.tool(call.arguments)
            self.empty += answer.startswith(_EMPTY_ANSWER)
            self.answers.setdefault(subject, []).append(answer)
            calls.append(call)
            result = ToolResult(tool_call_id=call.id, name=RECALL_TOOL_NAME, content=answer)
            results.append(Message(role=Role.TOOL, parts=(result,)))
        return [Message(role=Role.AI, parts=tuple(calls)), *results]


RECALL_POLICIES = (
    "Compactor + archive",
    "csum +qa +human summary + archive",
    "Compactor + archive, long memory",
)
"""The bounded policies with a history archive (re-insertion on, ``REINSERT_BYTES``);
the last is the Compactor with ``csum.config.LONG_MEMORY``."""


@dataclass(frozen=True, slots=True)
class RecallRow:
    policy: str
    seed: int
    recall: bool
    result: RunResult
    recall_calls: int = 0
    recall_empty: int = 0
    answered_with_value: int = 0
    """Recall calls whose answer held the fact's value next to its subject."""
    agent_asked: int = 0
    """References asked in a tool call's arguments (the ones recall is for)."""
    decisions: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    misses: tuple[int, int, int] = (0, 0, 0)
    """References not present when asked: asked by a human, asked by the agent after a
    recall of the subject, asked by the agent without one (the chain named the subject)."""


def _misses(
    load: Workload, result: RunResult, decisions: Sequence[tuple[object, tuple[str, ...]]]
) -> tuple[int, int, int]:
    asking = sorted(i for i in load.references if load.messages[i].role is Role.AI)
    recalled = {
        (index, subject)
        for index, (_, missing) in zip(asking, decisions, strict=True)
        for subject in missing
    }
    human = sum(load.messages[index].role is Role.HUMAN for index, _ in result.missed)
    after_recall = sum(pair in recalled for pair in result.missed)
    return human, after_recall, len(result.missed) - human - after_recall


def _policy(name: str, budget: int, folder: Path) -> tuple[Policy, HistoryArchive]:
    if name == RECALL_POLICIES[2]:
        size = summary_bytes(Budget.bytes(budget), LONG_MEMORY.summary_ratio)
        compactor = CompactorPolicy(
            budget,
            MeteredHandler(make_handler("extractive", size), time_scale=0.0),
            reinsert_bytes=REINSERT_BYTES,
            **LONG_MEMORY.settings(),
        )
        assert compactor.sessions.archive is not None
        return compactor, compactor.sessions.archive
    handler = MeteredHandler(make_handler("extractive"), time_scale=0.0)
    if name == RECALL_POLICIES[0]:
        compactor = CompactorPolicy(budget, handler, reinsert_bytes=REINSERT_BYTES)
        assert compactor.sessions.archive is not None
        return compactor, compactor.sessions.archive
    archive = HistoryArchive(
        folder / "archive.sqlite", session="bench", reinsert_bytes=REINSERT_BYTES
    )
    policy = ArchivedCsumPolicy(budget, handler, archive, use_qa=True, summarize_human_in_qa=True)
    return policy, archive


async def run_recall_policy(
    name: str, load: Workload, *, recall: bool, seed: int = 0, check: Workload | None = None
) -> RecallRow:
    """``load`` replayed under policy ``name`` (one of :data:`RECALL_POLICIES`), the
    agent using the recall tool or not; ``check`` (default ``load``) gives the facts the
    answers are checked against."""
    check = check or load
    agent_asked_calls = sum(load.messages[index].role is Role.AI for index in load.references)
    agent_asked = sum(
        len(keys) for index, keys in load.references.items()
        if load.messages[index].role is Role.AI
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        policy, archive = _policy(name, load.budget, Path(folder))
        try:
            if not recall:
                result = await run_policy(policy, load, lint=False)
                misses = _misses(load, result, [((), ())] * agent_asked_calls)
                return RecallRow(name, seed, False, result, agent_asked=agent_asked, misses=misses)
            agent = RecallingAgent(RecallTool(archive))
            result = await run_policy(policy, load, lint=False, before_call=agent)
        finally:
            await archive.aclose()
    with_value = sum(
        fact_present(text, check.facts[subject])
        for subject, texts in agent.answers.items()
        for text in texts
    )
    return RecallRow(
        name, seed, True, result, agent.calls, agent.empty, with_value, agent_asked,
        tuple(agent.decisions), _misses(load, result, agent.decisions),
    )  # fmt: skip


async def run_recall(
    config: SuiteConfig, progress: Callable[[str], None] | None = None
) -> list[RecallRow]:
    """The simulated loop (``config.seeds`` seeds) under each archive-backed bounded
    policy, the agent not using and using the recall tool."""
    rows: list[RecallRow] = []
    for seed in range(config.seed, config.seed + config.seeds):
        load = simulate(config.steps, seed, config.budget)
        wanted = [part.lower() for part in config.only]
        for name in RECALL_POLICIES:
            if wanted and not any(part in name.lower() for part in wanted):
                continue  # --policies: only the ones named
            for recall in (False, True):
                row = await run_recall_policy(name, load, recall=recall, seed=seed)
                rows.append(row)
                if progress is not None:
                    r = row.result
                    progress(
                        f"seed {seed} {name:34} recall={recall!s:5} present when asked "
                        f"{r.references_found}/{r.references}, recall calls {row.recall_calls}"
                        f" ({row.recall_empty} empty), sent {r.sent_bytes:,} B"
                    )
    return rows


def _share(result: RunResult) -> float:
    return 100 * result.references_found / max(result.references, 1)


def render_recall(rows: list[RecallRow]) -> list[str]:
    """Per seed, then min / mean over seeds, as markdown."""
    lines = [
        "| policy | seed | recall | present when asked | bytes sent | turns (extra) "
        "| recall calls (empty, with the value) | misses: human / agent after recall / "
        "agent, not recalled | kept at the end | turns over budget | peak bytes "
        "| invalid outputs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        r = row.result
        calls = (
            f"{row.recall_calls} ({row.recall_empty}, {row.answered_with_value})"
            if row.recall else "-"
        )  # fmt: skip
        lines.append(
            f"| {row.policy} | {row.seed} | {'on' if row.recall else 'off'} "
            f"| {r.references_found}/{r.references} ({_share(r):.1f}%) | {r.sent_bytes:,} "
            f"| {r.turns:,} ({r.extra_turns}) | {calls} | {' / '.join(map(str, row.misses))} "
            f"| {r.facts_final}/{r.facts_planted} | {r.over_budget} | {r.peak_bytes:,} "
            f"| {r.invalid} |"
        )
    lines += [
        "",
        "| policy | present when asked, off: min | mean | on: min | mean "
        "| bytes sent on vs off: min | mean | recall calls | empty | invalid outputs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(row.policy for row in rows):
        off = [row for row in rows if row.policy == name and not row.recall]
        on = [row for row in rows if row.policy == name and row.recall]
        offs = [_share(row.result) for row in off]
        ons = [_share(row.result) for row in on]
        ratios = [
            100 * (b.result.sent_bytes / a.result.sent_bytes - 1)
            for a, b in zip(off, on, strict=True)
        ]
        lines.append(
            f"| {name} | {min(offs):.1f}% | {sum(offs) / len(offs):.1f}% "
            f"| {min(ons):.1f}% | {sum(ons) / len(ons):.1f}% "
            f"| {min(ratios):+.1f}% | {sum(ratios) / len(ratios):+.1f}% "
            f"| {sum(row.recall_calls for row in on)} | {sum(row.recall_empty for row in on)} "
            f"| {sum(row.result.invalid for row in off + on)} |"
        )
    return lines
