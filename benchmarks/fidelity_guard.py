"""The fact guard measured: facts kept with and without :class:`csum.guard.FactGuard`, at
equal total bytes, by a lossy cut (the text's first bytes) and by the offline handler.

Every item of the fidelity set (``benchmarks/fidelity.py``) is summarized at 10 % and
25 % of its size: without the guard, by the summarizer at the whole budget; with it, by
the summarizer at the budget less the reserve, then the guard appends what it lost
within the whole budget; "best of" rows keep whichever of the whole-budget summary and
the guarded one lost less by the guard's own weights (:meth:`csum.guard.FactGuard.choose`,
as ``wrap_sized`` does). Facts are counted by :func:`benchmarks.fidelity.fact_kept`.
The reserve and the ranking were chosen on parts A, B and D (``--no-heldout``); C and E
are the held-out parts.

Run ``python -m benchmarks.fidelity_guard`` (``--reserve 0.2`` to try another share).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from benchmarks.fidelity import PART_NAMES, head
from benchmarks.fidelity_items import (
    BUDGETS,
    DEV_PATH,
    FRESH_PATH,
    HELDOUT_PATH,
    Item,
    fact_kept,
    load_items,
    part_of,
)
from benchmarks.shared_corpus import FIDELITY, require
from csum.guard import DEFAULT_RESERVE, FactGuard
from csum.handlers import summarize_extractive

__all__ = ["SUMMARIZERS", "main", "measure"]

Summarizer = Callable[[Item, int], str]


def _offline(item: Item, budget: int) -> str:
    return summarize_extractive(item.request(), budget)


SUMMARIZERS: dict[str, tuple[Summarizer, bool]] = {
    "cut text": (head, False),
    "cut text (best of)": (head, True),
    "offline (appended)": (_offline, False),
    "offline (best of)": (_offline, True),
}
"""Name: (summarizer, whether the guard chooses between the whole-budget summary and the
guarded one, as :meth:`csum.guard.FactGuard.wrap_sized` does)."""


def _kept(item: Item, summary: str) -> int:
    return sum(fact_kept(summary, patterns) for _, patterns in item.facts)


def guarded_summary(
    item: Item, budget: int, summarize: Summarizer, choose: bool, reserve: float
) -> str:
    """The guarded summary of ``item`` in ``budget`` bytes in all."""
    guard = FactGuard(budget, reserve=reserve)
    prompt = item.request()
    summary = guard.complete(prompt, summarize(item, guard.inner_bytes))
    if choose:
        summary = guard.choose(prompt, summarize(item, budget), summary)
    return summary


def measure(
    items: Sequence[Item], reserve: float = DEFAULT_RESERVE
) -> dict[tuple[str, float, bool], dict[str, int]]:
    """Facts kept by part (and ``all``), per summarizer, budget and guard (on or off)."""
    counts: dict[tuple[str, float, bool], dict[str, int]] = {}
    for name, (summarize, choose) in SUMMARIZERS.items():
        for fraction in BUDGETS:
            for on in (False, True):
                kept: dict[str, int] = {}
                for item in items:
                    budget = max(1, round(fraction * item.size))
                    if on and budget > 1:
                        summary = guarded_summary(item, budget, summarize, choose, reserve)
                    else:
                        summary = summarize(item, budget)
                    assert len(summary.encode("utf-8")) <= budget, (item.id, name, on)
                    n = _kept(item, summary)
                    for key in (part_of(item), "all"):
                        kept[key] = kept.get(key, 0) + n
                counts[(name, fraction, on)] = kept
    return counts


def render(items: Sequence[Item], counts: dict[tuple[str, float, bool], dict[str, int]]) -> str:
    """A markdown table: facts kept without / with the guard, by part."""
    facts: dict[str, int] = {}
    for item in items:
        for key in (part_of(item), "all"):
            facts[key] = facts.get(key, 0) + len(item.facts)
    parts = [p for p in [*PART_NAMES, "all"] if p in facts]
    head_row = ["summarizer", "budget", *[f"{p} ({facts[p]})" for p in parts]]
    lines = ["| " + " | ".join(head_row) + " |", "|:--|--:" + "|--:" * len(parts) + "|"]
    for name in SUMMARIZERS:
        for fraction in BUDGETS:
            cells = [name, f"{fraction:.0%}"]
            for part in parts:
                off = counts[(name, fraction, False)].get(part, 0) / facts[part]
                on = counts[(name, fraction, True)].get(part, 0) / facts[part]
                cells.append(f"{100 * off:.0f} → {100 * on:.0f} % ({100 * (on - off):+.0f})")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table (facts kept without → with the guard)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity_guard")
    parser.add_argument("--reserve", type=float, default=DEFAULT_RESERVE)
    parser.add_argument(
        "--no-heldout", action="store_true", help="parts A, B and D only (what a tuner runs)"
    )
    args = parser.parse_args(argv)
    require(FIDELITY)
    items = load_items(
        heldout=None if args.no_heldout else HELDOUT_PATH,
        dev=DEV_PATH,
        fresh=None if args.no_heldout else FRESH_PATH,
    )
    print(render(items, measure(items, args.reserve)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
