"""OpenAI clients on another provider's upstream, pure functions (the end-to-end runs
with the SDKs are in test_serve_translations.py): Chat Completions -> Anthropic
Messages (csum.serve.translate.chat_to_anthropic, anthropic_to_chat), Responses -> Chat
Completions and -> Anthropic Messages (responses_to_chat, chat_to_responses,
responses_to_anthropic, anthropic_to_responses), reasoning both ways, the key header
moved (headers)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import lint
from cast.codecs import anthropic, openai
from csum.serve.apis import APIS
from csum.serve.translate.anthropic_to_chat import ChatStream, chat_response
from csum.serve.translate.anthropic_to_responses import (
    AnthropicResponsesStream,
    responses_from_messages,
)
from csum.serve.translate.chat_to_anthropic import (
    DEFAULT_MAX_TOKENS,
    MessagesStream,
    messages_request,
    messages_response,
)
from csum.serve.translate.chat_to_responses import ResponsesStream, responses_response
from csum.serve.translate.pairs import translated_headers, translation_for
from csum.serve.translate.responses_to_anthropic import messages_request_for_responses
from csum.serve.translate.responses_to_chat import chat_request_for_responses
from csum.serve.translate.responses_tools import chat_tools
from serve_payloads import (
    REASONER,
    chat_body,
    chat_events,
    messages_body,
    messages_events,
    signature,
    thought,
)

CHAT: dict[str, Any] = {
    "model": "gpt-4o",
    "temperature": 0.2,
    "stop": "END",
    "user": "u1",
    "parallel_tool_calls": False,
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "read",
                "parameters": {"type": "object"},
            },
        }
    ],
    "tool_choice": "required",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read a.py"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "I should read it.",
            "tool_calls": [
                {
                    "id": "call_01",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"p": "a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_01", "content": "x = 1"},
    ],
}


def test_a_chat_request_becomes_a_messages_request() -> None:
    before = copy.deepcopy(CHAT)
    out = messages_request(CHAT)
    assert before == CHAT  # the client's request is not mutated
    assert (out["model"], out["temperature"]) == ("gpt-4o", 0.2)
    assert out["max_tokens"] == DEFAULT_MAX_TOKENS  # Anthropic requires one
    assert out["stop_sequences"] == ["END"]
    assert out["metadata"] == {"user_id": "u1"}
    assert out["system"] == "Be brief."
    assert out["tools"] == [
        {"name": "read_file", "input_schema": {"type": "object"}, "description": "read"}
    ]
    assert out["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    call = out["messages"][1]["content"]
    assert call == [{"type": "tool_use", "id": "call_01", "name": "read_file", "input": {"p": "a"}}]
    result = out["messages"][2]["content"][0]
    assert (result["type"], result["tool_use_id"]) == ("tool_result", "call_01")
    assert "thinking" not in json.dumps(out)  # unsigned reasoning is not sent to Anthropic
    assert lint(anthropic.decode(out), "anthropic") == []


def test_limits_and_choices_of_a_chat_request() -> None:
    out = messages_request({**CHAT, "max_completion_tokens": 99, "max_tokens": 5})
    assert out["max_tokens"] == 99
    assert messages_request({**CHAT, "tool_choice": "none"})["tool_choice"] == {
        "type": "none",
        "disable_parallel_tool_use": True,
    }
    named = {"type": "function", "function": {"name": "read_file"}}
    choice = messages_request({**CHAT, "tool_choice": named, "parallel_tool_calls": True})
    assert choice["tool_choice"] == {"type": "tool", "name": "read_file"}
    thinking = {"type": "enabled", "budget_tokens": 2048}
    assert messages_request({**CHAT, "thinking": thinking})["thinking"] == thinking


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"messages": "hi"}, "messages"),
        ({"n": 2}, "n"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools[0]"),
        ({"tools": [{"type": "function", "function": {}}]}, "tools[0].function"),
        ({"tool_choice": "sometimes"}, "tool_choice"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ],
)
def test_what_a_chat_request_cannot_carry_is_named(change: dict[str, Any], where: str) -> None:
    # a TranslationError, or the codec's own ValueError on a bad history
    with pytest.raises(ValueError, match=where.replace("[", r"\[").replace(".", r"\.")):
        messages_request({**CHAT, **change})


def test_a_messages_answer_becomes_a_chat_answer() -> None:
    answer = chat_response(messages_body(1, REASONER), "gpt-4o", {})
    message = answer["choices"][0]["message"]
    assert message["reasoning_content"] == thought(1)
    assert message["content"] is None
    assert message["tool_calls"][0]["id"] == "toolu_0001"
    assert (
        json.loads(message["tool_calls"][0]["function"]["arguments"])["path"] == "src/module_1.py"
    )
    assert answer["choices"][0]["finish_reason"] == "tool_calls"
    assert answer["usage"] == {
        "prompt_tokens": 101 + 64,
        "completion_tokens": 7,
        "total_tokens": 101 + 64 + 7,
        "prompt_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 0},
    }
    text = chat_response({**messages_body(4, "m"), "stop_reason": "max_tokens"}, "gpt-4o", {})
    assert text["choices"][0]["message"]["content"].startswith("Step 4 done")
    assert text["choices"][0]["finish_reason"] == "length"


def _data(out: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in out.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


@pytest.mark.parametrize("usage", [True, False])
def test_a_messages_stream_becomes_chat_chunks(usage: bool) -> None:
    chat_types = pytest.importorskip("openai.types.chat", reason="the openai SDK is not installed")
    stream = ChatStream("gpt-4o", {"stream_options": {"include_usage": usage}})
    out = b"".join(stream.feed(e) for e in messages_events(1, REASONER)) + stream.close()
    assert out.endswith(b"data: [DONE]\n\n")
    chunks = [chat_types.ChatCompletionChunk.model_validate(c) for c in _data(out)]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join((d.model_extra or {}).get("reasoning_content", "") for d in deltas) == thought(1)
    calls = [call for d in deltas for call in d.tool_calls or []]
    assert (calls[0].index, calls[0].id, calls[0].function.name) == (0, "toolu_0001", "read_file")
    arguments = "".join(c.function.arguments or "" for c in calls if c.function)
    assert json.loads(arguments) == {"path": "src/module_1.py", "lines": [1, 400]}
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "tool_calls"
    assert set(finishes[:-1]) == {None}
    tail = [c for c in chunks if not c.choices]
    if usage:
        assert tail[0].usage is not None
        assert tail[0].usage.prompt_tokens_details is not None
        assert tail[0].usage.prompt_tokens_details.cached_tokens == 64
        assert tail[0].usage.completion_tokens == 7
    else:
        assert tail == []


def _split(whole: bytes, cuts: list[int]) -> list[bytes]:
    pieces, start = [], 0
    for cut in sorted({min(c, len(whole)) for c in cuts}):
        pieces.append(whole[start:cut])
        start = cut
    return [*pieces, whole[start:]]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 2000), max_size=12), st.sampled_from([1, 4]))
def test_any_split_of_a_stream_gives_the_same_chunks(cuts: list[int], n: int) -> None:
    for make, events in (
        (
            lambda: ChatStream("x", {"stream_options": {"include_usage": True}}),
            messages_events(n, REASONER),
        ),
        (lambda: ResponsesStream("x", {"model": "x"}), chat_events(n, REASONER)),
        (lambda: MessagesStream("x", {}), chat_events(n, REASONER)),
    ):
        whole = b"".join(events)
        one = make()
        expected = one.feed(whole) + one.close()
        split = make()
        assert b"".join(split.feed(p) for p in _split(whole, cuts)) + split.close() == expected


def test_a_stream_cut_short_is_still_closed() -> None:
    chat = ChatStream("x", {})
    out = b"".join(chat.feed(e) for e in messages_events(1, "m")[:3]) + chat.close()
    assert out.endswith(b"data: [DONE]\n\n")
    responses = ResponsesStream("x", {})
    out = b"".join(responses.feed(e) for e in chat_events(1, "m")[:3]) + responses.close()
    kinds = [e["type"] for e in _data(out)]
    assert kinds[-2:] == ["response.output_item.done", "response.completed"]


RESPONSES: dict[str, Any] = {
    "model": "gpt-4o",
    "instructions": "Be brief.",
    "max_output_tokens": 300,
    "reasoning": {"effort": "low"},
    "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
    "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
    "tool_choice": {"type": "function", "name": "read_file"},
    "input": [
        {"role": "user", "content": "Read a.py"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "hm"}],
        },
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "x = 1"},
    ],
}


def test_a_responses_request_becomes_a_chat_request() -> None:
    before = copy.deepcopy(RESPONSES)
    out = chat_request_for_responses(RESPONSES)
    assert before == RESPONSES
    assert (out["max_tokens"], out["reasoning_effort"]) == (300, "low")
    assert out["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": {"type": "object"}},
    }
    assert out["tools"] == [
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
    ]
    assert out["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    messages = out["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[2]["tool_calls"][0]["id"] == "call_1"
    assert "reasoning_content" not in messages[2]  # another provider's reasoning: dropped
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"}
    assert lint(openai.decode(out), "openai") == []
    bare = chat_request_for_responses({"model": "m", "input": "hi", "stream": True})
    assert bare["messages"] == [{"role": "user", "content": "hi"}]
    assert bare["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"tools": [{"type": "function"}]}, "tools[0].name"),
        ({"tool_choice": {"type": "file_search"}}, "tool_choice"),
        ({"input": [{"type": "message", "role": "wizard", "content": "x"}]}, "input[0]"),
    ],
)
def test_what_a_responses_request_cannot_carry_is_named(change: dict[str, Any], where: str) -> None:
    # a TranslationError, or the codec's own ValueError on a bad history
    with pytest.raises(ValueError, match=where.replace("[", r"\[").replace(".", r"\.")):
        chat_request_for_responses({**RESPONSES, **change})


def test_a_chat_answer_becomes_a_response_the_sdk_reads() -> None:
    types = pytest.importorskip("openai.types.responses", reason="the openai SDK is not installed")
    response = types.Response.model_validate(
        responses_response(chat_body(1, REASONER), "gpt-4o", RESPONSES)
    )
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "function_call"]
    assert response.output[0].content[0].text == thought(1)  # type: ignore[union-attr]
    call = response.output[1]
    assert (call.call_id, call.name, call.status) == ("call_0001", "read_file", "completed")  # type: ignore[union-attr]
    assert response.usage is not None
    assert response.usage.input_tokens_details.cached_tokens == 64
    text = responses_response({**chat_body(4, "m")}, "gpt-4o", {})
    assert types.Response.model_validate(text).output_text.startswith("Step 4 done")
    cut = chat_body(4, "m")
    cut["choices"][0]["finish_reason"] = "length"
    incomplete = types.Response.model_validate(responses_response(cut, "gpt-4o", {}))
    assert incomplete.status == "incomplete"
    assert incomplete.incomplete_details is not None


def test_the_reasoning_of_a_chat_upstream_reaches_an_anthropic_client() -> None:
    answer = messages_response(chat_body(1, REASONER), "claude", {})
    assert answer["content"][0] == {"type": "thinking", "thinking": thought(1), "signature": ""}
    assert answer["usage"] == {
        "input_tokens": 101 - 64,
        "output_tokens": 7,
        "cache_read_input_tokens": 64,
    }
    stream = MessagesStream("claude", {})
    out = b"".join(stream.feed(e) for e in chat_events(1, REASONER)) + stream.close()
    events = _data(out)
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["thinking", "tool_use"]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    thinking = [d["thinking"] for d in deltas if d["type"] == "thinking_delta"]
    assert "".join(thinking) == thought(1)


def _signed_turn(answer: dict[str, Any]) -> dict[str, Any]:
    """A Chat request whose history holds ``answer``'s assistant message as the
    client's SDK gave it (extra fields kept, as ``model_dump`` keeps them)."""
    message = answer["choices"][0]["message"]
    call = message["tool_calls"][0]
    result = {"role": "tool", "tool_call_id": call["id"], "content": "x = 1"}
    history = [{"role": "user", "content": "Read it"}, message, result]
    return {"model": "gpt-4o", "messages": history}


