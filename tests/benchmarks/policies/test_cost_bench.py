"""The cost benchmark: the prompt-caching arithmetic, the clearing peers, the ratios, and
a small run holding the invariants the report claims."""

from __future__ import annotations

from functools import partial

import anyio
import pytest

from benchmarks.policies.baselines import DropOldest
from benchmarks.policies.clearing_peers import (
    ANTHROPIC_PLACEHOLDER,
    AnthropicClearToolUses,
    LangChainContextEditing,
    NaiveClearing,
    context_editing_available,
)
from benchmarks.policies.cost import (
    ANTHROPIC,
    ANTHROPIC_STRICT,
    OPENAI,
    CacheMeter,
    common_prefix_bytes,
    request_cost,
)
from benchmarks.policies.cost_bench import (
    BEFORE,
    DROP,
    SUMMARIZATION,
    CostConfig,
    Measured,
    PolicySpec,
    Setting,
    check_cost_invariants,
    choose,
    cost_policies,
    cost_ratio,
    render_cost,
    run_cost,
    split_sessions,
)
from benchmarks.policies.harness import RunResult
from benchmarks.policies.peers import CompactorPolicy, langchain_middleware_available
from cast import Message, Role, TextPart, ToolCall

SYSTEM = Message.system("s" * 4000)  # 1,000 tokens
HUMAN = Message.human("h" * 4096)  # 1,024 tokens
CALL = Message.ai("", ToolCall(id="c1", name="ls", arguments="{}"))  # 6 bytes
RESULT = Message.tool("c1", "ls", "x" * 1996)  # 2,000 bytes: 500 tokens
CLEARED = Message.tool("c1", "ls", "y" * 96)  # 100 bytes
ANSWER = Message.ai("z" * 400)  # 100 tokens


def test_message_sizes_of_the_example() -> None:
    assert [m.size for m in (SYSTEM, HUMAN, CALL, RESULT, CLEARED, ANSWER)] == [
        4000,
        4096,
        6,
        2000,
        100,
        400,
    ]


def test_prices_three_requests_by_hand() -> None:
    meter = CacheMeter()
    first = [SYSTEM, HUMAN]  # 2,024 tokens, nothing cached: all written
    second = [*first, CALL, RESULT]  # 2,525.5 tokens, 2,024 cached
    third = [SYSTEM, HUMAN, CALL, CLEARED, ANSWER]  # 2,150.5 tokens, the result changed
    meter.add(first, changed=False)
    meter.add(second, changed=False)
    meter.add(third, changed=False)
    # Anthropic prefix: 1.25 * 2024; 0.1 * 2024 + 1.25 * 501.5; 0.1 * 2025.5 + 1.25 * 125
    assert meter.input_cost[ANTHROPIC.name] == pytest.approx(2530 + 829.275 + 358.8)
    # strict blocks: the third request could only read the system prompt, whose 1,000
    # tokens are under the 1,024-token minimum: all of it is written (1.25 * 2150.5)
    assert meter.input_cost[ANTHROPIC_STRICT.name] == pytest.approx(2530 + 829.275 + 2688.125)
    # OpenAI: no write premium; hits in 128-token steps (2,024 -> 1,920; 2,025.5 -> 1,920)
    assert meter.input_cost[OPENAI.name] == pytest.approx(2024 + 797.5 + 422.5)
    assert meter.cached_tokens[ANTHROPIC.name] == pytest.approx(2024 + 2025.5)
    assert meter.cached_share(ANTHROPIC) == pytest.approx(4049.5 / 6700)
    assert meter.prefix_stable == 1
    assert meter.unstable_without_compaction == 1  # the third said "no change"


