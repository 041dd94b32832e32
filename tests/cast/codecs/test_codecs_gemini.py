"""Gemini generateContent codec: documented payloads, id synthesis and pairing,
thought parts and signatures, broken payloads and a Hypothesis round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import detect_format, gemini
from cast.codecs._common import dumps_compact
from cast.constants import FAKE_GEMINI_SIGNATURE
from cast.errors import CodecError
from cast.ids import IdTemplate
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


# -- recorded payloads -----------------------------------------------------------------


def test_a_bare_contents_list_is_detected() -> None:
    # The round trips of the recorded payloads are laws (tests/cast/codecs/test_codec_laws.py).
    payload = load_fixture("gemini_function_calling.json")["payload"]
    assert detect_format(payload["contents"]) == "gemini"


def test_missing_ids_are_synthesized_and_paired_in_order() -> None:
    messages = gemini.decode(load_fixture("gemini_function_calling.json")["payload"])
    template = IdTemplate("call_{r:24:x}")
    calls = [c for m in messages for c in m.tool_calls]
    results = [r for m in messages for r in m.tool_results]
    assert len(calls) == len(results) == 3
    assert all(template.matches(c.id) for c in calls)
    assert len({c.id for c in calls}) == 3
    # each response answers the oldest unanswered call of the same name
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert [r.content for r in results] == ['{"temperature":15,"unit":"C"}', "18 C", "12 C"]
    parse_chain(messages)  # a valid chain, strictly


def test_id_template_option() -> None:
    payload = load_fixture("gemini_function_calling.json")["payload"]
    messages = gemini.decode(payload, id_template="toolu_{r:8:h}")
    assert all(IdTemplate("toolu_{r:8:h}").matches(c.id) for m in messages for c in m.tool_calls)


def test_ids_on_the_wire_are_kept() -> None:
    messages = gemini.decode(load_fixture("gemini3_thought_signatures.json")["payload"])
    assert [c.id for m in messages for c in m.tool_calls] == [
        "call_4162774",
        "call_5518302",
        "call_5518303",
    ]
    assert [r.tool_call_id for m in messages for r in m.tool_results] == [
        "call_4162774",
        "call_5518302",
        "call_5518303",
    ]


def test_thoughts_and_signatures() -> None:
    messages = gemini.decode(load_fixture("gemini3_thought_signatures.json")["payload"])
    (call,) = messages[1].parts
    assert isinstance(call, ToolCall)
    assert call.reasoning == Reasoning(
        content="**Checking the flight**\nI should look up AA100 first.",
        signature=b"PFNpZ25hdHVyZSBBPg==",  # the wire string, as UTF-8
    )
    first, second = messages[3].parts
    assert isinstance(first, ToolCall)
    assert first.reasoning == Reasoning(signature=b"PFNpZ25hdHVyZSBCPg==")
    assert isinstance(second, ToolCall)
    assert second.reasoning is None
    _, closing = messages[6].parts
    assert closing == TextPart(text="", reasoning=Reasoning(signature=b"PFNpZ25hdHVyZSBDPg=="))
    _, png, pdf = messages[-1].parts
    assert isinstance(png, BinaryPart)
    assert png.mime_type == "image/png"
    assert pdf == ImagePart(
        url="gs://cloud-samples-data/generative-ai/pdf/2403.05530.pdf", mime_type="application/pdf"
    )


def test_fake_signature_goes_out_as_documented() -> None:
    call = ToolCall(
        id="c1",
        name="f",
        reasoning=Reasoning(signature=FAKE_GEMINI_SIGNATURE.encode()),
    )
    part = gemini.encode([Message.ai("", call)])["contents"][0]["parts"][0]
    assert part["thoughtSignature"] == "skip_thought_signature_validator"


def test_vertex_encoding_omits_ids() -> None:
    call = ToolCall(id="c1", name="f", arguments='{"x":1}')
    chain = [Message.human("go"), Message.ai("", call), Message.tool("c1", "f", "done")]
    payload = gemini.encode(chain, include_ids=False)
    assert payload["contents"][1]["parts"] == [{"functionCall": {"name": "f", "args": {"x": 1}}}]
    assert payload["contents"][2]["parts"] == [
        {"functionResponse": {"name": "f", "response": {"result": "done"}}}
    ]
    back = gemini.decode(payload)
    (new_call,) = back[1].tool_calls
    assert back[2].tool_results[0].tool_call_id == new_call.id


@pytest.mark.parametrize(
    ("content", "response"),
    [
        pytest.param("plain text", {"result": "plain text"}, id="text"),
        pytest.param('{"temp":15}', {"temp": 15}, id="canonical-object"),
        pytest.param('{"temp": 15}', {"result": '{"temp": 15}'}, id="non-canonical-json"),
        pytest.param('{"result":"x"}', {"result": '{"result":"x"}'}, id="result-shaped-json"),
        pytest.param("[1,2]", {"result": "[1,2]"}, id="json-array"),
        pytest.param('{"n":NaN}', {"result": '{"n":NaN}'}, id="nan-is-not-json"),
        pytest.param("", {"result": ""}, id="empty"),
    ],
)
def test_response_mapping_is_bijective(content: str, response: dict[str, Any]) -> None:
    message = Message.tool("c", "f", content)
    wire = gemini.encode([message])["contents"][0]["parts"][0]["functionResponse"]
    assert wire["response"] == response
    assert gemini.decode([{"role": "user", "parts": [{"functionResponse": wire}]}]) == [message]


def test_snake_case_is_read() -> None:
    payload = {
        "system_instruction": {"parts": [{"text": "s"}]},
        "contents": [
            {
                "role": "user",
                "parts": [{"inline_data": {"mime_type": "text/plain", "data": "aGk="}}],
            },
            {
                "role": "model",
                "parts": [
                    {
                        "function_call": {"id": "a", "name": "f", "args": {}},
                        "thought_signature": "c2ln",
                    }
                ],
            },
            {
                "role": "user",
                "parts": [{"function_response": {"id": "a", "name": "f", "response": {}}}],
            },
        ],
    }
    messages = gemini.decode(payload)
    assert messages[1].parts == (BinaryPart(mime_type="text/plain", data=b"hi"),)
    assert messages[2].parts == (
        ToolCall(id="a", name="f", arguments="{}", reasoning=Reasoning(signature=b"c2ln")),
    )
    assert messages[3].parts == (ToolResult(tool_call_id="a", name="f", content="{}"),)


def test_tool_text_parts_join_the_response() -> None:
    message = Message(
        role=Role.TOOL,
        parts=[ToolResult(tool_call_id="c", name="f", content="a"), TextPart(text="b")],
    )
    wire = gemini.encode([message])["contents"][0]["parts"]
    assert wire == [{"functionResponse": {"name": "f", "response": {"result": "a\nb"}, "id": "c"}}]


# -- broken payloads -------------------------------------------------------------------


def _model(*parts: Any) -> dict[str, Any]:
    return {"contents": [{"role": "model", "parts": list(parts)}]}


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        pytest.param(3, "", id="number"),
        pytest.param({"generationConfig": {}}, "contents", id="no-contents"),
        pytest.param({"contents": "x"}, "contents", id="contents-string"),
        pytest.param({"contents": [None]}, "contents[0]", id="content-null"),
        pytest.param(
            {"contents": [{"role": "system", "parts": []}]}, "contents[0].role", id="role-system"
        ),
        pytest.param(
            {"contents": [{"role": "user", "parts": {}}]}, "contents[0].parts", id="parts-object"
        ),
        pytest.param(
            {"systemInstruction": "be nice", "contents": []},
            "systemInstruction",
            id="system-string",
        ),
        pytest.param(
            {"systemInstruction": {"parts": [{"inlineData": {}}]}, "contents": []},
            "systemInstruction.parts[0]",
            id="system-not-text",
        ),
        pytest.param(
            _model({"functionCall": {"name": "f", "args": [1]}}),
            "contents[0].parts[0].functionCall.args",
            id="args-array",
        ),
        pytest.param(
            _model({"text": "t"}, {"functionCall": {"args": {}}}),
            "contents[0].parts[1].functionCall.name",
            id="call-without-name",
        ),
        pytest.param(
            _model({"functionCall": {"name": "f", "id": 5}}),
            "contents[0].parts[0].functionCall.id",
            id="call-id-number",
        ),
        pytest.param(
            _model({"text": "t", "thoughtSignature": 12}),
            "contents[0].parts[0].thoughtSignature",
            id="signature-number",
        ),
        pytest.param(
            _model({"functionResponse": {"name": "f", "response": {}}}),
            "contents[0].parts[0].functionResponse",
            id="response-in-model",
        ),
        pytest.param(
            {
                "contents": [
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": "ok"}}],
                    }
                ]
            },
            "contents[0].parts[0].functionResponse.response",
            id="response-not-object",
        ),
        pytest.param(
            {
                "contents": [
                    {"role": "user", "parts": [{"inlineData": {"mimeType": "a/b", "data": "@@"}}]}
                ]
            },
            "contents[0].parts[0].inlineData.data",
            id="inline-bad-base64",
        ),
        pytest.param(
            _model({"text": 5, "thought": True}),
            "contents[0].parts[0].text",
            id="thought-text-number",
        ),
    ],
)
def test_broken_payloads_raise_codec_error(payload: Any, path: str) -> None:
    with pytest.raises(CodecError) as caught:
        gemini.decode(payload)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("messages", "path"),
    [
        pytest.param([Message.human("a"), Message.system("b")], "messages[1]", id="late-system"),
        pytest.param(
            [Message(role=Role.SYSTEM, parts=[ImagePart(url="u")])],
            "messages[0].parts[0]",
            id="system-image",
        ),
        pytest.param(
            [Message.ai("", ToolCall(id="c", name="f", arguments="1"))],
            "messages[0].parts[0].arguments",
            id="arguments-not-object",
        ),
        pytest.param(
            [Message(role=Role.HUMAN, parts=[ToolCall(id="c", name="f")])],
            "messages[0].parts[0]",
            id="call-in-human",
        ),
    ],
)
def test_unencodable_messages_raise_codec_error(messages: list[Message], path: str) -> None:
    with pytest.raises(CodecError) as caught:
        gemini.encode(messages)
    assert caught.value.path == path


# -- Hypothesis round trip -------------------------------------------------------------

_text = st.text(max_size=10)
_nonempty = st.text(min_size=1, max_size=10)
_arguments = st.dictionaries(
    _text, st.none() | st.booleans() | st.integers() | _text, max_size=3
).map(dumps_compact)
_signature = _nonempty.map(str.encode)
# Reasoning that survives the wire: a thought text, a signature, or both.
_reasoning = st.one_of(
    st.builds(Reasoning, content=_nonempty),
    st.builds(Reasoning, signature=_signature),
    st.builds(Reasoning, content=_nonempty, signature=_signature),
)
# A URL without a media type to guess from its ending: one with one (``x.png``) gains
# ``mimeType`` on the wire by design (tested below), so it does not round-trip bare.
_url = _text.filter(
    lambda u: (
        not u.startswith("data:") and gemini._MEDIA_TYPES.guess_type(u, strict=False)[0] is None
    )
)
_media = st.builds(ImagePart, url=_url) | st.builds(
    BinaryPart, mime_type=st.sampled_from(["image/png", "audio/mp3"]), data=st.binary(max_size=8)
)
_plain_text = st.builds(TextPart, text=_text)


def _opens_attachable(part: Any) -> bool:
    """Whether ``part``'s first wire part is one a bare thought before it attaches to."""
    reasoning = part.reasoning if isinstance(part, TextPart | ToolCall) else None
    if reasoning is not None and reasoning.content:
        return False  # it opens with its own thought part
    if isinstance(part, ToolCall):
        return True
    return isinstance(part, TextPart) and part.text != ""


