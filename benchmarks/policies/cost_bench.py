"""Cost with prompt caching: the Compactor against its peers on the same turns.

``python -m benchmarks.policies --cost [--quick] [--no-write]`` replays the Claude Code
sessions of the corpus at 64, 128 and 256 KiB and the simulated loop (facts planted and
asked; min / mean over seeds) under every policy of :func:`cost_policies`, prices every
request with :mod:`benchmarks.policies.cost` and rewrites the generated section of
docs/cost.md. ``--sweep`` also sweeps the Compactor's clearing settings on the tuning
half of the sessions and checks the chosen setting on the held-out half once.

Every summarizing policy uses the offline ``extractive`` handler through the metered
handler (bytes in and out are counted); ratios are to the cheaper of LangChain's
``SummarizationMiddleware`` and drop-oldest (trigger = budget, down to 60 %) on the
same workload, budget and pricing style.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.policies.baselines import DropOldest
from benchmarks.policies.clearing_peers import (
    AnthropicClearToolUses,
    LangChainContextEditing,
    NaiveClearing,
    context_editing_available,
)
from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, find_corpus, load_folder
from benchmarks.policies.cost import STYLES, CacheMeter, Pricing
from benchmarks.policies.harness import RunResult, run_policy
from benchmarks.policies.needed import NeededMemory, TurnFacts, needed_facts
from benchmarks.policies.peers import (
    CompactorPolicy,
    LangChainSummarization,
    langchain_middleware_available,
)
from benchmarks.policies.policy import MeteredHandler, Policy, PolicyStep, make_handler
from benchmarks.policies.simulate import Workload, simulate
from cast import Message
from csum import Budget
from csum.compactor import summary_bytes
from csum.config import SUMMARY_ONLY
from csum.prompt import FACT_SHARE

__all__ = [
    "BEFORE",
    "DROP",
    "SUMMARIZATION",
    "CostConfig",
    "Measured",
    "MeteredPolicy",
    "PolicySpec",
    "SessionFigures",
    "cost_policies",
    "measure",
    "reference_cost",
    "render_cost",
    "run_cost",
    "session_facts",
    "split_sessions",
]

KIB = 1024
BUDGETS = (64 * KIB, 128 * KIB, 256 * KIB)
SUMMARIZATION = "SummarizationMiddleware (langchain)"
DROP = "drop-oldest (to 60%)"
BEFORE = "Compactor (main defaults)"
REFERENCES = (SUMMARIZATION, DROP)

PolicyFactory = Callable[[int], Policy]


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A named policy: budget -> a fresh instance."""

    name: str
    make: PolicyFactory
    promises_budget: bool = False
    compactor_options: dict[str, Any] | None = None
    """For Compactor policies: the options, so the archive + recall run can rebuild it."""
    on_simulated: bool = True
    """Whether it runs on the simulated loop too (False: too slow there, see its spec)."""
    continuation: bool = False
    """Its summary calls continue the conversation's cached prefix (priced so)."""


def _metered() -> MeteredHandler:
    return MeteredHandler(make_handler("extractive"), time_scale=0.0)


def _summary_handler(budget: int, options: dict[str, Any]) -> MeteredHandler:
    """The extractive handler writing summaries of the Compactor's own bound
    (``summary_ratio`` of the budget; 1/32, :class:`CompactorPolicy`'s, when not given),
    as its default handler does."""
    ratio = float(options.get("summary_ratio", SUMMARY_ONLY.summary_ratio))
    size = summary_bytes(Budget.bytes(budget), ratio)
    size -= int(size * FACT_SHARE)  # the rest for the facts the summary lacks (csum.prompt)
    return MeteredHandler(make_handler("extractive", size), time_scale=0.0)


def compactor_spec(name: str, *, continuation: bool = False, **options: Any) -> PolicySpec:
    """The Compactor with ``options`` (its own metered extractive handler, summaries
    bounded at ``summary_ratio`` of the budget); with ``continuation``, its summary calls
    are priced as continuations of the conversation's cached prefix (what the model
    handlers send, issue 36)."""

    def make(budget: int) -> Policy:
        return CompactorPolicy(budget, _summary_handler(budget, options), name=name, **options)

    return PolicySpec(
        name,
        make,
        promises_budget=True,
        compactor_options=dict(options),
        continuation=continuation,
    )