def test_summarizer_prices_and_the_cheaper_model() -> None:
    meter = CacheMeter()
    meter.summarizer(4000, 400)  # 1,000 tokens in, 100 out
    assert meter.total_cost(ANTHROPIC) == pytest.approx(1000 + 5 * 100)
    assert meter.total_cost(ANTHROPIC, cheap=True) == pytest.approx(300)
    assert meter.total_cost(OPENAI) == pytest.approx(1000 + 8 * 100)


def test_small_requests_are_not_cached_and_prefix_stops_at_a_changed_block() -> None:
    assert request_cost(1000, 1000, ANTHROPIC) == 1000
    assert request_cost(1000, 1000, OPENAI) == 1000
    assert request_cost(2000, 1000, OPENAI) == 2000  # 1,000 cached tokens: under 1,024
    two_parts = Message(role=Role.HUMAN, parts=(TextPart(text="a" * 10), TextPart(text="b" * 10)))
    changed = Message(role=Role.HUMAN, parts=(TextPart(text="a" * 10), TextPart(text="c" * 10)))
    assert common_prefix_bytes([SYSTEM, two_parts], [SYSTEM, changed]) == 4010


def _measured(policy: str, cost: float) -> Measured:
    meter = CacheMeter()
    meter.input_cost = {s.name: cost for s in (ANTHROPIC, ANTHROPIC_STRICT, OPENAI)}
    return Measured(policy, "g", 1024, RunResult(policy, "w", 1024), meter)


def test_ratios_are_to_the_cheaper_reference() -> None:
    rows = [_measured(SUMMARIZATION, 200.0), _measured(DROP, 160.0), _measured(BEFORE, 240.0)]
    assert cost_ratio(rows, rows[2], ANTHROPIC, cheap=False) == pytest.approx(1.5)
    assert cost_ratio(rows, rows[1], OPENAI, cheap=True) == pytest.approx(1.0)
    assert cost_ratio(rows, rows[0], OPENAI, cheap=True) == pytest.approx(1.25)


def test_sessions_split_by_sorted_name() -> None:
    assert split_sessions(["d", "a", "c", "b", "e"]) == (["a", "c", "e"], ["b", "d"])


def _chain(pairs: int, start: int = 0) -> list[Message]:
    out: list[Message] = []
    for i in range(start, start + pairs):
        out += [
            Message.ai("", ToolCall(id=f"c{i}", name="grep" if i == 0 else "ls")),
            Message.tool(f"c{i}", "grep" if i == 0 else "ls", f"{i}" * 400),
        ]
    return out


def _results(messages: list[Message]) -> list[str]:
    return [m.tool_results[0].content for m in messages if m.tool_results]


def test_clear_tool_uses_emulation_keeps_the_newest_and_the_full_history() -> None:
    chain = [SYSTEM.model_copy(), Message.human("go"), *_chain(5)]
    policy = AnthropicClearToolUses(2000)  # trigger 500 tokens
    out, step = anyio.run(policy.apply, chain)
    assert step.changed
    assert _results(out)[:2] == [ANTHROPIC_PLACEHOLDER] * 2
    assert _results(out)[2:] == [f"{i}" * 400 for i in (2, 3, 4)]
    # The next request gets the edited payload back: the originals are restored, so
    # one more result is cleared and the older placeholders are the same objects.
    again, _ = anyio.run(policy.apply, [*out, *_chain(1, start=5)])
    assert _results(again)[:3] == [ANTHROPIC_PLACEHOLDER] * 3
    assert again[3] is out[3]
    assert _results(again)[3:] == [f"{i}" * 400 for i in (3, 4, 5)]
    quiet = AnthropicClearToolUses(10**6)  # under the trigger: nothing cleared
    assert anyio.run(quiet.apply, chain)[0] == chain
    greedy = AnthropicClearToolUses(2000, clear_at_least=10**5)  # cannot clear that much
    assert anyio.run(greedy.apply, chain)[0] == chain
    spared = AnthropicClearToolUses(2000, exclude_tools=["grep"])
    assert _results(anyio.run(spared.apply, chain)[0])[:2] == ["0" * 400, ANTHROPIC_PLACEHOLDER]
    inputs = AnthropicClearToolUses(2000, clear_tool_inputs=True)
    inputs_out = anyio.run(inputs.apply, chain)[0]
    assert inputs_out[2].tool_calls[0].arguments == "{}"