def _thinking_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = request["messages"][1]["content"]
    return [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]


def test_a_chat_client_carries_anthropic_signatures_in_reasoning_details() -> None:
    """Thinking reaches a Chat client as reasoning_content and, signed, in
    reasoning_details (OpenRouter's shape, format anthropic-claude-v1); sent back, it is
    the same signed thinking again. Details of another format, or unsigned reasoning,
    are never sent to Anthropic."""
    body = messages_body(1, REASONER)
    redacted = {"type": "redacted_thinking", "data": "b3BhcXVl"}
    body["content"] = [body["content"][0], redacted, *body["content"][1:]]
    answer = chat_response(body, "gpt-4o", {})
    details = answer["choices"][0]["message"]["reasoning_details"]
    assert details == [
        {
            "type": "reasoning.text",
            "text": thought(1),
            "signature": signature(1),
            "format": "anthropic-claude-v1",
            "index": 0,
        },
        {
            "type": "reasoning.encrypted",
            "data": "b3BhcXVl",
            "format": "anthropic-claude-v1",
            "index": 1,
        },
    ]
    request = messages_request(_signed_turn(answer))
    assert _thinking_of(request) == [
        {"type": "thinking", "thinking": thought(1), "signature": signature(1)},
        redacted,
    ]
    assert request["messages"][1]["content"][2]["type"] == "tool_use"
    assert lint(anthropic.decode(request), "anthropic") == []
    foreign = copy.deepcopy(answer)
    for detail in foreign["choices"][0]["message"]["reasoning_details"]:
        detail["format"] = "google-gemini-v1"
    assert _thinking_of(messages_request(_signed_turn(foreign))) == []
    del foreign["choices"][0]["message"]["reasoning_details"]  # reasoning_content only
    assert _thinking_of(messages_request(_signed_turn(foreign))) == []


