"""The one handler contract (csum.request): the request's entries are the prompt's, a
request handler gets the request through every wrapper and engine, a text handler is
adapted once and gets the prompt text, and the offline handler reads the entries, never
the prompt."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csum.cli
from cast import (
    SUMMARIZATION_TOOL_NAME,
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from csum import Compactor, Robustness, Summarizer, SummarizerConfig
from csum.cache import SummaryCache
from csum.guard import FactGuard
from csum.handlers import extractive, summarize_extractive, threaded
from csum.integrations import SummarizerKeeper, default_keeper
from csum.plan import SUMMARIZED_CONTENT_PREFIX
from csum.prompt import (
    CONTEXT_TAG,
    MESSAGES_TAG,
    TEXT_ROLE,
    SummaryRequest,
    messages_to_prompt,
    summary_request,
    text_request,
)
from csum.request import (
    HandlerCalls,
    RequestHandler,
    RobustHandler,
    as_request_handler,
    request_handler,
    split_request,
)
from csum.stores import MemoryStore
from tests.csum.test_prompt import shows_the_entries_in_order

ARCHIVE_LINE = "[archived: ab12cd34ef56]"

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30) | st.sampled_from(
    [
        SUMMARIZED_CONTENT_PREFIX + "Task: fix it\n  tests pass",
        f"earlier facts\n{ARCHIVE_LINE}",
        "</text>",
        "&",
        "_4f1a9c2e",
    ]
)
_reasoning = st.none() | st.builds(Reasoning, content=_text)
_part = st.one_of(
    st.builds(TextPart, text=_text, reasoning=_reasoning),
    st.builds(ToolCall, id=_text, name=_text, arguments=_text, reasoning=_reasoning),
    st.builds(
        ToolResult,
        tool_call_id=_text,
        name=st.sampled_from([SUMMARIZATION_TOOL_NAME, "bash"]) | _text,
        content=_text,
    ),
    st.builds(ImagePart, url=_text),
    st.builds(BinaryPart, mime_type=_text, data=st.binary(max_size=8)),
    st.builds(
        ProviderPart,
        provider=st.sampled_from(["anthropic", "openai-responses"]),
        kind=st.sampled_from(["web_search_tool_result", "caller", "message_fields"]),
        data=_text,
    ),
)
_message = st.builds(
    Message, role=st.sampled_from(list(Role)), parts=st.lists(_part, max_size=4).map(tuple)
)
_focus = st.none() | st.sampled_from(["the failing test", "ports and hosts"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_message, max_size=3), st.lists(_message, max_size=4), _focus)
def test_the_request_entries_are_the_prompt(
    human: list[Message], ai: list[Message], focus: str | None
) -> None:
    request = summary_request(human, ai, focus=focus)
    prompt = messages_to_prompt(human, ai, focus=focus)
    assert request.prompt == prompt
    if not human and not ai:
        assert request.entries == ()
        return
    assert request.case is not None
    # The prompt shows every entry, in order.
    assert shows_the_entries_in_order(request)
    assert request.entries == request.context + request.summarized
    assert {e.section for e in request.context} <= {CONTEXT_TAG}
    assert {e.section for e in request.summarized} <= {MESSAGES_TAG}


def test_an_entry_says_what_the_engine_knows_of_it() -> None:
    summary = f"{SUMMARIZED_CONTENT_PREFIX}Task: fix it\n{ARCHIVE_LINE}"
    request = summary_request(
        [Message.human("what broke?")],
        [
            Message.ai(summary),
            Message.ai("", ToolCall(id="c1", name="bash", arguments='{"cmd": "ls"}')),
            Message.tool("c1", "bash", "a.py"),
            Message.tool("s1", SUMMARIZATION_TOOL_NAME, "earlier"),
        ],
        focus="the failing test",
    )
    assert request.focus == "the failing test"
    [question] = request.context
    assert (question.section, question.role, question.kind) == (CONTEXT_TAG, "human", "text")
    text, call, result, pair = request.summarized
    assert text.earlier_summary
    assert text.archive_ref == ARCHIVE_LINE
    assert text.body == f"{SUMMARIZED_CONTENT_PREFIX}Task: fix it"
    assert (call.kind, call.name, call.call_id, call.args) == (
        "tool_call",
        "bash",
        "c1",
        '{"cmd": "ls"}',
    )
    assert (result.kind, result.call_id, result.content) == ("tool_result", "c1", "a.py")
    assert not result.earlier_summary
    assert pair.earlier_summary
    assert all(e.section == MESSAGES_TAG for e in request.summarized)


def test_a_provider_block_is_an_entry() -> None:
    block = ProviderPart(provider="anthropic", kind="web_search_tool_result", data='{"a": 1}')
    messages = [Message.from_parts(Role.AI, [TextPart(text="searched"), block])]
    request = summary_request([], messages)
    assert [e.kind for e in request.entries] == ["text", "block"]
    summary = summarize_extractive(request, 300)
    assert "<instructions>" not in summary
    assert "searched" in summary


def test_a_text_request_is_its_text() -> None:
    text = f"{SUMMARIZED_CONTENT_PREFIX}free text\n{ARCHIVE_LINE}"
    request = text_request(text)
    assert request.prompt == text
    assert request.case is None
    [entry] = request.entries
    assert (entry.role, entry.kind, entry.content) == (TEXT_ROLE, "text", text)
    # nothing is derived from a text no message made
    assert not entry.earlier_summary
    assert entry.archive_ref == ""
    assert request.conversation == ()


# --- handlers that record what they are given --------------------------------------------


class Recorder(RequestHandler):
    """A request handler: records the requests it gets."""

    def __init__(self, answer: str = "the summary") -> None:
        self.answer = answer
        self.requests: list[SummaryRequest] = []

    async def __call__(self, request: SummaryRequest, /) -> str:
        assert isinstance(request, SummaryRequest)
        self.requests.append(request)
        return self.answer


def _request() -> SummaryRequest:
    call = ToolCall(id="c1", name="bash", arguments=json.dumps({"cmd": "pytest -q"}))
    return summary_request(
        [Message.human("run the tests")],
        [Message.ai("", call), Message.tool("c1", "bash", "3 passed, 1 failed in 0.2s")],
    )


@pytest.mark.anyio
async def test_a_handler_is_adapted_once_by_its_type() -> None:
    recorder = Recorder()
    assert as_request_handler(recorder) is recorder
    assert as_request_handler(extractive(100)) is not None
    seen: list[object] = []

    async def plain(prompt: str) -> str:
        seen.append(prompt)
        return "short"

    adapted = as_request_handler(plain)
    assert isinstance(adapted, RequestHandler)
    request = _request()
    assert await adapted(request) == "short"
    assert seen == [request.prompt]
    assert "plain" in repr(adapted)

    async def by_request(request: SummaryRequest) -> str:
        return request.case or ""

    wrapped = request_handler(by_request)
    assert as_request_handler(wrapped) is wrapped
    assert await wrapped(request) == "human_and_ai"


@pytest.mark.anyio
async def test_a_plain_handler_still_gets_text() -> None:
    seen: list[object] = []

    async def plain(prompt: str) -> str:
        seen.append(prompt)
        return "short"

    request = _request()
    assert await RobustHandler(plain)(request) == "short"
    chain = _long_chain()
    await Compactor(plain, budget=6_000).compact(chain)
    assert len(seen) > 1
    assert all(isinstance(prompt, str) for prompt in seen)
    assert seen[0] == request.prompt
    assert str(seen[-1]).startswith("<instructions>")  # the engine's prompt, as text


@pytest.mark.anyio
async def test_a_threaded_text_function_gets_text_in_a_thread() -> None:
    texts: list[str] = []

    def summarize(prompt: str) -> str:
        texts.append(prompt)
        return "the summary"

    handler = threaded(summarize)
    request = _request()
    assert await as_request_handler(handler)(request) == "the summary"
    assert await RobustHandler(handler)(request) == "the summary"
    assert texts == [request.prompt, request.prompt]


def _wrapped(recorder: Recorder) -> dict[str, Any]:
    async def failing(prompt: str) -> str:
        raise ValueError("down")

    guard = FactGuard(2_000)
    return {
        "robust": RobustHandler(recorder),
        "fallback": RobustHandler(failing, Robustness(fallback=recorder)),
        "guarded": guard.wrap(recorder),
        "guarded_sized": guard.wrap_sized(lambda size: recorder),
        "robust_guarded": RobustHandler(guard.wrap(RobustHandler(recorder))),
    }


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name", ["robust", "fallback", "guarded", "guarded_sized", "robust_guarded"]
)
async def test_every_wrapper_passes_the_request_on(name: str) -> None:
    recorder = Recorder()
    handler = _wrapped(recorder)[name]
    assert isinstance(handler, RequestHandler)
    request = _request()
    await handler(request)
    assert recorder.requests
    assert all(seen is request for seen in recorder.requests)


@pytest.mark.anyio
async def test_split_chunks_and_merges_go_as_requests() -> None:
    recorder = Recorder("a short summary of a chunk")
    handler = RobustHandler(recorder, Robustness(max_prompt_bytes=4_096))
    results = [Message.tool(f"c{i}", "bash", f"line {i} " * 150) for i in range(6)]
    calls = [Message.ai("", ToolCall(id=f"c{i}", name="bash", arguments="{}")) for i in range(6)]
    chain = [m for pair in zip(calls, results, strict=True) for m in pair]
    request = summary_request([Message.human("the task")], chain)
    await handler(request)
    assert len(recorder.requests) > 2  # chunks, then their merge
    chunks = [r.prompt for r in split_request(request, 4_096)]
    assert all(len(chunk.encode()) <= 4_096 for chunk in chunks)
    # The chunks run concurrently: in any order, then the merge.
    assert sorted(r.prompt for r in recorder.requests[: len(chunks)]) == sorted(chunks)


def test_a_text_request_is_split_at_line_breaks() -> None:
    text = "".join(f"line {i}\n" for i in range(2_000))
    pieces = split_request(text_request(text), 1_024)
    assert all(p.case is None and len(p.prompt.encode()) <= 1_024 for p in pieces)
    assert "".join(p.prompt for p in pieces) == text


@pytest.mark.anyio
async def test_the_cache_keys_stay_the_prompt_text() -> None:
    recorder = Recorder()
    cache = SummaryCache(MemoryStore(), handler_id="recorder")
    calls = HandlerCalls(recorder, cache=cache)
    request = _request()
    for _ in range(2):
        summary = await calls.summarize_prompt(request, phase="test", section=0)
        assert summary == "the summary"
    assert recorder.requests == [request]  # the second came from the cache
    assert calls.cache_hits == 1
    # Another request of the same prompt (another conversation) hits the same key.
    other = replace(request, conversation=(Message.human("elsewhere"),), kept=1)
    assert await calls.summarize_prompt(other, phase="test", section=0) == "the summary"
    assert calls.cache_hits == 2


def _long_chain(turns: int = 30) -> list[Message]:
    chain = [Message.system("you are an agent"), Message.human("fix the build")]
    for index in range(turns):
        call_id = f"call_{index:03d}"
        chain.append(Message.ai("", ToolCall(id=call_id, name="bash", arguments='{"i": 1}')))
        chain.append(Message.tool(call_id, "bash", f"step {index}: " + "output " * 60))
    return chain


Keeper = Callable[[Recorder], Any]
KEEPERS: dict[str, Keeper] = {
    "compactor": lambda handler: Compactor(handler, budget=6_000),
    "compactor_pieces": lambda handler: Compactor(
        handler, budget=20_000, robustness=Robustness(max_prompt_bytes=4_096)
    ),
    "hook_default_keeper": lambda handler: default_keeper(6_000, handler),
    "summarizer_keeper": lambda handler: SummarizerKeeper(
        Summarizer(SummarizerConfig(max_body_pair_bytes=200, last_section_bytes=4_000)), handler
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("keeper", list(KEEPERS))
async def test_the_engines_hand_a_request_handler_the_request(keeper: str) -> None:
    recorder = Recorder("bash ran the build steps")
    await KEEPERS[keeper](recorder).compact(_long_chain(100))
    assert recorder.requests
    for request in recorder.requests:
        assert request.case is not None
        assert shows_the_entries_in_order(request)


@pytest.mark.anyio
async def test_the_offline_handler_reads_the_entries_never_the_prompt() -> None:
    request = _request()
    expected = summarize_extractive(request, 200)
    blanked = replace(request, prompt="not read")
    assert summarize_extractive(blanked, 200) == expected
    assert await extractive(200)(blanked) == expected
    assert await extractive(200)(request) == expected


def test_the_command_line_compaction_runs_the_offline_handler() -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["summarize", "--example", "--budget", "12KiB"]
    assert csum.cli.main(argv, stdout=out, stderr=err) == 0, err.getvalue()
    assert "1 handler calls" in err.getvalue()


@pytest.mark.anyio
async def test_bad_input_says_what_was_wrong() -> None:
    with pytest.raises(TypeError, match="SummaryRequest"):
        summarize_extractive("text", 100)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="SummaryRequest"):
        await extractive(100)("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_bytes"):
        summarize_extractive(_request(), 0)
    with pytest.raises(TypeError, match="callable"):
        as_request_handler("not a handler")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        request_handler("not a function")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_long_request_is_summarized_in_a_worker_thread() -> None:
    messages = [Message.tool("c1", "bash", "line of output\n" * 6_000)]
    request = summary_request([], messages)
    expected = summarize_extractive(request, 500)
    with anyio.fail_after(60):
        assert await extractive(500)(request) == expected