def test_naive_clearing_clears_from_the_first_turn() -> None:
    chain = [Message.human("go"), *_chain(4)]
    out, _ = anyio.run(NaiveClearing(10**6).apply, chain)
    assert _results(out) == [ANTHROPIC_PLACEHOLDER, "1" * 400, "2" * 400, "3" * 400]


@pytest.mark.skipif(not context_editing_available(), reason="langchain is not installed")
def test_langchain_context_editing_clears_through_the_real_middleware() -> None:
    chain = [SYSTEM.model_copy(), Message.human("go"), *_chain(5)]
    policy = LangChainContextEditing(2000)
    out, step = anyio.run(policy.apply, chain)
    assert step.changed
    assert out[0] is chain[0]
    assert _results(out) == ["[cleared]", "[cleared]", *(f"{i}" * 400 for i in (2, 3, 4))]


def test_drop_oldest_with_hysteresis_lands_on_the_target() -> None:
    chain = [Message.system("be brief"), Message.human("go"), *_chain(30)]
    budget = 8000
    assert sum(m.size for m in chain) > budget
    out, step = anyio.run(DropOldest(budget, target_ratio=0.6).apply, chain)
    assert step.changed
    assert sum(m.size for m in out) <= 0.6 * budget
    assert out[-2:] == chain[-2:]
    with pytest.raises(ValueError, match="target_ratio"):
        DropOldest(budget, target_ratio=0)


@pytest.mark.skipif(
    not langchain_middleware_available(),
    reason="the reference policy (SummarizationMiddleware) needs langchain: pip install '.[bench]'",
)
def test_a_small_run_holds_what_the_report_claims() -> None:
    config = CostConfig(budgets=(), steps=150, seeds=(3,), sim_budget=12 * 1024, recall=True)
    rows = anyio.run(partial(run_cost, config, cost_policies(), None))
    assert {r.policy for r in rows} >= {SUMMARIZATION, DROP, BEFORE}
    assert check_cost_invariants(rows) == []
    by_name = {r.policy: r for r in rows}
    for row in rows:
        assert row.meter.requests == row.result.turns
        assert row.meter.prefix_stable <= row.meter.requests
        assert len(row.facts) == 1
    before = by_name[BEFORE]
    assert before.result.handler_calls > 0  # the loop is long enough to compact
    assert before.over_not_forced == 0
    assert before.facts_recall
    assert before.facts_recall[0] >= before.facts[0]
    naive = by_name["naive clearing (every turn, keep 3)"]
    assert naive.meter.prefix_stable < before.meter.prefix_stable
    for style in (ANTHROPIC, ANTHROPIC_STRICT, OPENAI):
        for cheap in (False, True):
            refs = [cost_ratio(rows, by_name[n], style, cheap=cheap) for n in (SUMMARIZATION, DROP)]
            assert min(refs) == pytest.approx(1.0)
    report = "\n".join(render_cost(rows, config, 1.0))
    assert "### Simulated loop at 12 KiB" in report
    assert all(f"| {name} |" in report for name in by_name)


def _row(policy: str, group: str, cost: float, facts: float = 0.0, memory: float = 0.0) -> Measured:
    from benchmarks.policies.needed import NeededMemory

    row = _measured(policy, cost)
    row.group = group
    row.facts = [facts] if group == "simulated" else []
    row.memory = NeededMemory(needed=100, remembered=round(100 * memory))
    return row


