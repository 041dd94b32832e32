"""The policy benchmark's recall mode: the modelled agent calls ``recall_archived`` only
when the chain it was sent does not name the subject (never looking at values), every
extra turn is sent and counted, and outputs stay valid."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import anyio
import pytest

from benchmarks.policies.recall_replay import (
    RECALL_POLICIES,
    RecallingAgent,
    render_recall,
    run_recall,
    run_recall_policy,
)
from benchmarks.policies.simulate import Workload, simulate
from benchmarks.policies.suite import SuiteConfig
from cast import ChainAST, Message, Role
from csum import RECALL_TOOL_NAME, HistoryArchive, RecallTool

STEPS = 700
"""Long enough for the default Compactor to forget some subjects' values."""


def test_recall_mode_counts_every_extra_turn(tmp_path: Path) -> None:
    config = SuiteConfig(quick=True, steps=STEPS, seeds=1, time_scale=0.0, lint=False,
                         corpus=tmp_path)  # fmt: skip
    rows = anyio.run(run_recall, config)
    assert [(row.policy, row.recall) for row in rows] == [
        (name, recall) for name in RECALL_POLICIES for recall in (False, True)
    ]
    for off, on in zip(rows[::2], rows[1::2], strict=True):
        for row in (off, on):
            r = row.result
            assert r.invalid == 0
            assert r.over_budget == 0
            assert r.sent_bytes == sum(r.sizes)
            assert len(r.sizes) == r.turns
            assert r.references == off.result.references > 0
        assert off.result.extra_turns == off.recall_calls == 0
        # One extra turn per call that recalled, one recall call per subject it lacked.
        recalled = [missing for _, missing in on.decisions if missing]
        assert on.result.extra_turns == len(recalled)
        assert on.recall_calls == sum(len(missing) for missing in recalled)
        assert on.result.turns == off.result.turns + on.result.extra_turns
        assert 0 <= on.recall_empty <= on.recall_calls
        assert on.answered_with_value <= on.recall_calls - on.recall_empty
        # Every call asking about a fact was considered, with its subjects.
        assert sum(len(asked) for asked, _ in on.decisions) == on.agent_asked
        for row in (off, on):
            assert sum(row.misses) == row.result.references - row.result.references_found
        assert off.misses[1] == 0
    # The default Compactor forgets enough for the agent to recall (the long memory may
    # keep every subject's value in a loop this short).
    assert rows[1].result.extra_turns > 0
    lines = render_recall(rows)
    assert len(lines) == 2 + len(rows) + 1 + 2 + len(RECALL_POLICIES)


def _scrambled(load: Workload) -> Workload:
    """``load`` with every fact's value replaced in the facts table (the messages, and so
    what the policy and the agent see, unchanged)."""
    facts = {
        key: dataclasses.replace(fact, value=f"<scrambled {n}>")
        for n, (key, fact) in enumerate(load.facts.items())
    }
    return dataclasses.replace(load, facts=facts)


def test_recall_decisions_never_read_fact_values() -> None:
    load = simulate(STEPS, 8, 131072)
    name = RECALL_POLICIES[0]
    real = anyio.run(lambda: run_recall_policy(name, load, recall=True))
    scrambled = _scrambled(load)
    blind = anyio.run(lambda: run_recall_policy(name, scrambled, recall=True, check=scrambled))
    assert real.decisions == blind.decisions
    assert any(missing for _, missing in real.decisions)
    assert real.result.sent_bytes == blind.result.sent_bytes
    assert real.result.references_found > 0
    assert blind.result.references_found == 0  # the measurement reads the values; nothing else


@pytest.mark.anyio
async def test_agent_recalls_only_subjects_the_chain_does_not_name(tmp_path: Path) -> None:
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test")
    try:
        agent = RecallingAgent(RecallTool(archive))
        subject, value = "ledger_sync_417", "replica 3 rejected the schema"
        named = [Message.system("tools"), Message.human(f"we spoke of {subject} before")]
        assert await agent(named, [subject]) == []
        # The value alone does not stop a recall: the decision looks at the subject only.
        unnamed = [Message.system("tools"), Message.human(f"the cause: {value}")]
        extra = await agent(unnamed, [subject, subject])
        assert agent.decisions == [((subject,), ()), ((subject,), (subject,))]
        assert [m.role for m in extra] == [Role.AI, Role.TOOL]
        call = extra[0].tool_calls[0]
        assert call.name == RECALL_TOOL_NAME
        assert json.loads(call.arguments) == {"query": subject}
        assert extra[1].tool_results[0].content == await RecallTool(archive)(call.arguments)
        assert agent.calls == agent.empty == 1  # the archive holds nothing yet
        ChainAST.from_messages([*unnamed, *extra, Message.ai("done")])
        await archive.add([Message.human(f"{subject} failed: {value}")])
        again = await agent(unnamed, [subject])
        assert value in again[1].tool_results[0].content
        assert agent.calls == 2
        assert agent.empty == 1
    finally:
        await archive.aclose()
