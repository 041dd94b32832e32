"""OpenAI Chat Completions codec: documented payloads, the tau-bench corpus, broken
payloads, normalizations and a Hypothesis round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import detect_format, get_codec, openai
from cast.errors import CodecError
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.parse import parse_chain
from tests.conftest import TAUBENCH as TAUBENCH_DIR
from tests.conftest import corpus_files

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codecs"
TAUBENCH = corpus_files(TAUBENCH_DIR)


def load_fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


# -- recorded payloads -----------------------------------------------------------------


def test_function_calling_decodes_to_the_model() -> None:
    messages = openai.decode(load_fixture("openai_function_calling.json")["payload"])
    assert [m.role for m in messages] == [Role.SYSTEM, Role.HUMAN, Role.AI, Role.TOOL, Role.AI]
    assert messages[2].parts == (
        ToolCall(
            id="call_12345xyz",
            name="get_weather",
            arguments='{"latitude":48.8566,"longitude":2.3522}',
        ),
    )
    # The tool message has no name on the wire: it comes from the call.
    assert messages[3].parts == (
        ToolResult(tool_call_id="call_12345xyz", name="get_weather", content="14"),
    )


def test_vision_parts() -> None:
    messages = openai.decode(load_fixture("openai_parallel_vision.json")["payload"])
    text, image = messages[1].parts
    assert isinstance(text, TextPart)
    assert isinstance(image, ImagePart)
    assert image.detail == "high"
    assert [p.type for p in messages[2].parts] == ["text", "tool_call", "tool_call"]


def test_deepseek_reasoning_placement() -> None:
    messages = openai.decode(load_fixture("deepseek_thinking_tool_calls.json")["payload"])
    # content "" with reasoning: an empty text part carries it, before the call.
    first = messages[1].parts
    assert first[0] == TextPart(
        text="",
        reasoning=Reasoning(
            content="The user asks about tomorrow's weather in Hangzhou. "
            "I need tomorrow's date first."
        ),
    )
    assert isinstance(first[1], ToolCall)
    # content null with reasoning: the first call carries it.
    (call,) = messages[3].parts
    assert isinstance(call, ToolCall)
    assert call.reasoning is not None
    assert call.reasoning.content.startswith("Today is 2025-12-01")
    # a plain answer: the text carries it.
    (answer,) = messages[5].parts
    assert isinstance(answer, TextPart)
    assert answer.reasoning == Reasoning(content="I have the forecast; answer.")


def test_bare_list_is_accepted() -> None:
    payload = load_fixture("openai_parallel_vision.json")["payload"]
    assert openai.decode(payload["messages"]) == openai.decode(payload)


def test_registry() -> None:
    assert get_codec("openai").decode is openai.decode
    assert get_codec("OpenAI").encode is openai.encode


# -- the tau-bench corpus --------------------------------------------------------------


@pytest.mark.skipif(not TAUBENCH, reason="shared corpus not found next to the repository")
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in TAUBENCH])
def test_taubench_round_trips_exactly(path: Path) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    before = copy.deepcopy(payload)
    messages = openai.decode(payload)
    assert payload == before
    assert openai.encode(messages) == {"messages": payload}
    assert detect_format(payload) == "openai"

    calls = sum(len(m.get("tool_calls") or ()) for m in payload)
    results = sum(1 for m in payload if m["role"] == "tool")
    assert sum(len(m.tool_calls) for m in messages) == calls
    assert sum(len(m.tool_results) for m in messages) == results
    # every result has the name of the call it answers (tau-bench reuses ids)
    for wire, message in zip(payload, messages, strict=True):
        if wire["role"] == "tool":
            assert message.tool_results[0].name == wire["name"]
    assert parse_chain(messages, repair=True).to_messages()


# -- broken payloads -------------------------------------------------------------------

_OK_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        pytest.param("hello", "", id="not-a-body"),
        pytest.param({"model": "gpt-4o"}, "messages", id="no-messages"),
        pytest.param({"messages": {"role": "user"}}, "messages", id="messages-not-array"),
        pytest.param({"messages": [42]}, "messages[0]", id="message-not-object"),
        pytest.param(
            {"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", id="unknown-role"
        ),
        pytest.param([{"role": "user"}], "messages[0].content", id="user-without-content"),
        pytest.param([{"role": "user", "content": 7}], "messages[0].content", id="content-number"),
        pytest.param(
            [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}]}],
            "messages[0].content[1].text",
            id="text-part-without-text",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": 1}}]}],
            "messages[0].content[0].image_url.url",
            id="image-url-not-string",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": 7, "video": {}}]}],
            "messages[0].content[0].type",
            id="part-type-not-string",
        ),
        pytest.param(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "%%%", "format": "wav"}}
                    ],
                }
            ],
            "messages[0].content[0].input_audio.data",
            id="audio-not-base64",
        ),
        pytest.param(
            [{"role": "assistant", "content": None, "tool_calls": [_OK_CALL, {"id": 3}]}],
            "messages[0].tool_calls[1].id",
            id="call-id-not-string",
        ),
        pytest.param(
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}],
                }
            ],
            "messages[0].tool_calls[0].function.arguments",
            id="arguments-object",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": "nope"}],
            "messages[0].tool_calls",
            id="tool-calls-not-array",
        ),
        pytest.param(
            [{"role": "assistant", "content": "x", "reasoning_content": ["a"]}],
            "messages[0].reasoning_content",
            id="reasoning-not-string",
        ),
        pytest.param(
            [{"role": "tool", "content": "x"}],
            "messages[0].tool_call_id",
            id="tool-without-call-id",
        ),
        pytest.param(
            [{"role": "tool", "tool_call_id": "c", "content": [{"type": None}]}],
            "messages[0].content[0].type",
            id="tool-content-untyped",
        ),
        pytest.param(
            [{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}],
            "messages[0].function_call",
            id="legacy-function-call",
        ),
        pytest.param(
            [{"role": ["user"], "content": "x"}], "messages[0].role", id="role-unhashable"
        ),
    ],
)
def test_broken_payloads_raise_codec_error(payload: Any, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        openai.decode(payload)
    assert caught.value.path == path
    assert caught.value.detail


@pytest.mark.parametrize(
    ("message", "path"),
    [
        pytest.param(
            Message(role=Role.HUMAN, parts=[ToolCall(id="a", name="f")]),
            "messages[0].parts[0]",
            id="call-in-human",
        ),
        pytest.param(
            Message(role=Role.AI, parts=[ImagePart(url="https://x/a.png")]),
            "messages[0].parts[0]",
            id="image-in-ai",
        ),
        pytest.param(
            Message(role=Role.TOOL, parts=[TextPart(text="x")]),
            "messages[0].parts[0]",
            id="tool-without-result",
        ),
        pytest.param(Message(role=Role.TOOL, parts=[]), "messages[0].parts", id="empty-tool"),
    ],
)
def test_unencodable_messages_raise_codec_error(message: Message, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        openai.encode([message])
    assert caught.value.path == path


def test_encode_accepts_native_dicts_and_reports_bad_ones() -> None:
    native = Message.human("hi").model_dump(mode="json")
    assert openai.encode([native]) == {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(CodecError) as caught:
        openai.encode([{"role": "nobody", "parts": []}])
    assert caught.value.path.startswith("messages[0].role")


# -- documented normalizations ---------------------------------------------------------


def test_normalizations() -> None:
    payload = {
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "rules"}]},
            {"role": "user", "name": "alice", "content": "hi"},
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "assistant", "content": "ok", "tool_calls": [], "reasoning": "why"},
            {"role": "tool", "tool_call_id": "zz", "content": None},
        ]
    }
    assert openai.encode(openai.decode(payload)) == {
        "messages": [
            {"role": "developer", "content": "rules"},
            {"role": "user", "name": "alice", "content": "hi"},
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "assistant", "content": "ok", "reasoning_content": "why"},
            {"role": "tool", "tool_call_id": "zz", "content": ""},
        ]
    }


# -- fields and parts kept for the way back (issue 40) --------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        pytest.param({"role": "user", "name": "planner", "content": "hi"}, id="user-name"),
        pytest.param(
            {"role": "assistant", "name": "critic", "content": "ok", "prefix": True},
            id="assistant-name-prefix",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": "see",
                "annotations": [{"type": "url_citation", "url_citation": {"url": "https://x"}}],
            },
            id="annotations",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": None,
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "t", "signature": "c2ln", "format": "x"}
                ],
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            id="reasoning-details-call-index",
        ),
        pytest.param({"role": "assistant", "content": None, "refusal": "no"}, id="refusal-field"),
        pytest.param(
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
            id="refusal-part",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": "b"},
                ],
            },
            id="assistant-cache-control",
        ),
        pytest.param(
            {
                "role": "tool",
                "tool_call_id": "c1",
                "name": "f",
                "content": [{"type": "text", "text": "42", "cache_control": {"type": "ephemeral"}}],
            },
            id="tool-cache-control",
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "video_url", "video_url": {"url": "v.webm"}}]},
            id="video-url-part",
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "document_url", "document_url": "d.pdf"}]},
            id="document-url-part",
        ),
        pytest.param(
            {"role": "assistant", "content": [{"type": "text", "text": "t", "x": 1}]},
            id="assistant-text-with-another-field",
        ),
    ],
)
def test_fields_and_parts_survive_the_round_trip(message: dict[str, Any]) -> None:
    payload = {"messages": [message]}
    decoded = openai.decode(payload)
    assert openai.encode(decoded) == payload
    assert openai.decode(openai.encode(decoded)) == decoded


def test_cached_tool_text_stays_the_tool_result() -> None:
    (message,) = openai.decode(
        [
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": [{"type": "text", "text": "56088", "cache_control": {"type": "x"}}],
            }
        ]
    )
    assert message.tool_results[0].content == "56088"


def test_tool_names_can_be_left_out() -> None:
    messages = [Message.tool("c1", "lookup", "found")]
    assert openai.encode(messages, tool_names=False) == {
        "messages": [{"role": "tool", "tool_call_id": "c1", "content": "found"}]
    }


def test_binary_parts_on_the_wire() -> None:
    audio = BinaryPart(mime_type="audio/wav", data=b"RIFF")
    pdf = BinaryPart(mime_type="application/pdf", data=b"%PDF")
    png = BinaryPart(mime_type="image/png", data=b"\x89PNG")
    encoded = openai.encode([Message(role=Role.HUMAN, parts=[audio, pdf, png])])
    content = encoded["messages"][0]["content"]
    assert content[0] == {
        "type": "input_audio",
        "input_audio": {"data": "UklGRg==", "format": "wav"},
    }
    assert content[1] == {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64,JVBERg=="},
    }
    assert content[2]["image_url"]["url"] == "data:image/png;base64,iVBORw=="
    audio_back, pdf_back, png_back = openai.decode(encoded)[0].parts
    assert (audio_back, pdf_back) == (audio, pdf)
    assert png_back == ImagePart(url="data:image/png;base64,iVBORw==")  # images go as URLs


def test_reasonings_of_one_message_are_joined_and_signatures_dropped() -> None:
    message = Message(
        role=Role.AI,
        parts=[
            TextPart(text="a", reasoning=Reasoning(content="first", signature=b"sig")),
            ToolCall(id="c", name="f", reasoning=Reasoning(content="second")),
        ],
    )
    wire = openai.encode([message], reasoning_field="reasoning")["messages"][0]
    assert wire["reasoning"] == "first\n\nsecond"
    assert "reasoning_content" not in wire


# -- Hypothesis round trip -------------------------------------------------------------

_text = st.text(max_size=12)
_reasoning = st.builds(Reasoning, content=_text)
_text_part = st.builds(TextPart, text=_text)
_image = st.builds(ImagePart, url=_text, detail=st.sampled_from(["", "low", "high", "auto"]))
_binary = st.builds(
    BinaryPart,
    mime_type=st.sampled_from(["audio/wav", "audio/mp3", "application/pdf", "text/csv"]),
    data=st.binary(max_size=16),
)
_call = st.builds(ToolCall, id=_text, name=_text, arguments=_text)


@st.composite
def _assistant(draw: st.DrawFn) -> Message:
    texts: list[Any] = draw(st.lists(_text_part, max_size=3))
    calls: list[Any] = draw(st.lists(_call, max_size=3))
    reasoning = draw(st.none() | _reasoning)
    if reasoning is not None:
        if texts:
            texts[0] = texts[0].model_copy(update={"reasoning": reasoning})
        elif calls:
            calls[0] = calls[0].model_copy(update={"reasoning": reasoning})
        else:
            texts = [TextPart(text="", reasoning=reasoning)]
    return Message(role=Role.AI, parts=[*texts, *calls])


_openai_messages = st.one_of(
    st.builds(Message, role=st.just(Role.SYSTEM), parts=st.lists(_text_part, max_size=3)),
    st.builds(
        Message, role=st.just(Role.HUMAN), parts=st.lists(_text_part | _image | _binary, max_size=3)
    ),
    _assistant(),
    st.builds(
        lambda result, extra: Message(role=Role.TOOL, parts=[result, *extra]),
        st.builds(
            ToolResult, tool_call_id=_text, name=st.text(min_size=1, max_size=8), content=_text
        ),
        st.lists(_text_part, max_size=2),
    ),
)


@given(st.lists(_openai_messages, max_size=6))
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    payload = openai.encode(messages)
    assert openai.decode(json.loads(json.dumps(payload))) == messages
