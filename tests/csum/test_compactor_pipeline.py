"""The Compactor's pipeline: one compact call parses the chain once, whatever stages run
(clearing, a summary, archive re-insertion, cache points), and a call that extends the
last result parses it not at all (issue 37). The trace is benchmarks/compactor_trace.py's,
which also lists the csum modules a call enters (at most 10)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from benchmarks.compactor_trace import session_chain, trace_compact, traced_compactor
from cast import Message, ToolCall
from tests.conftest import CORPUS

STAGES = {"plan.py", "compaction.py", "assemble.py", "clearing.py", "archive.py"}
MAX_MODULES = 10
"""Issue 37's goal: one compact call, with every stage running, enters at most 10 csum
modules (handlers and store back ends apart)."""


def _logs_chain() -> list[Message]:
    """A session reading logs: 40 tool uses of ~1.5 KB, one naming ``cache_shard_17``,
    then a question about it (what re-insertion brings back from the archive)."""
    chain = [Message.system("You operate the cluster."), Message.human("Check every node's log.")]
    for index in range(40):
        call = ToolCall(
            id=f"toolu_{index:04d}", name="bash", arguments=f'{{"cmd": "cat n{index}.log"}}'
        )
        chain.append(Message.ai(f"Reading node {index}.", call))
        lines = [f"node {index} heartbeat ok at step {step}" for step in range(40)]
        if index == 5:
            lines[20] = "cache_shard_17 rebalanced to node 5 after checksum 9f3a77 failed twice"
        chain.append(Message.tool(call.id, "bash", "\n".join(lines)))
    chain.append(Message.ai("All nodes read."))
    chain.append(Message.human("What happened to cache_shard_17?"))
    return chain


@pytest.mark.parametrize("source", ["synthetic", "corpus"])
def test_one_compact_call_parses_the_chain_once(source: str, tmp_path: Path) -> None:
    if source == "corpus":
        if not CORPUS.is_dir():
            pytest.skip("shared corpus not found next to the repository")
        messages = session_chain(CORPUS)
    else:
        messages = _logs_chain()
    trace = anyio.run(trace_compact, traced_compactor(tmp_path), messages)
    # every stage ran: clearing, a summary, re-insertion and a cache point
    assert trace.compacted
    assert trace.summary_needed
    assert trace.cleared_results > 0
    assert trace.reinserted_bytes > 0
    assert trace.breakpoints > 0
    assert set(trace.modules) >= STAGES
    assert len(trace.modules) <= MAX_MODULES, sorted(trace.modules)
    assert trace.parses == 1


def test_a_call_that_extends_the_last_result_parses_nothing(tmp_path: Path) -> None:
    compactor = traced_compactor(tmp_path)
    first = anyio.run(compactor.run, _logs_chain()[:6])
    grown = [*first.messages, Message.ai("Reading on.")]
    trace = anyio.run(partial(trace_compact, compactor, grown, force=False))
    assert not trace.compacted
    assert trace.parses == 0
