"""The robust handler wrapper and the Compactor under handler faults, on asyncio and
trio: timeouts, transient errors then success, permanent errors, oversized prompts, a
fallback that also fails, cancellation mid-compaction. Nothing is ever lost: the
caller's chain is untouched and no partial result escapes."""

from __future__ import annotations

import json
import random
from typing import Any

import anyio
import pytest

import csum.request
from cast import ChainAST, Message, ToolCall
from csum import (
    Compactor,
    RetryPolicy,
    RobustHandler,
    Robustness,
    SummarizationError,
    is_transient,
    split_request,
)
from csum.handlers import HandlerError, extractive
from csum.prompt import SummaryRequest, summary_request, text_request
from csum.request import ledger

P = text_request("p")

FAST = RetryPolicy(max_retries=3, backoff_base=0.001, backoff_max=0.01, jitter=0.5)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Flaky:
    """Fails with ``errors`` (in order), then answers; records every prompt."""

    def __init__(self, *errors: BaseException, answer: str = "the summary", hang: int = 0):
        self.errors = list(errors)
        self.answer = answer
        self.hang = hang
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.hang:
            self.hang -= 1
            await anyio.sleep(3600)
        await anyio.lowlevel.checkpoint()
        if self.errors:
            raise self.errors.pop(0)
        return self.answer


class StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def chain(turns: int = 30, result: int = 400) -> list[Message]:
    out = [Message.system("sys"), Message.human("question")]
    for index in range(turns):
        call_id = f"call_{index}"
        out.append(
            Message.ai("", ToolCall(id=call_id, name="grep", arguments=json.dumps({"i": index})))
        )
        out.append(Message.tool(call_id, "grep", f"line {index} " + "r" * result))
    return out


def snapshot(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (TimeoutError(), True),
        (ConnectionError(), True),
        (StatusError(429), True),
        (StatusError(503), True),
        (StatusError(400), False),
        (HandlerError("x", provider="p", model="m", retryable=True), True),
        (HandlerError("x", provider="p", model="m", status_code=401), False),
        (ValueError("bad"), False),
    ],
)
def test_transient_classification(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


@pytest.mark.anyio
async def test_transient_errors_are_retried_then_succeed() -> None:
    inner = Flaky(StatusError(503), ConnectionError())
    handler = RobustHandler(inner, Robustness(retry=FAST), rng=random.Random(1))
    with ledger() as books:
        assert await handler(P) == "the summary"
    assert len(inner.prompts) == 3
    assert (books.calls, books.retries) == (3, 2)


@pytest.mark.anyio
async def test_permanent_error_is_not_retried() -> None:
    inner = Flaky(StatusError(400))
    handler = RobustHandler(inner, Robustness(retry=FAST))
    with pytest.raises(StatusError):
        await handler(P)
    assert len(inner.prompts) == 1


@pytest.mark.anyio
async def test_retries_are_bounded() -> None:
    inner = Flaky(*(StatusError(500) for _ in range(10)))
    handler = RobustHandler(inner, Robustness(retry=FAST))
    with pytest.raises(StatusError):
        await handler(P)
    assert len(inner.prompts) == FAST.max_retries + 1


@pytest.mark.anyio
async def test_timeout_then_success() -> None:
    inner = Flaky(hang=1)
    handler = RobustHandler(inner, Robustness(timeout=0.05, retry=FAST))
    with ledger() as books:
        assert await handler(P) == "the summary"
    assert books.timeouts == 1
    assert books.retries == 1


@pytest.mark.anyio
async def test_fallback_answers_when_the_handler_fails_for_good() -> None:
    handler = RobustHandler(
        Flaky(StatusError(401)), Robustness(retry=FAST, fallback=Flaky(answer="fb"))
    )
    with ledger() as books:
        assert await handler(P) == "fb"
    assert books.fallback_calls == 1


@pytest.mark.anyio
async def test_fallback_that_also_fails_raises_both() -> None:
    handler = RobustHandler(
        Flaky(StatusError(401)),
        Robustness(retry=FAST, fallback=Flaky(ValueError("fallback broke"))),
    )
    with pytest.raises(ExceptionGroup) as info:
        await handler(P)
    assert [type(e) for e in info.value.exceptions] == [StatusError, ValueError]


@pytest.mark.anyio
async def test_non_string_answer_is_a_permanent_failure() -> None:
    async def bad(prompt: str) -> Any:
        return 42

    with pytest.raises(TypeError, match="returned int"):
        await RobustHandler(bad, Robustness(retry=FAST))(P)


def test_split_request_pieces_fit_and_keep_every_entry() -> None:
    messages = chain(40, 900)[1:]
    request = summary_request(messages[:1], messages[1:])
    pieces = split_request(request, 8192)
    assert len(pieces) > 1
    assert all(len(p.prompt.encode()) <= 8192 for p in pieces)
    contents = [e.content for p in pieces for e in p.summarized if e.kind == "tool_result"]
    assert contents == [m.tool_results[0].content for m in messages[1:] if m.tool_results]
    assert all(p.context for p in pieces)  # the question goes with every piece


def test_split_request_cuts_a_message_too_large_alone() -> None:
    huge = [
        Message.human("q"),
        Message.ai("", ToolCall(id="c", name="cat")),
        Message.tool("c", "cat", "é" * 30_000),
    ]
    pieces = split_request(summary_request(huge[:1], huge[1:]), 8192)
    assert all(len(p.prompt.encode()) <= 8192 for p in pieces)
    text = "".join(e.content for p in pieces for e in p.summarized if e.kind == "tool_result")
    assert text == "é" * 30_000


def test_split_plain_text_at_line_breaks() -> None:
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(500))
    pieces = split_request(text_request(text), 4096)
    assert "".join(p.prompt for p in pieces) == text
    assert all(len(p.prompt.encode()) <= 4096 for p in pieces)


