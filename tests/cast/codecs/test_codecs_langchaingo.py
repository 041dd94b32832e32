"""langchaingo codec (Go ``[]llms.MessageContent`` JSON): a PentAGI-style chain, the
Go marshaling rules, broken payloads and a Hypothesis round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import langchaingo
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

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codecs"


def load_fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def test_recorded_chain_is_a_valid_chain() -> None:
    # Its round trip is a law (tests/cast/codecs/test_codec_laws.py).
    parse_chain(langchaingo.decode(load_fixture("langchaingo_pentagi_chain.json")["payload"]))


def test_recorded_chain_decodes_to_the_model() -> None:
    messages = langchaingo.decode(load_fixture("langchaingo_pentagi_chain.json")["payload"])
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.HUMAN,
        Role.AI,
        Role.TOOL,
        Role.AI,
        Role.TOOL,
        Role.AI,
    ]
    _, image, binary = messages[1].parts
    assert image == ImagePart(url="https://example.com/screen.png", detail="low")
    assert binary == BinaryPart(mime_type="text/plain", data=b"nmap -sV 10.0.0.1")
    text, call = messages[2].parts
    # Go []byte signatures are base64 on the wire and raw bytes here
    assert text == TextPart(
        text="Starting with a port scan.",
        reasoning=Reasoning(content="A service scan first.", signature=b"EqQBCgIYAhIM"),
    )
    assert call == ToolCall(
        id="toolu_01XyZ", name="terminal", arguments='{"input":"nmap -sV 10.0.0.1"}'
    )
    (done,) = messages[4].parts
    assert isinstance(done, ToolCall)
    assert done.reasoning == Reasoning(signature=b"skip_thought_signature_validator")
    assert messages[5].parts == (ToolResult(tool_call_id="call_9", name="done", content="ok"),)


@pytest.mark.parametrize(
    ("message", "wire"),
    [
        pytest.param(Message.human("hi"), {"role": "human", "text": "hi"}, id="single-text"),
        pytest.param(Message.human(""), {"role": "human", "text": ""}, id="empty-text"),
        pytest.param(
            Message(role=Role.AI, parts=[TextPart(text="a", reasoning=Reasoning(content="r"))]),
            {"role": "ai", "parts": [{"type": "text", "text": "a", "reasoning": {"content": "r"}}]},
            id="text-with-reasoning-uses-parts",
        ),
        pytest.param(Message(role=Role.AI, parts=[]), {"role": "ai", "parts": []}, id="no-parts"),
        pytest.param(
            Message(role=Role.AI, parts=[TextPart(text="a", reasoning=Reasoning())]),
            {"role": "ai", "text": "a"},
            id="empty-reasoning-is-omitted",
        ),
    ],
)
def test_marshal_shape(message: Message, wire: dict[str, Any]) -> None:
    assert langchaingo.encode([message]) == [wire]


@pytest.mark.parametrize(
    ("wire", "parts"),
    [
        pytest.param(
            {"role": "human", "parts": None, "text": "x"},
            (TextPart(text="x"),),
            id="null-parts-text",
        ),
        pytest.param(
            {"role": "human", "parts": [], "text": "x"},
            (TextPart(text="x"),),
            id="empty-parts-text",
        ),
        pytest.param({"role": "ai"}, (), id="nothing"),
        pytest.param(
            {"role": "ai", "parts": [{"text": "untyped"}]},
            (TextPart(text="untyped"),),
            id="missing-type-is-text",
        ),
        pytest.param(
            {"role": "ai", "parts": [{"type": "text", "text": "t", "reasoning": {}}]},
            (TextPart(text="t"),),
            id="empty-reasoning-is-none",
        ),
    ],
)
def test_unmarshal_rules(wire: dict[str, Any], parts: tuple[Any, ...]) -> None:
    (message,) = langchaingo.decode([wire])
    assert message.parts == parts


def test_a_provider_block_is_a_codec_error_naming_the_part() -> None:
    # langchaingo has no opaque block: a kept Anthropic block must be ported first.
    block = ProviderPart(provider="anthropic", kind="tool_reference", data='{"type":"x"}')
    chain = [
        Message.human("find it"),
        Message.from_parts(Role.AI, (TextPart(text="looking"), block)),
    ]
    with pytest.raises(
        CodecError, match=r"messages\[1\]\.parts\[1\].*anthropic's 'tool_reference'"
    ):
        langchaingo.encode(chain)


def test_generic_and_function_roles() -> None:
    generic, function = langchaingo.decode(
        [
            {"role": "generic", "text": "from someone"},
            {
                "role": "function",
                "parts": [
                    {
                        "type": "tool_response",
                        "tool_response": {"tool_call_id": "c", "name": "f", "content": "r"},
                    }
                ],
            },
        ]
    )
    assert generic.role is Role.HUMAN
    assert function.role is Role.TOOL


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        pytest.param({"role": "human", "text": "x"}, "", id="not-a-list"),
        pytest.param([[]], "[0]", id="message-array"),
        pytest.param([{"role": "user", "text": "x"}], "[0].role", id="openai-role"),
        pytest.param([{"role": None}], "[0].role", id="null-role"),
        pytest.param([{"role": "ai", "parts": "x"}], "[0].parts", id="parts-string"),
        pytest.param([{"role": "ai", "text": 3}], "[0].text", id="text-number"),
        pytest.param(
            [{"role": "ai", "parts": [{"type": "audio"}]}], "[0].parts[0].type", id="unknown-type"
        ),
        pytest.param(
            [
                {
                    "role": "ai",
                    "parts": [{"type": "tool_call", "tool_call": {"id": "c", "type": "function"}}],
                }
            ],
            "[0].parts[0].tool_call.function",
            id="call-without-function",
        ),
        pytest.param(
            [
                {
                    "role": "ai",
                    "parts": [
                        {
                            "type": "tool_call",
                            "tool_call": {"id": "c", "function": {"name": "f", "arguments": {}}},
                        }
                    ],
                }
            ],
            "[0].parts[0].tool_call.function.arguments",
            id="arguments-object",
        ),
        pytest.param(
            [
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "tool_response",
                            "tool_response": {"tool_call_id": "c", "content": "r"},
                        }
                    ],
                }
            ],
            "[0].parts[0].tool_response.name",
            id="response-without-name",
        ),
        pytest.param(
            [
                {
                    "role": "human",
                    "parts": [{"type": "binary", "binary": {"mime_type": "a/b", "data": "!!"}}],
                }
            ],
            "[0].parts[0].binary.data",
            id="binary-bad-base64",
        ),
        pytest.param(
            [
                {
                    "role": "ai",
                    "parts": [
                        {"type": "text", "text": "t", "reasoning": {"signature": "not base64"}}
                    ],
                }
            ],
            "[0].parts[0].reasoning.signature",
            id="signature-bad-base64",
        ),
        pytest.param(
            [{"role": "human", "parts": [{"type": "image_url", "image_url": "https://x"}]}],
            "[0].parts[0].image_url",
            id="image-url-string",
        ),
    ],
)
def test_broken_payloads_raise_codec_error(payload: Any, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        langchaingo.decode(payload)
    assert caught.value.path == path


# -- Hypothesis round trip -------------------------------------------------------------

_text = st.text(max_size=10)
# ContentReasoning with nothing in it is dropped by the Go marshaler (IsEmpty).
_reasoning = st.builds(Reasoning, content=_text, signature=st.binary(max_size=8)).filter(
    lambda r: bool(r.content or r.signature)
)
_maybe_reasoning = st.none() | _reasoning
_part = st.one_of(
    st.builds(TextPart, text=_text, reasoning=_maybe_reasoning),
    st.builds(ImagePart, url=_text, detail=_text),
    st.builds(BinaryPart, mime_type=_text, data=st.binary(max_size=8)),
    st.builds(ToolCall, id=_text, name=_text, arguments=_text, reasoning=_maybe_reasoning),
    st.builds(ToolResult, tool_call_id=_text, name=_text, content=_text),
)
_message = st.builds(Message, role=st.sampled_from(list(Role)), parts=st.lists(_part, max_size=4))


@given(st.lists(_message, max_size=6))
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    payload = langchaingo.encode(messages)
    assert langchaingo.decode(json.loads(json.dumps(payload))) == messages
