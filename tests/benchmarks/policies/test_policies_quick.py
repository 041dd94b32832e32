"""The policy benchmark's quick mode (the CI run) and a few of its building blocks."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

import benchmarks.policies.__main__ as policies_main
from benchmarks.policies.__main__ import main
from benchmarks.policies.baselines import DropOldest, FractionPartition
from benchmarks.policies.harness import run_policy
from benchmarks.policies.simulate import FACT_SHAPES, PlantedFact, fact_present, simulate
from benchmarks.policies.suite import SuiteResult, check_invariants
from cast import ChainAST


def test_quick_mode_holds_every_invariant(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI run: its exit code, and each invariant it claims checked here on the
    results themselves (not only through the exit code): no invalid chain from a
    policy that guarantees validity, the newest pair kept by those that promise it, no
    turn over budget that could fit for the bounded ones, every turn of every workload
    replayed, and the checker itself catching a broken result."""
    suites: list[SuiteResult] = []

    def checked(suite: SuiteResult) -> list[str]:
        suites.append(suite)
        return check_invariants(suite)

    monkeypatch.setattr(policies_main, "check_invariants", checked)
    assert main(["--quick", "--no-write"]) == 0
    out = capsys.readouterr().out
    assert "### simulated" in out
    (suite,) = suites
    assert suite.groups
    names = [policy.name for policy in suite.policies]
    for name in names:
        assert f"| {name} |" in out
    for flag in ("guarantees_valid", "keeps_last_pair", "stays_in_budget"):
        assert any(getattr(policy, flag) for policy in suite.policies), flag  # not vacuous
    summarizing = 0
    for group in suite.groups:
        turns = {result.turns for result in group.results}
        assert len(turns) == 1, group.name  # every policy replayed every turn
        assert turns.pop() > 0
        for policy, result in zip(suite.policies, group.results, strict=True):
            where = f"{group.name} / {policy.name}"
            assert result.policy == policy.name, where
            if policy.guarantees_valid:
                assert result.invalid == 0, f"{where}: {result.first_invalid}"
            if policy.keeps_last_pair:
                assert result.last_pair_lost == 0, where
            if policy.stays_in_budget:
                assert result.over_budget == result.over_budget_forced, where
            assert 0 <= result.over_budget_forced <= result.over_budget <= result.turns
            assert result.peak_bytes <= result.sent_bytes
            summarizing += result.handler_calls > 0
    assert summarizing  # the handler-backed policies did summarize
    # The checker reports each kind of broken promise (so an exit code 0 means something).
    group = suite.groups[0]
    index = next(i for i, p in enumerate(suite.policies) if p.stays_in_budget)
    broken = replace(
        group.results[index],
        invalid=2,
        last_pair_lost=3,
        over_budget=group.results[index].over_budget_forced + 4,
    )
    results = [*group.results]
    results[index] = broken
    bad = replace(suite, groups=[replace(group, results=results)])
    failures = " ".join(check_invariants(bad))
    assert "2 invalid outputs" in failures
    assert "4 turns over budget" in failures
    if suite.policies[index].keeps_last_pair:
        assert "newest pair lost on 3 turns" in failures


def test_simulator_is_seeded_and_plants_facts() -> None:
    first, again, other = simulate(60, 3, 65536), simulate(60, 3, 65536), simulate(60, 4, 65536)
    assert first.messages == again.messages
    assert first.messages != other.messages
    assert first.facts
    texts = [text for m in first.messages for p in m.parts for text in _texts(p)]
    for fact in first.facts.values():  # planted with its value, in the message it names
        planted_in = [
            t
            for m in first.messages[fact.index : fact.index + 1]
            for p in m.parts
            for t in _texts(p)
        ]
        assert any(fact_present(t, fact) for t in planted_in), fact
    assert {f.shape for f in first.facts.values()} == set(FACT_SHAPES)
    for index, keys in first.references.items():  # asked by subject, never with the value
        asking = [t for p in first.messages[index].parts for t in _texts(p)]
        for key in keys:
            fact = first.facts[key]
            assert fact.index < index
            assert any(fact.subject in t for t in asking)
            assert not any(fact_present(t, fact) for t in asking)
    assert texts
    ChainAST.from_messages(first.messages)


def _texts(part: object) -> list[str]:
    return [
        v
        for name in ("text", "arguments", "content")
        if isinstance(v := getattr(part, name, None), str)
    ]


def test_a_fact_counts_only_with_its_value_next_to_its_subject() -> None:
    fact = PlantedFact("package==version", "queue-cache7", "3.14.2", 0)
    assert fact_present("Pinned queue-cache7==3.14.2", fact)
    assert not fact_present("queue-cache7 was pinned", fact)
    assert not fact_present("queue-cache7 " + "x" * 400 + " 3.14.2", fact)


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