def test_splitting_renders_a_bounded_multiple_of_the_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Splitting renders candidate prompts to measure them: not one growing prompt per
    message added (hundreds of times the prompt on many small messages), a few per chunk."""
    messages = chain(3000, 80)[1:]
    request = summary_request(messages[:1], messages[1:])
    rendered: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> SummaryRequest:
        made = summary_request(*args, **kwargs)
        rendered.append(len(made.prompt))
        return made

    monkeypatch.setattr(csum.request, "summary_request", counted)
    pieces = split_request(request, 32 * 1024)
    assert len(pieces) > 5
    assert all(len(p.prompt.encode()) <= 32 * 1024 for p in pieces)
    assert sum(rendered) <= 40 * len(request.prompt)  # one per message: over 100 times


@pytest.mark.anyio
async def test_oversized_prompt_is_split_summarized_concurrently_and_merged() -> None:
    inner = Flaky()
    handler = RobustHandler(inner, Robustness(max_prompt_bytes=8192, retry=FAST))
    messages = chain(40, 900)[1:]
    with ledger() as books:
        summary = await handler(summary_request(messages[:1], messages[1:]))
    assert summary == "the summary"
    assert all(len(p.encode()) <= 8192 for p in inner.prompts)
    assert books.chunks == len(inner.prompts) - 1  # every chunk, then one merge
    assert books.merges == 1


@pytest.mark.anyio
async def test_a_failing_piece_of_a_split_prompt_raises_the_handlers_own_error() -> None:
    """Not an exception group naming the task group (asyncio and trio word it apart):
    the caller (and so the Compactor's SummarizationError) sees what the handler raised."""
    inner = Flaky(RuntimeError("the model is down"))
    handler = RobustHandler(
        inner, Robustness(max_prompt_bytes=8192, retry=RetryPolicy(max_retries=0))
    )
    messages = chain(40, 900)[1:]
    with pytest.raises(RuntimeError, match="the model is down"):
        await handler(summary_request(messages[:1], messages[1:]))
    assert len(inner.prompts) > 1  # the prompt was split


@pytest.mark.anyio
async def test_merge_depth_limit_cuts_instead_of_recursing_forever() -> None:
    inner = Flaky(answer="s" * 3000)  # summaries too large to merge in one prompt
    handler = RobustHandler(inner, Robustness(max_prompt_bytes=4096, max_split_depth=1, retry=FAST))
    messages = chain(30, 900)[1:]
    with ledger() as books:
        summary = await handler(summary_request(messages[:1], messages[1:]))
    assert books.truncated == 1
    assert len(summary.encode()) <= 4096


# -- the Compactor under faults ---------------------------------------------------------


@pytest.mark.anyio
async def test_compactor_retries_transient_errors_and_reports_them() -> None:
    events: list[Any] = []
    compactor = Compactor(
        Flaky(StatusError(429), TimeoutError()),
        budget=8000,
        on_event=events.append,
        robustness=Robustness(retry=FAST),
    )
    out = await compactor.compact(chain())
    assert sum(m.size for m in out) <= 8000
    assert (events[0].handler_calls, events[0].retries) == (3, 2)


@pytest.mark.anyio
async def test_compactor_permanent_failure_raises_and_loses_nothing() -> None:
    messages = chain()
    before = snapshot(messages)
    compactor = Compactor(Flaky(StatusError(400)), budget=8000, robustness=Robustness(retry=FAST))
    with pytest.raises(SummarizationError) as info:
        await compactor.compact(messages)
    assert isinstance(info.value.__cause__, StatusError)
    assert snapshot(messages) == before
    # The next call, with a working handler, compacts the same chain.
    compactor.handler.handler = Flaky()
    out = await compactor.compact(messages)
    assert sum(m.size for m in out) <= 8000


@pytest.mark.anyio
async def test_compactor_fallback_extractive_when_the_llm_fails() -> None:
    events: list[Any] = []
    compactor = Compactor(
        Flaky(StatusError(500), StatusError(500), StatusError(500), StatusError(500)),
        budget=8000,
        on_event=events.append,
        robustness=Robustness(retry=FAST, fallback=extractive()),
    )
    out = await compactor.compact(chain())
    ChainAST.from_messages(out)
    assert events[0].fallback_calls == 1


@pytest.mark.anyio
async def test_compactor_fallback_that_also_fails_loses_nothing() -> None:
    messages = chain()
    before = snapshot(messages)
    compactor = Compactor(
        Flaky(StatusError(401)),
        budget=8000,
        robustness=Robustness(retry=FAST, fallback=Flaky(RuntimeError("down"))),
    )
    with pytest.raises(SummarizationError) as info:
        await compactor.compact(messages)
    assert isinstance(info.value.__cause__, ExceptionGroup)
    assert snapshot(messages) == before


@pytest.mark.anyio
async def test_compactor_oversized_prompt_is_chunked() -> None:
    events: list[Any] = []
    inner = Flaky()
    compactor = Compactor(
        inner, budget=20_000, on_event=events.append, robustness=Robustness(max_prompt_bytes=6000)
    )
    out = await compactor.compact(chain(60, 900))
    assert sum(m.size for m in out) <= 20_000
    assert events[0].chunks > 1
    assert all(len(p.encode()) <= 6000 for p in inner.prompts)


@pytest.mark.anyio
async def test_compactor_timeout_everywhere_raises_and_loses_nothing() -> None:
    messages = chain()
    before = snapshot(messages)
    compactor = Compactor(
        Flaky(hang=100),
        budget=8000,
        robustness=Robustness(timeout=0.02, retry=RetryPolicy(max_retries=1, backoff_base=0.001)),
    )
    with pytest.raises(SummarizationError):
        await compactor.compact(messages)
    assert snapshot(messages) == before


@pytest.mark.anyio
async def test_cancellation_mid_compaction_leaves_everything_as_it_was() -> None:
    messages = chain()
    before = snapshot(messages)
    inner = Flaky(hang=1)
    # About a cancellation during the handler call: no clearing stage, which would reach
    # the target here without one (and the watcher below would then wait forever).
    compactor = Compactor(inner, budget=8000, clearing=None, robustness=Robustness(timeout=None))
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_once_the_handler_runs() -> None:
                while not inner.prompts:  # a loaded machine may take long to get there
                    await anyio.sleep(0.005)
                scope.cancel()

            group.start_soon(cancel_once_the_handler_runs)
            await compactor.compact(messages)
            # Reached only when the compaction made no handler call (a setting that
            # needs none): stop the watcher, so the test fails below instead of hanging.
            group.cancel_scope.cancel()
    assert scope.cancelled_caught
    assert len(inner.prompts) == 1
    assert snapshot(messages) == before
    # Nothing was recorded as a compaction: the next call compacts at once.
    out = await compactor.compact(messages)
    assert sum(m.size for m in out) <= 8000
