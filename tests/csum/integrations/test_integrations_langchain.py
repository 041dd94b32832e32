"""LangChain / LangGraph: the codec on histories the frameworks build themselves, the
``create_agent`` middleware and the LangGraph ``pre_model_hook`` inside real agent runs
driven by a LangChain fake chat model that calls tools.

LangGraph's async runs need asyncio; the hook itself runs on asyncio and trio.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)
from langchain_core.tools import tool

from cast import ChainAST, CodecError, Message, Reasoning, lint, port
from cast.codecs import detect_format, get_codec
from cast.codecs import langchain as codec
from cast.codecs import openai as openai_codec
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from csum.integrations import HookEvent
from csum.integrations.langchain import CompactionMiddleware, MessagesKeeper, pre_model_hook

BUDGET = 16_000
TOOL_OUTPUT = "line {n}: build step finished, artefact written to /tmp/out/{n}.o\n"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts ``bind_tools`` and records what it receives."""

    received: list[list[BaseMessage]]

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted_model(calls: int) -> ToolCallingFake:
    """``calls`` tool calls, each after Anthropic-style thinking, then a final answer."""
    script = [
        AIMessage(
            content=[
                {"type": "thinking", "thinking": f"step {n}", "signature": f"sig-{n}"},
                {"type": "text", "text": f"running step {n}"},
            ],
            tool_calls=[{"name": "big", "args": {"n": n}, "id": f"toolu_{n}"}],
        )
        for n in range(1, calls + 1)
    ]
    script.append(AIMessage("all steps done"))
    return ToolCallingFake(messages=iter(script), received=[])


@tool
def big(n: int) -> str:
    """A build step with a large log."""
    return TOOL_OUTPUT.format(n=n) * 80


def check_received(model: ToolCallingFake) -> None:
    for history in model.received:
        messages = codec.decode(history)
        assert sum(m.size for m in messages) <= BUDGET
        ChainAST.from_messages(messages)  # every tool call kept its result


def test_create_agent_run_stays_under_budget() -> None:
    model = scripted_model(14)
    middleware = CompactionMiddleware(budget=BUDGET)
    agent = create_agent(model, [big], system_prompt="You run builds.", middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage("Build everything.")]})

    assert state["messages"][-1].content == "all steps done"
    compacted = [e for e in middleware.events if e.outcome == "compacted"]
    assert len(compacted) >= 3
    check_received(model)
    # The state holds the compacted history (LangGraph applied our replacement).
    assert sum(m.size for m in codec.decode(state["messages"])) <= BUDGET + len(TOOL_OUTPUT) * 100


def test_create_agent_async_run() -> None:
    model = scripted_model(14)
    middleware = CompactionMiddleware(budget=BUDGET)
    agent = create_agent(model, [big], middleware=[middleware])

    async def run() -> dict[str, Any]:
        state: dict[str, Any] = await agent.ainvoke({"messages": [HumanMessage("Build.")]})
        return state

    state = anyio.run(run)
    assert state["messages"][-1].content == "all steps done"
    assert sum(e.outcome == "compacted" for e in middleware.events) >= 3
    check_received(model)


