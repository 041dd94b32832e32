"""Why a fact was not present when asked: each reference of the simulated loop, sorted by
who asked and by cause.

A reference is asked by a human message (a question naming the subject: re-insertion
can serve it) or by the agent in a tool call's arguments (no message names it before the
call: only what the chain still holds can answer it). A miss is put down to one cause:

* ``not re-inserted``: a human question, and no re-inserted line names the subject;
* ``re-inserted without its value``: a re-inserted line names the subject, not the value;
* ``subject in the chain without its value``: a summary or a kept message names the
  subject, the value is gone;
* ``absent``: nothing the chain holds names the subject.

Run: ``python -m benchmarks.policies.misses [--policy csum|compactor] [--seed S]
[--steps N] [--reinsert-bytes B]``; the figures in docs/benchmarks.md's findings were
explained with it.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from benchmarks.policies.harness import facts_in
from benchmarks.policies.peers import CompactorPolicy
from benchmarks.policies.policy import CsumPolicy, MeteredHandler, Policy, make_handler
from benchmarks.policies.simulate import PlantedFact, Workload, simulate
from cast import Message, Role
from csum.archive import recalled_text
from csum.store_events import message_search_text

__all__ = ["Misses", "explain", "main"]

FOUND = "found"
NOT_REINSERTED = "not re-inserted"
REINSERTED_NO_VALUE = "re-inserted without its value"
SUBJECT_ONLY = "subject in the chain without its value"
ABSENT = "absent"


@dataclass
class Misses:
    """Counts per (asker, outcome) and per (shape, asker, outcome)."""

    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    by_shape: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    @property
    def references(self) -> int:
        return sum(self.outcomes.values())

    @property
    def found(self) -> int:
        return sum(n for (_, outcome), n in self.outcomes.items() if outcome == FOUND)


def _outcome(out: Sequence[Message], fact: PlantedFact, asker: str) -> str:
    if facts_in(out, [fact]):
        return FOUND
    recalled = recalled_text(out)
    if asker == "human":
        if fact.subject not in recalled:
            return NOT_REINSERTED
        if fact.value not in recalled:
            return REINSERTED_NO_VALUE
    held = "\n".join(message_search_text(m) for m in out)
    return SUBJECT_ONLY if fact.subject in held else ABSENT


async def explain(policy: Policy, load: Workload) -> Misses:
    """Replay ``load`` under ``policy`` as the harness does and sort every reference."""
    misses = Misses()
    history: list[Message] = []
    pending: list[tuple[str, str]] = []
    for index, message in enumerate(load.messages):
        asker = "human" if message.role is Role.HUMAN else "agent (tool call)"
        pending.extend((key, asker) for key in load.references.get(index, ()))
        if message.role is not Role.AI or not history:
            history.append(message)
            continue
        out, _ = await policy.apply(history)
        for key, who in pending:
            fact = load.facts[key]
            outcome = _outcome(out, fact, "human" if who == "human" else "agent")
            misses.outcomes[(who, outcome)] += 1
            misses.by_shape[(fact.shape, who, outcome)] += 1
        pending.clear()
        history = [*out, message]
    return misses


def _policy(name: str, budget: int, reinsert_bytes: int) -> Policy:
    handler = MeteredHandler(make_handler("extractive"))
    archive = reinsert_bytes if reinsert_bytes > 0 else None
    if name == "compactor":
        return CompactorPolicy(budget, handler, reinsert_bytes=archive)
    return CsumPolicy(
        budget, handler, use_qa=True, summarize_human_in_qa=True, reinsert_bytes=archive
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.policies.misses")
    parser.add_argument("--policy", choices=("csum", "compactor"), default="csum")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--budget", type=int, default=131072)
    parser.add_argument("--reinsert-bytes", type=int, default=2048, help="0: no archive")
    args = parser.parse_args(argv)
    load = simulate(args.steps, args.seed, args.budget)
    policy = _policy(args.policy, args.budget, args.reinsert_bytes)
    misses = anyio.run(explain, policy, load)
    total = max(1, misses.references)
    print(f"{policy.name}, seed {args.seed}, {args.steps} turns, budget {args.budget:,} B")
    for (who, outcome), count in sorted(misses.outcomes.items()):
        print(f"  {who:18} {outcome:40} {count:4} ({100 * count / total:.0f}%)")
    print(f"  present when asked: {misses.found}/{misses.references}")
    for (shape, who, outcome), count in sorted(misses.by_shape.items()):
        if outcome != FOUND:
            print(f"    {shape:17} {who:18} {outcome:40} {count:4}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
