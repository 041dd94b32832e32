"""The public builders: ``Message.from_parts``, ``evolve`` on parts, messages and nodes,
and ``build`` on every node. They check what the constructors check and share what
they are given."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from cast import (
    BinaryPart,
    BodyPair,
    BodyPairType,
    ChainAST,
    ChainError,
    Header,
    ImagePart,
    Message,
    ProviderPart,
    Reasoning,
    Role,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
)
from strategies import valid_chains

CALL = ToolCall(id="c1", name="f", arguments='{"a": 1}')
RESULT = ToolResult(tool_call_id="c1", name="f", content="done")


# -- parts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "changes"),
    [
        pytest.param(TextPart(text="a"), {"text": "héllo"}, id="text"),
        pytest.param(
            TextPart(text="a"), {"reasoning": Reasoning(content="why")}, id="text-reasoning"
        ),
        pytest.param(
            TextPart(text="a", reasoning=Reasoning(content="x")), {"reasoning": None}, id="none"
        ),
        pytest.param(CALL, {"id": "c2", "arguments": "{}"}, id="call"),
        pytest.param(RESULT, {"tool_call_id": "c9"}, id="result"),
        pytest.param(ImagePart(url="https://x/y.png"), {"detail": "low"}, id="image"),
        pytest.param(BinaryPart(mime_type="a/b", data=b"\x00"), {"data": b"\x01\x02"}, id="binary"),
        pytest.param(Reasoning(content="a"), {"signature": b"sig"}, id="reasoning"),
    ],
)
def test_evolve_equals_validating_the_changed_fields(part: Any, changes: dict[str, Any]) -> None:
    before = part.model_dump()
    evolved = part.evolve(**changes)
    assert evolved == type(part).model_validate({**before, **changes})
    assert evolved.size == type(part).model_validate({**before, **changes}).size
    assert part.model_dump() == before  # the original is untouched
    assert type(evolved).model_validate(evolved.model_dump()) == evolved


@pytest.mark.parametrize(
    ("part", "changes", "match"),
    [
        pytest.param(CALL, {"idd": "x"}, "no field 'idd'", id="unknown-field"),
        pytest.param(CALL, {"type": "text"}, "no field 'type'", id="tag"),
        pytest.param(CALL, {"id": 3}, "id must be str, not int", id="int-id"),
        pytest.param(TextPart(text="a"), {"reasoning": "r"}, "Reasoning or None", id="reasoning"),
        pytest.param(BinaryPart(mime_type="a", data=b""), {"data": "AA=="}, "bytes", id="data"),
    ],
)
def test_evolve_rejects_unknown_fields_and_wrong_types(
    part: Any, changes: dict[str, Any], match: str
) -> None:
    with pytest.raises(TypeError, match=match):
        part.evolve(**changes)


# -- messages ------------------------------------------------------------------------------


def test_from_parts_equals_the_validated_message() -> None:
    parts = (TextPart(text="ünïcode"), CALL)
    built = Message.from_parts("assistant", parts)
    assert built == Message(role=Role.AI, parts=parts)
    assert built.size == Message(role=Role.AI, parts=parts).size
    assert built.parts[1] is CALL  # shared, not copied
    assert Message.from_parts(Role.TOOL, [RESULT]).parts == (RESULT,)


@pytest.mark.parametrize(
    ("role", "parts", "error", "match"),
    [
        pytest.param("ai", [{"type": "text", "text": "x"}], TypeError, r"parts\[0\]", id="dict"),
        pytest.param("ai", [CALL, "text"], TypeError, r"parts\[1\].*not str", id="str"),
        pytest.param("robot", [CALL], ValueError, "robot", id="role"),
    ],
)
def test_from_parts_rejects_what_is_not_a_part(
    role: Any, parts: list[Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Message.from_parts(role, parts)


def test_from_parts_accepts_provider_parts_and_names_all_six_classes() -> None:
    block = ProviderPart(provider="anthropic", kind="cache_control", data='{"type":"ephemeral"}')
    assert Message.from_parts("user", [block]).parts == (block,)
    with pytest.raises(TypeError, match="ToolResult or ProviderPart, not int"):
        Message.from_parts("ai", [1])


def test_message_evolve_recomputes_the_size() -> None:
    message = Message.ai("hi", CALL)
    renamed = message.evolve(parts=[message.parts[0], CALL.evolve(id="a-much-longer-id")])
    assert renamed.size == message.size - len("c1") + len("a-much-longer-id")
    assert renamed.evolve(role="human").role is Role.HUMAN
    with pytest.raises(TypeError, match="no field 'size'"):
        message.evolve(size=3)


# -- nodes ---------------------------------------------------------------------------------


def test_build_equals_the_constructors() -> None:
    system, human = Message.system("s"), Message.human("h")
    ai, tool = Message.ai("", CALL), Message.tool("c1", "f", "done")
    header = Header(system, human)
    pair = BodyPair.build(ai, [tool])
    section = Section(header, [pair, BodyPair.completion("ok")])
    chain = ChainAST([section])
    assert header == Header(system, human)
    assert header.size == system.size + human.size
    assert pair == BodyPair(BodyPairType.REQUEST_RESPONSE, ai, (tool,))
    assert pair.size == ai.size + tool.size
    assert section.size == header.size + sum(p.size for p in section.body)
    assert chain == ChainAST([section])
    assert chain.size == section.size
    assert chain == ChainAST.from_messages(chain.to_messages())


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        pytest.param(
            lambda: Header(Message.human("h")), ChainError, "role 'system'", id="header-role"
        ),
        pytest.param(lambda: Header(None, "h"), TypeError, "must be a Message", id="header"),
        pytest.param(
            lambda: BodyPair.build(Message.ai("x"), [Message.tool("c1", "f", "r")]),
            ChainError,
            "COMPLETION",
            id="completion-with-tools",
        ),
        pytest.param(
            lambda: BodyPair.build(Message.ai("", CALL), [Message.tool("c9", "f", "r")]),
            ChainError,
            "'c9' answers no call",
            id="unpaired-result",
        ),
        pytest.param(
            lambda: Section(Header(), [Message.ai("x")]),
            TypeError,
            "BodyPair nodes",
            id="section-body",
        ),
        pytest.param(
            lambda: ChainAST([Section(Header(None, Message.human("h")))] * 2),
            ChainError,
            "empty body",
            id="chain-order",
        ),
    ],
)
def test_build_checks_like_the_constructors(build: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        build()


@given(valid_chains(min_sections=1))
def test_rebuilding_every_node_gives_the_same_chain(chain: list[Message]) -> None:
    ast = ChainAST.from_messages(chain)
    rebuilt = ChainAST(
        Section(
            Header(s.header.system_message, s.header.human_message),
            [BodyPair.build(p.ai_message, p.tool_messages) for p in s.body],
        )
        for s in ast.sections
    )
    assert rebuilt == ast
    assert rebuilt.size == ast.size
    assert [s.size for s in rebuilt.sections] == [s.size for s in ast.sections]


def test_evolve_shares_what_it_does_not_change() -> None:
    ast = ChainAST.from_messages(
        [Message.human("a"), Message.ai("", CALL), Message.tool("c1", "f", "r"), Message.ai("b")]
    )
    section = ast.sections[0]
    shorter = section.evolve(body=section.body[:1])
    assert shorter.header is section.header
    assert shorter.body[0] is section.body[0]
    assert shorter.size == section.size - section.body[1].size
    header = section.header.evolve(system_message=Message.system("s"))
    assert header.human_message is section.header.human_message
    assert header.evolve(system_message=None) == section.header
    pair = section.body[0].evolve(ai_message=Message.ai("", CALL.evolve(arguments="{}")))
    assert pair.tool_messages is section.body[0].tool_messages
    assert pair.type is BodyPairType.REQUEST_RESPONSE
    assert ast.evolve(sections=[shorter]).size == ast.size - section.body[1].size