def test_a_streamed_signature_reaches_the_chat_sdk_and_comes_back() -> None:
    chat = pytest.importorskip(
        "openai.lib.streaming.chat", reason="the openai SDK is not installed"
    )
    types = pytest.importorskip("openai.types.chat")
    stream = ChatStream("gpt-4o", {})
    out = b"".join(stream.feed(e) for e in messages_events(1, REASONER)) + stream.close()
    state = chat.ChatCompletionStreamState()
    for data in _data(out):
        state.handle_chunk(types.ChatCompletionChunk.model_validate(data))
    completion = state.get_final_completion()
    message = completion.choices[0].message.model_dump(exclude_none=True)
    assert message["reasoning_content"] == thought(1)
    answer = {"choices": [{"message": message}]}
    request = messages_request(_signed_turn(answer))
    assert _thinking_of(request) == [
        {"type": "thinking", "thinking": thought(1), "signature": signature(1)}
    ]


def test_translations_and_headers() -> None:
    assert translation_for("chat", "openai") is None  # same provider: never translated
    assert translation_for("messages", "anthropic") is None
    assert translation_for("chat", "same") is None
    chat, _, messages = APIS
    to_anthropic = translated_headers([("Authorization", "Bearer k1"), ("x-other", "1")], messages)
    assert to_anthropic == [
        ("x-other", "1"),
        ("x-api-key", "k1"),
        ("anthropic-version", "2023-06-01"),
    ]
    kept = translated_headers([("x-api-key", "k2"), ("anthropic-version", "v")], messages)
    assert kept == [("x-api-key", "k2"), ("anthropic-version", "v")]
    assert translated_headers([("x-api-key", "k3")], chat) == [("authorization", "Bearer k3")]


