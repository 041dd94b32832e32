"""Summarizer failure paths: handler exceptions and bad results in every phase,
cancellation by the caller; the input is never touched and no partial result escapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from cast import Message
from csum import SummarizationError, Summarizer, SummarizerConfig, messages_to_prompt
from csum_builders import (
    FakeHandler,
    completion,
    dump,
    label,
    request,
    section,
    sections_chain,
)


class ProviderError(Exception):
    """What the fake provider raises."""


def marked_chain() -> list[Message]:
    """Four sections with a marker text in each place a handler call can target."""
    out = section("question 0", [Message.ai("marker-section-0")], completion(5), system="s")
    out += section("question 1", [Message.ai("marker-section-1")], completion(6))
    out += section("question 2", [Message.ai("marker-section-2")], completion(7))
    out += section(
        "question 3",
        [Message.ai("marker-fold " + "f" * 400)],
        [Message.ai("marker-oversized " + "o" * 900)],
        request("c1", 300),
        completion(20),
    )
    return out


CONFIG = {"max_body_pair_bytes": 800, "last_section_bytes": 700, "use_qa": True}
QA_HUMAN_PROMPT = messages_to_prompt([Message.human(f"question {i}") for i in range(3)], [])


def containing(*texts: str) -> Callable[[str], bool]:
    return lambda prompt: all(text in prompt for text in texts)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("target", "config", "phase", "section_index"),
    [
        pytest.param(containing("marker-section-1"), CONFIG, "section summary", 1, id="section"),
        pytest.param(
            containing("marker-oversized"), CONFIG, "oversized pair summary", 3, id="oversized"
        ),
        pytest.param(containing("marker-fold"), CONFIG, "last section rotation", 3, id="fold"),
        pytest.param(
            containing("question 0", "question 1"),
            {**CONFIG, "max_qa_sections": 2},
            "QA summary",
            0,
            id="qa",
        ),
        pytest.param(
            QA_HUMAN_PROMPT.__eq__,
            {**CONFIG, "max_qa_sections": 2, "summarize_human_in_qa": True},
            "QA human summary",
            0,
            id="qa-human",
        ),
    ],
)
async def test_handler_failure_raises_and_leaves_the_input_untouched(
    target: Callable[[str], bool], config: dict[str, Any], phase: str, section_index: int
) -> None:
    messages = marked_chain()
    items = list(messages)
    before = dump(messages)
    error = ProviderError("provider down")
    handler = FakeHandler(
        delay=lambda p: 0 if target(p) else 0.005,
        fail=lambda p: error if target(p) else None,
    )
    summarizer = Summarizer(SummarizerConfig(**config))
    result: list[Message] | None = None
    with pytest.raises(SummarizationError, match="provider down") as caught:
        result = await summarizer.summarize_chain(handler, messages)
    assert result is None
    assert caught.value.__cause__ is error
    assert caught.value.phase == phase
    assert caught.value.section == section_index
    assert sum(map(target, handler.prompts)) == 1
    # The caller's list and messages are exactly as they were.
    assert dump(messages) == before
    assert all(a is b for a, b in zip(messages, items, strict=True))
    assert len(messages) == len(items)
    assert handler.in_flight == 0


@pytest.mark.anyio
async def test_one_failure_cancels_the_calls_in_flight() -> None:
    error = ProviderError("section 2 failed")
    handler = FakeHandler(
        delay=lambda p: 0.01 if "marker-section-2" in p else 60,
        fail=lambda p: error if "marker-section-2" in p else None,
    )
    with anyio.fail_after(10), pytest.raises(SummarizationError) as caught:
        await Summarizer(SummarizerConfig(**CONFIG)).summarize_chain(handler, marked_chain())
    assert caught.value.__cause__ is error
    # Sections 0 and 1 and the oversized pair of the last section were still sleeping.
    assert handler.calls == 4
    assert handler.cancelled == 3
    assert handler.finished == 0
    assert handler.in_flight == 0


@pytest.mark.anyio
async def test_several_failures_are_all_chained() -> None:
    errors: dict[str, ProviderError] = {}

    def fail(prompt: str) -> ProviderError:
        return errors.setdefault(prompt, ProviderError(f"failure {len(errors)}"))

    handler = FakeHandler(fail=fail)
    with pytest.raises(SummarizationError) as caught:
        await Summarizer().summarize_chain(handler, sections_chain(4))
    cause = caught.value.__cause__
    causes = cause.exceptions if isinstance(cause, ExceptionGroup) else (cause,)
    assert causes
    assert all(any(c is e for e in errors.values()) for c in causes)


@pytest.mark.anyio
async def test_failure_stops_calls_waiting_for_the_limiter() -> None:
    # Every call would fail after a checkpoint; with one call at a time, the first
    # failure cancels the four calls still waiting for the limiter.
    handler = FakeHandler(delay=lambda _p: 0, fail=lambda _p: ProviderError("down"))
    summarizer = Summarizer(max_concurrency=1)
    with pytest.raises(SummarizationError):
        await summarizer.summarize_chain(handler, sections_chain(6))
    # The limiter may hand its token to the next waiter before the cancellation lands:
    # that call is then cancelled at its first checkpoint.
    assert handler.calls - handler.cancelled == 1
    assert handler.calls <= 2
    assert handler.finished == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    "result",
    [
        pytest.param(None, id="none"),
        pytest.param(b"summary", id="bytes"),
        pytest.param({"summary": "x"}, id="dict"),
    ],
)
async def test_non_str_result_is_a_summarization_error(result: object) -> None:
    messages = marked_chain()
    before = dump(messages)
    handler = FakeHandler(answer=lambda p: result if "marker-section-0" in p else label(p))
    with pytest.raises(SummarizationError, match=f"returned {type(result).__name__}") as caught:
        await Summarizer(SummarizerConfig(**CONFIG)).summarize_chain(handler, messages)
    assert caught.value.section == 0
    assert caught.value.__cause__ is None
    assert dump(messages) == before


@pytest.mark.anyio
async def test_a_coroutine_returned_by_a_sync_handler_is_refused() -> None:
    async def inner(_prompt: str) -> str:
        return "never awaited"

    async def handler(prompt: str) -> Any:
        coroutine = inner(prompt)
        coroutine.close()
        return coroutine

    with pytest.raises(SummarizationError, match="expected str"):
        await Summarizer().summarize_chain(handler, sections_chain(2))


@pytest.mark.anyio
async def test_handler_must_be_callable() -> None:
    not_a_handler: Any = "summarize please"
    with pytest.raises(TypeError, match="handler"):
        await Summarizer().summarize_chain(not_a_handler, sections_chain(2))


# -- cancellation ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("limit", "in_flight"),
    [
        pytest.param(None, 5, id="unbounded"),
        pytest.param(2, 2, id="bounded"),
    ],
)
async def test_cancelling_the_caller_cancels_every_call_in_flight(
    limit: int | None, in_flight: int
) -> None:
    messages = sections_chain(6)
    before = dump(messages)
    handler = FakeHandler(delay=lambda _p: 60)
    summarizer = Summarizer(max_concurrency=limit)
    results: list[list[Message]] = []

    async def caller() -> None:
        results.append(await summarizer.summarize_chain(handler, messages))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(caller)
            while handler.in_flight < in_flight:
                await anyio.sleep(0.001)
            group.cancel_scope.cancel()
    assert results == []
    assert handler.calls == in_flight
    assert handler.cancelled == in_flight
    assert handler.finished == 0
    assert handler.in_flight == 0
    assert dump(messages) == before
    # Nothing half-done stays behind: the same summarizer runs again cleanly.
    again = await summarizer.summarize_chain(FakeHandler(), messages)
    assert len(again) < len(messages)


@pytest.mark.anyio
async def test_deadline_cancels_the_calls_and_returns_nothing() -> None:
    handler = FakeHandler(delay=lambda _p: 60)
    results: list[list[Message]] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def run() -> None:
                results.append(await Summarizer().summarize_chain(handler, sections_chain(4)))

            group.start_soon(run)
            # The deadline falls once every call is in flight, however slow the machine.
            with anyio.fail_after(10):
                while handler.in_flight < 3:
                    await anyio.sleep(0.001)
            scope.cancel()
    assert scope.cancelled_caught
    assert results == []
    assert handler.calls == 3
    assert handler.cancelled == 3
