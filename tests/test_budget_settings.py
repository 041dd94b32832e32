"""The Compactor's budget group (issue 26 item 3): ``trigger``, ``keep_ratio``,
``summary_ratio``, ``summary_reserve``, ``max_depth`` and ``cooldown_turns`` are settings
of the :class:`~csum.Budget`, checked when it is made; the loose keywords still work for
one release with a ``DeprecationWarning`` and mean the same; the presets are values
combined in the new style; the library's own callers use the new spelling."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cast import Message
from cast.chainio import decode_chain
from conftest import TAUBENCH, corpus_files
from csum import Budget, Compactor
from csum.budget import DEFAULT_COOLDOWN_TURNS, DEFAULT_MAX_DEPTH, as_budget
from csum.clearing import DEFAULT_CLEARING, Clearing
from csum.cli import main
from csum.compactor import (
    DEFAULT_RESERVE_RATIO,
    DEFAULT_SUMMARY_RATIO,
    DEFAULT_TARGET_RATIO,
    DEFAULT_TRIGGER,
    LONG_MEMORY,
    LOW_COST,
)
from csum.integrations import HistoryHook
from csum.presets import Preset
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


@contextmanager
def no_deprecation_from_csum() -> Iterator[None]:
    """Any DeprecationWarning attributed to a csum module (the library calling an old
    spelling of its own) is an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=DeprecationWarning, module=r"csum(\.|$)")
        yield


# -- Budget: existing behaviour kept ---------------------------------------------------


def test_a_budget_without_settings_is_the_budget_it_always_was() -> None:
    plain = Budget(4096)
    assert plain == Budget.bytes(4096) == as_budget(4096) == as_budget("4KiB")
    assert hash(plain) == hash(Budget.bytes(4096))
    assert repr(plain) == "Budget(limit=4096, unit='bytes')"
    assert str(plain) == "4,096 bytes"
    assert Budget(100, "tokens") == Budget.tokens(100) == as_budget("100 tokens")
    assert plain.settings() == {}
    assert (plain.trigger, plain.keep_ratio, plain.summary_ratio) == (None, None, None)
    assert (plain.max_depth, plain.cooldown_turns) == (DEFAULT_MAX_DEPTH, DEFAULT_COOLDOWN_TURNS)


def test_settings_are_keyword_only_shown_in_repr_and_part_of_equality() -> None:
    with pytest.raises(TypeError):
        Budget(4096, "bytes", 0.5)  # type: ignore[misc]
    tuned = Budget.tokens(64_000, keep_ratio=0.3, max_depth=None)
    assert repr(tuned) == "Budget(limit=64000, unit='tokens', keep_ratio=0.3, max_depth=None)"
    assert tuned.settings() == {"keep_ratio": 0.3, "max_depth": None}
    assert tuned != Budget.tokens(64_000)
    assert as_budget(tuned) is tuned
    assert as_budget("32KiB").evolve(keep_ratio=0.3) == Budget.bytes(32768, keep_ratio=0.3)
    of_model = Budget.of_model("gpt-4o", 0.5, summary_ratio=1 / 16)
    assert of_model == Budget.tokens(64_000, summary_ratio=1 / 16)