@pytest.mark.parametrize("replace_state", [True, False])
def test_langgraph_pre_model_hook(replace_state: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        model = scripted_model(10)
        events: list[HookEvent] = []
        hook = pre_model_hook(budget=BUDGET, replace_state=replace_state, on_event=events.append)
        agent = create_react_agent(model, [big], pre_model_hook=hook)
    state = agent.invoke({"messages": [HumanMessage("Build.")]})
    assert state["messages"][-1].content == "all steps done"
    assert sum(e.outcome == "compacted" for e in events) >= 3
    check_received(model)
    stored = sum(m.size for m in codec.decode(state["messages"]))
    assert (stored <= BUDGET + len(TOOL_OUTPUT) * 100) is replace_state


def test_round_trip_of_a_recorded_history() -> None:
    model = scripted_model(3)
    agent = create_agent(model, [big], system_prompt="You run builds.")
    history = agent.invoke({"messages": [HumanMessage("Build.")]})["messages"]
    payload = messages_to_dict(history)
    assert detect_format(payload) == "langchain"
    assert get_codec("langchain") is codec
    decoded = codec.decode(payload)
    assert decoded == codec.decode(history)
    assert [m.role.value for m in decoded] == ["human", *["ai", "tool"] * 3, "ai"]
    assert decoded[1].parts[0].reasoning == Reasoning(content="step 1", signature=b"sig-1")
    again = codec.to_framework(codec.encode(decoded))
    assert codec.decode(again) == decoded
    # LangChain resumes from the re-encoded history.
    resumed = create_agent(scripted_model(1), [big]).invoke(
        {"messages": [*again, HumanMessage("More.")]}
    )
    assert resumed["messages"][-1].content == "all steps done"


def test_every_block_kind_chaincast_holds() -> None:
    history: list[BaseMessage] = [
        SystemMessage("sys"),
        HumanMessage(
            content=[
                {"type": "text", "text": "look"},
                {"type": "image", "url": "https://example.com/a.png"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.com/b.png", "detail": "low"},
                },
                {"type": "file", "base64": "JVBERi0xLjc=", "mime_type": "application/pdf"},
            ]
        ),
        AIMessage(
            content=[
                {"type": "redacted_thinking", "data": "opaque"},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "why"}],
                },
                {"type": "tool_use", "id": "c2", "name": "g", "input": {}},
            ],
            tool_calls=[
                {"name": "f", "args": {"x": 1}, "id": "c1"},
                {"name": "g", "args": {}, "id": "c2"},
            ],
            invalid_tool_calls=[{"name": "h", "args": "{bad", "id": "c3", "error": "not JSON"}],
        ),
        ToolMessage("failed: no such file", tool_call_id="c2", status="error"),
        ToolMessage(
            content=[{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
            tool_call_id="c1",
        ),
        ToolMessage("r3", tool_call_id="c3", name="h"),
    ]
    decoded = codec.decode(history)
    image, image_url, pdf = decoded[1].parts[1:]
    assert (image.url, image_url.detail) == ("https://example.com/a.png", "low")
    assert (pdf.mime_type, pdf.data) == ("application/pdf", b"%PDF-1.7")
    redacted, call_g, call_f, call_h = decoded[2].parts
    assert redacted.reasoning == Reasoning(signature=REDACTED_THINKING_PREFIX + b"opaque")
    assert (call_g.id, call_g.reasoning) == ("c2", Reasoning(content="why", signature=b"rs_1\n"))
    assert (call_f.arguments, call_h.arguments) == ('{"x":1}', "{bad")
    assert decoded[3].tool_results[0].name == "g"  # from the call, the message had none
    assert decoded[4].text == "two"
    ChainAST.from_messages(decoded)
    back = codec.to_framework(codec.encode(decoded))
    assert codec.decode(back) == decoded
    assert back[2].invalid_tool_calls[0]["args"] == "{bad"
    assert back[3].status == "error"  # the result's is_error


@pytest.mark.parametrize(
    ("message", "path"),
    [
        pytest.param(
            {"type": "chat", "data": {"content": "x", "role": "x"}}, "[0].type", id="chat-message"
        ),
        pytest.param(
            {"type": "ai", "data": {"content": [{"type": "image", "url": "u"}]}},
            "[0].data.content[0].type",
            id="image-in-ai",
        ),
        pytest.param(
            {"type": "human", "data": {"content": [{"type": "file", "url": "u"}]}},
            "[0].data.content[0]",
            id="file-by-url",
        ),
    ],
)
def test_blocks_chaincast_cannot_hold_are_refused(message: dict[str, Any], path: str) -> None:
    with pytest.raises(CodecError) as info:
        codec.decode([message])
    assert info.value.path == path


def _unholdable() -> list[BaseMessage]:
    return [HumanMessage(content=[{"type": "video", "url": "https://v/x.mp4"}]), AIMessage("seen")]


@pytest.mark.anyio
async def test_failure_keeps_the_history_and_reports() -> None:
    keeper = MessagesKeeper(budget=BUDGET)
    assert await keeper.acompact(_unholdable()) is None
    event = keeper.events[-1]
    assert event.outcome == "failed"
    assert isinstance(event.error, CodecError)
    with pytest.raises(CodecError):
        await MessagesKeeper(budget=BUDGET, on_error="raise").acompact(_unholdable())


class BrokenKeeper:
    async def compact(self, messages: list[Message]) -> list[Message]:
        raise RuntimeError("summarizer down")


def test_agent_run_goes_on_when_the_keeper_fails() -> None:
    middleware = CompactionMiddleware(BrokenKeeper())
    agent = create_agent(scripted_model(2), [big], middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage("Build.")]})
    assert state["messages"][-1].content == "all steps done"
    assert {e.outcome for e in middleware.events} == {"failed"}
    strict = create_agent(
        scripted_model(2),
        [big],
        middleware=[CompactionMiddleware(BrokenKeeper(), on_error="raise")],
    )
    with pytest.raises(RuntimeError, match="summarizer down"):
        strict.invoke({"messages": [HumanMessage("Build.")]})


