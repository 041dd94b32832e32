"""Bedrock Converse codec: a documented payload, the tau-bench corpus ported to Bedrock,
broken payloads, normalizations and a Hypothesis round trip."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cast
from cast.codecs import bedrock, detect_format, get_codec
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


def test_a_bare_message_list_is_detected() -> None:
    # The round trip of the recorded payload is a law (tests/cast/codecs/test_codec_laws.py).
    payload = load_payload("bedrock_converse_tool_use.json")
    assert detect_format(payload["messages"]) == "bedrock"
    assert get_codec("bedrock").decode is bedrock.decode


def test_recorded_payload_mapping() -> None:
    messages = bedrock.decode(load_payload("bedrock_converse_tool_use.json"))
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.HUMAN,
        Role.AI,
        Role.TOOL,
        Role.HUMAN,
        Role.AI,
    ]
    text, call = messages[2].parts
    assert isinstance(text, TextPart)
    assert text.reasoning is not None
    assert text.reasoning.signature == b"ErcBCkgIAxABGAIiQMTm1uqdkPlR7JtYfFvA3n0Vw"
    assert call == ToolCall(
        id="tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", name="top_song", arguments='{"sign":"WZPZ"}'
    )
    (result,) = messages[3].parts
    assert isinstance(result, ToolResult)
    assert result.name == "top_song"
    question, image = messages[4].parts
    assert question == TextPart(text="And what does this cover look like?")
    assert isinstance(image, BinaryPart)
    assert image.mime_type == "image/png"
    assert image.data.startswith(b"\x89PNG")
    redacted, answer = messages[5].parts
    assert redacted == TextPart(
        text="",
        reasoning=Reasoning(
            signature=REDACTED_THINKING_PREFIX
            + b"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qyY"
        ),
    )
    assert isinstance(answer, TextPart)
    assert answer.reasoning is not None
    assert answer.reasoning.content == "A one-pixel image: nothing to describe."


def test_json_results_and_status_are_normalized() -> None:
    # the docs' own toolResult: a json block (read as its text) and an error status
    payload = {
        "messages": [
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "top_song", "input": {}}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "content": [{"json": {"song": "Elemental Hotel"}}],
                            "status": "error",
                        }
                    },
                    {"cachePoint": {"type": "default"}},
                ],
            },
            {"role": "assistant", "content": [{"text": "x"}]},
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "t1", "content": []}},
                    {"text": "later"},
                ],
            },
        ]
    }
    messages = bedrock.decode(payload)
    assert messages[1].parts == (
        ToolResult(
            tool_call_id="t1", name="top_song", content='{"song":"Elemental Hotel"}', is_error=True
        ),
    )
    assert messages[2].parts == (
        ProviderPart(provider="bedrock", kind="cachePoint", data='{"type":"default"}'),
    )
    encoded = bedrock.encode(messages)["messages"]
    assert encoded[1] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "t1",
                    "content": [{"text": '{"song":"Elemental Hotel"}'}],
                    "status": "error",
                }
            },
            {"cachePoint": {"type": "default"}},
        ],
    }
    assert encoded[3]["content"][0] == {
        "toolResult": {"toolUseId": "t1", "content": [{"text": ""}]}
    }


def test_images_by_url_and_other_binaries_cannot_be_sent() -> None:
    inline = Message(role=Role.HUMAN, parts=[ImagePart(url="data:image/gif;base64,R0lGOA==")])
    block = bedrock.encode([inline])["messages"][0]["content"][0]
    assert block == {"image": {"format": "gif", "source": {"bytes": "R0lGOA=="}}}
    for part in (ImagePart(url="https://x/y.png"), BinaryPart(mime_type="audio/wav", data=b"")):
        with pytest.raises(CodecError) as caught:
            bedrock.encode([Message(role=Role.HUMAN, parts=[part])])
        assert caught.value.path == "messages[0].parts[0]"


# -- the tau-bench corpus ----------------------------------------------------------------


@pytest.mark.skipif(not TAUBENCH, reason="shared corpus not found next to the repository")
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in TAUBENCH])
def test_taubench_ported_to_bedrock_round_trips(path: Path) -> None:
    ported = cast.port(load_openai_chain(path), "bedrock")
    payload = json.loads(json.dumps(bedrock.encode(ported)))
    assert detect_format(payload) == "bedrock"
    messages = bedrock.decode(payload)
    assert bedrock.encode(messages) == payload
    assert parse_chain(messages).to_messages()
    calls = [(c.id, c.name, json.loads(c.arguments)) for m in ported for c in m.tool_calls]
    # arguments travel as objects: same JSON, compact text
    assert [(c.id, c.name, json.loads(c.arguments)) for m in messages for c in m.tool_calls] == (
        calls
    )
    assert [r for m in messages for r in m.tool_results] == [
        r for m in ported for r in m.tool_results
    ]
    assert calls, "the corpus chains call tools"


# -- broken payloads ---------------------------------------------------------------------


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"messages": [{"role": "assistant", "content": list(blocks)}]}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(blocks)}]}


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        pytest.param(None, "", id="null-body"),
        pytest.param({"system": []}, "messages", id="no-messages"),
        pytest.param({"messages": {}}, "messages", id="messages-object"),
        pytest.param({"messages": [], "system": "x"}, "system", id="system-string"),
        pytest.param({"messages": [], "system": [{"image": {}}]}, "system[0].text", id="sys-img"),
        pytest.param({"messages": [{"role": "user"}]}, "messages[0].content", id="no-content"),
        pytest.param(
            {"messages": [{"role": "user", "content": "hi"}]},
            "messages[0].content",
            id="string-content",
        ),
        pytest.param(
            {"messages": [{"role": "system", "content": []}]}, "messages[0].role", id="role"
        ),
        pytest.param(
            _assistant({"toolUse": {"toolUseId": "t", "name": "f", "input": "{}"}}),
            "messages[0].content[0].toolUse.input",
            id="tool-use-input-string",
        ),
        pytest.param(
            _assistant({"toolUse": {"name": "f", "input": {}}}),
            "messages[0].content[0].toolUse.toolUseId",
            id="tool-use-without-id",
        ),
        pytest.param(
            _assistant({"reasoningContent": {"reasoningText": {"signature": "s"}}}),
            "messages[0].content[0].reasoningContent.reasoningText.text",
            id="reasoning-without-text",
        ),
        pytest.param(
            _assistant({"reasoningContent": {"redactedContent": "not base64!"}}),
            "messages[0].content[0].reasoningContent.redactedContent",
            id="redacted-not-base64",
        ),
        pytest.param(
            _assistant({"type": "tool_use", "id": "t", "name": "f", "input": {}}),
            "messages[0].content[0]",
            id="anthropic-block",
        ),
        pytest.param(
            _user({"text": "x"}, {"toolResult": {"content": [{"text": "r"}]}}),
            "messages[0].content[1].toolResult.toolUseId",
            id="result-without-id",
        ),
        pytest.param(
            _user({"toolResult": {"toolUseId": "t", "content": [{"video": {}}]}}),
            "messages[0].content[0].toolResult.content[0].video.format",
            id="result-block-unknown",
        ),
        pytest.param(
            _user({"toolResult": {"toolUseId": "t", "content": "r"}}),
            "messages[0].content[0].toolResult.content",
            id="result-content-string",
        ),
        pytest.param(
            _user({"image": {"format": "png", "source": {"bytes": "not base64!"}}}),
            "messages[0].content[0].image.source.bytes",
            id="image-bad-base64",
        ),
        pytest.param(
            _user({"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}),
            "messages[0].content[0]",
            id="tool-use-in-user",
        ),
        pytest.param(_user("text"), "messages[0].content[0]", id="block-not-object"),
    ],
)
def test_broken_payloads_raise_codec_error(payload: Any, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        bedrock.decode(payload)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("messages", "path"),
    [
        pytest.param(
            [Message.human("hi"), Message.system("late")], "messages[1]", id="late-system"
        ),
        pytest.param(
            [Message.ai("", ToolCall(id="t", name="f", arguments="[1, 2]"))],
            "messages[0].parts[0].arguments",
            id="arguments-not-object",
        ),
        pytest.param(
            [Message(role=Role.TOOL, parts=[TextPart(text="x")])],
            "messages[0].parts[0]",
            id="tool-without-result",
        ),
        pytest.param(
            [Message(role=Role.HUMAN, parts=[ToolCall(id="t", name="f")])],
            "messages[0].parts[0]",
            id="call-in-human",
        ),
    ],
)
def test_unencodable_messages_raise_codec_error(messages: list[Message], path: str) -> None:
    with pytest.raises(CodecError) as caught:
        bedrock.encode(messages)
    assert caught.value.path == path


# -- Hypothesis round trip ---------------------------------------------------------------

_text = st.text(max_size=10)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_arguments = st.dictionaries(_text, _json_value, max_size=3).map(dumps_compact)
_signature = st.one_of(
    _text.map(str.encode),
    st.binary(max_size=8).map(lambda b: REDACTED_THINKING_PREFIX + base64.b64encode(b)),
)
_reasoning = st.builds(Reasoning, content=_text, signature=_signature).map(
    # a redacted block has no text: content is empty whenever the prefix is there
    lambda r: (
        r.model_copy(update={"content": ""})
        if r.signature.startswith(REDACTED_THINKING_PREFIX)
        else r
    )
)
_image = st.builds(
    BinaryPart,
    mime_type=st.sampled_from(["image/png", "image/jpeg", "image/webp"]),
    data=st.binary(max_size=12),
)
_plain_text = st.builds(TextPart, text=_text)
_ai_part = st.one_of(
    st.builds(TextPart, text=_text, reasoning=st.none() | _reasoning),
    st.builds(
        ToolCall, id=_text, name=_text, arguments=_arguments, reasoning=st.none() | _reasoning
    ),
    _image,
)
bedrock_ai = st.lists(_ai_part, max_size=4).map(
    lambda parts: Message(role=Role.AI, parts=canonical_ai(parts))
)
bedrock_human = st.builds(
    Message, role=st.just(Role.HUMAN), parts=st.lists(_plain_text | _image, max_size=3)
)
bedrock_tool = st.builds(
    lambda result, extra: Message(role=Role.TOOL, parts=[result, *extra]),
    st.builds(ToolResult, tool_call_id=_text, name=st.just(""), content=_text),
    st.lists(_plain_text | _image, max_size=2),
)
bedrock_chains = st.tuples(
    st.none()
    | st.builds(Message, role=st.just(Role.SYSTEM), parts=st.lists(_plain_text, max_size=2)),
    st.lists(bedrock_ai | bedrock_human | bedrock_tool, max_size=7),
).map(lambda pair: with_call_names(([pair[0]] if pair[0] else []) + pair[1]))


@given(bedrock_chains)
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    payload = bedrock.encode(messages)
    assert bedrock.decode(json.loads(json.dumps(payload))) == messages


def test_documents_videos_and_s3_sources() -> None:
    """Document and video blocks with bytes are binary parts (a document keeps its
    name); an s3Location source is kept whole (shapes from recorded Converse requests)."""
    pdf = {"document": {"format": "pdf", "name": "report", "source": {"bytes": "JVBERi0xLjQK"}}}
    video = {"video": {"format": "mp4", "source": {"bytes": "AAAAGGZ0eXA="}}}
    s3 = {"image": {"format": "png", "source": {"s3Location": {"uri": "s3://b/k.png"}}}}
    payload = {"messages": [{"role": "user", "content": [{"text": "see"}, pdf, video, s3]}]}
    (message,) = bedrock.decode(payload)
    _, doc, clip, kept = message.parts
    assert doc == BinaryPart(mime_type="application/pdf", data=b"%PDF-1.4\n", filename="report")
    assert isinstance(clip, BinaryPart)
    assert clip.mime_type == "video/mp4"
    assert isinstance(kept, ProviderPart)
    assert kept.kind == "image"
    assert bedrock.encode([message]) == payload