def cost_policies(extra: Sequence[PolicySpec] = ()) -> list[PolicySpec]:
    """The peers, then the Compactor before clearing, then ``extra`` (after)."""
    specs: list[PolicySpec] = []
    if langchain_middleware_available():
        specs.append(PolicySpec(SUMMARIZATION, lambda b: LangChainSummarization(b, _metered())))
    specs.append(PolicySpec(DROP, lambda b: DropOldest(b, target_ratio=0.6)))
    if context_editing_available():
        specs.append(
            # The middleware deep-copies the whole request at every call; on the
            # simulated loop the full history reaches thousands of messages, which makes
            # it quadratic (minutes per seed): it runs on the sessions only, and the
            # emulation of Anthropic's strategy (the same semantics) stands in for it.
            PolicySpec(
                "ContextEditingMiddleware + ClearToolUsesEdit (langchain)",
                LangChainContextEditing,
                on_simulated=False,
            )
        )
    specs.append(PolicySpec("clear_tool_uses_20250919 (emulated)", AnthropicClearToolUses))
    specs.append(PolicySpec("naive clearing (every turn, keep 3)", NaiveClearing))
    specs.append(compactor_spec(BEFORE))
    specs.extend(extra)
    return specs


class MeteredPolicy(Policy):
    """Wraps a policy: every payload it returns is priced by ``meter`` and, with
    ``turns`` (a recorded session's needed facts, one entry per AI turn in order),
    checked for the facts the agent reuses at that turn (``memory``)."""

    def __init__(
        self,
        inner: Policy,
        meter: CacheMeter,
        *,
        turns: Sequence[TurnFacts] = (),
        memory: NeededMemory | None = None,
        continuation: bool = False,
    ) -> None:
        super().__init__(inner.budget, None)
        self.inner = inner
        self.meter = meter
        self.name = inner.name
        self.turns = list(turns)
        self.memory = memory
        self.turn = 0
        self.continuation = continuation

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        out, step = await self.inner.apply(messages)
        if self.continuation and step.handler_calls:
            # what a continuation handler sends: every call of the step carried the
            # conversation (the Compactor's one summary prompt), then its instruction
            if step.handler_continued != step.handler_calls:
                raise AssertionError(
                    f"{self.name}: {step.handler_calls - step.handler_continued} summary "
                    "calls without their conversation cannot be priced as continuations"
                )
            self.meter.continuation(
                messages,
                step.handler_calls,
                step.handler_output_bytes,
                round(step.handler_instruction_bytes / step.handler_calls),
            )
        else:
            self.meter.summarizer(step.handler_input_bytes, step.handler_output_bytes)
        self.meter.add(out, changed=step.changed)
        if self.memory is not None and self.turn < len(self.turns):
            self.memory.add(self.turns[self.turn], out)
        self.turn += 1
        return out, step


_NEEDED: dict[tuple[str, int], list[TurnFacts]] = {}


def session_facts(load: Workload) -> list[TurnFacts]:
    """The needed facts of a recorded session (computed once per process)."""
    key = (load.name, len(load.messages))
    if key not in _NEEDED:
        _NEEDED[key] = needed_facts(load.messages)
    return _NEEDED[key]


@dataclass
class SessionFigures:
    """One policy on one recorded session: its cost meter and its needed-later memory."""

    name: str
    meter: CacheMeter
    memory: NeededMemory


@dataclass
class Measured:
    """One policy on one workload group at one budget."""

    policy: str
    group: str
    budget: int
    result: RunResult
    meter: CacheMeter
    promises_budget: bool = False
    facts: list[float] = field(default_factory=list)
    """Simulated loop: share present when asked, per seed (no archive)."""
    facts_recall: list[float] = field(default_factory=list)
    """Simulated loop, with the archive and the recall tool, per seed."""
    per_seed: list[CacheMeter] = field(default_factory=list)
    memory: NeededMemory = field(default_factory=NeededMemory)
    """Recorded sessions: the facts the agent reused and whether the policy sent them."""
    sessions: list[SessionFigures] = field(default_factory=list)
    """Recorded sessions: each one's cost and memory (for resampling sessions)."""

    @property
    def over_not_forced(self) -> int:
        return self.result.over_budget - self.result.over_budget_forced