def test_anthropic_history_resumes_on_an_openai_model() -> None:
    openai = pytest.importorskip("openai")
    from agent_model_server import Turn, agent_model_server

    agent = create_agent(scripted_model(3), [big], system_prompt="You run builds.")
    history = agent.invoke({"messages": [HumanMessage("Build.")]})["messages"]
    ported = port(codec.decode(history), "openai", source="anthropic")
    resumed = [*codec.to_framework(codec.encode(ported)), HumanMessage("Continue.")]
    wire = convert_to_openai_messages(resumed)
    assert lint(openai_codec.decode({"messages": wire}), "openai") == []
    assert "sig-1" not in json.dumps(wire)
    with agent_model_server(lambda api, body: Turn(text="resumed on openai")) as server:
        client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="k")
        reply = client.chat.completions.create(model="gpt-4o", messages=wire)
    assert reply.choices[0].message.content == "resumed on openai"
    sent = server.bodies("/v1/chat/completions")[0]["messages"]
    calls = [c["id"] for m in sent for c in m.get("tool_calls") or []]
    assert calls == [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert len(calls) == 3


# -- a newcomer's traps (issue 29) -------------------------------------------------------


def test_a_handler_where_a_keeper_goes_compacts_the_run() -> None:
    """``CompactionMiddleware(extractive())`` was taken as a keeper and failed on every
    call, leaving the agent uncompacted."""
    from csum.handlers import extractive

    model = scripted_model(14)
    middleware = CompactionMiddleware(extractive(), budget=BUDGET)
    agent = create_agent(model, [big], middleware=[middleware])
    assert agent.invoke({"messages": [HumanMessage("Build.")]})["messages"][-1].content == (
        "all steps done"
    )
    assert "failed" not in {e.outcome for e in middleware.events}
    assert sum(e.outcome == "compacted" for e in middleware.events) >= 3
    check_received(model)


def test_what_is_not_a_keeper_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match=r"CompactionMiddleware\(budget=32_000\)"):
        CompactionMiddleware(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"pre_model_hook\(Compactor\(handler, budget="):
        pre_model_hook(BrokenKeeper(), budget=BUDGET)
    with pytest.raises(TypeError, match="not the hook"):
        CompactionMiddleware(MessagesKeeper())  # type: ignore[arg-type]


def test_the_budget_comes_from_the_model_name_create_agent_takes() -> None:
    """``CompactionMiddleware(model="openai:gpt-3.5-turbo")``: half of that window
    (8,192 tokens); ``Budget.of_model`` refused the ``provider:model`` spelling."""
    from csum import Budget, EstimatedTokens

    counter = EstimatedTokens()
    model = scripted_model(14)
    middleware = CompactionMiddleware(model="openai:gpt-3.5-turbo")
    assert middleware.history.keeper.budget == Budget.tokens(8_192)  # type: ignore[attr-defined]
    agent = create_agent(model, [big], middleware=[middleware])
    agent.invoke({"messages": [HumanMessage("Build everything.")]})
    events = list(middleware.events)
    assert {(e.unit, e.budget) for e in events} == {("tokens", 8_192)}
    assert sum(e.outcome == "compacted" for e in events) >= 1
    for history in model.received:
        assert sum(map(counter.count, codec.decode(history))) <= 8_192


