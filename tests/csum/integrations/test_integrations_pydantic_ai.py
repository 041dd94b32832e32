"""pydantic-ai: the codec on histories pydantic-ai builds itself, and the history
processor inside real agent runs driven by pydantic-ai's own ``FunctionModel``.

pydantic-ai's agent loop needs asyncio, so agent runs use ``run_sync``; the processor
on its own runs on asyncio and trio.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    VideoUrl,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cast import ChainAST, CodecError, Message, Reasoning, port
from cast.codecs import detect_format, get_codec
from cast.codecs import pydantic_ai as codec
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from csum.integrations import HookEvent
from csum.integrations.pydantic_ai import HistoryProcessor

BUDGET = 16_000
TOOL_OUTPUT = "line {n}: build step finished, artefact written to /tmp/out/{n}.o\n"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def tool_agent(
    processor: HistoryProcessor | None,
    calls: int,
    received: list[list[Message]],
    model_name: str | None = None,
) -> Agent:
    """An agent whose model calls ``big`` ``calls`` times (with thinking) then answers;
    every history the model receives is recorded as chaincast messages."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(codec.decode(messages))
        step = len(received)
        if step <= calls:
            return ModelResponse(
                parts=[
                    ThinkingPart(
                        f"step {step}", signature=f"sig-{step}", provider_name="anthropic"
                    ),
                    TextPart(f"running step {step}"),
                    ToolCallPart("big", {"n": step}, tool_call_id=f"call_{step}"),
                ],
                provider_name="anthropic",
            )
        return ModelResponse(parts=[TextPart("all steps done")])

    capabilities = [] if processor is None else [processor.capability()]
    agent = Agent(
        FunctionModel(model, model_name=model_name),
        system_prompt="You run builds.",
        capabilities=capabilities,
    )

    @agent.tool_plain
    def big(n: int) -> str:
        return TOOL_OUTPUT.format(n=n) * 80

    return agent


def test_agent_run_stays_under_budget() -> None:
    received: list[list[Message]] = []
    processor = HistoryProcessor(budget=BUDGET)
    result = tool_agent(processor, 14, received).run_sync("Build everything.")

    assert result.output == "all steps done"
    compacted = [e for e in processor.events if e.outcome == "compacted"]
    assert len(compacted) >= 3
    assert all(e.size_after <= BUDGET for e in compacted)
    for history in received:
        assert sum(m.size for m in history) <= BUDGET
        ChainAST.from_messages(history)  # every tool call kept its result: no repair needed
    # What pydantic-ai stored is the compacted history, and it still validates.
    stored = result.all_messages()
    dumped = ModelMessagesTypeAdapter.dump_python(stored, mode="json")
    assert ModelMessagesTypeAdapter.validate_python(dumped) == stored
    assert sum(m.size for m in codec.decode(stored)) <= BUDGET + len(TOOL_OUTPUT) * 100


def test_untouched_messages_come_back_as_the_same_objects() -> None:
    received: list[list[Message]] = []
    result = tool_agent(None, 2, received).run_sync("Build.")
    history = result.all_messages()
    processor = HistoryProcessor(budget=1_000_000)
    out = anyio.run(processor, history)
    assert out == history
    assert all(a is b for a, b in zip(out, history, strict=True))
    assert processor.events[-1].outcome == "unchanged"


def test_round_trip_of_a_recorded_history() -> None:
    received: list[list[Message]] = []
    history = tool_agent(None, 3, received).run_sync("Build.").all_messages()
    payload = ModelMessagesTypeAdapter.dump_python(history, mode="json")
    assert detect_format(payload) == "pydantic_ai"
    assert get_codec("pydantic-ai") is codec
    decoded = codec.decode(payload)
    assert decoded == codec.decode(history)
    assert decoded[0] == Message(role="system", parts=[{"type": "text", "text": "You run builds."}])
    again = codec.to_framework(codec.encode(decoded, provider_name="anthropic"))
    assert codec.decode(again) == decoded
    # Conversation content survives exactly: thinking with its signature and provider.
    thinking = [p for m in again if isinstance(m, ModelResponse) for p in m.parts]
    assert ThinkingPart("step 1", signature="sig-1", provider_name="anthropic") in thinking
    assert json.loads(json.dumps(codec.encode(decoded))) == codec.encode(decoded)
    # And pydantic-ai resumes from it.
    resumed = tool_agent(None, 0, []).run_sync("One more.", message_history=again)
    assert resumed.output == "all steps done"


