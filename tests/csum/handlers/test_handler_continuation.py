"""Summary calls sent as a continuation of the conversation's cached prefix (issue 36
item 3): a Compactor's summary request carries the chain it was called with, and a model
handler made with ``continuation=True`` sends that chain as the agent sent it (same
codec, a cache breakpoint at its end for Anthropic), then the instruction; without a
conversation it sends the fresh prompt. Driven through the official SDKs against the
scripted provider of test_handlers_sdk on 127.0.0.1 (nothing leaves the machine)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from cast import Message, ToolCall
from cast.codecs.anthropic import encode as anthropic_encode
from cast.codecs.openai import encode as openai_encode
from csum import Compactor, Robustness, Summarizer, SummarizerConfig
from csum.handlers._sdk import (
    CONTINUATION_INSTRUCTION,
    anthropic_body,
    continuation_instruction,
    openai_body,
)
from csum.prompt import DEFAULT_SYSTEM_PROMPT, summary_request
from tests.csum.handlers.test_handlers_sdk import FakeProvider, anthropic_ok, openai_ok

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
pytest.importorskip("openai", reason="the openai extra is not installed")

pytestmark = pytest.mark.anyio

TOOLS = [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}]
CONVERSATION = [
    Message.system("You are a coding agent."),
    Message.human("Fix the failing test."),
    Message.ai("", ToolCall(id="toolu_1", name="bash", arguments='{"command": "pytest -q"}')),
    Message.tool("toolu_1", "bash", "FAILED tests/test_io.py::test_read - OSError"),
]
INSTRUCTION = CONTINUATION_INSTRUCTION.format(scope="")


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    fake = FakeProvider()
    yield fake
    fake.close()


def _agent_chain(steps: int = 24) -> list[Message]:
    """A coding agent's chain (about 11 KB) that a 6 KB budget makes the Compactor summarize."""
    chain = [Message.system("You are a coding agent."), Message.human("Make the build pass.")]
    for i in range(steps):
        call = ToolCall(id=f"toolu_{i:03d}", name="bash", arguments=f'{{"command": "make {i}"}}')
        chain.append(Message.ai(f"step {i}", call))
        chain.append(Message.tool(f"toolu_{i:03d}", "bash", f"step {i}: src/m{i}.c ok\n" * 20))
    return chain


def _anthropic(server: FakeProvider, **options: Any) -> Any:
    from csum.handlers import anthropic

    return anthropic("claude-test", base_url=server.url, api_key="k", max_retries=0, **options)


def _openai(server: FakeProvider, **options: Any) -> Any:
    from csum.handlers import openai_compatible

    base = server.url + "/v1"
    return openai_compatible("gpt-test", base_url=base, api_key="k", max_retries=0, **options)


# --- the bodies --------------------------------------------------------------------------


def test_the_anthropic_body_is_the_conversation_then_the_instruction() -> None:
    sent = anthropic_encode(CONVERSATION)
    body = anthropic_body(CONVERSATION, INSTRUCTION)
    assert body["system"] == sent["system"]
    # every message the agent sent, unchanged, but for a breakpoint on the last block
    assert body["messages"][:-1] == sent["messages"][:-1]
    last_sent, last = sent["messages"][-1], body["messages"][-1]
    assert last["content"][:-1] == [
        *last_sent["content"][:-1],
        {**last_sent["content"][-1], "cache_control": {"type": "ephemeral"}},
    ]
    assert last["content"][-1] == {"type": "text", "text": INSTRUCTION}


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


def test_the_instruction_names_what_stays_and_the_focus() -> None:
    request = summary_request([], CONVERSATION[2:], focus="the OSError")
    assert continuation_instruction(request).startswith("Summarize the conversation above,")
    one = continuation_instruction(replace(request, kept=1))
    assert "but its last message, which stays" in one
    three = continuation_instruction(replace(request, kept=3))
    assert "but its last 3 messages, which stay in the conversation as they are" in three
    assert three.endswith("\nthe OSError")
    plain = continuation_instruction(summary_request([], CONVERSATION[2:]))
    assert plain == INSTRUCTION
    # the uncached part of a continuation: a few hundred bytes
    assert len(three.encode()) < 512


# --- the handlers, on their own ----------------------------------------------------------


async def test_a_request_with_its_conversation_is_sent_as_the_continuation(
    server: FakeProvider,
) -> None:
    request = summary_request(
        [], CONVERSATION[2:], conversation=tuple(CONVERSATION), kept=0, focus="the OSError"
    )
    server.script(anthropic_ok("the summary"))
    claude = _anthropic(server, continuation=True, tools=TOOLS)
    assert await claude(request) == "the summary"
    body = server.requests[-1].body
    instruction = continuation_instruction(request)
    assert body["model"] == "claude-test"
    assert body["messages"] == anthropic_body(CONVERSATION, instruction)["messages"]
    assert body["system"] == anthropic_encode(CONVERSATION)["system"]
    assert body["tools"] == TOOLS

    server.script(openai_ok("an openai summary"))
    gpt = _openai(server, continuation=True)
    assert await gpt(request) == "an openai summary"
    assert (
        server.requests[-1].body["messages"] == openai_body(CONVERSATION, instruction)["messages"]
    )