def canonical_model(parts: list[Any]) -> list[Any]:
    """A thought-only part without signature right before an attachable part is read
    as that part's reasoning: merge them the way the decoder does."""
    out: list[Any] = []
    for part in parts:
        previous = out[-1] if out else None
        if (
            isinstance(previous, TextPart)
            and previous.text == ""
            and previous.reasoning is not None
            and previous.reasoning.content
            and not previous.reasoning.signature
            and _opens_attachable(part)
        ):
            signature = part.reasoning.signature if part.reasoning is not None else b""
            merged = Reasoning(content=previous.reasoning.content, signature=signature)
            out[-1] = part.model_copy(update={"reasoning": merged})
        else:
            out.append(part)
    return out


_model_part = st.one_of(
    st.builds(TextPart, text=_text, reasoning=st.none() | _reasoning),
    st.builds(
        ToolCall, id=_text, name=_text, arguments=_arguments, reasoning=st.none() | _reasoning
    ),
    _media,
)

gemini_chains = st.tuples(
    st.none()
    | st.builds(Message, role=st.just(Role.SYSTEM), parts=st.lists(_plain_text, max_size=2)),
    st.lists(
        st.one_of(
            st.lists(_model_part, max_size=4).map(
                lambda parts: Message(role=Role.AI, parts=canonical_model(parts))
            ),
            st.builds(
                Message, role=st.just(Role.HUMAN), parts=st.lists(_plain_text | _media, max_size=3)
            ),
            st.builds(
                lambda r: Message(role=Role.TOOL, parts=[r]),
                st.builds(ToolResult, tool_call_id=_text, name=_text, content=_text),
            ),
        ),
        max_size=7,
    ),
).map(lambda pair: ([pair[0]] if pair[0] else []) + pair[1])