def test_every_part_kind_chaincast_holds() -> None:
    history: list[ModelMessage] = [
        ModelRequest(
            parts=[
                SystemPromptPart("sys a"),
                SystemPromptPart("sys b"),
                UserPromptPart(
                    [
                        "look",
                        ImageUrl("https://example.com/a.png", vendor_metadata={"detail": "low"}),
                        BinaryContent(b"%PDF-1.7", media_type="application/pdf"),
                    ]
                ),
            ]
        ),
        ModelResponse(
            parts=[
                ThinkingPart("", id="redacted_thinking", signature="opaque"),
                ThinkingPart("why", id="rs_1", signature="enc", provider_name="openai"),
                ToolCallPart("f", '{"x": 1}', tool_call_id="c1"),
                ToolCallPart("g", None, tool_call_id="c2"),
                ThinkingPart("trailing"),
            ]
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("f", {"rows": [1, 2]}, tool_call_id="c1"),
                ToolReturnPart("g", "plain", tool_call_id="c2"),
            ]
        ),
    ]
    decoded = codec.decode(history)
    roles = [m.role.value for m in decoded]
    assert roles == ["system", "human", "ai", "tool", "tool"]
    assert [p.text for p in decoded[0].parts] == ["sys a", "sys b"]
    image, binary = decoded[1].parts[1:]
    assert (image.url, image.detail) == ("https://example.com/a.png", "low")
    assert (binary.mime_type, binary.data) == ("application/pdf", b"%PDF-1.7")
    redacted, call_f, call_g, trailing = decoded[2].parts
    assert redacted.reasoning == Reasoning(signature=REDACTED_THINKING_PREFIX + b"opaque")
    assert call_f.reasoning == Reasoning(content="why", signature=b"rs_1\nenc")
    assert (call_f.arguments, call_g.arguments) == ('{"x": 1}', "{}")
    assert (trailing.text, trailing.reasoning) == ("", Reasoning(content="trailing"))
    assert decoded[3].tool_results[0].content == '{"rows":[1,2]}'
    back = codec.to_framework(codec.encode(decoded, provider_name="openai"))
    assert codec.decode(back) == decoded
    parts = back[1].parts
    assert parts[0] == ThinkingPart(
        "", id="redacted_thinking", signature="opaque", provider_name="openai"
    )
    assert parts[1] == ThinkingPart("why", id="rs_1", signature="enc", provider_name="openai")


def test_retries_are_held() -> None:
    step = 0

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal step
        step += 1
        if step == 1:
            return ModelResponse(parts=[ToolCallPart("check", {"n": 0}, tool_call_id="c1")])
        if step == 2:
            return ModelResponse(parts=[ToolCallPart("check", {"n": 2}, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), retries=3)

    @agent.tool_plain
    def check(n: int) -> str:
        if n == 0:
            raise ModelRetry("n must be positive")
        return "fine"

    history = agent.run_sync("go").all_messages()
    decoded = codec.decode(history)
    results = [r for m in decoded for r in m.tool_results]
    assert [(r.tool_call_id, r.content) for r in results] == [
        ("c1", "n must be positive"),
        ("c2", "fine"),
    ]
    ChainAST.from_messages(decoded)


@pytest.mark.parametrize(
    ("part", "path"),
    [
        pytest.param(
            UserPromptPart([VideoUrl("https://v/x.mp4")]),
            "[0].parts[0].content[0].kind",
            id="video-url",
        ),
    ],
)
def test_parts_chaincast_cannot_hold_are_refused(part: Any, path: str) -> None:
    with pytest.raises(CodecError) as info:
        codec.decode([ModelRequest(parts=[part])])
    assert info.value.path == path


def _unholdable_history() -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(["watch", VideoUrl("https://v/x.mp4")])]),
        ModelResponse(parts=[TextPart("seen")]),
    ]


