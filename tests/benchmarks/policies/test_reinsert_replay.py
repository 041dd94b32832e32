"""The policy benchmark's re-insertion run: outputs stay valid with lines put back, and
only re-insertion changes the newest message (it extends the new question)."""

from __future__ import annotations

from pathlib import Path

import anyio

from benchmarks.policies.reinsert_replay import render_reinsert, run_reinsert
from benchmarks.policies.suite import SuiteConfig


def test_reinsertion_keeps_outputs_valid(tmp_path: Path) -> None:
    config = SuiteConfig(quick=True, steps=150, time_scale=0.0, lint=False, corpus=tmp_path)
    rows = anyio.run(run_reinsert, config)
    assert [row.reinsert for row in rows] == [False, True] * 3
    assert rows[-1].policy == "Compactor"
    for row in rows:
        assert row.result.turns > 0
        assert row.result.invalid == 0
        if not row.reinsert:
            assert row.result.last_pair_lost == 0
        assert row.result.references > 0
    assert any(row.result.last_pair_lost for row in rows if row.reinsert)  # it did act
    assert len(render_reinsert(rows)) == 2 + len(rows)