async def measure(
    spec: PolicySpec, group: str, loads: Sequence[Workload], *, lint: bool = True
) -> Measured:
    """``spec`` on every workload of ``loads`` (a fresh policy and meter each), merged."""
    total: RunResult | None = None
    meter = CacheMeter()
    measured_seeds: list[CacheMeter] = []
    facts: list[float] = []
    memory = NeededMemory()
    sessions: list[SessionFigures] = []
    for load in loads:
        one_meter = CacheMeter()
        one_memory = NeededMemory()
        turns = () if load.facts else session_facts(load)
        policy = MeteredPolicy(
            spec.make(load.budget),
            one_meter,
            turns=turns,
            memory=one_memory,
            continuation=spec.continuation,
        )
        one = await run_policy(policy, load, lint=lint)
        if load.facts:
            facts.append(one.references_found / one.references if one.references else 0.0)
            measured_seeds.append(one_meter)
        else:
            if policy.turn != len(turns):
                raise RuntimeError(
                    f"{spec.name} on {load.name}: {policy.turn} turns sent, {len(turns)} expected"
                )
            memory.merge(one_memory)
            sessions.append(SessionFigures(load.name, one_meter, one_memory))
        meter.merge(one_meter)
        if total is None:
            total = one
        else:
            total.merge(one)
    assert total is not None
    out = Measured(spec.name, group, loads[0].budget, total, meter, spec.promises_budget)
    out.facts = facts
    out.per_seed = measured_seeds
    out.memory = memory
    out.sessions = sessions
    return out


async def measure_recall(spec: PolicySpec, loads: Sequence[Workload]) -> list[float]:
    """Facts present when asked with a history archive and the agent using the recall
    tool (``recall_replay``'s measure), per workload; Compactor policies only."""
    from benchmarks.policies.recall_replay import RecallingAgent
    from benchmarks.policies.reinsert_replay import REINSERT_BYTES
    from csum import RecallTool

    assert spec.compactor_options is not None
    shares: list[float] = []
    for load in loads:
        policy = CompactorPolicy(
            load.budget,
            _summary_handler(load.budget, spec.compactor_options),
            reinsert_bytes=REINSERT_BYTES,
            name=spec.name,
            **spec.compactor_options,
        )
        archive = policy.sessions.archive
        assert archive is not None
        try:
            agent = RecallingAgent(RecallTool(archive))
            result = await run_policy(policy, load, lint=False, before_call=agent)
        finally:
            await archive.aclose()
        shares.append(result.references_found / result.references if result.references else 0.0)
    return shares