@pytest.mark.anyio
async def test_failure_keeps_the_history_and_reports() -> None:
    events: list[HookEvent] = []
    processor = HistoryProcessor(budget=BUDGET, on_event=events.append)
    history = _unholdable_history()
    out = await processor(history)
    assert out == history
    assert [e.outcome for e in events] == ["failed"]
    assert isinstance(events[0].error, CodecError)


@pytest.mark.anyio
async def test_failure_raises_when_asked() -> None:
    processor = HistoryProcessor(budget=BUDGET, on_error="raise")
    with pytest.raises(CodecError):
        await processor(_unholdable_history())


class BrokenKeeper:
    async def compact(self, messages: list[Message]) -> list[Message]:
        raise RuntimeError("summarizer down")


def test_agent_run_goes_on_when_the_keeper_fails() -> None:
    processor = HistoryProcessor(BrokenKeeper())
    result = tool_agent(processor, 2, []).run_sync("Build.")
    assert result.output == "all steps done"
    assert {e.outcome for e in processor.events} == {"failed"}


def test_anthropic_history_resumes_on_an_openai_model() -> None:
    pytest.importorskip("openai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from agent_model_server import Turn, agent_model_server

    history = tool_agent(None, 3, []).run_sync("Build.").all_messages()
    ported = port(codec.decode(history), "openai", source="anthropic")
    resumed_history = codec.to_framework(codec.encode(ported))
    with agent_model_server(lambda api, body: Turn(text="resumed on openai")) as server:
        model = OpenAIChatModel(
            "gpt-4o", provider=OpenAIProvider(base_url=f"{server.base_url}/v1", api_key="k")
        )
        agent = Agent(model)
        result = agent.run_sync("Continue.", message_history=resumed_history)
    assert result.output == "resumed on openai"
    sent = server.bodies("/v1/chat/completions")[0]["messages"]
    from cast import lint
    from cast.codecs import openai as openai_codec

    received = openai_codec.decode({"messages": sent})
    assert lint(received, "openai") == []
    assert "sig-1" not in json.dumps(sent)
    calls = [c["id"] for m in sent for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert calls == answered
    assert len(calls) == 3


def test_a_token_budget_compactor_as_keeper() -> None:
    from csum import Budget, Compactor, EstimatedTokens

    counter = EstimatedTokens()
    received: list[list[Message]] = []
    processor = HistoryProcessor(Compactor(budget=Budget.tokens(4_000), target="anthropic"))
    result = tool_agent(processor, 10, received).run_sync("Build everything.")
    assert result.output == "all steps done"
    assert sum(e.outcome == "compacted" for e in processor.events) >= 2
    for history in received:
        assert sum(counter.count(m) for m in history) <= 4_000
        ChainAST.from_messages(history)


# -- a newcomer's traps (issue 29) -------------------------------------------------------


def test_a_handler_where_a_keeper_goes_compacts_the_run() -> None:
    """``HistoryProcessor(extractive())`` was taken as a keeper: every call failed with
    "'function' object has no attribute 'compact'" and the run went on uncompacted."""
    from csum.handlers import extractive

    received: list[list[Message]] = []
    processor = HistoryProcessor(extractive(), budget=BUDGET)
    result = tool_agent(processor, 14, received).run_sync("Build everything.")
    assert result.output == "all steps done"
    assert "failed" not in {e.outcome for e in processor.events}
    assert sum(e.outcome == "compacted" for e in processor.events) >= 3
    assert max(sum(m.size for m in history) for history in received) <= BUDGET


def test_what_is_not_a_keeper_is_refused_at_construction() -> None:
    from csum.handlers import extractive

    with pytest.raises(TypeError, match=r"HistoryProcessor\(budget=32_000\)"):
        HistoryProcessor("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="call it"):
        HistoryProcessor(extractive)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"HistoryProcessor\(handler, budget=\.\.\.\)"):
        HistoryProcessor(BrokenKeeper(), budget=BUDGET)


def test_the_budget_comes_from_the_agents_model() -> None:
    """Without ``budget=`` the processor takes half of its agent's model window
    (gpt-3.5-turbo: 16,385 tokens -> 8,192) instead of a fixed 64 KiB."""
    from csum import Budget, EstimatedTokens

    counter = EstimatedTokens()
    received: list[list[Message]] = []
    processor = HistoryProcessor()
    agent = tool_agent(processor, 14, received, model_name="gpt-3.5-turbo")
    assert agent.run_sync("Build everything.").output == "all steps done"
    assert processor.keeper.budget == Budget.tokens(8_192)  # type: ignore[attr-defined]
    events = list(processor.events)
    assert {(e.unit, e.budget) for e in events} == {("tokens", 8_192)}
    assert sum(e.outcome == "compacted" for e in events) >= 1
    assert max(sum(map(counter.count, history)) for history in received) <= 8_192


def test_an_unknown_model_keeps_the_default_and_says_how(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from csum import Budget

    processor = HistoryProcessor()
    tool_agent(processor, 1, [], model_name="in-house-llm").run_sync("Build.")
    assert processor.keeper.budget == Budget.bytes(65_536)  # type: ignore[attr-defined]
    assert "'in-house-llm' has no known context window" in caplog.text
    with pytest.raises(ValueError, match="give its context window"):
        HistoryProcessor(model="in-house-llm")


def test_events_say_when_the_history_is_still_over_budget() -> None:
    """With ``Budget.tokens(4000)`` an event said "compacted" at 22 KB while the newest
    tool result alone did not fit; it now says so in tokens."""
    from csum import Budget

    def huge_agent(processor: HistoryProcessor) -> Agent:
        calls: list[int] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            calls.append(len(messages))
            if len(calls) == 1:
                return ModelResponse(parts=[ToolCallPart("dump", {}, tool_call_id="c1")])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(model), capabilities=[processor.capability()])

        @agent.tool_plain
        def dump() -> str:
            return "a long line of tool output\n" * 800

        return agent

    processor = HistoryProcessor(budget=Budget.tokens(4_000))
    old = [
        m
        for i in range(6)
        for m in (
            ModelRequest(parts=[UserPromptPart(f"step {i}: " + "log\n" * 900)]),
            ModelResponse(parts=[TextPart(f"step {i} ok")]),
        )
    ]
    huge_agent(processor).run_sync("Dump it.", message_history=old)
    last = processor.events[-1]
    assert (last.unit, last.budget, last.over_budget) == ("tokens", 4_000, True)
    assert last.size_after > 4_000
    assert last.bytes_after > 20_000
    assert "STILL OVER BUDGET" in str(last)


def test_hook_events_are_bounded() -> None:
    processor = HistoryProcessor(budget=BUDGET, max_events=4)
    tool_agent(processor, 14, []).run_sync("Build everything.")
    assert len(processor.events) == 4
    assert processor.events.maxlen == 4


def test_the_install_line_gives_the_checkout_form() -> None:
    assert "pip install 'chaincast[pydantic-ai]'" in codec.INSTALL_HINT
    assert "pip install '.[pydantic-ai]'" in codec.INSTALL_HINT


def test_the_example_script_runs() -> None:
    """docs/examples/pydantic_ai_agent.py: a scripted model, no API key."""
    from examples_runner import run_example

    out = run_example("pydantic_ai_agent.py")
    assert "The build failed at part 7" in out
    assert "compacted" in out