def test_a_responses_client_keeps_anthropic_signatures_across_a_round_trip() -> None:
    """Thinking reaches a Responses client as a reasoning item whose encrypted_content
    is the signature; sent back, it is the same signed thinking block. Reasoning items
    of any other origin are dropped, never sent with an invented signature."""
    types = pytest.importorskip("openai.types.responses", reason="the openai SDK is not installed")
    answer = messages_body(1, REASONER)
    redacted = {"type": "redacted_thinking", "data": "b3BhcXVl"}
    answer["content"] = [answer["content"][0], redacted, *answer["content"][1:]]
    response = responses_from_messages(answer, "gpt-4o", {})
    assert types.Response.model_validate(response).output[0].type == "reasoning"
    output = response["output"]
    assert output[0]["encrypted_content"] == signature(1)
    assert output[0]["summary"] == [{"type": "summary_text", "text": thought(1)}]
    assert [o["type"] for o in output] == ["reasoning", "reasoning", "function_call"]
    foreign = {"type": "reasoning", "id": "rs_other", "summary": [], "encrypted_content": "gAAA"}
    request = {
        "model": "gpt-4o",
        "input": [
            {"role": "user", "content": "Read it"},
            foreign,
            *output,
            {"type": "function_call_output", "call_id": "toolu_0001", "output": "x = 1"},
        ],
    }
    out = messages_request_for_responses(request)
    blocks = out["messages"][1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": thought(1), "signature": signature(1)}
    assert blocks[1] == redacted
    assert blocks[2]["type"] == "tool_use"
    assert "gAAA" not in json.dumps(out)
    assert lint(anthropic.decode(out), "anthropic") == []


def _responses_events(stream: Any, events: list[bytes]) -> list[Any]:
    """The Responses events of a translated stream, read by the openai SDK's own
    stream state (it raises on an event out of order)."""
    sdk = pytest.importorskip("openai.lib.streaming.responses._responses")
    out = b"".join(stream.feed(e) for e in events) + stream.close()
    state = sdk.ResponseStreamState(input_tools=[], text_format=openai_omit())
    seen = []
    for data in _data(out):
        seen.extend(state.handle_event(_construct_event(data)))
    return seen


def openai_omit() -> Any:
    from openai import omit

    return omit


def _construct_event(data: dict[str, Any]) -> Any:
    from openai._models import construct_type_unchecked
    from openai.types.responses import ResponseStreamEvent

    return construct_type_unchecked(type_=ResponseStreamEvent, value=data)


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("upstream", ["chat", "anthropic"])
def test_a_stream_becomes_responses_events_the_sdk_accumulates(n: int, upstream: str) -> None:
    if upstream == "chat":
        stream: Any = ResponsesStream("gpt-4o", {})
        events = chat_events(n, REASONER)
    else:
        stream = AnthropicResponsesStream("gpt-4o", {})
        events = messages_events(n, REASONER)
    seen = _responses_events(stream, events)
    kinds = [e.type for e in seen]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in seen] == list(range(len(seen)))
    final = seen[-1].response
    assert [o.type for o in final.output] == ["reasoning", "function_call" if n == 1 else "message"]
    reasoning = final.output[0]
    texts = [*(reasoning.content or []), *reasoning.summary]
    assert "".join(t.text for t in texts) == thought(n)
    if upstream == "anthropic":
        assert reasoning.encrypted_content == signature(n)
        assert "response.reasoning_summary_text.delta" in kinds
    else:
        assert "response.reasoning_text.delta" in kinds
    if n == 1:
        call = final.output[1]
        assert json.loads(call.arguments) == {"path": "src/module_1.py", "lines": [1, 400]}
        assert call.status == "completed"
    else:
        assert final.output_text.startswith("Step 4 done")
    assert final.usage.input_tokens_details.cached_tokens == 64


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3000), max_size=12), st.sampled_from([1, 4]))
def test_any_split_of_an_anthropic_stream_gives_the_same_events(cuts: list[int], n: int) -> None:
    whole = b"".join(messages_events(n, REASONER))
    one = AnthropicResponsesStream("x", {})
    expected = one.feed(whole) + one.close()
    split = AnthropicResponsesStream("x", {})
    assert b"".join(split.feed(p) for p in _split(whole, cuts)) + split.close() == expected


