"""The exact bound of the fidelity benchmark: the most facts a copying summary could keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fidelity import render, run
from benchmarks.fidelity_items import (
    BUDGETS,
    DEV_PATH,
    FRESH_PATH,
    HELDOUT_PATH,
    Item,
    fact_kept,
    load_items,
)

pytest.importorskip("highspy", reason="the bound needs highspy (the `bench` extra)")

from benchmarks.fidelity_bound import (
    CACHE_PATH,
    VARIANTS,
    _key,
    bound_of,
    cached_bounds,
    solve,
)
from tests.conftest import FIDELITY, needs


def _item(output: str, facts: tuple[tuple[str, tuple[str, ...]], ...]) -> Item:
    return Item(
        id="t-bound",
        kind="test",
        call_name="tool",
        call_arguments="",
        output_role="tool",
        output=output,
        facts=facts,
        source={},
    )


ITEM = _item(
    "id=AB12 and a long tail of words that do not fit\nport 8080 open",
    (("the id", ("AB12",)), ("the port", ("port", "8080"))),
)
"""``tool()`` (6 bytes), a 48-byte line holding the id, a 14-byte line holding the port."""


def test_each_variant_reaches_its_known_optimum() -> None:
    # 16 bytes: one whole line fits (the port's); spans fit "AB12\nport 8080" (14 B); a
    # trimmed summary keeps the call name first, "tool\nAB12\nport 8080" is 19 B.
    assert solve(ITEM, 16, "lines").kept == 1
    assert solve(ITEM, 16, "spans").kept == 2
    assert solve(ITEM, 16, "trimmed").kept == 1
    assert solve(ITEM, 19, "trimmed").kept == 2
    assert solve(ITEM, 19, "trimmed").summary == "tool\nAB12\nport 8080"
    assert solve(ITEM, 3, "spans").kept == 0


@needs(FIDELITY)
@pytest.mark.parametrize("variant", VARIANTS)
def test_an_oracle_summary_is_copied_fits_and_keeps_what_it_claims(variant: str) -> None:
    items = sorted(load_items(), key=lambda i: i.size)[:6]
    for item in items:
        lines = item.text.split("\n")
        for fraction in BUDGETS:
            budget = max(1, round(fraction * item.size))
            bound = solve(item, budget, variant)  # type: ignore[arg-type]
            assert bound.size == len(bound.summary.encode()) <= budget
            assert bound.kept == sum(fact_kept(bound.summary, p) for _, p in item.facts)
            assert bound.kept >= bound.solved
            pieces = bound.summary.split("\n") if bound.summary else []
            if variant == "lines":
                assert all(piece in lines for piece in pieces), item.id
            else:
                assert all(any(piece in line for line in lines) for piece in pieces), item.id
            if variant == "trimmed" and bound.summary:
                assert bound.summary.startswith(item.call_name or ""), item.id


@needs(FIDELITY)
def test_the_committed_cache_holds_every_item_and_re_solving_agrees() -> None:
    items = load_items(heldout=HELDOUT_PATH, dev=DEV_PATH, fresh=FRESH_PATH)
    cache = json.loads(CACHE_PATH.read_text(encoding="utf-8"))
    for item in items:
        for fraction in BUDGETS:
            assert _key(item, max(1, round(fraction * item.size))) in cache, item.id
    for item in sorted(items, key=lambda i: i.size)[:: len(items) // 5][:5]:
        for fraction in BUDGETS:
            budget = max(1, round(fraction * item.size))
            expected = bound_of(cache, item, fraction)
            assert {v: solve(item, budget, v).kept for v in VARIANTS} == expected, item.id


def test_the_cache_is_filled_once_and_keyed_by_content(tmp_path: Path) -> None:
    path = tmp_path / "bounds.json"
    first = cached_bounds([ITEM], path=path)
    assert bound_of(first, ITEM, 0.25) == {
        v: solve(ITEM, round(0.25 * ITEM.size), v).kept for v in VARIANTS
    }
    path.write_text(path.read_text().replace('"spans": 2', '"spans": 9'))
    assert bound_of(cached_bounds([ITEM], path=path), ITEM, 0.25)["spans"] == 9  # read back
    relabelled = _item(ITEM.output, (("the id", ("AB12",)),))
    assert _key(relabelled, 10) != _key(ITEM, 10)


@needs(FIDELITY)
def test_the_report_gives_handler_and_bound_by_part_size_and_kind() -> None:
    items = sorted(load_items(), key=lambda i: i.size)[:4]
    lines = render(run(items), items)
    at = next(n for n, line in enumerate(lines) if line.startswith("| subset | facts"))
    assert "handler / trimmed 10 %" in lines[at]
    assert "| lines | trimmed | spans |" in lines[at]
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in lines[at + 2 :]}
    facts = str(sum(len(i.facts) for i in items))
    assert rows["all"][0].strip() == rows["under 1 KB"][0].strip() == facts
    assert {"part A", "part B"} <= rows.keys()
    assert {i.kind for i in items} <= rows.keys()