def test_the_sweep_picks_the_cheapest_at_forgettings_memory_else_the_best_memory_in_goal() -> None:
    cheap, kept = Setting("cheap", {}), Setting("kept", {})
    specs = {
        "cheap": PolicySpec("Compactor + clearing (cheap)", DropOldest),
        "kept": PolicySpec("Compactor + clearing (kept)", DropOldest),
    }
    base = [_row(SUMMARIZATION, "claude code", 100.0, memory=0.9)]
    rows = [
        *base,
        _row(DROP, "claude code", 120.0, memory=0.5),
        _row(specs["cheap"].name, "claude code", 80.0, memory=0.4),
        _row(specs["kept"].name, "claude code", 90.0, memory=0.7),
        _row(specs["kept"].name, "simulated", 1, 0.1),  # planted facts: no longer the rule
    ]
    chosen, rule = choose(rows, [cheap, kept], specs)
    assert chosen == kept
    assert rule == "the cheapest that remembers at least what drop-oldest does"
    rows[1] = _row(DROP, "claude code", 120.0, memory=0.8)
    chosen, rule = choose(rows, [cheap, kept], specs)
    assert chosen == kept  # both meet the cost goal; "kept" remembers more
    assert rule.startswith("no setting reaches the memory goal")


def test_the_memory_floor_is_the_goal_and_above_every_peer() -> None:
    from benchmarks.policies.cost_bench import MEMORY_GOAL, memory_floor

    low = [_row(SUMMARIZATION, "simulated", 1, 0.40), _row(DROP, "simulated", 1, 0.45)]
    assert memory_floor(low) == MEMORY_GOAL == 0.49
    high = [_row(SUMMARIZATION, "simulated", 1, 0.448), _row(DROP, "simulated", 1, 0.5)]
    assert 0.5 < memory_floor(high) < 0.5001  # strictly more than the best peer


def test_the_low_cost_preset_builds_as_a_policy() -> None:
    # LOW_COST gives keep_ratio; the benchmark's Compactor policy once took a keep ratio
    # of its own and passed both, so every full cost run failed on it.
    from benchmarks.policies.cost_main import low_cost_setting
    from benchmarks.policies.peers import CompactorPolicy
    from csum.config import LOW_COST

    setting = low_cost_setting()
    assert setting is not None
    policy = setting.spec().make(64 * 1024)
    assert isinstance(policy, CompactorPolicy)
    assert policy.compactor.keep_ratio == LOW_COST.keep_ratio
    assert CompactorPolicy(1024, policy.handler, keep_ratio=0.2).compactor.keep_ratio == 0.2


def test_the_compactor_rows_are_built_with_the_settings_they_name() -> None:
    """The "before" row is the summary stage alone at the former defaults whatever the
    Compactor's defaults are, and the LOW_COST row is the preset (it passed keep_ratio
    beside the policy's own keep ratio: a TypeError)."""
    from benchmarks.policies.cost_bench import compactor_spec
    from benchmarks.policies.cost_main import low_cost_setting
    from csum import Compactor
    from csum.config import LOW_COST, SUMMARY_ONLY

    def settings(compactor: Compactor) -> dict[str, object]:
        return {
            "clearing": compactor.clearing,
            "keep_ratio": compactor.keep_ratio,
            "summary_ratio": compactor.summary_ratio,
        }

    before = compactor_spec(BEFORE).make(64 * 1024)
    assert isinstance(before, CompactorPolicy)
    assert settings(before.compactor) == {
        k: getattr(SUMMARY_ONLY, k) for k in settings(before.compactor)
    }
    low = low_cost_setting()
    assert low is not None
    policy = low.spec().make(64 * 1024)
    assert isinstance(policy, CompactorPolicy)
    assert settings(policy.compactor) == {
        k: getattr(LOW_COST, k) for k in settings(policy.compactor)
    }
    # the former defaults compact at the budget, LOW_COST from its own trigger
    assert before.compactor.trigger == 64 * 1024
    assert policy.compactor.trigger == int(64 * 1024 * LOW_COST.trigger)