async def test_without_a_conversation_the_fresh_prompt_is_sent(server: FakeProvider) -> None:
    request = summary_request([], CONVERSATION[2:])
    server.script(anthropic_ok("fresh"))
    assert await _anthropic(server, continuation=True)(request) == "fresh"
    body = server.requests[-1].body
    assert body["system"] == DEFAULT_SYSTEM_PROMPT
    assert body["messages"] == [{"role": "user", "content": request.prompt}]
    # a handler made without continuation sends the fresh prompt whatever it is given
    server.script(openai_ok("fresh too"))
    asked = replace(request, conversation=tuple(CONVERSATION))
    assert await _openai(server)(asked) == "fresh too"
    assert server.requests[-1].body["messages"][-1] == {"role": "user", "content": request.prompt}


# --- through the Compactor ---------------------------------------------------------------


def _kept_count(instruction: str) -> int:
    words = instruction.split("but its last ", 1)[1].split()
    return 1 if words[0] == "message," else int(words[0])


async def test_a_compaction_continues_the_anthropic_conversation(server: FakeProvider) -> None:
    chain = _agent_chain()
    snapshot = [m.model_dump(mode="json") for m in chain]
    server.script(anthropic_ok("Built steps 0-20; every src/m*.c compiled."))
    compactor = Compactor(_anthropic(server, continuation=True, tools=TOOLS), budget=6_000)
    result = await compactor.run(chain)
    assert result.compacted
    assert [m.model_dump(mode="json") for m in chain] == snapshot  # the input is untouched
    [call] = server.requests
    body = call.body
    sent = anthropic_encode(chain)
    # the request starts with the conversation as the agent sends it: system, tools, and
    # every message, the last one's blocks with a cache breakpoint after them
    assert body["system"] == sent["system"]
    assert body["tools"] == TOOLS
    assert body["messages"][:-1] == sent["messages"][:-1]
    last_sent, last = sent["messages"][-1], body["messages"][-1]
    prefix = last["content"][: len(last_sent["content"])]
    assert prefix[:-1] == last_sent["content"][:-1]
    assert prefix[-1] == {**last_sent["content"][-1], "cache_control": {"type": "ephemeral"}}
    # then the instruction, naming the messages that stay: the chain's verbatim tail
    [instruction] = last["content"][len(last_sent["content"]) :]
    kept = _kept_count(instruction["text"])
    assert 0 < kept < len(chain)
    assert result.messages[-kept:] == chain[-kept:]
    assert "Built steps 0-20" in str([m.model_dump(mode="json") for m in result.messages])


async def test_a_compaction_continues_the_openai_conversation(server: FakeProvider) -> None:
    chain = _agent_chain()
    server.script(openai_ok("Built steps 0-20."))
    result = await Compactor(_openai(server, continuation=True), budget=6_000).run(chain)
    assert result.compacted
    [call] = server.requests
    messages = call.body["messages"]
    assert messages[:-1] == openai_encode(chain)["messages"]
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].startswith("Summarize the conversation above but its last ")
    kept = _kept_count(messages[-1]["content"])
    assert result.messages[-kept:] == chain[-kept:]


async def test_a_compaction_in_pieces_sends_fresh_prompts(server: FakeProvider) -> None:
    # a summary too large for one prompt is made of pieces: each is a fresh prompt of
    # its part (the conversation would make each piece summarize everything)
    chain = _agent_chain(60)
    server.script(anthropic_ok("a piece"))
    handler = _anthropic(server, continuation=True)
    robustness = Robustness(max_prompt_bytes=8_192)
    result = await Compactor(handler, budget=12_000, robustness=robustness).run(chain)
    assert result.compacted
    assert len(server.requests) > 1
    for call in server.requests:
        assert call.body["system"] == DEFAULT_SYSTEM_PROMPT
        [message] = call.body["messages"]
        assert message["content"].startswith("<instructions>")


async def test_the_summarizer_sends_fresh_prompts(server: FakeProvider) -> None:
    server.script(anthropic_ok("a section"))
    config = SummarizerConfig(max_body_pair_bytes=200, last_section_bytes=2_000)
    await Summarizer(config).summarize_chain(_anthropic(server, continuation=True), _agent_chain(6))
    assert server.requests
    assert all(len(call.body["messages"]) == 1 for call in server.requests)
