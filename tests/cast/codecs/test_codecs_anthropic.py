"""Anthropic Messages codec: documented payloads, thinking and tool-result mapping,
broken payloads, normalizations and a Hypothesis round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import anthropic
from cast.codecs._common import dumps_compact
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from cast.errors import CodecError
from cast.messages import (
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

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codecs"


def load_fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


# -- recorded payloads -----------------------------------------------------------------


def test_tool_results_become_tool_messages_then_human() -> None:
    messages = anthropic.decode(load_fixture("anthropic_tool_use.json")["payload"])
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.HUMAN,
        Role.AI,
        Role.TOOL,
        Role.TOOL,
        Role.HUMAN,
        Role.AI,
    ]
    weather, time = messages[3], messages[4]
    assert weather.parts == (
        ToolResult(
            tool_call_id="toolu_01A09q90qw90lq917835lq9", name="get_weather", content="15 degrees"
        ),
    )
    # a list of text blocks: the first is the result, the next follows it as text
    assert time.parts == (
        ToolResult(
            tool_call_id="toolu_01B2c3d4e5f6g7h8i9j0k1l2", name="get_time", content="3:45 PM"
        ),
        TextPart(text="PST (UTC-8)"),
    )
    assert messages[5].parts == (TextPart(text="Also, should I bring an umbrella?"),)
    call = messages[2].parts[1]
    assert isinstance(call, ToolCall)
    assert json.loads(call.arguments) == {"location": "San Francisco, CA", "unit": "celsius"}


def test_thinking_attaches_to_the_next_part() -> None:
    messages = anthropic.decode(load_fixture("anthropic_thinking_tool_use.json")["payload"])
    text, call = messages[1].parts
    assert isinstance(text, TextPart)
    assert text.reasoning is not None
    assert text.reasoning.content.startswith("The user wants to know")
    assert text.reasoning.signature.startswith(b"BDaL4Vrb")
    assert isinstance(call, ToolCall)
    assert call.reasoning is None
    # redacted, then thinking, then text: the first stands alone, the second attaches
    redacted, answer = messages[3].parts
    assert redacted == TextPart(
        text="",
        reasoning=Reasoning(
            signature=REDACTED_THINKING_PREFIX
            + b"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qyY"
        ),
    )
    assert isinstance(answer, TextPart)
    assert answer.reasoning is not None
    assert answer.reasoning.content == "The tool says 88°F. That is warm for Paris."


def test_media_blocks() -> None:
    messages = anthropic.decode(load_fixture("anthropic_vision.json")["payload"])
    assert [type(p) for p in messages[0].parts] == [TextPart, TextPart]  # system blocks
    png, url, pdf, _ = messages[1].parts
    assert isinstance(png, BinaryPart)
    assert png.mime_type == "image/png"
    assert png.data.startswith(b"\x89PNG")
    assert url == ImagePart(
        url="https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"
    )
    assert isinstance(pdf, BinaryPart)
    assert pdf.mime_type == "application/pdf"
    result, screenshot = messages[3].parts
    assert isinstance(result, ToolResult)
    assert result.name == "screenshot"
    assert isinstance(screenshot, BinaryPart)


# -- broken payloads -------------------------------------------------------------------


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"messages": [{"role": "assistant", "content": list(blocks)}]}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(blocks)}]}


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        pytest.param(None, "", id="null-body"),
        pytest.param({"system": "x"}, "messages", id="no-messages"),
        pytest.param({"messages": [], "system": 5}, "system", id="system-number"),
        pytest.param(
            {"messages": [], "system": [{"type": "image"}]}, "system[0].source", id="system-image"
        ),
        pytest.param({"messages": [{"role": "user"}]}, "messages[0].content", id="no-content"),
        pytest.param(
            _assistant(
                {"type": "text", "text": "a"},
                {"type": "tool_use", "id": "t", "name": "f", "input": "{}"},
            ),
            "messages[0].content[1].input",
            id="tool-use-input-string",
        ),
        pytest.param(
            _assistant({"type": "tool_use", "name": "f", "input": {}}),
            "messages[0].content[0].id",
            id="tool-use-without-id",
        ),
        pytest.param(
            _assistant({"type": "thinking", "signature": "s"}),
            "messages[0].content[0].thinking",
            id="thinking-without-text",
        ),
        pytest.param(
            _assistant({"type": "redacted_thinking", "data": 1}),
            "messages[0].content[0].data",
            id="redacted-data-number",
        ),
        pytest.param(
            _user({"type": "text", "text": "x"}, {"type": "tool_result", "content": "r"}),
            "messages[0].content[1].tool_use_id",
            id="result-without-tool-use-id",
        ),
        pytest.param(
            _user(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "not base64!"},
                }
            ),
            "messages[0].content[0].source.data",
            id="image-bad-base64",
        ),
        pytest.param(
            _user({"type": "tool_use", "id": "t", "name": "f", "input": {}}),
            "messages[0].content[0].type",
            id="tool-use-in-user",
        ),
        pytest.param(_user("text"), "messages[0].content[0]", id="block-not-object"),
    ],
)
def test_broken_payloads_raise_codec_error(payload: Any, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        anthropic.decode(payload)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("messages", "path"),
    [
        pytest.param(
            [Message.ai("", ToolCall(id="t", name="f", arguments="[1, 2]"))],
            "messages[0].parts[0].arguments",
            id="arguments-not-object",
        ),
        pytest.param(
            [Message.ai("", ToolCall(id="t", name="f", arguments="{oops"))],
            "messages[0].parts[0].arguments",
            id="arguments-not-json",
        ),
        pytest.param(
            [Message(role=Role.TOOL, parts=[TextPart(text="x")])],
            "messages[0].parts[0]",
            id="tool-without-result",
        ),
        pytest.param(
            [Message(role=Role.AI, parts=[ToolResult(tool_call_id="t", name="f", content="")])],
            "messages[0].parts[0]",
            id="result-in-ai",
        ),
    ],
)
def test_unencodable_messages_raise_codec_error(messages: list[Message], path: str) -> None:
    with pytest.raises(CodecError) as caught:
        anthropic.encode(messages)
    assert caught.value.path == path


# -- documented normalizations ---------------------------------------------------------


def test_normalizations() -> None:
    payload = {
        "system": [{"type": "text", "text": "only one block", "cache_control": {"type": "x"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": "plain string"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "f",
                        "input": {"a": 1},
                        "caller": {"type": "direct"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "boom"}],
                    },
                ],
            },
            {"role": "user", "content": "separate turn"},
        ],
    }
    assert anthropic.encode(anthropic.decode(payload)) == {
        "system": [{"type": "text", "text": "only one block", "cache_control": {"type": "x"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "plain string"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "f",
                        "input": {"a": 1},
                        "caller": {"type": "direct"},  # carried (issue 27)
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "boom",
                        "is_error": True,
                    },
                    {"type": "text", "text": "separate turn"},
                ],
            },
        ],
    }


def test_thinking_only_and_empty_text() -> None:
    payload = _assistant(
        {"type": "thinking", "thinking": "a", "signature": "s1"},
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": "", "signature": "omitted-display"},
    )
    (message,) = anthropic.decode(payload)
    assert message.parts == (
        TextPart(text="", reasoning=Reasoning(content="a", signature=b"s1")),
        TextPart(text=""),
        TextPart(text="", reasoning=Reasoning(signature=b"omitted-display")),
    )
    assert anthropic.encode([message]) == payload


def test_data_url_images_go_inline() -> None:
    message = Message(role=Role.HUMAN, parts=[ImagePart(url="data:image/gif;base64,R0lGOA==")])
    block = anthropic.encode([message])["messages"][0]["content"][0]
    assert block == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGOA=="},
    }


def test_foreign_signatures_are_sent_as_text() -> None:
    message = Message.ai(
        "", ToolCall(id="t", name="f", reasoning=Reasoning(content="c", signature=b"\xff\x00"))
    )
    thinking = anthropic.encode([message])["messages"][0]["content"][0]
    assert thinking == {"type": "thinking", "thinking": "c", "signature": "/wA="}


# -- Hypothesis round trip -------------------------------------------------------------

_text = st.text(max_size=10)
_json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_arguments = st.dictionaries(_text, _json_value, max_size=3).map(dumps_compact)
_signature = st.one_of(
    _text.map(str.encode),
    _text.map(lambda t: REDACTED_THINKING_PREFIX + t.encode()),
)
_reasoning = st.builds(Reasoning, content=_text, signature=_signature)
_url = _text.filter(lambda u: not u.startswith("data:"))
_media = st.builds(ImagePart, url=_url) | st.builds(
    BinaryPart,
    mime_type=st.sampled_from(["image/png", "application/pdf"]),
    data=st.binary(max_size=12),
)
_plain_text = st.builds(TextPart, text=_text)


def _attachable(part: Any) -> bool:
    if isinstance(part, TextPart):
        return part.reasoning is None and part.text != ""
    return isinstance(part, ToolCall) and part.reasoning is None


def canonical_ai(parts: list[Any]) -> list[Any]:
    """A reasoning-only text part right before a part without reasoning is that part's
    reasoning on the wire (the decoder reads it so): merge them."""
    out: list[Any] = []
    for part in parts:
        previous = out[-1] if out else None
        if (
            isinstance(previous, TextPart)
            and previous.text == ""
            and previous.reasoning is not None
            and _attachable(part)
        ):
            out[-1] = part.model_copy(update={"reasoning": previous.reasoning})
        else:
            out.append(part)
    return out


_ai_part = st.one_of(
    st.builds(TextPart, text=_text, reasoning=st.none() | _reasoning),
    st.builds(
        ToolCall, id=_text, name=_text, arguments=_arguments, reasoning=st.none() | _reasoning
    ),
    _media,
)

anthropic_ai = st.lists(_ai_part, max_size=4).map(
    lambda parts: Message(role=Role.AI, parts=canonical_ai(parts))
)
anthropic_human = st.builds(
    Message, role=st.just(Role.HUMAN), parts=st.lists(_plain_text | _media, max_size=3)
)
anthropic_tool = st.builds(
    lambda result, extra: Message(role=Role.TOOL, parts=[result, *extra]),
    st.builds(ToolResult, tool_call_id=_text, name=st.just(""), content=_text),
    st.lists(_plain_text | _media, max_size=2),
)


def with_call_names(messages: list[Message]) -> list[Message]:
    """Tool results named after the latest call with their id (what decode recovers)."""
    names: dict[str, str] = {}
    out = []
    for message in messages:
        for call in message.tool_calls:
            names[call.id] = call.name
        if message.role is not Role.TOOL:
            out.append(message)
            continue
        parts = [
            p.model_copy(update={"name": names.get(p.tool_call_id, "")})
            if isinstance(p, ToolResult)
            else p
            for p in message.parts
        ]
        out.append(Message(role=Role.TOOL, parts=parts))
    return out


anthropic_chains = st.tuples(
    st.none()
    | st.builds(Message, role=st.just(Role.SYSTEM), parts=st.lists(_plain_text, max_size=2)),
    st.lists(anthropic_ai | anthropic_human | anthropic_tool, max_size=7),
).map(lambda pair: with_call_names(([pair[0]] if pair[0] else []) + pair[1]))


@given(anthropic_chains)
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    payload = anthropic.encode(messages)
    assert anthropic.decode(json.loads(json.dumps(payload))) == messages


def test_server_blocks_cache_points_and_late_system_round_trip() -> None:
    """Blocks chaincast does not model are kept whole; cache points, is_error and
    system messages inside ``messages`` survive (shapes from recorded API requests)."""
    search = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "weather"},
    }
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://x.test", "title": "X"}],
    }
    cited = {
        "type": "text",
        "text": "Sunny.",
        "citations": [{"type": "web_search_result_location"}],
    }
    payload = {
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [search, found, cited]},
            {"role": "system", "content": "Answer in French from now on."},
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "And tomorrow?",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "no such tool"},
                            {"type": "tool_reference", "tool_name": "g"},
                        ],
                    }
                ],
            },
        ],
    }
    messages = anthropic.decode(payload)
    assert [m.role.value for m in messages] == [
        "system",
        "human",
        "ai",
        "system",
        "human",
        "ai",
        "tool",
    ]
    kinds = [p.kind for p in messages[2].parts if isinstance(p, ProviderPart)]
    assert kinds == ["server_tool_use", "web_search_tool_result", "text"]
    result = messages[6].parts[0]
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert result.content == "no such tool"
    assert isinstance(messages[6].parts[1], ProviderPart)
    assert anthropic.encode(messages) == payload


def test_tool_use_in_user_is_refused() -> None:
    with pytest.raises(CodecError) as caught:
        anthropic.decode(_user({"type": "tool_use", "id": "t", "name": "f", "input": {}}))
    assert caught.value.path == "messages[0].content[0].type"
