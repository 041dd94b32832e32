"""OpenAI Agents SDK: the input filter and the compacting session inside real runs of
the SDK against a scripted OpenAI-compatible server on 127.0.0.1 (the SDK's own
``OpenAIChatCompletionsModel`` and the official client, unmodified).

The SDK's runner needs asyncio; the session on its own runs on asyncio and trio.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from agent_model_server import Api, Call, ModelServer, Turn, agent_model_server
from cast import ChainAST, CodecError, Message, lint, port
from cast.codecs import get_codec
from cast.codecs import openai as openai_codec
from cast.codecs import openai_agents as codec
from csum.integrations import HookEvent
from csum.integrations.openai_agents import CompactingSession, InputFilter

BUDGET = 16_000
TOOL_OUTPUT = "line {n}: build step finished, artefact written to /tmp/out/{n}.o\n"
INSTRUCTIONS = "You run builds."

# Most tests here drive a session without its input filter on purpose (the session's own
# behaviour); the warning that gives is asserted once, in
# test_a_session_alone_warns_and_its_input_filter_bounds_every_call.
pytestmark = pytest.mark.filterwarnings(
    "ignore::csum.integrations.openai_agents.UnboundedRunWarning"
)

set_tracing_disabled(True)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class ListSession:
    """A plain in-memory ``Session`` (the SDK's SQLiteSession is bound to asyncio)."""

    session_settings = None

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.items: list[Any] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(self.items if limit is None else self.items[-limit:])

    async def add_items(self, items: list[Any]) -> None:
        self.items.extend(items)

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


def store(anyio_backend: str, session_id: str) -> Any:
    return SQLiteSession(session_id) if anyio_backend == "asyncio" else ListSession(session_id)


@function_tool
def big(n: int) -> str:
    """A build step with a large log."""
    return TOOL_OUTPUT.format(n=n) * 80


CHAT = "/v1/chat/completions"
"""Where the scripted model takes the SDK's requests."""


class Script:
    """The server's answers: ``calls_per_turn`` tool calls after each new user message,
    then a final answer (counted here, since compaction rewrites what the model sees)."""

    def __init__(self, calls_per_turn: int) -> None:
        self.calls_per_turn = calls_per_turn
        self.calls = 0
        self.per_prompt: dict[str, int] = {}

    def __call__(self, api: Api, body: dict[str, Any]) -> Turn:
        prompt = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        done = self.per_prompt.get(str(prompt), 0)
        if done < self.calls_per_turn:
            self.per_prompt[str(prompt)] = done + 1
            self.calls += 1
            n = self.calls
            return Turn(calls=[Call(f"call_{n}", "big", {"n": n})])
        return Turn(text="all steps done")


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with agent_model_server(Script(calls_per_turn=12)) as running:
        yield running


def agent_for(server: ModelServer) -> Agent[Any]:
    client = AsyncOpenAI(base_url=f"{server.base_url}/v1", api_key="k", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
    return Agent(name="builder", instructions=INSTRUCTIONS, model=model, tools=[big])


def check_received(server: ModelServer, budget: int = BUDGET) -> None:
    for body in server.bodies(CHAT):
        messages = openai_codec.decode({"messages": body["messages"]})
        assert messages[0].text == INSTRUCTIONS  # instructions pass untouched
        assert sum(m.size for m in messages[1:]) <= budget
        ChainAST.from_messages(messages)  # every tool call kept its result


def test_input_filter_keeps_each_model_call_under_budget(server: ModelServer) -> None:
    keeper = InputFilter(budget=BUDGET)
    result = asyncio.run(
        Runner.run(
            agent_for(server),
            "Build everything.",
            run_config=RunConfig(call_model_input_filter=keeper),
            max_turns=30,
        )
    )
    assert result.final_output == "all steps done"
    compactions = sum(e.outcome == "compacted" for e in keeper.events)
    assert len(server.bodies(CHAT)) == 13
    # Each compaction carries over (hysteresis): not one per call, as it would be if the
    # filter compacted the SDK's whole list again at every call.
    assert 3 <= compactions <= 6
    check_received(server)
    # The SDK keeps its own full item list: every tool output is still there.
    outputs = [i for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert len(outputs) == 12


def test_compacting_session_across_runs() -> None:
    with agent_model_server(Script(calls_per_turn=3)) as server:
        session = CompactingSession(SQLiteSession("builds"), budget=BUDGET)
        agent = agent_for(server)
        for turn in range(6):
            result = asyncio.run(Runner.run(agent, f"Build part {turn}.", session=session))
            assert result.final_output == "all steps done"
    assert sum(e.outcome == "compacted" for e in session.events) >= 3
    # Within a run the session is read once; each request holds at most one turn more.
    check_received(server, budget=BUDGET + 4 * len(TOOL_OUTPUT) * 80)
    stored = asyncio.run(session.inner.get_items())
    assert sum(m.size for m in codec.decode(stored)) <= BUDGET + 4 * len(TOOL_OUTPUT) * 80
    ChainAST.from_messages(codec.decode(stored))
    assert stored[-1]["role"] == "assistant"


@pytest.mark.anyio
async def test_session_protocol_delegates(anyio_backend: str) -> None:
    inner = store(anyio_backend, "s")
    session = CompactingSession(inner, budget=BUDGET, persist=False)
    items: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    await session.add_items(items)
    assert session.session_id == "s"
    assert await session.get_items() == items
    assert await session.get_items(limit=1) == items[-1:]
    assert await session.pop_item() == items[-1]
    await session.clear_session()
    assert await inner.get_items() == []


def test_item_grouping_and_round_trip(server: ModelServer) -> None:
    result = asyncio.run(Runner.run(agent_for(server), "Build.", max_turns=30))
    items = result.to_input_list()
    assert get_codec("openai-agents") is codec
    groups = codec.group_items(items)
    messages, counts = codec.decode_counted(items)
    assert len(messages) == len(groups) == len(counts)
    assert [m.role.value for m in messages[:3]] == ["human", "ai", "tool"]
    assert codec.decode(codec.encode(messages)) == messages
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    call = {"type": "function_call", "call_id": "c9", "name": "big", "arguments": "{}"}
    text = {"role": "assistant", "content": "calling"}
    assert codec.group_items([text, reasoning, call, {"role": "user", "content": "x"}]) == [
        [text, reasoning, call],
        [{"role": "user", "content": "x"}],
    ]


class BrokenKeeper:
    async def compact(self, messages: list[Message]) -> list[Message]:
        raise RuntimeError("summarizer down")


def test_run_goes_on_when_the_keeper_fails(server: ModelServer) -> None:
    events: list[HookEvent] = []
    keeper = InputFilter(BrokenKeeper(), on_event=events.append)
    result = asyncio.run(
        Runner.run(
            agent_for(server),
            "Build.",
            run_config=RunConfig(call_model_input_filter=keeper),
            max_turns=30,
        )
    )
    assert result.final_output == "all steps done"
    assert {e.outcome for e in events} == {"failed"}
    assert len(events) == 13


def test_keeper_errors_fail_the_run_when_asked(server: ModelServer) -> None:
    keeper = InputFilter(BrokenKeeper(), on_error="raise")
    with pytest.raises(RuntimeError, match="summarizer down"):
        asyncio.run(
            Runner.run(
                agent_for(server), "Build.", run_config=RunConfig(call_model_input_filter=keeper)
            )
        )


class FlakySession(ListSession):
    """Fails the first ``add_items`` after a ``clear_session``: a store going down mid-write."""

    def __init__(self, session_id: str, error: BaseException | None = None) -> None:
        super().__init__(session_id)
        self.cleared = False
        self.failed = False
        self.error = error or ConnectionError("store down")

    async def clear_session(self) -> None:
        await super().clear_session()
        self.cleared = True

    async def add_items(self, items: list[Any]) -> None:
        if self.cleared and not self.failed:
            self.failed = True
            raise self.error
        await super().add_items(items)


@pytest.mark.anyio
@pytest.mark.parametrize("on_error", ["continue", "raise"])
async def test_a_failed_write_back_keeps_the_stored_history(
    anyio_backend: str, on_error: Literal["continue", "raise"]
) -> None:
    inner = FlakySession("flaky")
    session = CompactingSession(inner, budget=2000, on_error=on_error)
    items: list[Any] = [{"role": "user", "content": "build it"}]
    for i in range(12):
        items += [
            {"type": "function_call", "call_id": f"c{i}", "name": "make", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{i}", "output": "x" * 300},
        ]
    await session.add_items(items)
    if on_error == "raise":
        with pytest.raises(ConnectionError):
            await session.get_items()
    else:
        assert len(await session.get_items()) < len(items)
    assert inner.failed
    assert inner.items == items


class Interrupted(BaseException):
    """Stands for a cancellation or Ctrl-C arriving during the write-back."""


@pytest.mark.anyio
async def test_an_interrupted_write_back_keeps_the_stored_history(anyio_backend: str) -> None:
    inner = FlakySession("interrupted", Interrupted())
    session = CompactingSession(inner, budget=2000, on_error="continue")
    items: list[Any] = [{"role": "user", "content": "build it"}]
    for i in range(12):
        items += [
            {"type": "function_call", "call_id": f"c{i}", "name": "make", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{i}", "output": "x" * 300},
        ]
    await session.add_items(items)
    with pytest.raises(Interrupted):  # never swallowed, whatever on_error says
        await session.get_items()
    assert inner.items == items


@pytest.mark.anyio
async def test_items_the_codec_refuses_are_reported(anyio_backend: str) -> None:
    session = CompactingSession(store(anyio_backend, "odd"), budget=BUDGET)
    items: list[Any] = [
        {"role": "user", "content": "search"},
        {"type": "function_call", "call_id": "c1", "name": 5, "arguments": "{}"},
    ]
    await session.add_items(items)
    assert await session.get_items() == items
    assert isinstance(session.events[-1].error, CodecError)


@pytest.mark.anyio
async def test_hosted_tool_items_are_kept_whole(anyio_backend: str) -> None:
    session = CompactingSession(store(anyio_backend, "hosted"), budget=BUDGET)
    items: list[Any] = [
        {"role": "user", "content": "search"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]
    await session.add_items(items)
    assert await session.get_items() == items
    assert session.events[-1].error is None


def test_responses_reasoning_resumes_on_a_mistral_endpoint(server: ModelServer) -> None:
    """A history holding OpenAI Responses reasoning (encrypted) is ported for Mistral and
    the SDK resumes from it against a chat endpoint."""
    recorded: list[Any] = [
        {"role": "user", "content": "Build."},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "gAAAAB-secret",
        },
        {"type": "function_call", "call_id": "fc_abc-1", "name": "big", "arguments": '{"n": 1}'},
        {"type": "function_call_output", "call_id": "fc_abc-1", "output": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    ported = codec.encode(port(codec.decode(recorded), "mistral", source="openai-responses"))
    script = Script(calls_per_turn=0)
    with agent_model_server(script) as mistral:
        result = asyncio.run(
            Runner.run(agent_for(mistral), [*ported, {"role": "user", "content": "Again."}])
        )
    assert result.final_output == "all steps done"
    sent = mistral.bodies(CHAT)[0]["messages"]
    assert "gAAAAB-secret" not in json.dumps(sent)
    assert lint(openai_codec.decode({"messages": sent}), "mistral") == []


# -- a newcomer's traps (issue 29) -------------------------------------------------------


def largest_request(server: ModelServer) -> int:
    return max(
        sum(m.size for m in openai_codec.decode({"messages": body["messages"]})[1:])
        for body in server.bodies(CHAT)
    )


def test_a_session_alone_warns_and_its_input_filter_bounds_every_call() -> None:
    """The session is read once per run: alone, one run of 8 tool calls sent the model
    up to ~45 KB against 16 KB, silently. It now warns, and ``session.input_filter()``
    keeps every call of the run under budget."""
    from csum.integrations.openai_agents import UnboundedRunWarning

    with agent_model_server(Script(calls_per_turn=8)) as server:
        session = CompactingSession(SQLiteSession("alone"), budget=BUDGET)
        with pytest.warns(UnboundedRunWarning, match=r"session\.input_filter\(\)"):
            asyncio.run(Runner.run(agent_for(server), "Build.", session=session, max_turns=30))
        assert largest_request(server) > 2 * BUDGET
    with agent_model_server(Script(calls_per_turn=8)) as server:
        session = CompactingSession(SQLiteSession("paired"), budget=BUDGET)
        run_config = RunConfig(call_model_input_filter=session.input_filter())
        assert session.input_filter() is run_config.call_model_input_filter
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error", UnboundedRunWarning)
            for turn in range(3):
                result = asyncio.run(
                    Runner.run(
                        agent_for(server),
                        f"Build part {turn}.",
                        session=session,
                        run_config=run_config,
                        max_turns=30,
                    )
                )
                assert result.final_output == "all steps done"
        check_received(server)
    assert sum(e.outcome == "compacted" for e in session.input_filter().events) >= 3


def test_a_handler_where_a_keeper_goes_compacts_the_run(server: ModelServer) -> None:
    from csum.handlers import extractive

    keeper = InputFilter(extractive(), budget=BUDGET)
    result = asyncio.run(
        Runner.run(
            agent_for(server),
            "Build everything.",
            run_config=RunConfig(call_model_input_filter=keeper),
            max_turns=30,
        )
    )
    assert result.final_output == "all steps done"
    assert "failed" not in {e.outcome for e in keeper.events}
    assert sum(e.outcome == "compacted" for e in keeper.events) >= 3
    check_received(server)


def test_what_is_not_a_keeper_or_a_session_is_refused() -> None:
    with pytest.raises(TypeError, match=r"CompactingSession\(inner, budget=32_000\)"):
        CompactingSession(ListSession("s"), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be an Agents SDK Session"):
        CompactingSession(InputFilter())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"InputFilter\(handler, budget=\.\.\.\)"):
        InputFilter(BrokenKeeper(), budget=BUDGET)


def test_the_budget_comes_from_the_agents_model(server: ModelServer) -> None:
    """``InputFilter()`` on a gpt-3.5-turbo agent: half its window, 8,192 tokens."""
    from csum import Budget, EstimatedTokens

    client = AsyncOpenAI(base_url=f"{server.base_url}/v1", api_key="k", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-3.5-turbo", openai_client=client)
    agent = Agent(name="builder", instructions=INSTRUCTIONS, model=model, tools=[big])
    keeper = InputFilter()
    asyncio.run(
        Runner.run(
            agent, "Build.", run_config=RunConfig(call_model_input_filter=keeper), max_turns=30
        )
    )
    assert keeper.keeper.budget == Budget.tokens(8_192)  # type: ignore[attr-defined]
    assert keeper.keeper.target == "openai"  # type: ignore[attr-defined]
    assert {(e.unit, e.budget) for e in keeper.events} == {("tokens", 8_192)}
    assert any(e.outcome == "compacted" for e in keeper.events)
    counter = EstimatedTokens()
    for body in server.bodies(CHAT):
        messages = openai_codec.decode({"messages": body["messages"]})
        assert sum(map(counter.count, messages[1:])) <= 8_192


def test_the_install_line_gives_the_checkout_form() -> None:
    assert "pip install 'chaincast[openai-agents]'" in codec.INSTALL_HINT
    assert "pip install '.[openai-agents]'" in codec.INSTALL_HINT


def test_the_example_script_runs() -> None:
    """docs/examples/openai_agents_agent.py: a scripted model, no API key."""
    from examples_runner import run_example

    out = run_example("openai_agents_agent.py")
    assert "Part 7 failed." in out
    assert "compacted" in out