def split_sessions(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(tuning, held-out): the sessions sorted by name, even positions tune, odd hold
    out. Chosen before any run."""
    ordered = sorted(names)
    return ordered[0::2], ordered[1::2]


@dataclass
class CostConfig:
    """What one cost run replays."""

    quick: bool = False
    budgets: tuple[int, ...] = BUDGETS
    steps: int = 2000
    seeds: tuple[int, ...] = (7, 8, 9)
    sim_budget: int = 128 * KIB
    sessions: int | None = None
    """Replay only the this many smallest sessions (quick mode)."""
    corpus: Path | None = None
    lint: bool = True
    recall: bool = True


def claude_code_loads(
    config: CostConfig, budget: int, names: Sequence[str] | None = None
) -> list[Workload]:
    """The Claude Code sessions as workloads at ``budget`` (all, or those ``names``)."""
    folder = find_corpus(config.corpus)
    if folder is None:
        return []
    chains = load_folder(folder, CLAUDE_CODE_FOLDER, limit=config.sessions)
    return [
        Workload(c.name, c.messages, budget) for c in chains if names is None or c.name in names
    ]


def session_names(config: CostConfig) -> list[str]:
    folder = find_corpus(config.corpus)
    if folder is None:
        return []
    return [c.name for c in load_folder(folder, CLAUDE_CODE_FOLDER, limit=config.sessions)]


async def run_cost(
    config: CostConfig,
    specs: Sequence[PolicySpec],
    progress: Callable[[str], None] | None = None,
    *,
    names: Sequence[str] | None = None,
    simulated: bool = True,
) -> list[Measured]:
    """Every policy on the sessions at every budget, then on the simulated loops."""
    rows: list[Measured] = []
    for budget in config.budgets:
        loads = claude_code_loads(config, budget, names)
        if not loads:
            continue
        for spec in specs:
            started = time.perf_counter()
            row = await measure(spec, "claude code", loads, lint=config.lint)
            rows.append(row)
            if progress is not None:
                progress(
                    f"claude code {budget // KIB:>3} KiB {spec.name:58} "
                    f"{time.perf_counter() - started:6.1f} s"
                )
    if simulated:
        sims = [simulate(config.steps, seed, config.sim_budget) for seed in config.seeds]
        for spec in (s for s in specs if s.on_simulated):
            started = time.perf_counter()
            # No lint here: the clearing peers change every turn's payload and their
            # full histories reach thousands of messages (linting each is quadratic);
            # lint runs on the sessions, the strict parse on every turn here too.
            row = await measure(spec, "simulated", sims, lint=False)
            if config.recall and spec.compactor_options is not None:
                row.facts_recall = await measure_recall(spec, sims)
            rows.append(row)
            if progress is not None:
                progress(
                    f"simulated {config.sim_budget // KIB:>3} KiB {spec.name:58} "
                    f"{time.perf_counter() - started:6.1f} s"
                )
    return rows


def reference_cost(
    rows: Sequence[Measured], row: Measured, style: Pricing, *, cheap: bool = False
) -> float | None:
    """The cheaper of the reference policies' costs on ``row``'s group and budget."""
    costs = [
        r.meter.total_cost(style, cheap=cheap)
        for r in rows
        if r.policy in REFERENCES and r.group == row.group and r.budget == row.budget
    ]
    return min(costs) if costs else None


def reference_sent(rows: Sequence[Measured], row: Measured) -> int | None:
    sent = [
        r.result.sent_bytes
        for r in rows
        if r.policy in REFERENCES and r.group == row.group and r.budget == row.budget
    ]
    return min(sent) if sent else None


def cost_ratio(rows: Sequence[Measured], row: Measured, style: Pricing, *, cheap: bool) -> float:
    """``row``'s cost over the cheaper reference's (inf when there is none)."""
    ref = reference_cost(rows, row, style, cheap=cheap)
    return row.meter.total_cost(style, cheap=cheap) / ref if ref else float("inf")


def worst_ratio(rows: Sequence[Measured], row: Measured) -> float:
    """The largest cost ratio over every style and both summarizer rates."""
    return max(cost_ratio(rows, row, s, cheap=c) for s in STYLES for c in (False, True))


def _fmt_ratio(value: float) -> str:
    return "-" if value == float("inf") else f"{value:.2f}x"


def _minmean(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{100 * min(values):.1f} / {100 * statistics.fmean(values):.1f} %"


def _table(header: Sequence[str], body: Sequence[Sequence[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|",
        *("| " + " | ".join(str(c) for c in line) + " |" for line in body),
    ]


def render_group(rows: Sequence[Measured], group: str, budget: int) -> list[str]:
    """The tables of one workload group at one budget."""
    mine = [r for r in rows if r.group == group and r.budget == budget]
    if not mine:
        return []
    lines = [
        "Cost: millions of base input tokens of the main model (input side and summarizer; "
        "tokens = bytes / 4), *main* / *cheap* = summarizer at the main model's rate / 5x "
        "cheaper; (ratio to the cheaper of SummarizationMiddleware and drop-oldest).",
        "",
    ]
    body = []
    for r in mine:
        ref_sent = reference_sent(rows, r)
        sent_ratio = r.result.sent_bytes / ref_sent if ref_sent else float("inf")
        cells: list[object] = [
            r.policy,
            f"{r.result.sent_bytes / 1e6:,.1f} ({_fmt_ratio(sent_ratio)})",
        ]
        for style in STYLES:
            main = r.meter.total_cost(style) / 1e6
            cheap = r.meter.total_cost(style, cheap=True) / 1e6
            cells.append(
                f"{main:,.2f} ({_fmt_ratio(cost_ratio(rows, r, style, cheap=False))}) / "
                f"{cheap:,.2f} ({_fmt_ratio(cost_ratio(rows, r, style, cheap=True))})"
            )
        shares = " / ".join(f"{100 * r.meter.cached_share(s):.0f}" for s in STYLES)
        cells.append(f"{shares} %")
        body.append(cells)
    lines += _table(
        [
            "policy",
            "MB sent",
            f"{STYLES[0].name}: main / cheap",
            f"{STYLES[1].name}: main / cheap",
            f"{STYLES[2].name}: main / cheap",
            "cached share (prefix / strict / OpenAI)",
        ],
        body,
    )
    lines += [""]
    body = []
    for r in mine:
        res = r.result
        lint_new = sum(res.lint_new.values())
        body.append(
            [
                r.policy,
                res.handler_calls,
                f"{res.handler_input_bytes / 1e6:,.2f}",
                f"{res.over_budget} ({res.over_budget_forced})",
                f"{res.invalid} / {lint_new}",
                res.last_pair_lost,
                f"{r.meter.prefix_stable:,} / {r.meter.requests:,}",
                r.meter.unstable_without_compaction,
                _minmean(r.facts) if group == "simulated" else "",
                _minmean(r.facts_recall) if group == "simulated" else "",
            ]
        )
    header = [
        "policy",
        "handler calls",
        "handler input MB",
        "turns over budget (forced)",
        "invalid: parse / new lint",
        "newest turn changed",
        "prefix-stable turns",
        "changed without compaction",
    ]
    if group == "simulated":
        header += ["facts present when asked (min / mean)", "with archive + recall"]
        lines += _table(header, body)
    else:
        lines += _table(header, [b[:-2] for b in body])
    return lines


def render_cost(rows: Sequence[Measured], config: CostConfig, seconds: float) -> list[str]:
    """Every table, by budget, as markdown."""
    lines: list[str] = []
    for budget in config.budgets:
        section = render_group(rows, "claude code", budget)
        if section:
            lines += [f"### Claude Code sessions at {budget // KIB} KiB", "", *section, ""]
    section = render_group(rows, "simulated", config.sim_budget)
    if section:
        lines += [
            f"### Simulated loop at {config.sim_budget // KIB} KiB "
            f"(seeds {', '.join(map(str, config.seeds))}, {config.steps} AI turns each)",
            "",
            *section,
            "",
        ]
    lines.append(f"Run time {seconds:,.0f} s.")
    return lines


def check_cost_invariants(rows: Sequence[Measured]) -> list[str]:
    """What the report claims for every run: no invalid output; for policies that
    promise the budget, no turn over it that could fit, the newest turn sent
    unchanged, and no turn without a compaction that changes the previous payload."""
    failures = []
    for r in rows:
        where = f"{r.policy} on {r.group} at {r.budget // KIB} KiB"
        if r.result.invalid:
            failures.append(
                f"{where}: {r.result.invalid} invalid outputs ({r.result.first_invalid})"
            )
        if not r.promises_budget:
            continue
        if r.over_not_forced:
            failures.append(f"{where}: {r.over_not_forced} turns over budget that could fit")
        if r.result.last_pair_lost:
            failures.append(f"{where}: newest turn changed {r.result.last_pair_lost} times")
        if r.meter.unstable_without_compaction:
            failures.append(
                f"{where}: {r.meter.unstable_without_compaction} turns without a compaction "
                "changed the previous payload"
            )
    return failures


# --- the sweep of the clearing settings ------------------------------------------------


def clearing_available() -> bool:
    """Whether this tree's Compactor has the clearing stage (``csum.Clearing``)."""
    try:
        from csum import Clearing  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Setting:
    """One point of the sweep: ``Clearing`` options and Compactor options."""

    label: str
    clearing: dict[str, Any]
    compactor: dict[str, Any] = field(default_factory=dict)

    def spec(self) -> PolicySpec:
        import csum

        clearing: Any = vars(csum)["Clearing"]  # the i25 API; main has none
        return compactor_spec(
            f"Compactor + clearing ({self.label})",
            clearing=clearing(**self.clearing),
            **self.compactor,
        )


@dataclass
class SweepResult:
    tuning: list[str]
    held_out: list[str]
    rows: list[Measured]
    """Tuning half: references, the Compactor before, every setting."""
    chosen: Setting | None
    held_rows: list[Measured]
    """Held-out half: references, before, the chosen setting."""
    settings: list[Setting]
    rule: str = ""
    """Which rule chose (see :func:`choose`)."""


MEMORY_GOAL = 0.49
"""Issue 25's memory goal without an archive: facts present when asked on the simulated
loop (min over seeds) at least the Compactor's of the day the issue was filed (49 %)."""


def memory_floor(rows: Sequence[Measured]) -> float:
    """The memory a setting must reach: :data:`MEMORY_GOAL`, and more than every reference
    policy's on the simulated loop (min over seeds; "remember more than any peer")."""
    peers = [min(r.facts) for r in rows if r.policy in REFERENCES and r.facts]
    return max([MEMORY_GOAL, *(f + 1e-9 for f in peers)])


def _session_memory(rows: Sequence[Measured], name: str, budget: int) -> float:
    """Needed-later memory on the recorded sessions (issue 36's measure)."""
    row = next(
        (r for r in rows if r.policy == name and r.group == "claude code" and r.budget == budget),
        None,
    )
    return row.memory.share if row is not None else 0.0


def _setting_ok(rows: Sequence[Measured], name: str) -> bool:
    """Every invariant kept and, at every budget, needed-later memory on the sessions at
    least drop-oldest's (to 60 %): remembering what the agent reuses, not planted facts
    (the simulated loop's count is retired as the rule, issue 36)."""
    mine = [r for r in rows if r.policy == name]
    budgets = {r.budget for r in mine if r.group == "claude code"}
    return (
        not check_cost_invariants(mine)
        and all(r.result.invalid == 0 for r in mine)
        and all(_session_memory(rows, name, b) >= _session_memory(rows, DROP, b) for b in budgets)
    )


def _least_memory(rows: Sequence[Measured], name: str) -> float:
    budgets = {r.budget for r in rows if r.policy == name and r.group == "claude code"}
    return min((_session_memory(rows, name, b) for b in budgets), default=0.0)


def choose(
    rows: Sequence[Measured], settings: Sequence[Setting], specs: dict[str, PolicySpec]
) -> tuple[Setting | None, str]:
    """The rule: among the settings that keep every invariant, the cheapest (lowest
    worst cost ratio) of those whose needed-later memory on the sessions is at least
    drop-oldest's at every budget; when none is, the best memory among those meeting
    the cost goal (worst <= 0.95x); when none does either, the cheapest. (The defaults
    themselves are chosen by ``--memory --sweep``, docs/cost.md.)"""
    valid = [
        s
        for s in settings
        if not check_cost_invariants([r for r in rows if r.policy == specs[s.label].name])
    ]
    ok = [s for s in valid if _setting_ok(rows, specs[s.label].name)]
    if ok:
        best = min(ok, key=lambda s: sweep_worst(rows, specs[s.label].name))
        return best, "the cheapest that remembers at least what drop-oldest does"
    cheap = [s for s in valid if sweep_worst(rows, specs[s.label].name) <= 0.95]
    if cheap:
        best = max(cheap, key=lambda s: _least_memory(rows, specs[s.label].name))
        return best, (
            "no setting reaches the memory goal: the best memory among those meeting the cost goal"
        )
    if not valid:
        return None, "no setting keeps every invariant"
    best = min(valid, key=lambda s: sweep_worst(rows, specs[s.label].name))
    return best, "no setting meets the memory or the cost goal: the cheapest"


def sweep_worst(rows: Sequence[Measured], name: str) -> float:
    """A setting's largest cost ratio over budgets, styles and summarizer rates."""
    return max(
        (worst_ratio(rows, r) for r in rows if r.policy == name and r.group == "claude code"),
        default=float("inf"),
    )


async def run_sweep(
    config: CostConfig,
    settings: Sequence[Setting],
    progress: Callable[[str], None] | None = None,
) -> SweepResult:
    """Every setting on the tuning half (and the simulated loop, reported); the one
    :func:`choose` picks, then checked once on the held-out half."""
    tuning, held_out = split_sessions(session_names(config))
    base = [s for s in cost_policies() if s.name in (*REFERENCES, BEFORE)]
    specs = {s.label: s.spec() for s in settings}
    sweep_config = CostConfig(**{**config.__dict__, "recall": False})
    rows = await run_cost(
        sweep_config, [*base, *specs.values()], progress, names=tuning, simulated=True
    )
    chosen, rule = choose(rows, settings, specs)
    held_rows: list[Measured] = []
    if chosen is not None and held_out:
        held_rows = await run_cost(
            sweep_config, [*base, specs[chosen.label]], progress, names=held_out, simulated=False
        )
    return SweepResult(tuning, held_out, rows, chosen, held_rows, list(settings), rule)


def render_sweep(result: SweepResult, config: CostConfig) -> list[str]:
    """The sweep's table (tuning half), the choice and the held-out check."""
    names = {s.label: s.spec().name for s in result.settings}
    lines = [
        f"Tuning half ({len(result.tuning)} sessions, sorted by name, even positions): "
        + ", ".join(result.tuning),
        "",
        f"Held-out half ({len(result.held_out)} sessions): " + ", ".join(result.held_out),
        "",
    ]
    header = ["setting", *(f"{budget // KIB} KiB worst cost ratio" for budget in config.budgets)]
    header += [
        "handler input MB (all budgets)",
        "handler calls",
        "invariants",
        "facts present when asked (simulated, min / mean)",
    ]
    body = []
    policies = [BEFORE, *names.values()]
    labels = {v: k for k, v in names.items()}
    for policy in policies:
        mine = [r for r in result.rows if r.policy == policy]
        cells: list[object] = [labels.get(policy, policy)]
        for budget in config.budgets:
            at = [r for r in mine if r.group == "claude code" and r.budget == budget]
            cells.append(_fmt_ratio(worst_ratio(result.rows, at[0])) if at else "-")
        cc = [r for r in mine if r.group == "claude code"]
        sim = [r for r in mine if r.group == "simulated"]
        cells.append(f"{sum(r.result.handler_input_bytes for r in cc) / 1e6:,.2f}")
        cells.append(sum(r.result.handler_calls for r in cc))
        failures = check_cost_invariants(mine)
        cells.append("kept" if not failures else f"**{len(failures)} failed**")
        cells.append(_minmean(sim[0].facts) if sim else "-")
        body.append(cells)
    lines += _table(header, body)
    lines.append("")
    if result.chosen is None:
        lines.append(f"No setting chosen: {result.rule}.")
        return lines
    chosen = result.chosen
    lines += [
        f"Chosen ({result.rule}): **{chosen.label}** "
        f"(`Clearing({', '.join(f'{k}={v!r}' for k, v in chosen.clearing.items())})`"
        + (
            ", " + ", ".join(f"{k}={v!r}" for k, v in chosen.compactor.items())
            if chosen.compactor
            else ""
        )
        + ").",
        "",
        "Held-out half, once:",
        "",
    ]
    held = result.held_rows
    body = []
    for r in held:
        if r.policy in REFERENCES:
            continue
        tune = [
            t for t in result.rows
            if t.policy == r.policy and t.group == "claude code" and t.budget == r.budget
        ]  # fmt: skip
        body.append(
            [
                r.policy,
                f"{r.budget // KIB} KiB",
                *(
                    f"{_fmt_ratio(cost_ratio(held, r, s, cheap=False))} / "
                    f"{_fmt_ratio(cost_ratio(held, r, s, cheap=True))}"
                    for s in STYLES
                ),
                _fmt_ratio(worst_ratio(held, r)),
                _fmt_ratio(worst_ratio(result.rows, tune[0])) if tune else "-",
                f"{r.result.handler_input_bytes / 1e6:,.2f}",
                r.result.handler_calls,
                r.over_not_forced,
            ]
        )
    lines += _table(
        [
            "policy",
            "budget",
            *(f"{s.name} ratio: main / cheap" for s in STYLES),
            "worst (held out)",
            "worst (tuning)",
            "handler input MB",
            "handler calls",
            "over budget, not forced",
        ],
        body,
    )
    return lines


def write_section(doc: Path, marker: str, lines: Sequence[str]) -> None:
    """Replace the text between ``<!-- marker:start -->`` and ``<!-- marker:end -->``."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    text = doc.read_text(encoding="utf-8")
    head, found, rest = text.partition(start)
    if not found:
        raise ValueError(f"{doc} has no {start} marker")
    _, found, tail = rest.partition(end)
    if not found:
        raise ValueError(f"{doc} has no {end} marker")
    body = "\n".join(lines)
    doc.write_text(f"{head}{start}\n{body}\n{end}{tail}", encoding="utf-8")
