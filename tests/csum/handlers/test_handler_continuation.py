"""Summary calls sent as a continuation of the conversation's cached prefix (issue 36
item 3): the request is the conversation as the agent sent it, then the instruction;
against the fake provider of test_handlers_sdk on 127.0.0.1 (nothing leaves the machine)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from cast import Message, ToolCall
from cast.codecs.anthropic import encode as anthropic_encode
from cast.codecs.openai import encode as openai_encode
from csum.handlers._continuation import CONTINUATION_INSTRUCTION, anthropic_body, openai_body
from tests.csum.handlers.test_handlers_sdk import FakeProvider, anthropic_ok, openai_ok

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
pytest.importorskip("openai", reason="the openai extra is not installed")

TOOLS = [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}]
CONVERSATION = [
    Message.system("You are a coding agent."),
    Message.human("Fix the failing test."),
    Message.ai("", ToolCall(id="toolu_1", name="bash", arguments='{"command": "pytest -q"}')),
    Message.tool("toolu_1", "bash", "FAILED tests/test_io.py::test_read - OSError"),
]


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    fake = FakeProvider()
    yield fake
    fake.close()


def test_the_anthropic_body_is_the_conversation_then_the_instruction() -> None:
    sent = anthropic_encode(CONVERSATION)
    body = anthropic_body(CONVERSATION, tools=TOOLS)
    assert body["system"] == sent["system"]
    assert body["tools"] == TOOLS
    # every message the agent sent, unchanged, but for a breakpoint on the last block
    assert body["messages"][:-1] == sent["messages"][:-1]
    last_sent, last = sent["messages"][-1], body["messages"][-1]
    assert last["content"][:-1] == [
        *last_sent["content"][:-1],
        {**last_sent["content"][-1], "cache_control": {"type": "ephemeral"}},
    ]
    assert last["content"][-1] == {"type": "text", "text": CONTINUATION_INSTRUCTION}


def test_after_an_ai_message_the_instruction_is_a_user_turn_of_its_own() -> None:
    body = anthropic_body(CONVERSATION[:3], "summarize")
    assert body["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "summarize"}],
    }
    assert body["messages"][-2]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_the_openai_body_keeps_the_prefix_byte_for_byte() -> None:
    sent = openai_encode(CONVERSATION)
    body = openai_body(CONVERSATION, "summarize")
    assert body["messages"][:-1] == sent["messages"]
    assert body["messages"][-1] == {"role": "user", "content": "summarize"}


def test_the_handlers_send_it_and_read_the_summary(server: FakeProvider) -> None:
    from csum.handlers._anthropic import anthropic_continuation
    from csum.handlers._openai_compatible import openai_continuation

    server.script(anthropic_ok("the summary"))
    claude = anthropic_continuation("claude-test", base_url=server.url, api_key="k", tools=TOOLS)
    assert anyio.run(claude, CONVERSATION, "summarize") == "the summary"
    request = server.requests[-1].body
    assert request["model"] == "claude-test"
    assert request["messages"] == anthropic_body(CONVERSATION, "summarize", tools=TOOLS)["messages"]
    assert request["tools"] == TOOLS

    server.script(openai_ok("an openai summary"))
    gpt = openai_continuation("gpt-test", base_url=server.url + "/v1", api_key="k")
    assert anyio.run(gpt, CONVERSATION, "summarize") == "an openai summary"
    assert (
        server.requests[-1].body["messages"] == openai_body(CONVERSATION, "summarize")["messages"]
    )
