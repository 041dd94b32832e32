"""The structured request beside the prompt (csum.request): its entries are the prompt's,
an opted-in handler gets it through every wrapper, a plain handler still gets text, and
the offline handler reads the entries without parsing the prompt."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csum._robust
import csum.cli
import csum.handlers._extractive.entry as extractive_entry
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
from csum._calls import HandlerCalls
from csum._pairs import SUMMARIZED_CONTENT_PREFIX
from csum._robust import RobustHandler, split_prompt, split_request
from csum.cache import SummaryCache
from csum.guard import FactGuard
from csum.handlers import extractive, summarize_extractive, threaded
from csum.handlers._extractive import summarize_extractive_request
from csum.integrations._history import SummarizerKeeper, default_keeper
from csum.prompt import (
    CONTEXT_TAG,
    MESSAGES_TAG,
    PromptCase,
    PromptFormatError,
    SummaryRequest,
    messages_to_prompt,
    parse_prompt,
    render_request,
    summary_request,
)
from csum.request import StructuredHandler, request_method, summarize_job
from csum.stores import MemoryStore

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
    # The prompt is made from the entries alone, and reads back as them.
    assert render_request(request.case, request.focus, request.marker, request.messages) == prompt
    parsed = parse_prompt(prompt)
    assert parsed.entries == request.entries
    assert parsed.context == request.context
    assert parsed.messages == request.summarized
    assert parsed.focus == request.focus
    assert parsed.case is request.case


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


def test_a_provider_block_is_read_back() -> None:
    # Before: parse_prompt refused a prompt holding a provider's block, so the offline
    # handler summarized such a prompt as plain text, its tags and instructions included.
    block = ProviderPart(provider="anthropic", kind="web_search_tool_result", data='{"a": 1}')
    messages = [Message.from_parts(Role.AI, [TextPart(text="searched"), block])]
    parsed = parse_prompt(messages_to_prompt([], messages))
    assert [e.kind for e in parsed.entries] == ["text", "block"]
    summary = summarize_extractive(messages_to_prompt([], messages), 300)
    assert "<instructions>" not in summary
    assert "searched" in summary


# --- handlers that record what they are given --------------------------------------------


class Recorder:
    """A structured handler: records the requests and the texts it gets."""

    def __init__(self, answer: str = "the summary") -> None:
        self.answer = answer
        self.requests: list[SummaryRequest] = []
        self.texts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.texts.append(prompt)
        return self.answer

    async def summarize_request(self, request: SummaryRequest) -> str:
        assert isinstance(request, SummaryRequest)
        self.requests.append(request)
        return self.answer


class SyncRecorder:
    """The synchronous form, for threaded()."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []
        self.texts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.texts.append(prompt)
        return "the summary"

    def summarize_request(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return "the summary"


def _request() -> SummaryRequest:
    call = ToolCall(id="c1", name="bash", arguments=json.dumps({"cmd": "pytest -q"}))
    return summary_request(
        [Message.human("run the tests")],
        [Message.ai("", call), Message.tool("c1", "bash", "3 passed, 1 failed in 0.2s")],
    )


def test_the_protocol_and_the_method() -> None:
    recorder = Recorder()

    async def plain(prompt: str) -> str:
        return prompt

    assert isinstance(recorder, StructuredHandler)
    assert request_method(recorder) == recorder.summarize_request
    assert request_method(plain) is None
    assert request_method(extractive(100)) is not None


@pytest.mark.anyio
async def test_a_plain_handler_still_gets_text() -> None:
    seen: list[object] = []

    async def plain(prompt: str) -> str:
        seen.append(prompt)
        return "short"

    request = _request()
    assert await summarize_job(plain, request) == "short"
    assert await RobustHandler(plain).summarize_request(request) == "short"
    chain = _long_chain()
    await Compactor(plain, budget=6_000).compact(chain)
    assert len(seen) > 2
    assert all(isinstance(prompt, str) for prompt in seen)
    assert seen[0] == request.prompt
    parse_prompt(str(seen[-1]))  # the engine's prompt, as text


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
    request = _request()
    await summarize_job(handler, request)
    assert recorder.requests
    assert all(seen is request for seen in recorder.requests)
    assert recorder.texts == []


@pytest.mark.anyio
async def test_the_threaded_handler_passes_the_request_on() -> None:
    recorder = SyncRecorder()
    handler = threaded(recorder)
    request = _request()
    assert await summarize_job(handler, request) == "the summary"
    assert await handler(request.prompt) == "the summary"
    assert recorder.requests == [request]
    assert recorder.texts == [request.prompt]

    def plain(prompt: str) -> str:
        return "text"

    assert request_method(threaded(plain)) is None


@pytest.mark.anyio
async def test_split_chunks_and_merges_go_as_requests() -> None:
    recorder = Recorder("a short summary of a chunk")
    handler = RobustHandler(recorder, Robustness(max_prompt_bytes=4_096))
    results = [Message.tool(f"c{i}", "bash", f"line {i} " * 150) for i in range(6)]
    calls = [Message.ai("", ToolCall(id=f"c{i}", name="bash", arguments="{}")) for i in range(6)]
    chain = [m for pair in zip(calls, results, strict=True) for m in pair]
    request = summary_request([Message.human("the task")], chain)
    await handler.summarize_request(request)
    assert len(recorder.requests) > 2  # chunks, then their merge
    assert recorder.texts == []
    chunks = [r.prompt for r in split_request(request, 4_096)]
    assert chunks == split_prompt(request.prompt, 4_096)
    # The chunks run concurrently: in any order, then the merge.
    assert sorted(r.prompt for r in recorder.requests[: len(chunks)]) == sorted(chunks)


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
    # A text call of the same prompt hits the same key.
    assert await calls.summarize_prompt(request.prompt, phase="test", section=0) == "the summary"
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
async def test_the_engines_hand_an_opted_in_handler_the_request(keeper: str) -> None:
    recorder = Recorder("bash ran the build steps")
    await KEEPERS[keeper](recorder).compact(_long_chain(100))
    assert recorder.requests
    assert recorder.texts == []
    for request in recorder.requests:
        assert parse_prompt(request.prompt).entries == request.entries


def _refuse(prompt: str) -> None:
    raise AssertionError("the offline handler parsed a prompt")


@pytest.mark.anyio
async def test_the_offline_handler_never_parses_a_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = _request()
    expected = summarize_extractive(request.prompt, 200)
    chain = _long_chain()
    by_text = await Compactor(_TextOnly(extractive(1_000)), budget=6_000).compact(chain)
    long_chain = _long_chain(100)

    def in_pieces(handler: Any) -> Compactor:
        return Compactor(handler, budget=20_000, robustness=Robustness(max_prompt_bytes=4_096))

    pieces_by_text = await in_pieces(_TextOnly(extractive(1_000))).compact(long_chain)
    monkeypatch.setattr(extractive_entry, "parse_prompt", _refuse)
    monkeypatch.setattr(csum._robust, "parse_prompt", _refuse)
    with pytest.raises(AssertionError, match="parsed a prompt"):
        summarize_extractive(request.prompt, 200)
    assert summarize_extractive_request(request, 200) == expected
    assert await summarize_job(extractive(200), request) == expected
    # The engine's calls, through the robust handler, the cache and the pieces.
    assert await Compactor(extractive(1_000), budget=6_000).compact(chain) == by_text
    assert await in_pieces(extractive(1_000)).compact(long_chain) == pieces_by_text


def test_the_command_line_compaction_hands_the_offline_handler_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: the command's progress wrapper took text only, so the handler parsed it.
    monkeypatch.setattr(extractive_entry, "parse_prompt", _refuse)
    out, err = io.StringIO(), io.StringIO()
    argv = ["summarize", "--example", "--budget", "12KiB"]
    assert csum.cli.main(argv, stdout=out, stderr=err) == 0, err.getvalue()
    assert "1 handler calls" in err.getvalue()


class _TextOnly:
    """A handler taking text alone, around one that would take requests."""

    def __init__(self, handler: Callable[[str], Any]) -> None:
        self.handler = handler

    async def __call__(self, prompt: str) -> str:
        result: str = await self.handler(prompt)
        return result


def test_bad_input_says_what_was_wrong() -> None:
    with pytest.raises(TypeError, match="SummaryRequest"):
        summarize_extractive_request("text", 100)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_bytes"):
        summarize_extractive_request(_request(), 0)
    with pytest.raises(PromptFormatError):
        parse_prompt("not ours")
    with pytest.raises(ValueError, match="at least one message"):
        render_request(PromptCase.AI_ONLY, "", "_4f1a9c2e", ())


@pytest.mark.anyio
async def test_a_long_request_is_summarized_in_a_worker_thread() -> None:
    messages = [Message.tool("c1", "bash", "line of output\n" * 6_000)]
    request = summary_request([], messages)
    expected = summarize_extractive(request.prompt, 500)
    with anyio.fail_after(60):
        assert await summarize_job(extractive(500), request) == expected
