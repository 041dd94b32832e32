"""One configuration style (issue 26 item 3): the robust-handler settings as one
:class:`Robustness` object taken by RobustHandler and the Compactor, the stores as one
:class:`Stores` object taken by the Compactor and the Summarizer, and one meaning per
word (``target`` is the provider; the size the chain is brought down to is
``keep_ratio`` / ``keep_units``). Errors name the field."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from typing import Any

import pytest

from cast import Message
from csum import (
    Budget,
    CompactionEvent,
    Compactor,
    HistoryArchive,
    RetryPolicy,
    RobustHandler,
    Robustness,
    Stores,
    Summarizer,
    SummaryCache,
)
from csum.cli import _add_serve_parser, _serve_config, main
from csum.config import (
    DEFAULT_CLEARING,
    DEFAULT_KEEP_RATIO,
    DEFAULT_SUMMARY_RATIO,
    LONG_MEMORY,
    LOW_COST,
    MIN_PROMPT_BYTES,
    SUMMARY_ONLY,
)
from csum.handlers import extractive
from csum.prompt import text_request
from csum.request import ledger
from csum.stores import MemoryStore

FAST = RetryPolicy(max_retries=2, backoff_base=0.001, backoff_max=0.01, jitter=0.5)


async def summarize(prompt: str) -> str:
    return "the summary"


def chain(turns: int = 12, size: int = 400) -> list[Message]:
    out = [Message.system("You are terse.")]
    for turn in range(turns):
        out.append(Message.human(f"question {turn}: " + "q" * size))
        out.append(Message.ai(f"answer {turn}: " + "a" * size))
    return out


def memory_archive() -> HistoryArchive:
    return HistoryArchive(":memory:", session="test")


# -- Robustness and Stores: checked when made, errors name the field ---------------------


@pytest.mark.parametrize(
    ("fields", "error", "needle"),
    [
        ({"timeout": 0}, ValueError, "Robustness.timeout"),
        ({"timeout": -1.0}, ValueError, "Robustness.timeout"),
        ({"timeout": float("nan")}, ValueError, "Robustness.timeout"),
        ({"timeout": "5"}, TypeError, "Robustness.timeout"),
        ({"timeout": True}, TypeError, "Robustness.timeout"),
        ({"retry": 3}, TypeError, "Robustness.retry"),
        ({"retry": None}, TypeError, "Robustness.retry"),
        ({"max_prompt_bytes": MIN_PROMPT_BYTES - 1}, ValueError, "Robustness.max_prompt_bytes"),
        ({"max_prompt_bytes": 5000.0}, TypeError, "Robustness.max_prompt_bytes"),
        ({"max_split_depth": 0}, ValueError, "Robustness.max_split_depth"),
        ({"max_split_depth": "3"}, TypeError, "Robustness.max_split_depth"),
        ({"max_concurrency": 0}, ValueError, "Robustness.max_concurrency"),
        ({"max_concurrency": False}, TypeError, "Robustness.max_concurrency"),
        ({"fallback": "extractive"}, TypeError, "Robustness.fallback"),
        ({"fallback": extractive}, TypeError, "Robustness.fallback"),
    ],
)
def test_robustness_refuses_bad_fields_naming_them(
    fields: dict[str, Any], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle):
        Robustness(**fields)


def test_robustness_defaults_are_the_robust_handlers_former_defaults() -> None:
    settings = Robustness()
    assert (settings.timeout, settings.retry, settings.max_prompt_bytes) == (
        120.0,
        RetryPolicy(),
        None,
    )
    assert (settings.max_split_depth, settings.max_concurrency, settings.fallback) == (3, 4, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.timeout = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "needle"),
    [({"cache": MemoryStore()}, "Stores.cache"), ({"archive": "history.db"}, "Stores.archive")],
)
def test_stores_refuse_what_is_not_a_store_naming_the_field(
    fields: dict[str, Any], needle: str
) -> None:
    with pytest.raises(TypeError, match=needle):
        Stores(**fields)


@pytest.mark.parametrize(
    ("fields", "error", "needle"),
    [
        ({"max_retries": -1}, ValueError, "max_retries must be >= 0"),
        ({"max_retries": "3"}, TypeError, "max_retries must be an int"),
        ({"backoff_base": -0.5}, ValueError, "backoff_base"),
        ({"backoff_base": float("nan")}, ValueError, "backoff_base"),
        ({"backoff_max": 0.1}, ValueError, "backoff_max"),
        ({"jitter": 1.5}, ValueError, "jitter"),
    ],
)
def test_retry_policy_refuses_bad_fields_naming_them(
    fields: dict[str, Any], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle):
        RetryPolicy(**fields)


# -- RobustHandler ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_robust_handler_runs_with_the_settings_object() -> None:
    calls = 0

    async def flaky(prompt: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise TimeoutError("slow")
        return "ok"

    robust = RobustHandler(flaky, Robustness(timeout=30.0, retry=FAST))
    with ledger() as books:
        assert await robust(text_request("prompt")) == "ok"
    assert (books.calls, books.retries) == (2, 1)
    assert robust.robustness.timeout == 30.0
    assert robust.robustness.retry is FAST


def test_robust_handler_takes_the_settings_once() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeout'"):
        RobustHandler(summarize, Robustness(), timeout=5.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"robustness must be a csum\.Robustness"):
        RobustHandler(summarize, {"timeout": 5.0})  # type: ignore[arg-type]


# -- Compactor --------------------------------------------------------------------------


def test_compactor_takes_each_settings_object() -> None:
    cache = SummaryCache(MemoryStore(), handler_id="test")
    settings = Robustness(timeout=10.0, max_prompt_bytes=8192)
    keeper = Compactor(
        summarize,
        budget=Budget(8000, keep_ratio=0.4),
        stores=Stores(cache=cache),
        robustness=settings,
    )
    out = keeper.compact_sync(chain())
    assert keeper.handler.robustness is settings
    assert keeper.cache is cache
    assert keeper.stores == Stores(cache=cache)
    assert keeper.keep_ratio == 0.4
    assert keep_size(out) <= keeper.keep_units


def keep_size(messages: list[Message]) -> int:
    return sum(message.size for message in messages)


@pytest.mark.parametrize(
    ("keywords", "needle"),
    [
        ({"stores": {"cache": None}}, "stores must be a csum.Stores"),
        ({"robustness": 5}, "robustness must be a csum.Robustness"),
        ({"budget": {"limit": 8000}}, "budget must be an int"),
        ({"target_ratio": 0.5}, "unexpected keyword argument 'target_ratio'"),
        ({"timeout": 5.0}, "unexpected keyword argument 'timeout'"),
    ],
)
def test_compactor_refuses_mixed_or_wrong_settings(keywords: dict[str, Any], needle: str) -> None:
    keywords = {"budget": 8000, **keywords}
    with pytest.raises(TypeError, match=needle):
        Compactor(summarize, **keywords)


@pytest.mark.parametrize("value", [0, 1.5, -0.2])
def test_compactor_keep_ratio_out_of_range_names_it(value: float) -> None:
    with pytest.raises(ValueError, match="keep_ratio must be within"):
        Compactor(summarize, budget=Budget(8000, keep_ratio=value))


def test_a_robust_handler_and_robustness_are_not_both_given() -> None:
    robust = RobustHandler(summarize, Robustness(timeout=3.0))
    assert Compactor(robust, budget=8000).handler is robust
    with pytest.raises(TypeError, match="RobustHandler or to the Compactor, not to both"):
        Compactor(robust, budget=8000, robustness=Robustness())


def test_defaults_and_presets_set_the_compactor() -> None:
    assert Compactor(budget=10_000).keep_ratio == DEFAULT_KEEP_RATIO
    low = Compactor(budget=LOW_COST.budget(10_000), clearing=LOW_COST.clearing)
    long = Compactor(budget=LONG_MEMORY.budget(10_000), clearing=LONG_MEMORY.clearing)
    only = Compactor(budget=SUMMARY_ONLY.budget(10_000), clearing=SUMMARY_ONLY.clearing)
    # LONG_MEMORY is the summary stage it was measured with, whatever the defaults are.
    assert (long.clearing, long.keep_ratio) == (None, SUMMARY_ONLY.keep_ratio)
    assert low.keep_ratio == LOW_COST.keep_ratio
    # SUMMARY_ONLY is the former defaults: the summary stage alone.
    assert (only.clearing, only.keep_ratio, only.summary_ratio) == (None, 0.6, 1 / 32)


def test_the_defaults_are_the_named_constants() -> None:
    keeper = Compactor(budget=10_000)
    assert keeper.clearing == DEFAULT_CLEARING
    assert keeper.keep_ratio == DEFAULT_KEEP_RATIO
    assert keeper.summary_ratio == DEFAULT_SUMMARY_RATIO


def test_compaction_event_names_the_size_keep_units() -> None:
    events: list[CompactionEvent] = []
    keeper = Compactor(summarize, budget=Budget(8000, keep_ratio=0.5), on_event=events.append)
    keeper.compact_sync(chain())
    (event,) = events
    assert event.keep_units == keeper.keep_units == 4000
    assert event.as_dict()["keep_units"] == 4000
    assert "target" not in event.as_dict()


# -- Summarizer -------------------------------------------------------------------------


def test_summarizer_takes_stores() -> None:
    cache = SummaryCache(MemoryStore(), handler_id="test")
    archive = memory_archive()
    new = Summarizer(stores=Stores(cache=cache, archive=archive))
    assert (new.stores.cache, new.stores.archive) == (cache, archive)
    with pytest.raises(TypeError, match=r"stores must be a csum\.Stores"):
        Summarizer(stores={"cache": cache})  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_summarizer_with_stores_caches_as_before() -> None:
    cache = SummaryCache(MemoryStore(), handler_id="test")
    summarizer = Summarizer(stores=Stores(cache=cache))
    messages = chain(4, 30_000)
    first = await summarizer.summarize(summarize, messages)
    second = await summarizer.summarize(summarize, messages)
    assert first.messages == second.messages
    assert first.handler_calls > 0
    assert second.cache_hits == first.handler_calls


# -- command lines ----------------------------------------------------------------------


def run_csum(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["summarize", "--example", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_csum_keep_ratio_flag() -> None:
    # The summary stage alone (--summary-only's 60 %), whatever the defaults are: the
    # ratio given then decides what the summary keeps.
    base = ("--budget", "48KiB", "--summary-only")
    code, new_out, new_err = run_csum(*base, "--keep-ratio", "0.3")
    assert code == 0, new_err
    _, preset_out, _ = run_csum(*base)
    assert json.loads(preset_out) != json.loads(new_out)  # the flag is read


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("--keep-ratio", "2"), "--keep-ratio must be within (0, 1], got 2.0"),
        (("--keep-ratio", "0"), "--keep-ratio must be within (0, 1], got 0.0"),
    ],
)
def test_csum_keep_ratio_errors_name_the_flag(argv: tuple[str, ...], needle: str) -> None:
    code, _, err = run_csum("--budget", "40KiB", *argv)
    assert code == 2
    assert needle in err


def serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    _add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", "--upstream", "http://127.0.0.1:9", *argv])


def test_serve_keep_ratio_flag() -> None:
    assert _serve_config(serve_args()).keep_ratio == DEFAULT_KEEP_RATIO
    assert _serve_config(serve_args("--keep-ratio", "0.4")).keep_ratio == 0.4
    with pytest.raises(ValueError, match="--keep-ratio must be within"):
        _serve_config(serve_args("--keep-ratio", "1.5"))


def test_serve_summary_only_flag_is_the_former_defaults() -> None:
    plain = _serve_config(serve_args())
    assert not plain.summary_only
    only = _serve_config(serve_args("--summary-only"))
    assert only.summary_only
    assert only.keep_ratio == SUMMARY_ONLY.keep_ratio
    assert _serve_config(serve_args("--summary-only", "--keep-ratio", "0.4")).keep_ratio == 0.4


def test_budget_object_passes_through_unchanged() -> None:
    budget = Budget.tokens(4000, keep_ratio=0.5)
    keeper = Compactor(summarize, budget=budget)
    assert keeper.budget is budget
    assert keeper.keep_units == 2000
