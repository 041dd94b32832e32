"""Handlers cannot corrupt a chain: blank and oversized answers, a handler raising a
cancellation of its own, the same failure report on asyncio and trio, Ctrl-C and
SystemExit unwrapped, blocking handlers in a thread, lookalike summaries."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import csum.cli
from cast import SUMMARIZATION_TOOL_NAME, BodyPair, ChainAST, IdTemplateError, Message
from cast.codecs import openai
from csum import (
    SUMMARIZED_CONTENT_PREFIX,
    SummarizationError,
    Summarizer,
    SummarizerConfig,
    is_summarized,
)
from csum.handlers import threaded
from csum_builders import FakeHandler, completion, request, section, sections_chain

SMALL = SummarizerConfig(last_section_bytes=400, max_body_pair_bytes=200)


def _run(handler: Any, messages: list[Message], **options: Any) -> Any:
    async def go() -> list[Message]:
        return await Summarizer(SMALL, **options).summarize_chain(handler, messages)

    return go()


@pytest.mark.anyio
@pytest.mark.parametrize("answer", ["", "   \n\t"])
async def test_a_blank_summary_is_an_error_naming_the_section(answer: str) -> None:
    chain = sections_chain(3)
    with pytest.raises(SummarizationError, match=r"section 0: .*empty summary") as info:
        await _run(FakeHandler(answer=lambda _p: answer), chain, max_concurrency=1)
    assert info.value.section == 0


@pytest.mark.anyio
async def test_a_summary_over_the_cap_is_truncated() -> None:
    chain = sections_chain(3)
    huge = "é" * 5_000_000  # 10 MB per call
    out = await _run(FakeHandler(answer=lambda _p: huge), chain, max_summary_bytes=101)
    ast = ChainAST.from_messages(out)
    for old in ast.sections[:-1]:
        (pair,) = old.body
        text = pair.ai_message.parts[0].text  # type: ignore[union-attr]
        # one line of 10 MB: cut to 101 bytes at a character, the cut marked
        assert text == SUMMARIZED_CONTENT_PREFIX + "é" * 49 + "…"
    assert ast.size < 2_000


def test_max_summary_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_summary_bytes"):
        Summarizer(max_summary_bytes=0)


async def _raise_cancelled(_prompt: str) -> str:
    raise asyncio.CancelledError


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_handler_raising_cancellation_itself_is_a_summarization_error() -> None:
    # trio's Cancelled cannot be raised outside a cancel scope: asyncio only.
    with pytest.raises(SummarizationError, match="CancelledError although the summarizer"):
        await _run(_raise_cancelled, sections_chain(4))


@pytest.mark.anyio
async def test_a_real_cancellation_still_cancels() -> None:
    async def slow(_prompt: str) -> str:
        await anyio.sleep(30)
        return "never"

    with anyio.move_on_after(0.05) as scope:
        await _run(slow, sections_chain(4))
    assert scope.cancelled_caught


def _failure(backend: str, handler: Callable[[str], Any]) -> BaseException:
    async def go() -> None:
        await Summarizer(SMALL).summarize_chain(handler, sections_chain(6))

    try:
        anyio.run(go, backend=backend)
    except BaseException as exc:  # the test inspects what escapes
        return exc
    raise AssertionError("no failure")


async def _value_error(prompt: str) -> str:
    await anyio.sleep(0)
    raise ValueError("model overloaded")


def test_the_same_failing_handler_is_reported_alike_on_both_backends() -> None:
    reports = {backend: _failure(backend, _value_error) for backend in ("asyncio", "trio")}
    for error in reports.values():
        assert type(error) is SummarizationError
        assert type(error.__cause__) is ValueError
        assert (
            str(error) == "section summary, section 0: the summarize handler raised "
            "ValueError: model overloaded"
        )


# The event loop stops at once, before the workers not yet started could run.
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_ctrl_c_and_exit_in_a_handler_propagate_unwrapped(
    backend: str, raised: type[BaseException]
) -> None:
    async def handler(prompt: str) -> str:
        await anyio.sleep(0)
        raise raised

    assert type(_failure(backend, handler)) is raised
    gc.collect()  # the unstarted workers' coroutines warn now, under this test's filter


@pytest.mark.anyio
async def test_threaded_handler_honours_the_deadline() -> None:
    release = threading.Event()
    finished = threading.Event()

    def blocking(prompt: str) -> str:
        release.wait(30)  # a blocking call: a synchronous client, a local model
        finished.set()
        return "late summary"

    try:
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.1):
                await _run(threaded(blocking), sections_chain(3))
        # The deadline fired while the calls were still blocked in their threads.
        assert not finished.is_set()
    finally:
        release.set()


@pytest.mark.anyio
async def test_threaded_handler_summarizes() -> None:
    out = await _run(threaded(lambda prompt: f"summary of {len(prompt)}"), sections_chain(3))
    assert "summary of" in out[2].text


@pytest.mark.anyio
async def test_a_lookalike_completion_summary_is_summarized() -> None:
    fake = SUMMARIZED_CONTENT_PREFIX + "x" * 1_000_000
    chain = [
        *section("old question", [Message.ai(fake)], completion(30)),
        *section("new question", completion(30)),
    ]
    handler = FakeHandler()
    out = await _run(handler, chain)
    assert handler.calls == 1
    assert ChainAST.from_messages(out).size < 2_000


@pytest.mark.anyio
async def test_a_lookalike_summary_tool_call_is_summarized() -> None:
    # A tool of the user's named like the summary tool, in an oversized pair.
    chain = section(
        "q",
        request("c1", 50_000, name=SUMMARIZATION_TOOL_NAME),
        completion(20),
    )
    handler = FakeHandler()
    out = await _run(handler, chain)
    assert handler.calls == 1
    assert ChainAST.from_messages(out).size < 2_000


@pytest.mark.anyio
async def test_our_own_summaries_are_left_alone() -> None:
    handler = FakeHandler()
    first = await _run(handler, sections_chain(4))
    calls = handler.calls
    assert await _run(handler, first) == first
    assert handler.calls == calls


def _pairs(messages: list[Message]) -> list[BodyPair]:
    return [pair for sec in ChainAST.from_messages(messages).sections for pair in sec.body]


def _chatty(prompt: str) -> str:
    return "chatty summary " + "y" * 5_000  # over SMALL's 200-byte pair budget


def _rotation_chain() -> list[Message]:
    # One section only: its older pairs go through last-section rotation.
    return section("q", request("c1", 3_000), request("c2", 3_000), completion(20))


@pytest.mark.anyio
@pytest.mark.parametrize(
    "chain", [sections_chain(4), _rotation_chain()], ids=["sections", "rotation"]
)
async def test_a_summary_over_the_pair_budget_is_summarized_again_under_a_cap(
    chain: list[Message],
) -> None:
    # No cap and the growth bound lifted: summaries kept whole.
    chatty = await _run(FakeHandler(answer=_chatty), chain, summary_floor_bytes=None)
    oversized = [p for p in _pairs(chatty) if p.size > 5_000]
    assert oversized
    assert all(is_summarized(p) for p in oversized)

    # Without a cap or bound they are left alone: a summarized chain calls nothing.
    handler = FakeHandler()
    assert await _run(handler, chatty, summary_floor_bytes=None) == chatty
    assert handler.calls == 0

    # With a cap, a summary longer than the cap (made without it) is summarized again,
    # and the chain shrinks; the newest pair is untouched.
    handler = FakeHandler()
    capped = await _run(handler, chatty, max_summary_bytes=150)
    assert handler.calls == len(oversized)
    assert max(p.size for p in _pairs(capped)[:-1]) < 1_000
    assert ChainAST.from_messages(capped).size < ChainAST.from_messages(chatty).size
    assert capped[-1] == chatty[-1]

    # Summaries made under the cap are not summarized again.
    again = FakeHandler()
    assert await _run(again, capped, max_summary_bytes=150) == capped
    assert again.calls == 0


@pytest.mark.anyio
async def test_only_summaries_longer_than_the_cap_are_stale() -> None:
    chatty = await _run(FakeHandler(answer=_chatty), sections_chain(3), summary_floor_bytes=None)
    # A cap above the old summaries' length: they could have been made under it.
    handler = FakeHandler(answer=_chatty)
    out = await _run(handler, chatty, max_summary_bytes=100_000)
    assert handler.calls == 0  # 5 KB summaries are within a 100 KB cap: not stale
    assert out == chatty
    # Below their length they are stale; a chatty handler's answer is cut to the cap.
    bigger = FakeHandler(answer=lambda p: "z" * 7_000)
    out = await _run(bigger, chatty, max_summary_bytes=4_000)
    assert bigger.calls == 2
    assert ChainAST.from_messages(out).size < ChainAST.from_messages(chatty).size


@pytest.mark.anyio
@pytest.mark.parametrize("template", ["x", "{r:1:d}"])
async def test_an_id_template_too_small_for_the_summaries_is_an_error(template: str) -> None:
    # Every section's summary is a SUMMARIZATION pair: 12 distinct ids needed.
    chain = []
    for index in range(13):
        chain += section(f"q{index}", request(f"c{index}", 60), completion(10))
    summarizer = Summarizer(SMALL)
    with pytest.raises(IdTemplateError, match=r"can produce only (1|10) distinct ids"):
        await summarizer.summarize_chain(FakeHandler(), chain, id_template=template)


def test_the_cli_reports_an_id_template_too_small(tmp_path: Path) -> None:
    chain = []
    for index in range(3):
        chain += section(f"q{index}", request(f"c{index}", 3000), completion(10))
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(openai.encode(chain)), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    argv = ["summarize", str(path), "--last-section-budget", "200", "--id-template", "x"]
    assert csum.cli.main(argv, stdout=out, stderr=err) == 2
    assert "id template 'x' can produce only 1 distinct ids" in err.getvalue()
    assert out.getvalue() == ""
