"""Anthropic Messages client -> OpenAI-compatible upstream (csum.serve.translate's
anthropic_to_chat, chat_to_anthropic and token_count): the
request ported and the response, whole or streamed, turned back. Pure functions here;
the end-to-end run with the anthropic SDK is in test_serve.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import lint
from cast.codecs import openai
from csum.serve.translate.anthropic_to_chat import chat_request
from csum.serve.translate.chat_to_anthropic import MessagesStream, messages_response
from csum.serve.translate.pairs import count_tokens
from serve_payloads import chat_events

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4",
    "max_tokens": 512,
    "temperature": 0.3,
    "stop_sequences": ["END"],
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "tools": [
        {"name": "read_file", "description": "read", "input_schema": {"type": "object"}},
    ],
    "tool_choice": {"type": "tool", "name": "read_file", "disable_parallel_tool_use": True},
    "metadata": {"user_id": "u1"},
    "messages": [
        {"role": "user", "content": "Read a.py"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read it.", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"p": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "x = 1"}],
        },
    ],
}


def test_a_messages_request_becomes_a_chat_request() -> None:
    chat = chat_request(REQUEST)
    assert chat["model"] == "claude-sonnet-4"
    assert (chat["max_tokens"], chat["temperature"], chat["stop"]) == (512, 0.3, ["END"])
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "parameters": {"type": "object"},
                "description": "read",
            },
        }
    ]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert chat["parallel_tool_calls"] is False
    assert "metadata" not in chat
    messages = chat["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[2]["tool_calls"][0]["id"] == "toolu_01"
    assert "reasoning_content" not in messages[2]  # Anthropic's thinking is not carried
    assert messages[3] == {"role": "tool", "tool_call_id": "toolu_01", "content": "x = 1"}
    assert lint(openai.decode(chat), "openai") == []
    assert REQUEST["messages"][1]["content"][0]["type"] == "thinking"  # input unchanged


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"messages": "hi"}, "messages"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0]"),
        ({"tool_choice": {"type": "sometimes"}}, "tool_choice"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ],
)
def test_what_cannot_be_translated_is_named(change: dict[str, Any], where: str) -> None:
    # a TranslationError, or the codec's own ValueError on a bad history
    with pytest.raises(ValueError, match=where.replace("[", r"\[")):
        chat_request({**REQUEST, **change})


def test_a_chat_answer_becomes_a_messages_answer() -> None:
    completion = {
        "id": "chatcmpl-9",
        "model": "local-model",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "Reading.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"p": "b"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9},
    }
    assert messages_response(completion, "claude-sonnet-4", {}) == {
        "id": "msg_chatcmpl-9",
        "type": "message",
        "role": "assistant",
        "model": "local-model",
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"p": "b"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 9},
    }


def _events(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")
    ]


@pytest.mark.parametrize("n", [1, 4])
def test_a_chat_stream_becomes_a_messages_stream(n: int) -> None:
    stream = MessagesStream("claude-sonnet-4", {})
    out = b"".join(stream.feed(chunk) for chunk in chat_events(n, "m")) + stream.close()
    events = _events(out)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    if n == 1:
        assert starts == [{"type": "tool_use", "id": "call_0001", "name": "read_file", "input": {}}]
        arguments = "".join(d["partial_json"] for d in deltas)
        assert json.loads(arguments) == {"path": "src/module_1.py", "lines": [1, 400]}
        assert events[-2]["delta"]["stop_reason"] == "tool_use"
    else:
        assert starts == [{"type": "text", "text": ""}]
        assert "".join(d["text"] for d in deltas).startswith("Step 4 done")
        assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert kinds.count("content_block_start") == kinds.count("content_block_stop")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 400), max_size=12))
def test_any_split_of_the_stream_gives_the_same_events(cuts: list[int]) -> None:
    whole = b"".join(chat_events(3, "m"))
    one = MessagesStream("x", {})
    expected = one.feed(whole) + one.close()
    split = MessagesStream("x", {})
    pieces, start = [], 0
    for cut in sorted({min(c, len(whole)) for c in cuts}):
        pieces.append(whole[start:cut])
        start = cut
    pieces.append(whole[start:])
    assert b"".join(split.feed(p) for p in pieces) + split.close() == expected


def test_a_stream_cut_short_is_closed() -> None:
    stream = MessagesStream("x", {})
    first = chat_events(1, "m")[:2]
    out = b"".join(stream.feed(c) for c in first) + stream.close()
    kinds = [e["type"] for e in _events(out)]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_count_tokens_is_estimated() -> None:
    assert count_tokens(REQUEST)["input_tokens"] > 0
