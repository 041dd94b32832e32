"""cast.messages: roles, parts, sizes in UTF-8 bytes, base64 bytes in JSON, frozen models."""

from __future__ import annotations

import base64

import pytest
from pydantic import TypeAdapter, ValidationError

from cast import (
    BinaryPart,
    ImagePart,
    Message,
    Part,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)

PART_ADAPTER: TypeAdapter[Part] = TypeAdapter(Part)


# -- roles --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param("user", Role.HUMAN, id="user-is-human"),
        pytest.param("assistant", Role.AI, id="assistant-is-ai"),
        pytest.param("User", Role.HUMAN, id="alias-any-case"),
        pytest.param("human", Role.HUMAN, id="human"),
        pytest.param("ai", Role.AI, id="ai"),
        pytest.param("system", Role.SYSTEM, id="system"),
        pytest.param("tool", Role.TOOL, id="tool"),
    ],
)
def test_role_accepted_on_input(given: str, expected: Role) -> None:
    from_dict = Message.model_validate({"role": given, "parts": []})
    from_json = Message.model_validate_json(f'{{"role": "{given}", "parts": []}}')
    assert from_dict.role is expected
    assert from_json.role is expected
    assert Role(given) is expected


def test_role_is_written_with_its_canonical_name() -> None:
    message = Message.model_validate({"role": "assistant", "parts": []})
    assert message.model_dump(mode="json")["role"] == "ai"


@pytest.mark.parametrize("role", [pytest.param("robot", id="unknown"), pytest.param(3, id="int")])
def test_unknown_role_is_rejected(role: object) -> None:
    with pytest.raises(ValidationError):
        Message.model_validate({"role": role, "parts": []})


# -- sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "size"),
    [
        pytest.param(TextPart(text="hello"), 5, id="ascii"),
        pytest.param(TextPart(text="héllo"), 6, id="latin-accent"),
        pytest.param(TextPart(text="😀"), 4, id="emoji"),
        pytest.param(TextPart(text="漢字"), 6, id="cjk"),
        pytest.param(TextPart(text=""), 0, id="empty"),
        pytest.param(
            TextPart(text="é", reasoning=Reasoning(content="思考", signature=b"\x00\x01\x02")),
            2 + 6 + 3,
            id="text-with-reasoning",
        ),
        pytest.param(ImagePart(url="https://x/ü.png", detail="low"), 16 + 3, id="image"),
        pytest.param(BinaryPart(mime_type="audio/wav", data=b"\xff" * 10), 9 + 10, id="binary"),
        pytest.param(
            ToolCall(id="call_1", name="función", arguments='{"q": "ß"}'),
            6 + 8 + 11,
            id="tool-call",
        ),
        pytest.param(
            ToolCall(id="c", name="f", arguments="{}", reasoning=Reasoning(signature=b"sig")),
            1 + 1 + 2 + 3,
            id="tool-call-signature",
        ),
        pytest.param(
            ToolResult(tool_call_id="call_1", name="f", content="日本"), 6 + 1 + 6, id="result"
        ),
    ],
)
def test_part_size_counts_utf8_bytes_and_raw_bytes(part: Part, size: int) -> None:
    assert part.size == size
    assert Message(role=Role.HUMAN, parts=[part]).size == size


def test_message_size_sums_its_parts_and_ignores_the_role() -> None:
    parts = [TextPart(text="héllo"), BinaryPart(mime_type="a/b", data=b"1234"), TextPart(text="😀")]
    sizes = {Message(role=role, parts=parts).size for role in Role}
    assert sizes == {6 + 3 + 4 + 4}


def test_size_is_not_the_character_count() -> None:
    message = Message.human("漢字😀")
    assert len(message.text) == 3
    assert message.size == 10


def test_model_copy_with_update_recomputes_size() -> None:
    message = Message.human("a")
    copied = message.model_copy(update={"parts": (TextPart(text="ééé"),)})
    assert copied.size == 6
    assert message.size == 1


# -- binary data and JSON ------------------------------------------------------------------

_BLOB = bytes(range(256))


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(
            Message(role=Role.HUMAN, parts=[BinaryPart(mime_type="application/pdf", data=_BLOB)]),
            id="binary-part",
        ),
        pytest.param(
            Message(
                role=Role.AI,
                parts=[TextPart(text="ok", reasoning=Reasoning(content="hm", signature=_BLOB))],
            ),
            id="text-reasoning-signature",
        ),
        pytest.param(
            Message(
                role=Role.AI,
                parts=[ToolCall(id="c", name="f", reasoning=Reasoning(signature=b"\x00\xfe"))],
            ),
            id="tool-call-signature",
        ),
        pytest.param(
            Message(role=Role.HUMAN, parts=[BinaryPart(mime_type="a/b", data=b"")]),
            id="empty-bytes",
        ),
    ],
)
def test_bytes_round_trip_through_json(message: Message) -> None:
    dumped = message.model_dump(mode="json")
    assert Message.model_validate(dumped) == message
    assert Message.model_validate_json(message.model_dump_json()) == message
    assert Message.model_validate_json(message.model_dump_json()).size == message.size