@given(gemini_chains)
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    payload = gemini.encode(messages)
    assert gemini.decode(json.loads(json.dumps(payload))) == messages


def test_recorded_shapes_url_safe_base64_function_response_parts_and_kept_parts() -> None:
    """URL-safe base64 without padding, a Gemini 3 functionResponse with ``parts``, a
    ``fileData`` mimeType and an ``executableCode`` part (shapes of recorded requests)."""
    payload = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {
                "role": "model",
                "parts": [
                    {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
                    {"functionCall": {"id": "c1", "name": "get_file", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "get_file",
                            "response": {"return_value": "File attached"},
                            "parts": [
                                {
                                    "inlineData": {
                                        "mimeType": "application/pdf",
                                        "data": "JVBERi0-_w",
                                    }
                                }
                            ],
                        }
                    }
                ],
            },
            {
                "role": "user",
                "parts": [{"fileData": {"fileUri": "https://youtu.be/x", "mimeType": "video/mp4"}}],
            },
        ]
    }
    messages = gemini.decode(payload)
    kept = messages[1].parts[0]
    assert isinstance(kept, ProviderPart)
    assert kept.kind == "executableCode"
    pdf = messages[2].parts[1]
    assert pdf == BinaryPart(mime_type="application/pdf", data=b"%PDF->\xff")
    assert messages[3].parts == (ImagePart(url="https://youtu.be/x", mime_type="video/mp4"),)
    encoded = gemini.encode(messages)
    # canonical form: standard padded base64
    response = encoded["contents"][2]["parts"][0]["functionResponse"]
    assert response["parts"] == [
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0+/w=="}}
    ]
    assert gemini.decode(encoded) == messages


def test_a_file_url_gets_its_media_type_from_pythons_table_not_the_machines() -> None:
    """Gemini's ``fileData`` wants a ``mimeType``: guessed from the URL's ending with
    Python's own table, so ``0.A`` (``text/vnd.a`` in some machines' /etc/mime.types)
    encodes alike everywhere."""
    chain = [
        Message(role=Role.HUMAN, parts=[ImagePart(url="https://x/cat.png"), ImagePart(url="0.A")])
    ]
    parts = gemini.encode(chain)["contents"][0]["parts"]
    assert parts[0] == {"fileData": {"fileUri": "https://x/cat.png", "mimeType": "image/png"}}
    assert parts[1] == {"fileData": {"fileUri": "0.A", "mimeType": "application/octet-stream"}}
