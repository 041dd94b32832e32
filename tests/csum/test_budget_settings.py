"""The Compactor's budget group (issue 26 item 3): ``trigger``, ``keep_ratio``,
``summary_ratio``, ``summary_reserve``, ``max_depth`` and ``cooldown_turns`` are settings
of the :class:`~csum.Budget`, checked when it is made; the loose keywords still work for
one release with a ``DeprecationWarning`` and mean the same; the presets are values
combined in the new style; the library's own callers use the new spelling."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import Message
from csum import Budget, Compactor
from csum.cli import main
from csum.config import (
    DEFAULT_COOLDOWN_TURNS,
    DEFAULT_KEEP_RATIO,
    DEFAULT_MAX_DEPTH,
    DEFAULT_RESERVE_RATIO,
    DEFAULT_SUMMARY_RATIO,
    DEFAULT_TRIGGER,
    LONG_MEMORY,
    LOW_COST,
    Clearing,
    Preset,
    as_budget,
)
from csum.integrations import HistoryHook
from csum.serve import ServeConfig
from csum.serve.apis import APIS
from csum.serve.compaction import OutcomeKind, Rewriter
from csum.stores import MemoryStore

SETTINGS = (
    "trigger",
    "keep_ratio",
    "summary_ratio",
    "summary_reserve",
    "max_depth",
    "cooldown_turns",
)


async def summarize(prompt: str) -> str:
    return "the agent read the files; the fix is in the loader"


def chain(turns: int = 16, size: int = 500) -> list[Message]:
    out = [Message.system("You are terse.")]
    for turn in range(turns):
        out.append(Message.human(f"question {turn}: " + "q" * size))
        out.append(Message.ai(f"answer {turn}: " + "a" * size))
    return out


# -- Budget: every setting has its real default ---------------------------------------


def test_a_budget_without_settings_holds_the_defaults() -> None:
    plain = Budget(4096)
    assert plain == Budget.bytes(4096) == as_budget(4096) == as_budget("4KiB")
    assert hash(plain) == hash(Budget.bytes(4096))
    assert repr(plain) == "Budget(limit=4096, unit='bytes')"
    assert str(plain) == "4,096 bytes"
    assert Budget(100, "tokens") == Budget.tokens(100) == as_budget("100 tokens")
    assert plain.settings() == {}
    assert (plain.trigger, plain.keep_ratio, plain.summary_ratio, plain.summary_reserve) == (
        DEFAULT_TRIGGER,
        DEFAULT_KEEP_RATIO,
        DEFAULT_SUMMARY_RATIO,
        DEFAULT_RESERVE_RATIO,
    )
    assert (plain.max_depth, plain.cooldown_turns) == (DEFAULT_MAX_DEPTH, DEFAULT_COOLDOWN_TURNS)
    # the units the Compactor reads, from the budget alone
    assert plain.trigger_units() == int(4096 * DEFAULT_TRIGGER)
    assert plain.keep_units() == int(4096 * DEFAULT_KEEP_RATIO)
    assert plain.reserve_units() == int(4096 * max(DEFAULT_RESERVE_RATIO, DEFAULT_SUMMARY_RATIO))
    # a keep ratio above the trigger keeps what the trigger allows
    assert Budget(4096, trigger=0.5, keep_ratio=0.9).keep_units() == 2048


def test_settings_are_keyword_only_shown_in_repr_and_part_of_equality() -> None:
    with pytest.raises(TypeError):
        Budget(4096, "bytes", 0.5)  # type: ignore[misc]
    tuned = Budget.tokens(64_000, keep_ratio=0.4, max_depth=None)
    assert repr(tuned) == "Budget(limit=64000, unit='tokens', keep_ratio=0.4, max_depth=None)"
    assert tuned.settings() == {"keep_ratio": 0.4, "max_depth": None}
    assert tuned != Budget.tokens(64_000)
    assert as_budget(tuned) is tuned
    assert as_budget("32KiB").evolve(keep_ratio=0.3) == Budget.bytes(32768, keep_ratio=0.3)
    of_model = Budget.of_model("gpt-4o", 0.5, summary_ratio=1 / 16)
    assert of_model == Budget.tokens(64_000, summary_ratio=1 / 16)


@pytest.mark.parametrize(
    ("field", "value", "error", "needle"),
    [
        ("trigger", True, TypeError, "Budget.trigger must be a number"),
        ("trigger", "0.5", TypeError, "Budget.trigger must be a number"),
        ("trigger", None, TypeError, "Budget.trigger must be a number"),
        ("trigger", 1.5, ValueError, r"Budget.trigger must be within \(0, 1\]"),
        ("trigger", 0.0, ValueError, r"Budget.trigger must be within \(0, 1\]"),
        ("trigger", 5000, ValueError, r"Budget.trigger must be within \(0, 1\] \(a share"),
        ("keep_ratio", "0.3", TypeError, "Budget.keep_ratio must be a number"),
        ("keep_ratio", True, TypeError, "Budget.keep_ratio must be a number"),
        ("keep_ratio", 0, ValueError, r"Budget.keep_ratio must be within \(0, 1\]"),
        ("keep_ratio", float("nan"), ValueError, "Budget.keep_ratio must be within"),
        ("summary_ratio", [0.1], TypeError, "Budget.summary_ratio must be a number"),
        ("summary_ratio", 0.6, ValueError, r"Budget.summary_ratio must be within \(0, 0.5\]"),
        ("summary_reserve", None, TypeError, "Budget.summary_reserve must be a number"),
        ("summary_reserve", -0.1, ValueError, r"Budget.summary_reserve must be within \[0, 0.5\]"),
        ("summary_reserve", 1000, ValueError, r"Budget.summary_reserve must be within \[0, 0.5\]"),
        ("max_depth", 2.0, TypeError, "Budget.max_depth must be an int or None"),
        ("max_depth", 0, ValueError, "Budget.max_depth must be at least 1"),
        ("cooldown_turns", None, TypeError, "Budget.cooldown_turns must be an int"),
        ("cooldown_turns", -1, ValueError, "Budget.cooldown_turns must be >= 0"),
    ],
)
def test_every_bad_setting_is_refused_naming_its_field(
    field: str, value: Any, error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle):
        Budget(4096, **{field: value})
    with pytest.raises(error, match=needle):
        Budget(4096).evolve(**{field: value})
    with pytest.raises(error, match=needle):
        Compactor(summarize, budget=Budget(4096).evolve(**{field: value}))


def test_an_unknown_setting_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="keep_rate"):
        Budget(4096, keep_rate=0.3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="keep_rate"):
        Budget(4096).evolve(keep_rate=0.3)


# -- the Compactor reads its settings from the budget ----------------------------------


def test_the_grouped_form_sets_the_compactor() -> None:
    keeper = Compactor(
        summarize,
        budget=Budget(
            32768,
            trigger=0.9,
            keep_ratio=0.3,
            summary_ratio=1 / 16,
            summary_reserve=0.1,
            max_depth=None,
            cooldown_turns=2,
        ),
    )
    assert keeper.trigger == int(32768 * 0.9)
    assert keeper.keep_ratio == 0.3
    assert keeper.keep_units == int(32768 * 0.3)
    assert keeper.summary_ratio == 1 / 16
    assert keeper.summary_reserve == int(32768 * 0.1)
    assert keeper.max_depth is None
    assert keeper.cooldown_turns == 2


@pytest.mark.parametrize("budget", [4096, "4KiB", Budget(4096), Budget.bytes(4096)])
def test_a_size_is_the_limit_with_the_defaults_read_from_the_constants(budget: Any) -> None:
    keeper = Compactor(summarize, budget=budget)
    assert keeper.budget == Budget(4096)
    assert keeper.trigger == Budget(4096).scaled(DEFAULT_TRIGGER)
    assert keeper.keep_ratio == DEFAULT_KEEP_RATIO
    assert keeper.summary_ratio == DEFAULT_SUMMARY_RATIO
    reserve = Budget(4096).scaled(max(DEFAULT_RESERVE_RATIO, DEFAULT_SUMMARY_RATIO))
    assert keeper.summary_reserve == reserve
    assert keeper.max_depth == DEFAULT_MAX_DEPTH
    assert keeper.cooldown_turns == DEFAULT_COOLDOWN_TURNS


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    """Any valid budget: a limit, a unit and any of the six settings."""
    optional: dict[str, st.SearchStrategy[Any]] = {
        "trigger": st.floats(0.01, 1.0),
        "keep_ratio": st.floats(0.01, 1.0),
        "summary_ratio": st.floats(1 / 128, 0.5),
        "summary_reserve": st.floats(0.0, 0.5),
        "max_depth": st.one_of(st.none(), st.integers(1, 5)),
        "cooldown_turns": st.integers(0, 6),
    }
    settings = draw(st.fixed_dictionaries({}, optional=optional))
    unit = draw(st.sampled_from(["bytes", "tokens"]))
    return Budget(draw(st.integers(1000, 1 << 24)), unit, **settings)


@given(budget=budgets())
def test_the_compactor_reads_every_size_from_its_budget(budget: Budget) -> None:
    """Law: the keeper's sizes are the budget's own (no default applied elsewhere), and
    a budget rebuilt from its repr-visible settings is the same budget."""
    keeper = Compactor(summarize, budget=budget)
    assert keeper.budget is budget
    assert keeper.trigger == budget.trigger_units() == budget.scaled(budget.trigger)
    assert keeper.keep_units == budget.keep_units() <= keeper.trigger
    assert keeper.summary_reserve == budget.reserve_units()
    assert keeper.summary_reserve >= budget.scaled(budget.summary_ratio)
    assert (keeper.keep_ratio, keeper.summary_ratio) == (budget.keep_ratio, budget.summary_ratio)
    assert (keeper.max_depth, keeper.cooldown_turns) == (budget.max_depth, budget.cooldown_turns)
    assert Budget(budget.limit, budget.unit, **budget.settings()) == budget


def test_a_budget_too_small_for_its_default_reserve_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"Budget\.summary_reserve leaves no room"):
        Compactor(summarize, budget=1)


# -- presets ---------------------------------------------------------------------------


def test_presets_are_budget_settings_and_a_clearing_stage() -> None:
    assert LOW_COST.budget("128KiB") == Budget.bytes(
        131072, trigger=0.85, keep_ratio=0.3, summary_ratio=1 / 64
    )
    assert LOW_COST.clearing == Clearing(keep=10)
    assert LONG_MEMORY.budget(Budget.tokens(64_000)) == Budget.tokens(
        64_000, trigger=1.0, keep_ratio=0.6, summary_ratio=7 / 16, max_depth=None
    )
    assert LONG_MEMORY.clearing is None  # the summary stage it was measured with
    # the preset's settings take the place of the budget's own; the rest are kept
    assert LOW_COST.budget(Budget(8000, keep_ratio=0.2, cooldown_turns=1)) == Budget(
        8000, trigger=0.85, keep_ratio=0.3, summary_ratio=1 / 64, cooldown_turns=1
    )
    assert LOW_COST.budget(8000).evolve(keep_ratio=0.2).keep_ratio == 0.2
    assert dataclasses.replace(LOW_COST, clearing=None).clearing is None


def test_a_preset_checks_its_settings_naming_them() -> None:
    with pytest.raises(ValueError, match=r"Budget\.summary_ratio must be within"):
        Preset("BAD", None, trigger=1.0, keep_ratio=0.5, summary_ratio=0.9)
    with pytest.raises(TypeError, match=r"Preset\.clearing must be a csum\.Clearing"):
        Preset("BAD", "on", trigger=1.0, keep_ratio=0.5, summary_ratio=0.1)  # type: ignore[arg-type]


# -- the library's own callers use the new spelling -----------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--low-cost",),
        ("--keep-ratio", "0.3", "--summary-ratio", "0.05"),
        ("--low-cost", "--keep-ratio", "0.2", "--clear-keep", "4"),
    ],
)
def test_the_cli_builds_its_compactor_from_its_flags(flags: tuple[str, ...]) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["summarize", "--example", "--budget", "40KiB", "-q", *flags], stdout=out, stderr=err
    )
    assert code == 0, err.getvalue()


@pytest.mark.anyio
async def test_the_gateway_builds_its_keepers_from_its_config() -> None:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Read every file."},
    ]
    for i in range(30):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        items.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i} " * 80})
    payload = json.dumps({"model": "gpt-4o", "messages": items}).encode()
    sizes: list[int] = []
    for keep_ratio in (0.3, 0.15):
        config = ServeConfig(
            upstream="http://127.0.0.1:9", budget=Budget.bytes(16384), keep_ratio=keep_ratio
        )
        outcome = await Rewriter(config, MemoryStore()).rewrite(APIS[0], payload, None)
        assert outcome.kind is OutcomeKind.COMPACTED
        assert outcome.body is not None
        sizes.append(len(outcome.body))
    assert sizes[1] < sizes[0]  # the config's keep_ratio is the keepers'


def test_every_budget_setting_is_a_field_with_a_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Budget)}
    assert set(SETTINGS) <= set(fields)
    assert all(fields[name].kw_only for name in SETTINGS)


def test_a_framework_hook_given_a_budget_passes_its_settings_to_its_keeper() -> None:
    budget = Budget.tokens(64_000, keep_ratio=0.3, max_depth=None)
    hook = HistoryHook(summarize, budget=budget)
    keeper = hook.keeper
    assert isinstance(keeper, Compactor)
    assert keeper.budget is budget
    assert (keeper.keep_ratio, keeper.max_depth) == (0.3, None)


def test_the_cost_benchmark_runs_the_low_cost_preset_with_its_own_keep_ratio() -> None:
    """``--cost`` runs LOW_COST: its policy once got both its ``keep_ratio`` and the
    default keep ratio and failed with a TypeError before any figure."""
    from benchmarks.policies.cost_main import low_cost_setting

    setting = low_cost_setting()
    assert setting is not None
    policy: Any = setting.spec().make(65536)
    keeper = policy.compactor
    assert keeper.budget == LOW_COST.budget(65536)
    assert (keeper.keep_ratio, keeper.summary_ratio) == (LOW_COST.keep_ratio, 1 / 64)
    assert keeper.clearing == LOW_COST.clearing