ANTHROPIC_ERROR = (
    b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
    b'"message": "Overloaded"}}\n\n'
)
CHAT_ERROR = b'data: {"error": {"message": "Overloaded", "type": "server_error"}}\n\n'


@pytest.mark.parametrize("garbage", [False, True])
def test_an_error_inside_an_upstream_stream_reaches_the_client_as_its_own_error(
    garbage: bool,
) -> None:
    """Mid-stream, the upstream's error (or data that is not JSON) becomes the error
    each SDK raises on: a Chat chunk with ``error``, a Responses ``error`` event, a
    Messages ``error`` event. Nothing follows it; the gateway does not fail."""
    anthropic_bad = b"data: {not json\n\n" if garbage else ANTHROPIC_ERROR
    chat_bad = b"data: {not json\n\n" if garbage else CHAT_ERROR
    cases: list[tuple[Any, list[bytes], str]] = [
        (ChatStream("x", {}), [*messages_events(4, "m")[:3], anthropic_bad], "chat"),
        (
            AnthropicResponsesStream("x", {}),
            [*messages_events(4, "m")[:3], anthropic_bad],
            "responses",
        ),
        (ResponsesStream("x", {}), [*chat_events(4, "m")[:2], chat_bad], "responses"),
        (MessagesStream("x", {}), [*chat_events(4, "m")[:2], chat_bad], "messages"),
    ]
    for stream, events, client in cases:
        out = b"".join(stream.feed(e) for e in [*events, *events[:2]]) + stream.close()
        last_frame = out.strip().split(b"\n\n")[-1]
        data = _data(last_frame)[0]
        message = data["error"]["message"]
        assert ("not JSON" if garbage else "Overloaded") in message
        if client == "chat":
            assert not last_frame.startswith(b"event:")  # the SDK reads an unnamed chunk
        else:
            assert last_frame.startswith(b"event: error\n")
            assert data["type"] == "error"


PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch"
CODEX_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edit files with a patch.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"},
    },
    {
        "type": "namespace",
        "name": "multi_agent_v1",
        "description": "Sub-agents.",
        "tools": [
            {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}},
            {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        ],
    },
    {"type": "web_search", "external_web_access": True},
    {"type": "tool_search"},
]
CODEX: dict[str, Any] = {
    "model": "gpt-5-codex",
    "tools": CODEX_TOOLS,
    "input": [
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Add a.txt"}]},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "apply_patch",
         "input": PATCH, "status": "completed"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Success."},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "spawn_agent",
         "namespace": "multi_agent_v1", "arguments": "{}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_2", "output": "agent 7"},
    ],
}  # fmt: skip


def _chat_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "call_9", "type": "function", "function": {"name": name}}
    call["function"]["arguments"] = json.dumps(arguments)
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": "c1",
        "model": "m",
        "choices": [{"message": message, "finish_reason": "tool_calls"}],
    }


def test_codex_tools_become_chat_functions_and_built_ins_are_dropped() -> None:
    """Codex CLI's tools on a Chat upstream (issue #38): a custom tool is a function of
    one string, a namespace its members, built-in tools are left out and named."""
    before = copy.deepcopy(CODEX)
    out = chat_request_for_responses(CODEX)
    assert before == CODEX
    functions = {t["function"]["name"]: t["function"] for t in out["tools"]}
    assert list(functions) == [
        "exec_command", "apply_patch", "spawn_agent", "multi_agent_v1__exec_command",
    ]  # fmt: skip
    patch = functions["apply_patch"]["parameters"]
    assert patch["required"] == ["input"]
    assert "start: begin_patch" in patch["properties"]["input"]["description"]
    assert chat_tools(CODEX).dropped == ["web_search", "tool_search"]
    messages = out["messages"]
    (call,) = messages[1]["tool_calls"]
    assert call["function"]["name"] == "apply_patch"
    assert json.loads(call["function"]["arguments"]) == {"input": PATCH}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "Success."}
    assert messages[3]["tool_calls"][0]["function"]["name"] == "spawn_agent"
    assert lint(openai.decode(out), "openai") == []
    assert "[openai-responses" not in json.dumps(out)  # nothing left as a placeholder


