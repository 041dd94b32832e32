"""The policy benchmark's quick mode (the CI run) and a few of its building blocks."""

from __future__ import annotations

import anyio
import pytest

from benchmarks.policies.__main__ import main
from benchmarks.policies.baselines import DropOldest, FractionPartition
from benchmarks.policies.harness import run_policy
from benchmarks.policies.simulate import simulate
from cast import ChainAST


def test_quick_mode_holds_every_invariant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--no-write"]) == 0
    out = capsys.readouterr().out
    assert "### simulated" in out
    assert "| csum +qa +human summary |" in out


def test_simulator_is_seeded_and_plants_facts() -> None:
    first, again, other = simulate(60, 3, 65536), simulate(60, 3, 65536), simulate(60, 4, 65536)
    assert first.messages == again.messages
    assert first.messages != other.messages
    assert first.facts
    text = "".join(m.model_dump_json() for m in first.messages)
    assert all(fact in text for fact in first.facts)
    ChainAST.from_messages(first.messages)


def test_drop_oldest_is_valid_keeps_the_newest_pair_and_fits() -> None:
    load = simulate(150, 5, 48000)
    result = anyio.run(run_policy, DropOldest(48000), load)
    assert result.turns == 150
    assert result.invalid == 0
    assert result.last_pair_lost == 0
    assert result.over_budget == result.over_budget_forced  # only turns that cannot fit
    assert result.peak_bytes < result.sent_bytes


def test_fraction_partition_inline_calls_no_handler() -> None:
    load = simulate(80, 9, 40000)
    result = anyio.run(run_policy, FractionPartition(40000, None, inline=True), load)
    assert result.handler_calls == 0
    assert result.peak_bytes <= 40000 or result.over_budget_forced
