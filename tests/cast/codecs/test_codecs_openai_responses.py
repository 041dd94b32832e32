"""OpenAI Responses codec: a documented payload, the tau-bench corpus ported to
Responses, broken payloads, normalizations and a Hypothesis round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cast
from cast.codecs import detect_format, get_codec, openai_responses
from cast.codecs.openai_responses import decode_signature, encode_signature
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
from cast.parse import parse_chain
from corpus_openai import load_openai_chain
from tests.cast.codecs.test_codecs_anthropic import canonical_ai, with_call_names
from tests.conftest import TAUBENCH as TAUBENCH_DIR
from tests.conftest import corpus_files

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codecs"
TAUBENCH = corpus_files(TAUBENCH_DIR)


def load_payload(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    payload: dict[str, Any] = data["payload"]
    return payload


# -- recorded payload --------------------------------------------------------------------


def test_a_bare_input_list_is_detected() -> None:
    # The round trip of the recorded payload is a law (tests/cast/codecs/test_codec_laws.py).
    payload = load_payload("openai_responses_function_calling.json")
    assert detect_format(payload["input"]) == "openai_responses"
    assert get_codec("openai-responses").decode is openai_responses.decode


def test_recorded_payload_mapping() -> None:
    messages = openai_responses.decode(load_payload("openai_responses_function_calling.json"))
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.HUMAN,
        Role.AI,
        Role.TOOL,
        Role.TOOL,
        Role.AI,
        Role.HUMAN,
    ]
    _, image = messages[1].parts
    assert isinstance(image, ImagePart)
    assert image.detail == "low"
    first, second = messages[2].parts  # two function_call items: one AI message
    assert isinstance(first, ToolCall)
    assert first.id == "call_12345xyz"
    assert first.arguments == '{"location":"Paris, France"}'
    assert first.reasoning is not None
    assert first.reasoning.content.startswith("**Checking the weather**")
    assert decode_signature(first.reasoning.signature) == (
        "rs_68af4030baa48193b0b43b4c2a176a1a02d7ea5dd0fc13fb",
        "gAAAAABor0A1Kx3X9pQm7sY2z1HjJfWqkQ==",
    )
    assert isinstance(second, ToolCall)
    assert second.reasoning is None
    assert messages[4].parts == (
        ToolResult(tool_call_id="call_67890abc", name="get_weather", content='{"temperature": 18}'),
    )
    (answer,) = messages[5].parts
    assert isinstance(answer, TextPart)
    assert answer.reasoning is not None
    assert answer.reasoning.content == ""


def test_signature_holds_item_id_and_encrypted_content() -> None:
    assert encode_signature("rs_1", "enc") == b"rs_1\nenc"
    assert encode_signature("rs_1", None) == encode_signature("rs_1", "") == b"rs_1\n"
    assert encode_signature("", None) == b""
    for signature in (b"rs_1\nenc", b"rs_1\n", b"\nenc", b"", b"a\nb\nc"):
        assert encode_signature(*decode_signature(signature)) == signature
    assert decode_signature(b"rs_1") == ("rs_1", None)  # an id alone, as older versions wrote it


def test_normalizations() -> None:
    payload = {
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "one", "annotations": []}],
            },
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "two"}]},
            {
                "type": "function_call",
                "id": "fc_1",
                "status": "completed",
                "call_id": "c1",
                "name": "f",
                "arguments": "{}",
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [
                    {"type": "summary_text", "text": "a"},
                    {"type": "summary_text", "text": "b"},
                ],
            },
            {"type": "function_call_output", "id": "fco_1", "call_id": "c1", "output": "r"},
        ],
    }
    messages = openai_responses.decode(payload)
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.SYSTEM,
        Role.HUMAN,
        Role.AI,
        Role.TOOL,
    ]
    assert messages[3].parts[-1] == TextPart(
        text="", reasoning=Reasoning(content="a\n\nb", signature=b"rs_1\n")
    )
    assert openai_responses.encode(messages) == {
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "dev"},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "one"},
                    {"type": "output_text", "text": "two"},
                ],
            },
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "a\n\nb"}],
            },
            {"type": "function_call_output", "call_id": "c1", "output": "r"},
        ]
    }
    assert openai_responses.decode({"input": "just a prompt"}) == [Message.human("just a prompt")]


def test_binary_images_go_as_data_urls() -> None:
    message = Message(role=Role.HUMAN, parts=[BinaryPart(mime_type="image/gif", data=b"GIF8")])
    (item,) = openai_responses.encode([message])["input"]
    assert item["content"] == [
        {"type": "input_image", "image_url": "data:image/gif;base64,R0lGOA=="}
    ]


# -- the tau-bench corpus ----------------------------------------------------------------


@pytest.mark.skipif(not TAUBENCH, reason="shared corpus not found next to the repository")
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in TAUBENCH])
def test_taubench_ported_to_responses_round_trips(path: Path) -> None:
    ported = cast.port(load_openai_chain(path), "openai-responses")
    payload = json.loads(json.dumps(openai_responses.encode(ported)))
    assert detect_format(payload) == "openai_responses"
    messages = openai_responses.decode(payload)
    assert openai_responses.encode(messages) == payload
    assert parse_chain(messages).to_messages()
    calls = [c for m in ported for c in m.tool_calls]
    assert [c for m in messages for c in m.tool_calls] == calls
    assert [r for m in messages for r in m.tool_results] == [
        r for m in ported for r in m.tool_results
    ]
    assert calls, "the corpus chains call tools"


# -- broken payloads ---------------------------------------------------------------------

_CALL = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        pytest.param(None, "", id="null-body"),
        pytest.param({"instructions": "x"}, "input", id="no-input"),
        pytest.param({"input": {}}, "input", id="input-object"),
        pytest.param({"input": [], "instructions": []}, "instructions", id="instructions-list"),
        pytest.param({"input": ["x"]}, "input[0]", id="item-not-object"),
        pytest.param({"input": [{"role": "user"}]}, "input[0].content", id="no-content"),
        pytest.param({"input": [{"role": "tool", "content": "x"}]}, "input[0].role", id="role"),
        pytest.param({"input": [{"type": 3}]}, "input[0].type", id="item-type"),
        pytest.param(
            {"input": [{**_CALL, "arguments": {}}]}, "input[0].arguments", id="arguments-object"
        ),
        pytest.param({"input": [{**_CALL, "call_id": 1}]}, "input[0].call_id", id="call-id"),
        pytest.param(
            {"input": [{"type": "function_call_output", "call_id": "c"}]},
            "input[0].output",
            id="no-output",
        ),
        pytest.param(
            {"input": [{"type": "function_call_output", "call_id": "c", "output": [{}]}]},
            "input[0].output[0].type",
            id="output-part",
        ),
        pytest.param(
            {"input": [{"type": "reasoning", "id": "rs", "summary": "s"}]},
            "input[0].summary",
            id="summary-string",
        ),
        pytest.param(
            {"input": [{"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": 1}]},
            "input[0].encrypted_content",
            id="encrypted-number",
        ),
        pytest.param(
            {"input": [{"type": "reasoning", "id": "a\nb", "summary": []}]},
            "input[0].id",
            id="id-newline",
        ),
        pytest.param(
            {"input": [{"role": "system", "content": [{"type": "input_image"}]}]},
            "input[0].content[0].type",
            id="system-image",
        ),
        pytest.param(
            {"input": [{"role": "assistant", "content": [{"type": "input_image"}]}]},
            "input[0].content[0].type",
            id="assistant-image",
        ),
        pytest.param(
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]},
            "input[0].content[0].text",
            id="text-number",
        ),
    ],
)
def test_broken_payloads_raise_codec_error(payload: Any, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        openai_responses.decode(payload)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("messages", "path"),
    [
        pytest.param(
            [Message(role=Role.AI, parts=[ImagePart(url="https://x")])],
            "messages[0].parts[0]",
            id="image-in-ai",
        ),
        pytest.param(
            [Message(role=Role.SYSTEM, parts=[ImagePart(url="https://x")])],
            "messages[0].parts[0]",
            id="image-in-system",
        ),
        pytest.param(
            [Message(role=Role.HUMAN, parts=[BinaryPart(mime_type="audio/wav", data=b"")])],
            "messages[0].parts[0]",
            id="audio",
        ),
        pytest.param(
            [Message(role=Role.TOOL, parts=[TextPart(text="x")])],
            "messages[0].parts[0]",
            id="tool-without-result",
        ),
    ],
)
def test_unencodable_messages_raise_codec_error(messages: list[Message], path: str) -> None:
    with pytest.raises(CodecError) as caught:
        openai_responses.encode(messages)
    assert caught.value.path == path


# -- Hypothesis round trip ---------------------------------------------------------------

_text = st.text(max_size=10)
# Signatures as decode writes them (an id alone or "id\n" both read back as "id\n").
_signature = _text.map(lambda text: encode_signature(*decode_signature(text.encode())))
_reasoning = st.builds(Reasoning, content=_text, signature=_signature)
_plain_text = st.builds(TextPart, text=_text)
_image = st.builds(ImagePart, url=_text, detail=st.sampled_from(["", "low", "high"]))
_ai_part = st.one_of(
    st.builds(TextPart, text=_text, reasoning=st.none() | _reasoning),
    st.builds(ToolCall, id=_text, name=_text, arguments=_text, reasoning=st.none() | _reasoning),
)
responses_ai = st.builds(Message, role=st.just(Role.AI), parts=st.lists(_ai_part, max_size=4))
responses_human = st.builds(
    Message, role=st.just(Role.HUMAN), parts=st.lists(_plain_text | _image, max_size=3)
)
responses_system = st.builds(
    Message, role=st.just(Role.SYSTEM), parts=st.lists(_plain_text, max_size=2)
)
responses_tool = st.builds(
    lambda result, extra: Message(role=Role.TOOL, parts=[result, *extra]),
    st.builds(ToolResult, tool_call_id=_text, name=st.just(""), content=_text),
    st.lists(_plain_text, max_size=2),
)


def canonical(messages: list[Message]) -> list[Message]:
    """What decode reads back: consecutive AI messages are one run of items, so they
    merge; a reasoning-only part attaches to the part after it."""
    out: list[Message] = []
    for message in messages:
        if message.role is Role.AI and out and out[-1].role is Role.AI:
            out[-1] = Message(role=Role.AI, parts=[*out[-1].parts, *message.parts])
        else:
            out.append(message)
    return with_call_names(
        [
            Message(role=Role.AI, parts=canonical_ai(list(m.parts))) if m.role is Role.AI else m
            for m in out
        ]
    )


responses_chains = st.lists(
    responses_ai | responses_human | responses_system | responses_tool, max_size=7
).map(canonical)


@given(responses_chains)
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    payload = openai_responses.encode(messages)
    assert openai_responses.decode(json.loads(json.dumps(payload))) == messages


def test_recorded_shapes_hosted_items_and_media_outputs() -> None:
    """Hosted tool items kept whole in the AI message, instruction items as their own
    message, a ``function_call_output`` list with an image and a file, reasoning text
    kept whole (shapes of recorded Responses requests)."""
    search = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "weather"},
    }
    thought = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "call the tool"}],
    }
    tools = {"type": "additional_tools", "role": "developer", "tools": []}
    pdf = {
        "type": "input_file",
        "file_data": "data:application/pdf;base64,JVBERi0=",
        "filename": "a.pdf",
    }
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="}
    payload = {
        "input": [
            {"role": "user", "content": "hi"},
            tools,
            search,
            thought,
            {"type": "function_call", "call_id": "c1", "name": "get_file", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [{"type": "input_text", "text": "two files"}, image, pdf],
            },
        ]
    }
    messages = openai_responses.decode(payload)
    assert [m.role.value for m in messages] == ["human", "system", "ai", "tool"]
    assert [p.kind for p in messages[2].parts if isinstance(p, ProviderPart)] == [
        "web_search_call",
        "reasoning",
    ]
    result, png, doc = messages[3].parts
    assert isinstance(result, ToolResult)
    assert result.content == "two files"
    assert isinstance(png, ImagePart)
    assert doc == BinaryPart(mime_type="application/pdf", data=b"%PDF-", filename="a.pdf")
    assert openai_responses.encode(messages) == payload
