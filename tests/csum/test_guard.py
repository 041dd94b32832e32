"""The fact guard: what a summary lost of the replaced messages is appended in a reserve."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import Message, ToolCall
from cast.internals import utf8_len
from csum.archive import split_archive_line
from csum.guard import FactGuard, lost_facts, residual_request
from csum.handlers import extractive
from csum.prompt import SummaryRequest, summary_request

OUTPUT = "\n".join(
    [
        "collected 14 items",
        *(f"tests/test_{i}.py ....  [ {i * 7}%]" for i in range(12)),
        "FAILED tests/test_api.py::test_login - AssertionError: status 500",
        "see https://ci.example.org/runs/8812 for the log",
        "13 passed, 1 failed in 2.31s",
    ]
)


def _prompt(output: str = OUTPUT, name: str = "bash") -> SummaryRequest:
    call = ToolCall(id="call_1", name=name, arguments='{"command": "pytest -q"}')
    return summary_request([], [Message.ai("", call), Message.tool("call_1", name, output)])


def test_lost_facts_are_the_replaced_entries_tokens_the_summary_lacks() -> None:
    lost = {f.token: f.kind for f in lost_facts(_prompt(), "bash(pytest -q)\ncollected 14 items")}
    assert lost["https://ci.example.org/runs/8812"] == "url"
    assert lost["tests/test_api.py::test_login"[: len("tests/test_api.py")]] == "path"
    assert any(kind == "error" and "FAILED" in token for token, kind in lost.items())
    assert "14 items" not in lost  # in the summary already
    kept = lost_facts(_prompt(), OUTPUT)
    assert not [f for f in kept if f.kind != "error"]  # the whole output loses nothing


def test_the_guard_appends_what_a_cut_lost_within_the_budget() -> None:
    guard = FactGuard(200, reserve=0.5)
    summary = guard.complete(_prompt(), "bash(pytest -q)\ncollected 14 items")
    assert utf8_len(summary) <= 200
    assert summary.startswith("bash(pytest -q)\ncollected 14 items\n")
    assert "13 passed, 1 failed" in summary or "test_api.py" in summary
    assert guard.complete(_prompt(), OUTPUT[:50]) != OUTPUT[:50]


def test_a_summary_that_lost_nothing_is_left_as_it_is() -> None:
    prompt = _prompt("all good")
    assert FactGuard(100).complete(prompt, "bash(pytest -q): all good") == (
        "bash(pytest -q): all good"
    )


def test_an_earlier_summarys_archive_reference_follows_its_facts() -> None:
    earlier = "Fixed the parser in src/parse.py:88 (off by one).\n[archived: 0123456789abcdef]"
    prompt = summary_request([], [Message.ai(earlier), Message.ai("Then ran the suite.")])
    summary = FactGuard(160, reserve=0.6).complete(prompt, "Ran the suite.")
    assert "src/parse.py:88" in summary
    line = next(line for line in summary.splitlines() if "src/parse.py:88" in line)
    assert line.endswith("[archived: 0123456789abcdef]")


def test_a_final_archive_line_stays_last() -> None:
    summary = "Ran the suite.\n[archived: fedcba9876543210]"
    out = FactGuard(300, reserve=0.5).complete(_prompt(), summary)
    assert split_archive_line(out)[1] == "[archived: fedcba9876543210]"
    assert utf8_len(out) <= 300


def test_the_residual_request_leaves_out_what_the_summary_holds() -> None:
    residual = residual_request(_prompt(), "bash(pytest -q)\ncollected 14 items").prompt
    assert "collected 14 items" not in residual
    assert "13 passed, 1 failed in 2.31s" in residual
    assert '{"command": "pytest -q"}' not in residual  # the summary names the call
    assert "pytest -q" in residual_request(_prompt(), "nothing").prompt


@given(
    summary=st.text(max_size=400),
    output=st.text(min_size=1, max_size=600),
    max_bytes=st.integers(min_value=2, max_value=500),
    reserve=st.floats(min_value=0, max_value=0.9),
)
def test_the_total_never_exceeds_the_budget(
    summary: str, output: str, max_bytes: int, reserve: float
) -> None:
    guard = FactGuard(max_bytes, reserve=reserve)
    assert guard.inner_bytes <= max_bytes
    assert utf8_len(guard.complete(_prompt(output), summary)) <= max_bytes


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((0,), ValueError),
        ((1,), ValueError),
        ((True,), ValueError),
        ((100.0,), ValueError),
    ],
)
def test_a_bad_budget_is_refused(args: tuple[object, ...], error: type[Exception]) -> None:
    with pytest.raises(error, match="max_bytes"):
        FactGuard(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reserve", "error"), [(1.0, ValueError), (-0.1, ValueError), ("x", TypeError)]
)
def test_a_bad_reserve_is_refused(reserve: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="reserve"):
        FactGuard(100, reserve=reserve)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_wrapped_handler_asks_once_more_with_the_list() -> None:
    prompts: list[str] = []

    async def model(prompt: str) -> str:
        prompts.append(prompt)
        return "bash(pytest -q): one test failed"

    handler = FactGuard(220, reserve=0.4, ask_again=True).wrap(model)
    summary = await handler(_prompt())
    assert len(prompts) == 2
    assert prompts[1].startswith(_prompt().prompt)
    assert "lost these facts" in prompts[1]
    assert "https://ci.example.org/runs/8812" in prompts[1]
    assert summary.startswith("bash(pytest -q): one test failed")
    assert utf8_len(summary) <= 220
    with pytest.raises(TypeError, match="must be a SummaryRequest"):
        await handler(b"x")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_sized_guard_keeps_the_summary_that_lost_less() -> None:
    guard = FactGuard(240)
    handler = guard.wrap_sized(extractive)
    summary = await handler(_prompt())
    whole = await extractive(240)(_prompt())
    guarded_one = await guard.wrap(extractive(guard.inner_bytes))(_prompt())
    assert summary in (whole, guarded_one)
    assert summary == guard.choose(_prompt(), whole, guarded_one)
    assert utf8_len(summary) <= 240


@pytest.mark.anyio
async def test_a_long_prompt_is_completed_in_a_worker_thread_within_the_budget() -> None:
    output = "\n".join(f"step {i}: wrote build/out_{i}.o in {i} ms" for i in range(4000))
    assert len(_prompt(output).prompt) > 65_536

    async def cut(prompt: str) -> str:
        return prompt[:100]

    summary = await FactGuard(600).wrap(cut)(_prompt(output))
    assert utf8_len(summary) <= 600
    assert "build/out_" in summary.split("\n", 1)[1]