def test_bytes_are_base64_text_in_json() -> None:
    message = Message(
        role=Role.HUMAN,
        parts=[
            BinaryPart(mime_type="image/png", data=b"\x89PNG\x00"),
            TextPart(text="t", reasoning=Reasoning(signature=b"\xff\xfe")),
        ],
    )
    parts = message.model_dump(mode="json")["parts"]
    assert parts[0]["data"] == base64.b64encode(b"\x89PNG\x00").decode()
    assert parts[1]["reasoning"]["signature"] == base64.b64encode(b"\xff\xfe").decode()
    # Python mode keeps the bytes as they are.
    assert message.model_dump()["parts"][0]["data"] == b"\x89PNG\x00"


def test_invalid_base64_in_json_is_rejected() -> None:
    with pytest.raises(ValidationError, match="base64"):
        Message.model_validate_json(
            '{"role": "human", "parts": [{"type": "binary", "mime_type": "a/b", "data": "%%"}]}'
        )


# -- parts and validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"type": "text", "text": "x"}, TextPart(text="x"), id="text"),
        pytest.param({"type": "image_url", "url": "u"}, ImagePart(url="u"), id="image"),
        pytest.param(
            {"type": "binary", "mime_type": "a/b", "data": b"\x01"},
            BinaryPart(mime_type="a/b", data=b"\x01"),
            id="binary",
        ),
        pytest.param(
            {"type": "tool_call", "id": "c", "name": "f"}, ToolCall(id="c", name="f"), id="call"
        ),
        pytest.param(
            {"type": "tool_result", "tool_call_id": "c", "name": "f", "content": "r"},
            ToolResult(tool_call_id="c", name="f", content="r"),
            id="result",
        ),
    ],
)
def test_part_union_dispatches_on_type(data: dict[str, object], expected: Part) -> None:
    part = PART_ADAPTER.validate_python(data)
    assert type(part) is type(expected)
    assert part == expected


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"type": "video", "url": "u"}, id="unknown-type"),
        pytest.param({"type": "text"}, id="missing-field"),
        pytest.param({"type": "text", "text": "x", "colour": "red"}, id="extra-field"),
    ],
)
def test_invalid_part_is_rejected(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Message.model_validate({"role": "human", "parts": [data]})


def test_parts_list_becomes_a_tuple() -> None:
    message = Message(role=Role.HUMAN, parts=[TextPart(text="a")])
    assert message.parts == (TextPart(text="a"),)


def test_tool_call_defaults() -> None:
    call = ToolCall(id="c", name="f")
    assert call.arguments == "{}"
    assert call.reasoning is None
    assert Reasoning() == Reasoning(content="", signature=b"")


def test_constructors_and_views() -> None:
    call = ToolCall(id="c", name="f")
    ai = Message.ai("thinking done", call)
    assert ai.role is Role.AI
    assert ai.tool_calls == (call,)
    assert ai.text == "thinking done"
    assert Message.ai("", call).parts == (call,)
    tool = Message.tool("c", "f", "out")
    assert tool.tool_results == (ToolResult(tool_call_id="c", name="f", content="out"),)
    assert Message.system("s").role is Role.SYSTEM
    assert Message.human("h").parts == (TextPart(text="h"),)


# -- frozen and hashable -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "field", "value"),
    [
        pytest.param(Message.human("a"), "role", Role.AI, id="message-role"),
        pytest.param(Message.human("a"), "parts", (), id="message-parts"),
        pytest.param(TextPart(text="a"), "text", "b", id="text"),
        pytest.param(Reasoning(content="a"), "signature", b"x", id="reasoning"),
        pytest.param(ToolCall(id="c", name="f"), "id", "d", id="tool-call"),
        pytest.param(ToolResult(tool_call_id="c", name="f", content=""), "content", "x", id="res"),
        pytest.param(BinaryPart(mime_type="a/b", data=b""), "data", b"x", id="binary"),
        pytest.param(ImagePart(url="u"), "url", "v", id="image"),
    ],
)
def test_models_are_frozen(model: object, field: str, value: object) -> None:
    before = getattr(model, field)
    with pytest.raises(ValidationError, match="frozen"):
        setattr(model, field, value)
    assert getattr(model, field) == before


def test_messages_are_hashable_by_value() -> None:
    first = Message(role="user", parts=[BinaryPart(mime_type="a/b", data=b"\x00")])
    second = Message(role=Role.HUMAN, parts=(BinaryPart(mime_type="a/b", data=b"\x00"),))
    assert first == second
    assert hash(first) == hash(second)
    assert len({first, second, Message.human("other")}) == 2


def test_equal_fields_sets_are_shared_and_still_say_what_was_given() -> None:
    """Each built instance would own a 200-byte set of the fields it was given; equal
    sets are shared, and copies still get their own."""
    first, second = TextPart(text="a"), TextPart(text="b")
    with_reasoning = TextPart(text="c", reasoning=None)
    assert first.model_fields_set == {"text"}
    assert with_reasoning.model_fields_set == {"text", "reasoning"}
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    copied = first.model_copy(update={"reasoning": Reasoning(content="why")})
    assert copied.model_fields_set == {"text", "reasoning"}
    assert first.model_fields_set == {"text"} == second.model_fields_set
    messages = [Message.model_validate({"role": "human", "parts": []}) for _ in range(2)]
    assert messages[0].__pydantic_fields_set__ is messages[1].__pydantic_fields_set__
    assert messages[0].model_fields_set == {"role", "parts"}
    assert messages[0].size == 0
