"""The policy benchmark's cache replay: a warm cache makes a replayed loop free."""

from __future__ import annotations

from pathlib import Path

import anyio

from benchmarks.policies.cache_replay import render_replay, run_cache_replay
from benchmarks.policies.suite import SuiteConfig


def test_warm_replay_makes_no_handler_calls(tmp_path: Path) -> None:
    config = SuiteConfig(quick=True, steps=150, time_scale=0.0, lint=False, corpus=tmp_path)
    rows = anyio.run(run_cache_replay, config)
    assert [row.group for row in rows] == ["simulated", "simulated"]  # no corpus given
    for row in rows:
        assert row.first_calls > 0
        assert row.second_calls == 0
        assert row.second_hits == row.first_calls + row.first_hits
        assert row.same_output
    assert len(render_replay(rows)) == 2 + len(rows)
