"""The fact guard's benchmark: facts kept with and without the guard at equal total bytes."""

from __future__ import annotations

from benchmarks.fidelity_guard import SUMMARIZERS, guarded_summary, measure, render
from benchmarks.fidelity_items import BUDGETS, load_items
from tests.conftest import FIDELITY, needs


@needs(FIDELITY)
def test_the_guard_is_measured_at_equal_total_bytes_per_part() -> None:
    items = sorted(load_items(), key=lambda i: i.size)[:5]
    counts = measure(items, reserve=0.3)  # asserts every summary is within its budget
    assert set(counts) == {(n, f, on) for n in SUMMARIZERS for f in BUDGETS for on in (0, 1)}
    facts = sum(len(i.facts) for i in items)
    assert all(0 <= c["all"] <= facts for c in counts.values())
    table = render(items, counts)
    assert "| cut text | 10% |" in table
    assert f"all ({facts})" in table


@needs(FIDELITY)
def test_a_guarded_summary_holds_the_inner_summary_first() -> None:
    item = max(load_items(), key=lambda i: i.size)
    budget = round(0.1 * item.size)
    summary = guarded_summary(item, budget, SUMMARIZERS["cut text"][0], False, 0.3)
    inner = SUMMARIZERS["cut text"][0](item, budget - round(0.3 * budget))
    assert summary.startswith(inner)
    assert len(summary.encode()) <= budget
    assert len(summary) > len(inner)
