"""Re-insertion measured: the simulated loop with and without archived lines put back.

The simulated loop plants facts (a value tied to a subject, six shapes) and later asks
about them by subject; the harness counts the facts whose value is present next to
their subject in the chain sent when they are asked for. Each policy (csum, csum with
QA, the Compactor) runs plain and with a history archive (a SQLite file) whose
re-insertion appends archived lines about what the newest question names.
Re-insertion knows nothing of the facts' shapes: it looks up every identifier of the
question (``csum.archive``). Questions the agent asks in a tool call's arguments are
not a human message, so re-insertion cannot serve them.
Run: ``python -m benchmarks.policies --reinsert [--seed S] [--steps N]``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from benchmarks.policies.harness import RunResult, run_policy
from benchmarks.policies.peers import CompactorPolicy
from benchmarks.policies.policy import CsumPolicy, MeteredHandler, Policy, PolicyStep, make_handler
from benchmarks.policies.simulate import simulate
from benchmarks.policies.suite import SuiteConfig
from cast import Message
from csum import HistoryArchive, Stores, Summarizer

__all__ = ["REINSERT_BYTES", "ArchivedCsumPolicy", "ReinsertRow", "render_reinsert", "run_reinsert"]

REINSERT_BYTES = 2048
"""Bytes of archived lines put back per question."""


class QaOptions(TypedDict, total=False):
    """The :class:`CsumPolicy` options a compared csum policy sets."""

    use_qa: bool
    summarize_human_in_qa: bool


class ArchivedCsumPolicy(CsumPolicy):
    """:class:`CsumPolicy` with a history archive that re-inserts archived lines.

    Re-insertion appends a text part to the newest question (its own parts unchanged),
    so this policy does not promise to send the new question unchanged.
    """

    keeps_last_pair = False

    def __init__(
        self,
        budget: int,
        handler: MeteredHandler,
        archive: HistoryArchive,
        **kw: Unpack[QaOptions],
    ) -> None:
        super().__init__(budget, handler, **kw)
        self.summarizer = Summarizer(self.config, stores=Stores(archive=archive))

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        result = await self.summarizer.summarize(self.handler, messages)
        changed = result.changed or result.messages != list(messages)
        return result.messages, self._step(changed)


@dataclass(frozen=True, slots=True)
class ReinsertRow:
    policy: str
    reinsert: bool
    result: RunResult


POLICIES: dict[str, QaOptions] = {
    "csum": {},
    "csum +qa +human summary": {"use_qa": True, "summarize_human_in_qa": True},
}
COMPACTOR = "Compactor"


async def run_reinsert(
    config: SuiteConfig, progress: Callable[[str], None] | None = None
) -> list[ReinsertRow]:
    """The simulated loop under each policy, without and with re-insertion."""
    load = simulate(config.steps, config.seed, config.budget)
    rows: list[ReinsertRow] = []
    for name in [*POLICIES, COMPACTOR]:
        for reinsert in (False, True):
            handler = MeteredHandler(make_handler("extractive"), time_scale=0.0)
            with tempfile.TemporaryDirectory() as folder:
                policy: Policy
                archive: HistoryArchive | None = None
                if name == COMPACTOR:
                    policy = CompactorPolicy(
                        config.budget, handler, reinsert_bytes=REINSERT_BYTES if reinsert else None
                    )
                    archive = policy.sessions.archive
                elif reinsert:
                    archive = HistoryArchive(
                        Path(folder) / "archive.sqlite",
                        session="bench",
                        reinsert_bytes=REINSERT_BYTES,
                    )
                    policy = ArchivedCsumPolicy(config.budget, handler, archive, **POLICIES[name])
                else:
                    policy = CsumPolicy(config.budget, handler, **POLICIES[name])
                result = await run_policy(policy, load, lint=False)
                if archive is not None:
                    await archive.aclose()
            rows.append(ReinsertRow(name, reinsert, result))
            if progress is not None:
                found = result.references_found / max(result.references, 1)
                progress(f"{name:28} reinsert={reinsert!s:5} facts found {100 * found:.1f}%")
    return rows


def render_reinsert(rows: list[ReinsertRow]) -> list[str]:
    """The comparison as a markdown table."""
    lines = [
        "| policy | re-insertion | facts present when asked | bytes sent | peak bytes "
        "| turns over budget | handler calls | invalid outputs | questions extended |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        r = row.result
        share = 100 * r.references_found / max(r.references, 1)
        lines.append(
            f"| {row.policy} | {'on, ' + str(REINSERT_BYTES) + ' B' if row.reinsert else 'off'} "
            f"| {r.references_found}/{r.references} ({share:.1f}%) | {r.sent_bytes:,} "
            f"| {r.peak_bytes:,} | {r.over_budget} | {r.handler_calls} | {r.invalid} "
            f"| {r.last_pair_lost} |"
        )
    return lines