@pytest.mark.parametrize(
    ("field", "value", "error", "needle"),
    [
        ("trigger", True, TypeError, "Budget.trigger must be None, a share"),
        ("trigger", "0.5", TypeError, "Budget.trigger must be None, a share"),
        ("trigger", 1.5, ValueError, r"Budget.trigger as a share must be within \(0, 1\]"),
        ("trigger", 0.0, ValueError, "Budget.trigger as a share"),
        ("trigger", 5000, ValueError, "Budget.trigger must be within 1..4096 bytes"),
        ("keep_ratio", "0.3", TypeError, "Budget.keep_ratio must be a number"),
        ("keep_ratio", True, TypeError, "Budget.keep_ratio must be a number"),
        ("keep_ratio", 0, ValueError, r"Budget.keep_ratio must be within \(0, 1\]"),
        ("keep_ratio", float("nan"), ValueError, "Budget.keep_ratio must be within"),
        ("summary_ratio", [0.1], TypeError, "Budget.summary_ratio must be a number"),
        ("summary_ratio", 0.6, ValueError, r"Budget.summary_ratio must be within \(0, 0.5\]"),
        ("summary_reserve", 1.5, TypeError, "Budget.summary_reserve must be an int"),
        ("summary_reserve", -1, ValueError, "Budget.summary_reserve must be within 0..4095"),
        ("summary_reserve", 4096, ValueError, "Budget.summary_reserve must be within 0..4095"),
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
    with no_deprecation_from_csum():
        keeper = Compactor(
            summarize,
            budget=Budget(
                32768,
                trigger=0.9,
                keep_ratio=0.3,
                summary_ratio=1 / 16,
                summary_reserve=1000,
                max_depth=None,
                cooldown_turns=2,
            ),
        )
    assert keeper.trigger == int(32768 * 0.9)
    assert keeper.keep_ratio == 0.3
    assert keeper.keep_units == int(32768 * 0.3)
    assert keeper.summary_ratio == 1 / 16
    assert keeper.summary_reserve == 1000
    assert keeper.max_depth is None
    assert keeper.cooldown_turns == 2


@pytest.mark.parametrize("budget", [4096, "4KiB", Budget(4096), Budget.bytes(4096)])
def test_a_size_is_the_limit_with_the_defaults_read_from_the_constants(budget: Any) -> None:
    with no_deprecation_from_csum():
        keeper = Compactor(summarize, budget=budget)
    assert keeper.budget == Budget(4096)
    assert keeper.trigger == Budget(4096).scaled(DEFAULT_TRIGGER)
    assert keeper.keep_ratio == DEFAULT_TARGET_RATIO
    assert keeper.summary_ratio == DEFAULT_SUMMARY_RATIO
    reserve = Budget(4096).scaled(max(DEFAULT_RESERVE_RATIO, DEFAULT_SUMMARY_RATIO))
    assert keeper.summary_reserve == reserve
    assert keeper.max_depth == DEFAULT_MAX_DEPTH
    assert keeper.cooldown_turns == DEFAULT_COOLDOWN_TURNS


def test_a_budget_too_small_for_its_default_reserve_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"Budget\.summary_reserve must be within 0\.\.0"):
        Compactor(summarize, budget=1)


LOOSE = [
    ("trigger", 0.8),
    ("keep_ratio", 0.3),
    ("summary_ratio", 1 / 16),
    ("summary_reserve", 500),
    ("max_depth", None),
    ("cooldown_turns", 1),
]


@pytest.mark.parametrize(("name", "value"), LOOSE, ids=[name for name, _ in LOOSE])
def test_each_loose_keyword_warns_naming_the_budget_spelling(name: str, value: Any) -> None:
    needle = rf"Compactor\({name}=\.\.\.\) is deprecated.*budget=Budget\(limit, {name}=\.\.\.\)"
    with pytest.warns(DeprecationWarning, match=needle):
        old = Compactor(summarize, budget=8000, **{name: value})
    new = Compactor(summarize, budget=Budget(8000, **{name: value}))
    assert old.budget == new.budget == Budget(8000, **{name: value})
    assert getattr(old, name if name != "trigger" else "trigger") == getattr(new, name)


def test_target_ratio_warns_as_keep_ratio_of_the_budget() -> None:
    with pytest.warns(DeprecationWarning, match=r"Compactor\(target_ratio=\.\.\.\).*keep_ratio="):
        old = Compactor(summarize, budget=8000, target_ratio=0.4)
    assert old.budget == Budget(8000, keep_ratio=0.4)
    with pytest.raises(TypeError, match="not both keep_ratio= and its old spelling"):
        Compactor(summarize, budget=8000, target_ratio=0.4, keep_ratio=0.4)


def test_a_loose_keyword_the_budget_also_sets_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"keep_ratio= given both beside budget= and inside"):
        Compactor(summarize, budget=Budget(8000, keep_ratio=0.3), keep_ratio=0.5)
    with pytest.raises(TypeError, match=r"keep_ratio= given both"):
        Compactor(summarize, budget=Budget(8000, keep_ratio=0.3), target_ratio=0.5)
    with pytest.raises(TypeError, match=r"max_depth= given both"):
        Compactor(summarize, budget=Budget(8000, max_depth=None), max_depth=5)