def test_chat_calls_of_custom_and_namespaced_tools_come_back_as_codex_sent_them() -> None:
    types = pytest.importorskip("openai.types.responses", reason="the openai SDK is not installed")
    custom = responses_response(_chat_call("apply_patch", {"input": PATCH}), "m", CODEX)
    (item,) = custom["output"]
    assert (item["type"], item["name"], item["input"]) == ("custom_tool_call", "apply_patch", PATCH)
    member = responses_response(_chat_call("multi_agent_v1__exec_command", {}), "m", CODEX)
    (call,) = member["output"]
    assert (call["type"], call["name"], call["namespace"]) == (
        "function_call", "exec_command", "multi_agent_v1",
    )  # fmt: skip
    assert types.Response.model_validate(custom).output[0].type == "custom_tool_call"
    # sent back in the next request, each is the call the model made
    output = {"type": "custom_tool_call_output", "call_id": "call_9", "output": "Done."}
    again = chat_request_for_responses({**CODEX, "input": [*CODEX["input"], item, output]})
    (sent,) = again["messages"][-2]["tool_calls"]
    assert json.loads(sent["function"]["arguments"]) == {"input": PATCH}
    assert again["messages"][-1] == {"role": "tool", "tool_call_id": "call_9", "content": "Done."}


@pytest.mark.parametrize("upstream", ["chat", "anthropic"])
def test_a_streamed_custom_tool_call_reaches_codex_as_one(upstream: str) -> None:
    pieces = [json.dumps({"input": PATCH})[i : i + 7] for i in range(0, 80, 7)]
    if upstream == "chat":
        stream: Any = ResponsesStream("m", CODEX)
        head = {"id": "call_9", "function": {"name": "apply_patch", "arguments": ""}}
        chunks = [{"id": "c", "choices": [{"delta": {"tool_calls": [{"index": 0, **head}]}}]}]
        for piece in pieces:
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
            chunks.append({"id": "c", "choices": [{"delta": delta}]})
        data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
        out = stream.feed(data + b"data: [DONE]\n\n")
    else:
        stream = AnthropicResponsesStream("m", CODEX)
        block = {"type": "tool_use", "id": "call_9", "name": "apply_patch", "input": {}}
        events = [
            ("message_start", {"message": {"id": "msg_1", "model": "m", "usage": {}}}),
            ("content_block_start", {"index": 0, "content_block": block}),
            *(
                ("content_block_delta",
                 {"index": 0, "delta": {"type": "input_json_delta", "partial_json": p}})
                for p in pieces
            ),
            ("content_block_stop", {"index": 0}),
            ("message_stop", {}),
        ]  # fmt: skip
        out = stream.feed(
            b"".join(
                f"event: {k}\ndata: {json.dumps({'type': k, **d})}\n\n".encode() for k, d in events
            )
        )
    seen = [json.loads(line[6:]) for line in out.decode().splitlines() if line.startswith("data: ")]
    kinds = [e["type"] for e in seen]
    assert "response.custom_tool_call_input.done" in kinds
    assert "response.function_call_arguments.delta" not in kinds
    final = seen[-1]["response"]["output"]
    assert [(i["type"], i["name"], i["input"]) for i in final] == [
        ("custom_tool_call", "apply_patch", PATCH)
    ]
