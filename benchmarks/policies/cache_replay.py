"""Replay with a summary cache: every workload twice through one cache.

The first run shows how often a loop repeats a prompt it already sent (the hit rate of
a cold cache); the second run replays the same workload with the cache warm and must
make 0 handler calls. Run: ``python -m benchmarks.policies --cache-replay [--quick]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.policies.harness import RunResult, run_policy
from benchmarks.policies.policy import CsumPolicy, MeteredHandler, PolicyStep, make_handler
from benchmarks.policies.suite import SuiteConfig, build_workloads
from cast import Message
from csum import Stores, Summarizer, SummaryCache
from csum.stores import MemoryStore

__all__ = ["CachedCsumPolicy", "ReplayRow", "render_replay", "run_cache_replay"]


class CachedCsumPolicy(CsumPolicy):
    """:class:`CsumPolicy` with a summary cache; counts the summaries it served."""

    def __init__(self, budget: int, handler: MeteredHandler, cache: SummaryCache, **kw: object):
        super().__init__(budget, handler, **kw)  # type: ignore[arg-type]
        self.summarizer = Summarizer(self.config, stores=Stores(cache=cache))
        self.cache_hits = 0

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        result = await self.summarizer.summarize(self.handler, messages)
        self.cache_hits += result.cache_hits
        return result.messages, self._step(result.changed)


@dataclass(frozen=True, slots=True)
class ReplayRow:
    group: str
    policy: str
    first_calls: int
    first_hits: int
    second_calls: int
    second_hits: int
    same_output: bool
    """Whether both runs sent the same bytes on every turn."""

    @property
    def first_hit_rate(self) -> float:
        total = self.first_calls + self.first_hits
        return self.first_hits / total if total else 0.0


POLICIES: dict[str, dict[str, bool]] = {
    "csum": {},
    "csum +qa +human summary": {"use_qa": True, "summarize_human_in_qa": True},
}


async def run_cache_replay(
    config: SuiteConfig, progress: Callable[[str], None] | None = None
) -> list[ReplayRow]:
    """Each workload group under each csum policy, twice, through one in-memory cache."""
    groups, _ = build_workloads(config)
    rows: list[ReplayRow] = []
    for name, _, loads in groups:
        budget = loads[0].budget
        for policy_name, options in POLICIES.items():
            cache = SummaryCache(MemoryStore(max_entries=1_000_000), handler_id="extractive")
            runs: list[tuple[int, int, int]] = []
            for _ in range(2):
                handler = MeteredHandler(make_handler("extractive"), time_scale=0.0)
                policy = CachedCsumPolicy(budget, handler, cache, name=policy_name, **options)
                total: RunResult | None = None
                for load in loads:
                    one = await run_policy(policy, load, lint=False)
                    if total is None:
                        total = one
                    else:
                        total.merge(one)
                assert total is not None
                runs.append((total.handler_calls, policy.cache_hits, total.sent_bytes))
            (calls1, hits1, sent1), (calls2, hits2, sent2) = runs
            rows.append(ReplayRow(name, policy_name, calls1, hits1, calls2, hits2, sent1 == sent2))
            if progress is not None:
                progress(f"{name:22} {policy_name:28} first {calls1} calls, second {calls2}")
    return rows


def render_replay(rows: list[ReplayRow]) -> list[str]:
    """The replay as a markdown table."""
    lines = [
        "| workload | policy | run 1: handler calls | run 1: cache hits | run 1: hit rate "
        "| run 2 (warm): handler calls | run 2: cache hits | same bytes sent (total) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {row.group} | {row.policy} | {row.first_calls:,} | {row.first_hits:,} | "
        f"{100 * row.first_hit_rate:.1f}% | {row.second_calls:,} | {row.second_hits:,} | "
        f"{'yes' if row.same_output else 'NO'} |"
        for row in rows
    )
    return lines
