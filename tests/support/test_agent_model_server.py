"""The scripted model of tests/agent_model_server.py speaks each API as its official SDK
reads it: the same turn (thinking, text, two tool calls) comes back whole from the
anthropic and openai SDKs, streamed and not, for Messages, Chat Completions and
Responses; a script that fails answers 500."""

from __future__ import annotations

import json
from typing import Any

import pytest

anthropic_sdk = pytest.importorskip("anthropic")
openai_sdk = pytest.importorskip("openai")

from agent_model_server import Api, Call, Turn, agent_model_server  # noqa: E402

TURN = Turn(
    text="Reading both.",
    calls=[Call("call_a", "read", {"path": "a.py"}), Call("call_b", "read", {"path": "b.py"})],
    thinking="Two files to read.",
    signature="c2lnbmF0dXJl",
)
USER = [{"role": "user", "content": "Read a.py and b.py."}]


def _script(seen: list[Api]) -> Any:
    def reply(api: Api, body: dict[str, Any]) -> Turn:
        seen.append(api)
        return TURN

    return reply


@pytest.mark.parametrize("stream", [False, True])
def test_messages_answers_as_the_anthropic_sdk_reads_them(stream: bool) -> None:
    seen: list[Api] = []
    with agent_model_server(_script(seen)) as server:
        client = anthropic_sdk.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        arguments: dict[str, Any] = {"model": "m", "max_tokens": 100, "messages": USER}
        if stream:
            with client.messages.stream(**arguments) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**arguments)
        assert server.bodies("/v1/messages")[0]["messages"] == USER
    assert seen == ["messages"]
    blocks = [block.model_dump(exclude_none=True) for block in message.content]
    assert blocks == [
        {"type": "thinking", "thinking": TURN.thinking, "signature": TURN.signature},
        {"type": "text", "text": TURN.text},
        {"type": "tool_use", "id": "call_a", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "call_b", "name": "read", "input": {"path": "b.py"}},
    ]
    assert message.stop_reason == "tool_use"


@pytest.mark.parametrize("stream", [False, True])
def test_chat_answers_as_the_openai_sdk_reads_them(stream: bool) -> None:
    seen: list[Api] = []
    with agent_model_server(_script(seen)) as server:
        client = openai_sdk.OpenAI(base_url=f"{server.base_url}/v1", api_key="k", max_retries=0)
        if stream:
            with client.chat.completions.stream(model="m", messages=USER) as events:  # type: ignore[arg-type]
                completion = events.get_final_completion()
        else:
            completion = client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
    assert seen == ["chat"]
    (choice,) = completion.choices
    assert choice.message.content == TURN.text
    calls = [
        (c.id, c.function.name, json.loads(c.function.arguments))
        for c in choice.message.tool_calls or []
    ]  # type: ignore[union-attr]
    assert calls == [("call_a", "read", {"path": "a.py"}), ("call_b", "read", {"path": "b.py"})]
    assert choice.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
def test_responses_answers_as_the_openai_sdk_reads_them(stream: bool) -> None:
    seen: list[Api] = []
    with agent_model_server(_script(seen)) as server:
        client = openai_sdk.OpenAI(base_url=f"{server.base_url}/v1", api_key="k", max_retries=0)
        if stream:
            with client.responses.stream(model="m", input=USER) as events:  # type: ignore[arg-type]
                response = events.get_final_response()
        else:
            response = client.responses.create(model="m", input=USER, stream=False)  # type: ignore[arg-type]
    assert seen == ["responses"]
    assert response.output_text == TURN.text
    calls = [
        (item.call_id, item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    assert calls == [("call_a", "read", {"path": "a.py"}), ("call_b", "read", {"path": "b.py"})]


def test_a_failing_script_answers_500_saying_why() -> None:
    def broken(api: Api, body: dict[str, Any]) -> Turn:
        raise ValueError("no such turn")

    with agent_model_server(broken) as server:
        client = openai_sdk.OpenAI(base_url=f"{server.base_url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai_sdk.InternalServerError, match="no such turn"):
            client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