def test_pre_model_hook_exposes_its_events() -> None:
    """The docs promised ``hook.events``; the runnable had none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        hook = pre_model_hook(budget=BUDGET, max_events=5)
        agent = create_react_agent(scripted_model(10), [big], pre_model_hook=hook)
    agent.invoke({"messages": [HumanMessage("Build.")]})
    assert len(hook.events) == 5
    assert hook.events.maxlen == 5
    assert hook.history.last_event is hook.events[-1]
    assert any(e.outcome == "compacted" for e in hook.events)


def test_the_stock_fake_model_cannot_bind_tools() -> None:
    """Why the docs show a fake with ``bind_tools``: the stock one refuses tools."""
    stock = GenericFakeChatModel(messages=iter([AIMessage("hi")]))
    with pytest.raises(NotImplementedError):
        create_agent(stock, [big]).invoke({"messages": [HumanMessage("hi")]})


def test_the_install_line_gives_the_checkout_form() -> None:
    assert "pip install 'chaincast[langchain]'" in codec.INSTALL_HINT
    assert "pip install '.[langchain]'" in codec.INSTALL_HINT


def test_the_example_script_runs() -> None:
    """docs/examples/langchain_agent.py: a scripted model, no API key."""
    from examples_runner import run_example

    out = run_example("langchain_agent.py")
    assert "The build failed at part 7" in out
    assert "compacted" in out


class NamedFake(ToolCallingFake):
    """A fake that names its model and provider the way ``ChatOpenAI`` does."""

    model_name: str = "gpt-3.5-turbo"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        return {"ls_provider": "openai", "ls_model_name": self.model_name, "ls_model_type": "chat"}


def test_the_middleware_learns_its_agents_model() -> None:
    """Without ``budget=`` the middleware takes half of its agent's model window from the
    first model call on (gpt-3.5-turbo: 8,192 tokens) and shapes summaries for OpenAI."""
    from csum import Budget

    model = NamedFake(messages=scripted_model(14).messages, received=[])
    middleware = CompactionMiddleware()
    agent = create_agent(model, [big], middleware=[middleware])
    assert agent.invoke({"messages": [HumanMessage("Build.")]})["messages"][-1].content == (
        "all steps done"
    )
    keeper = middleware.history.keeper
    assert keeper.budget == Budget.tokens(8_192)  # type: ignore[attr-defined]
    assert keeper.target == "openai"  # type: ignore[attr-defined]
    events = list(middleware.events)
    assert {(e.unit, e.budget) for e in events} == {("tokens", 8_192)}  # the first call too
    assert any(e.outcome == "compacted" for e in events)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_first_model_call_is_bounded_by_the_learned_models_window(mode: str) -> None:
    """A restored long history reaches the model within half of its window on the very
    first call, before LangChain has let the middleware see the model in a
    ``before_model``: the first call used to be measured against 65,536 bytes instead."""
    from csum import Budget

    model = NamedFake(messages=iter([AIMessage("done")]), received=[])
    middleware = CompactionMiddleware()
    agent = create_agent(model, [big], middleware=[middleware])
    restored: list[BaseMessage] = []
    for n in range(40):
        restored += [HumanMessage(f"question {n}: " + "context " * 120), AIMessage(f"answer {n}")]
    restored.append(HumanMessage("And now?"))
    if mode == "sync":
        state = agent.invoke({"messages": restored})
    else:
        state = anyio.run(agent.ainvoke, {"messages": restored})
    assert state["messages"][-1].content == "done"
    assert middleware.history.keeper.budget == Budget.tokens(8_192)  # type: ignore[attr-defined]
    [first] = model.received
    assert first[-1].content == "And now?"
    assert len(first) < len(restored)
    counter = middleware.history.keeper.counter  # type: ignore[attr-defined]
    sent = sum(counter.count(m) for m in codec.decode_counted(list(first))[0])
    assert sent <= 8_192
    assert middleware.events[0].outcome == "compacted"
