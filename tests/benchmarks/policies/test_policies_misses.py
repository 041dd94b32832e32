"""The miss explainer agrees with the harness: the same references, the same facts
found; every miss gets one cause, and only a human question can be re-inserted."""

from __future__ import annotations

import anyio
import pytest

from benchmarks.policies.harness import run_policy
from benchmarks.policies.misses import FOUND, NOT_REINSERTED, REINSERTED_NO_VALUE, explain, main
from benchmarks.policies.peers import CompactorPolicy
from benchmarks.policies.policy import MeteredHandler, make_handler
from benchmarks.policies.simulate import simulate


@pytest.mark.parametrize("reinsert_bytes", [None, 2048])
def test_the_explainer_counts_what_the_harness_counts(reinsert_bytes: int | None) -> None:
    load = simulate(300, 5, 32768)

    def policy() -> CompactorPolicy:
        handler = MeteredHandler(make_handler("extractive"))
        return CompactorPolicy(32768, handler, reinsert_bytes=reinsert_bytes)

    measured = anyio.run(run_policy, policy(), load)
    misses = anyio.run(explain, policy(), load)
    assert misses.references == measured.references > 0
    assert misses.found == measured.references_found
    for asker, outcome in misses.outcomes:
        if outcome in (NOT_REINSERTED, REINSERTED_NO_VALUE):
            assert asker == "human"
    assert any(outcome != FOUND for _, outcome in misses.outcomes)


def test_the_command_prints_its_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--steps", "120", "--budget", "32768", "--policy", "csum"]) == 0
    out = capsys.readouterr().out
    assert "present when asked:" in out
