"""Needed-later memory (issue 36): the facts an agent reuses, taken from the session, and
the quick run of the cost-memory benchmark on the smallest real sessions."""

from __future__ import annotations

import anyio
import pytest

from benchmarks.policies.corpus import find_corpus
from benchmarks.policies.cost import ANTHROPIC
from benchmarks.policies.cost_bench import check_cost_invariants
from benchmarks.policies.memory_bench import (
    DEFAULTS,
    QUICK_BUDGET,
    MemoryConfig,
    drop_name,
    frontier_at,
    memory_specs,
    paired_difference,
    render_memory,
    run_memory,
)
from benchmarks.policies.needed import NeededMemory, needed_facts, occurs, salient_tokens
from cast import Message, ToolCall


def _call(call_id: str, command: str) -> Message:
    return Message.ai(
        "", ToolCall(id=call_id, name="bash", arguments=f'{{"command": "{command}"}}')
    )


CHAIN = [
    Message.system("You are a coding agent. Work in /repo."),
    Message.human("Fix the failing test."),
    _call("c1", "pytest -q"),
    Message.tool("c1", "bash", "FAILED tests/test_io.py::test_read - OSError: errno 5\n1 failed"),
    _call("c2", "cat src/io_utils.py"),
    Message.tool("c2", "bash", "def read_block(path):\n    return open(path).read(4096)"),
    _call("c3", "ls"),
    Message.tool("c3", "bash", "README.md\nsrc\ntests"),
    Message.ai("The bug is in read_block of src/io_utils.py; tests/test_io.py fails with 4096."),
]


def test_a_fact_reused_from_an_earlier_result_is_needed_with_its_age() -> None:
    turns = needed_facts(CHAIN)
    assert [t.index for t in turns] == [2, 4, 6, 8]
    last = {f.token: f for f in turns[-1].facts}
    assert {"read_block", "tests/test_io.py", "4096"} <= set(last)
    assert "src/io_utils.py" not in last  # the agent named it first: no result gave it
    assert last["read_block"].source == 5
    assert last["read_block"].age == 1  # one AI message (index 6) in between
    # "/repo" is in the system prompt; "README.md" is in the newest turn (the floor)
    assert all(f.token not in ("/repo", "README.md") for t in turns for f in t.facts)


def test_a_policy_remembers_a_fact_it_sent() -> None:
    last = needed_facts(CHAIN)[-1]
    kept, dropped = NeededMemory(), NeededMemory()
    kept.add(last, CHAIN[:8])
    dropped.add(last, [CHAIN[0], CHAIN[1], *CHAIN[6:8]])
    assert kept.share == 1.0
    assert dropped.share == 0.0
    assert dropped.by_age
    summary = Message.human("earlier: read_block fails 4096 tests/test_io.py")
    noted = NeededMemory()
    noted.add(last, [CHAIN[0], summary, *CHAIN[6:8]])
    assert noted.share == 1.0


def test_tokens_are_whole_words() -> None:
    assert occurs("see read_block()", "read_block")
    assert not occurs("see read_blocks", "read_block")
    assert not occurs("id 40961", "4096")
    found = salient_tokens('open `src/a.py:12` then call `fetch_all` with "two words"')
    assert found["src/a.py:12"] == "path"
    assert "fetch_all" in found
    assert found["two words"] == "quoted"


def test_the_frontier_is_the_upper_envelope_interpolated() -> None:
    points = [(1.0, 0.5), (2.0, 0.7), (1.5, 0.4), (3.0, 0.8)]
    assert frontier_at(points, 1.5) == pytest.approx(0.6)
    assert frontier_at(points, 2.5) == pytest.approx(0.75)
    assert frontier_at(points, 0.5) == 0.5  # below: the cheapest point's (an upper bound)
    assert frontier_at(points, 3.5) is None


@pytest.mark.skipif(find_corpus() is None, reason="the shared corpus (../shared/corpus) is missing")
def test_quick_run_on_real_sessions_measures_every_policy() -> None:
    config = MemoryConfig(budgets=(QUICK_BUDGET,), sessions=12, seeds=(1,), samples=50)
    specs = memory_specs()
    names = {s.name for s in specs}  # every peer, the presets and the defaults
    assert {"Compactor preset LOW_COST", "Compactor preset LONG_MEMORY", DEFAULTS} <= names
    rows = anyio.run(run_memory, config, specs)
    assert {r.policy for r in rows} == {s.name for s in specs}
    assert check_cost_invariants(rows) == []
    needed = {r.memory.needed for r in rows}
    assert len(needed) == 1
    assert needed.pop() > 100
    drops = {r.policy: r.memory.share for r in rows if r.policy.startswith("drop-oldest")}
    assert drops[drop_name(0.6)] >= drops[drop_name(0.1)]
    assert paired_difference(rows, DEFAULTS, QUICK_BUDGET, ANTHROPIC, seeds=(1,), samples=20)
    lines = render_memory(rows, config, {}, 0.0)
    assert any(DEFAULTS in line for line in lines)