def test_a_loose_keyword_beside_other_settings_joins_them_with_a_warning() -> None:
    budget = Budget(8000, keep_ratio=0.3)
    with pytest.warns(DeprecationWarning, match="summary_ratio"):
        keeper = Compactor(summarize, budget=budget, summary_ratio=1 / 8)
    assert keeper.budget == Budget(8000, keep_ratio=0.3, summary_ratio=1 / 8)
    assert budget == Budget(8000, keep_ratio=0.3)  # the caller's budget is not changed


def test_a_bad_loose_value_still_names_its_field() -> None:
    with (
        pytest.raises(ValueError, match=r"Budget\.keep_ratio must be within"),
        pytest.warns(DeprecationWarning, match=r"Compactor\(keep_ratio=\.\.\.\)"),
    ):
        Compactor(summarize, budget=8000, keep_ratio=2)


# -- the same output, old spelling and new (Hypothesis) -------------------------------


def corpus_chain() -> list[Message]:
    files = corpus_files(TAUBENCH)
    if not files:
        pytest.skip("shared corpus not found next to the repository")
    messages, _ = decode_chain(json.loads(files[0].read_text()), None)
    return messages


@st.composite
def loose_settings(draw: st.DrawFn) -> tuple[int, dict[str, Any]]:
    limit = draw(st.integers(6_000, 30_000))  # the chain is 32,940 bytes: it compacts
    optional: dict[str, st.SearchStrategy[Any]] = {
        "trigger": st.one_of(st.none(), st.floats(0.3, 1.0), st.integers(limit // 3, limit)),
        "keep_ratio": st.floats(0.05, 1.0),
        "summary_ratio": st.floats(1 / 128, 0.5),
        "summary_reserve": st.one_of(st.none(), st.integers(0, limit // 4)),
        "max_depth": st.one_of(st.none(), st.integers(1, 5)),
        "cooldown_turns": st.integers(0, 6),
    }
    return limit, draw(st.fixed_dictionaries({}, optional=optional))


@given(case=loose_settings())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_loose_keywords_and_the_budget_compact_a_corpus_chain_alike(
    case: tuple[int, dict[str, Any]],
) -> None:
    limit, loose = case
    messages = corpus_chain()
    before = [m.model_dump() for m in messages]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = Compactor(budget=limit, **loose)
    assert any(w.category is DeprecationWarning for w in caught) == bool(loose)
    new = Compactor(budget=Budget(limit, **loose))
    for name in ("trigger", "keep_units", "summary_bytes", "summary_reserve", "max_depth"):
        assert getattr(old, name) == getattr(new, name), name
    for _ in range(2):  # the second call is within the cooldown (or compacts again)
        assert old.compact_sync(messages) == new.compact_sync(messages)
    assert [m.model_dump() for m in messages] == before


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
    assert Preset("DEFAULT").clearing == DEFAULT_CLEARING  # it sets none: the default
    assert Preset("OFF", clearing=None).clearing is None
    # a setting the given budget sets itself wins over the preset's
    assert LOW_COST.budget(Budget(8000, keep_ratio=0.2)) == Budget(
        8000, trigger=0.85, keep_ratio=0.2, summary_ratio=1 / 64
    )


def test_a_preset_checks_its_settings_naming_them() -> None:
    with pytest.raises(ValueError, match=r"Budget\.summary_ratio must be within"):
        Preset("BAD", summary_ratio=0.9)
    with pytest.raises(TypeError, match=r"Preset clearing must be a csum\.Clearing"):
        Preset("BAD", clearing="on")  # type: ignore[arg-type]


def test_the_old_preset_splat_warns_and_compacts_like_the_new_form() -> None:
    messages = chain()
    with (
        pytest.warns(DeprecationWarning, match=r"LOW_COST\.budget\(limit\), clearing="),
        pytest.warns(DeprecationWarning, match=r"Compactor\(keep_ratio=\.\.\., summary_ratio="),
    ):
        old = Compactor(summarize, budget=8000, **LOW_COST)
    with no_deprecation_from_csum():
        new = Compactor(summarize, budget=LOW_COST.budget(8000), clearing=LOW_COST.clearing)
    assert old.budget == new.budget
    assert old.clearing == new.clearing
    assert old.compact_sync(messages) == new.compact_sync(messages)
    with (
        pytest.warns(DeprecationWarning, match=r"LONG_MEMORY\.budget\(limit\)"),
        pytest.warns(DeprecationWarning, match=r"summary_ratio=\.\.\., max_depth="),
    ):
        long_old = Compactor(summarize, budget=8000, **LONG_MEMORY)
    assert long_old.budget == LONG_MEMORY.budget(8000)
    assert dict(LOW_COST.items()) == {
        "clearing": Clearing(keep=10),
        "keep_ratio": 0.3,
        "summary_ratio": 1 / 64,
        "trigger": 0.85,
    }


# -- the library's own callers use the new spelling -----------------------------------


def test_importing_csum_warns_nothing() -> None:
    code = "import csum, csum.compactor, csum.presets, csum.cli, csum.serve"
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--low-cost",),
        ("--keep-ratio", "0.3", "--summary-ratio", "0.05"),
        ("--low-cost", "--keep-ratio", "0.2", "--clear-keep", "4"),
    ],
)
def test_the_cli_builds_its_compactor_in_the_new_spelling(flags: tuple[str, ...]) -> None:
    out, err = io.StringIO(), io.StringIO()
    with no_deprecation_from_csum():
        code = main(
            ["summarize", "--example", "--budget", "40KiB", "-q", *flags], stdout=out, stderr=err
        )
    assert code == 0, err.getvalue()
    assert "deprecated" not in err.getvalue()


@pytest.mark.anyio
async def test_the_gateway_builds_its_keepers_in_the_new_spelling() -> None:
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
    for budget in (Budget.bytes(16384), Budget.bytes(16384, keep_ratio=0.6)):
        config = ServeConfig(upstream="http://127.0.0.1:9", budget=budget)
        with no_deprecation_from_csum():
            outcome = await Rewriter(config, MemoryStore()).rewrite(APIS[0], payload, None)
        assert outcome.kind is OutcomeKind.COMPACTED
        assert outcome.body is not None
        sizes.append(len(outcome.body))
    assert sizes[1] > sizes[0]  # the budget's own keep_ratio wins over the config's


def test_every_budget_setting_is_a_field_with_a_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Budget)}
    assert set(SETTINGS) <= set(fields)
    assert all(fields[name].kw_only for name in SETTINGS)


def test_a_framework_hook_given_a_budget_passes_its_settings_to_its_keeper() -> None:
    budget = Budget.tokens(64_000, keep_ratio=0.3, max_depth=None)
    with no_deprecation_from_csum():
        hook = HistoryHook(summarize, budget=budget)
    keeper = hook.keeper
    assert isinstance(keeper, Compactor)
    assert keeper.budget is budget
    assert (keeper.keep_ratio, keeper.max_depth) == (0.3, None)


def test_the_cost_benchmark_runs_the_low_cost_preset_with_its_own_keep_ratio() -> None:
    """``--cost`` runs LOW_COST: its policy once got both its ``keep_ratio`` and the
    default ``target_ratio`` and failed with a TypeError before any figure."""
    from benchmarks.policies.cost_main import low_cost_setting

    setting = low_cost_setting()
    assert setting is not None
    with no_deprecation_from_csum():
        policy: Any = setting.spec().make(65536)
    keeper = policy.compactor
    assert keeper.budget == LOW_COST.budget(65536)
    assert (keeper.keep_ratio, keeper.summary_ratio) == (LOW_COST["keep_ratio"], 1 / 64)
    assert keeper.clearing == LOW_COST.clearing
