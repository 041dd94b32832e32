"""cast.ast: node constructors keep the invariants, sizes, BodyPair factories, immutability."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    FAKE_GEMINI_SIGNATURE,
    SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    ChainAST,
    ChainError,
    Header,
    IdTemplate,
    Message,
    MessageFormatError,
    Reasoning,
    Role,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
)
from tests.conftest import CLAUDE_CODE, TAUBENCH, corpus_files

S = Message.system
H = Message.human
T = Message.tool


def A(*parts: Any) -> Message:
    return Message(
        role=Role.AI, parts=[TextPart(text=p) if isinstance(p, str) else p for p in parts]
    )


def call(call_id: str, name: str = "f") -> ToolCall:
    return ToolCall(id=call_id, name=name)


def _pair() -> BodyPair:
    return BodyPair.build(A(call("c1")), [T("c1", "f", "r")])


# -- constructors reject invalid trees ---------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "error", "fragment"),
    [
        pytest.param(lambda: Header(system_message=H("x")), ChainError, "role", id="header-system"),
        pytest.param(lambda: Header(human_message=A("x")), ChainError, "role", id="header-human"),
        pytest.param(lambda: Header(human_message=S("x")), ChainError, "role", id="header-sys-hum"),
        pytest.param(lambda: Header(system_message="x"), TypeError, "Message", id="header-not-msg"),
        pytest.param(
            lambda: BodyPair(BodyPairType.COMPLETION, H("x")),
            ChainError,
            "role",
            id="pair-human-ai",
        ),
        pytest.param(
            lambda: BodyPair(BodyPairType.REQUEST_RESPONSE, A(call("c")), (A("x"),)),
            ChainError,
            "role",
            id="pair-ai-as-tool",
        ),
        pytest.param(
            lambda: BodyPair(BodyPairType.COMPLETION, A(call("c")), (T("c", "f", "r"),)),
            ChainError,
            "request_response",
            id="pair-type-declared-wrong",
        ),
        pytest.param(
            lambda: BodyPair(BodyPairType.REQUEST_RESPONSE, A("x")),
            ChainError,
            "completion",
            id="pair-completion-declared-request",
        ),
        pytest.param(
            lambda: BodyPair(BodyPairType.SUMMARIZATION, A(call("c")), (T("c", "f", "r"),)),
            ChainError,
            "declared summarization",
            id="pair-summarization-without-its-call",
        ),
        pytest.param(
            lambda: BodyPair.build(A(call("c1")), [T("c1", "f", "r"), T("c1", "f", "r")]),
            ChainError,
            "'c1'",
            id="pair-second-result",
        ),
        pytest.param(
            lambda: BodyPair.build(A(call("c1")), [T("c1", "f", "r"), T("zz", "f", "r")]),
            ChainError,
            "'zz'",
            id="pair-result-for-no-call",
        ),
        pytest.param(
            lambda: BodyPair(BodyPairType.COMPLETION, A("x"), (T("c", "f", "r"),)),
            ChainError,
            "no tool messages",
            id="completion-with-tool-message",
        ),
        pytest.param(lambda: Section(header=H("x")), TypeError, "Header", id="section-header-type"),
        pytest.param(
            lambda: Section(Header(human_message=H("x")), (A("x"),)),
            TypeError,
            "BodyPair",
            id="section-body-type",
        ),
        pytest.param(
            lambda: ChainAST([Section(Header())]), ChainError, "section 0", id="chain-empty-header"
        ),
        pytest.param(
            lambda: ChainAST(
                [
                    Section(Header(human_message=H("a")), (BodyPair.completion("x"),)),
                    Section(Header()),
                ]
            ),
            ChainError,
            "section 1",
            id="chain-later-section-without-opening",
        ),
        pytest.param(
            lambda: ChainAST(
                [
                    Section(Header(S("s")), (BodyPair.completion("x"),)),
                    Section(Header(), (BodyPair.completion("y"),)),
                ]
            ),
            ChainError,
            "human message",
            id="chain-later-section-without-human",
        ),
        pytest.param(
            lambda: ChainAST(
                [Section(Header(human_message=H("a"))), Section(Header(human_message=H("b")))]
            ),
            ChainError,
            "empty body",
            id="chain-empty-body-before-last",
        ),
        pytest.param(lambda: ChainAST([Header()]), TypeError, "Section", id="chain-not-section"),
    ],
)
def test_constructors_reject_invalid_trees(
    build: Any, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error, match=fragment):
        build()


def test_a_pair_may_wait_for_results() -> None:
    # An agent loop holds such a pair between the model's request and the tools' answers.
    pair = BodyPair.build(A(call("c1"), call("c2")), [T("c1", "f", "r")])
    assert pair.type is BodyPairType.REQUEST_RESPONSE
    assert pair.size == sum(m.size for m in pair.messages())


def test_evolve_checks_like_the_constructor() -> None:
    header = Header(human_message=H("a"))
    with pytest.raises(ChainError):
        header.evolve(human_message=A("x"))
    section = Section(header, (BodyPair.completion("x"),))
    with pytest.raises(ChainError):
        ChainAST([section]).evolve(sections=[section.evolve(body=()), section])
    # A section opened by a system message sent mid-chain (what repair builds).
    late = section.evolve(header=Header(S("s")))
    assert ChainAST([section]).evolve(sections=[section, late]).sections[1] == late
    assert header.evolve(system_message=S("s")) == Header(S("s"), H("a"))
    assert section.evolve(body=()).body == ()


def test_a_built_tree_equals_the_parsed_chain() -> None:
    chain = [S("s"), H("a"), A("hi", call("c1")), T("c1", "f", "r"), A("ok"), H("b")]
    built = ChainAST(
        [
            Section(
                Header(S("s"), H("a")),
                [
                    BodyPair.build(A("hi", call("c1")), [T("c1", "f", "r")]),
                    BodyPair.completion("ok"),
                ],
            ),
            Section(Header(human_message=H("b"))),
        ]
    )
    parsed = ChainAST.from_messages(chain)
    assert built == parsed
    assert hash(built) == hash(parsed)
    assert built.size == parsed.size == sum(m.size for m in chain)
    assert built.to_messages() == chain
    assert ChainAST.from_messages(built.to_messages()) == built


def test_body_pair_type_given_as_text_is_coerced() -> None:
    pair = BodyPair("completion", A("x"))  # type: ignore[arg-type]
    assert pair.type is BodyPairType.COMPLETION
    with pytest.raises(ChainError, match="declared request_response"):
        BodyPair("request_response", A("x"))  # type: ignore[arg-type]


# -- sizes ----------------------------------------------------------------------------------------


def test_every_node_size_is_the_sum_of_its_messages() -> None:
    chain = [
        S("système"),
        H("漢字"),
        A("😀", call("c1", "función")),
        T("c1", "función", "résultat"),
        A(TextPart(text="x", reasoning=Reasoning(content="é", signature=b"\x00\x01"))),
        H("b"),
    ]
    ast = ChainAST.from_messages(chain)
    first = ast.sections[0]
    # UTF-8 bytes: système 8, 漢字 6, 😀 4, c1 2, función 8, {} 2, résultat 9, é 2.
    assert [m.size for m in chain] == [8, 6, 4 + 2 + 8 + 2, 2 + 8 + 9, 1 + 2 + 2, 1]
    assert first.header.size == 8 + 6
    assert first.body[0].size == 16 + 19
    assert first.body[1].size == 5
    assert first.size == 14 + 35 + 5
    assert ast.sections[1].size == ast.sections[1].header.size == 1
    assert ast.size == 55


# -- BodyPair factories --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", [pytest.param("done", id="ascii"), pytest.param("héllo 😀", id="non-ascii")]
)
def test_completion(text: str) -> None:
    pair = BodyPair.completion(text)
    assert pair.type is BodyPairType.COMPLETION
    assert pair.ai_message == Message(role=Role.AI, parts=[TextPart(text=text)])
    assert pair.tool_messages == ()
    assert pair.size == len(text.encode())


def _summarization_parts(pair: BodyPair) -> tuple[ToolCall, ToolResult]:
    call_part = pair.ai_message.parts[-1]
    (tool_message,) = pair.tool_messages
    (result,) = tool_message.parts
    assert isinstance(call_part, ToolCall)
    assert isinstance(result, ToolResult)
    return call_part, result


def test_summarization_defaults() -> None:
    pair = BodyPair.summarization("the summary")
    assert pair.type is BodyPairType.SUMMARIZATION
    call_part, result = _summarization_parts(pair)
    assert pair.ai_message.parts == (call_part,)
    assert call_part.name == SUMMARIZATION_TOOL_NAME
    assert call_part.arguments == SUMMARIZATION_TOOL_ARGS
    assert call_part.reasoning is None
    assert IdTemplate(DEFAULT_TOOL_CALL_ID_TEMPLATE).matches(call_part.id)
    assert result == ToolResult(
        tool_call_id=call_part.id, name=SUMMARIZATION_TOOL_NAME, content="the summary"
    )
    id_and_name = len(call_part.id) + len(SUMMARIZATION_TOOL_NAME)
    assert pair.ai_message.size == id_and_name + len(SUMMARIZATION_TOOL_ARGS)
    assert pair.size == 2 * id_and_name + len(SUMMARIZATION_TOOL_ARGS) + len("the summary")


def test_summarization_fake_signature() -> None:
    call_part, _ = _summarization_parts(BodyPair.summarization("s", fake_signature=True))
    assert call_part.reasoning == Reasoning(signature=FAKE_GEMINI_SIGNATURE.encode())


@pytest.mark.parametrize(
    "template",
    [
        pytest.param("toolu_{r:24:b}", id="string"),
        pytest.param(IdTemplate("toolu_{r:24:b}"), id="template"),
    ],
)
def test_summarization_id_template(template: str | IdTemplate) -> None:
    call_part, result = _summarization_parts(BodyPair.summarization("s", id_template=template))
    assert IdTemplate("toolu_{r:24:b}").matches(call_part.id)
    assert result.tool_call_id == call_part.id


def test_summarization_id_template_with_function_name() -> None:
    call_part, _ = _summarization_parts(BodyPair.summarization("s", id_template="{f}-{r:4:d}"))
    assert call_part.id.startswith(f"{SUMMARIZATION_TOOL_NAME}-")


def test_summarization_seed_is_deterministic() -> None:
    first = BodyPair.summarization("s", seed="x")
    assert BodyPair.summarization("s", seed="x") == first
    assert BodyPair.summarization("s") != BodyPair.summarization("s")


def test_summarization_reasoning_message_comes_first() -> None:
    thought = TextPart(text="let me think", reasoning=Reasoning(content="hm", signature=b"\x01"))
    reasoning_message = Message(role=Role.AI, parts=[thought, call("old")])
    pair = BodyPair.summarization("s", reasoning_message=reasoning_message, fake_signature=True)
    call_part, _ = _summarization_parts(pair)
    assert pair.ai_message.parts == (thought, call_part)
    assert pair.type is BodyPairType.SUMMARIZATION
    assert pair.size == sum(m.size for m in pair.messages())
    assert reasoning_message.parts == (thought, call("old"))


def test_summarization_reasoning_message_must_be_ai() -> None:
    with pytest.raises(ChainError, match="reasoning_message"):
        BodyPair.summarization("s", reasoning_message=H("x"))


def test_factory_pairs_build_chains_that_parse_strictly() -> None:
    ast = ChainAST(
        [
            Section(
                Header(S("s"), H("a")),
                (BodyPair.summarization("sum", fake_signature=True), BodyPair.completion("ok")),
            )
        ]
    )
    assert ChainAST.from_messages(ast.to_messages()) == ast


# -- reading ------------------------------------------------------------------------------------


def test_message_views() -> None:
    chain = [S("s"), H("a"), A(call("c1")), T("c1", "f", "r"), H("b"), A("x")]
    ast = ChainAST.from_messages(chain)
    first, second = ast
    assert len(ast) == 2
    assert ast.message_count == len(chain)
    assert first.header.messages() == chain[:2]
    assert first.body[0].messages() == chain[2:4]
    assert first.body[0].tool_calls == (call("c1"),)
    assert first.messages() == chain[:4]
    assert second.messages() == chain[4:]
    assert ast.to_messages() == chain


# -- immutability -------------------------------------------------------------------------------


def test_nodes_are_frozen() -> None:
    ast = ChainAST.from_messages([S("s"), H("a"), A("x")])
    section = ast.sections[0]
    with pytest.raises(AttributeError):
        ast.sections = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del ast.size
    with pytest.raises(dataclasses.FrozenInstanceError):
        section.body = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        section.header.human_message = None  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        section.body[0].size = 0  # type: ignore[misc]
    assert ast.to_messages() == [S("s"), H("a"), A("x")]


def test_subclass_from_messages_returns_the_subclass() -> None:
    class MyChain(ChainAST):
        __slots__ = ()

    ast = MyChain.from_messages([H("a")])
    assert type(ast) is MyChain
    assert ast.size == 1


# -- from_json ---------------------------------------------------------------------------


def test_from_json_equals_from_messages_on_corpus_chains(corpus_dir: Path) -> None:
    import gc

    from cast.codecs import detect_format, get_codec

    for path in corpus_files(TAUBENCH)[:3] + corpus_files(CLAUDE_CODE)[:3]:
        payload = json.loads(path.read_text(encoding="utf-8"))
        messages = get_codec(detect_format(payload)).decode(payload)
        text = json.dumps([m.model_dump(mode="json") for m in messages])
        assert ChainAST.from_json(text, repair=True) == ChainAST.from_messages(
            messages, repair=True
        )
        assert ChainAST.from_json(text.encode(), repair=True).size == sum(m.size for m in messages)
    assert gc.isenabled()  # restored after the bulk build


@pytest.mark.parametrize(
    ("text", "index", "field"),
    [
        pytest.param(
            '[{"role": "human", "parts": []}, {"role": "x", "parts": []}]', 1, "role", id="bad-role"
        ),
        pytest.param(
            '[{"role": "ai", "parts": [{"type": "text"}]}]',
            0,
            "parts.0.text.text",
            id="missing-text",
        ),
        pytest.param("not json", None, "", id="not-json"),
        pytest.param('{"role": "human"}', None, "", id="not-a-list"),
    ],
)
def test_from_json_errors_name_the_message_and_field(
    text: str, index: int | None, field: str
) -> None:
    with pytest.raises(MessageFormatError) as caught:
        ChainAST.from_json(text)
    assert caught.value.index == index
    assert caught.value.field == field


def test_from_json_keeps_the_parse_rules() -> None:
    text = json.dumps([{"role": "human", "parts": []}, {"role": "human", "parts": []}])
    with pytest.raises(ChainError):
        ChainAST.from_json(text)
    assert len(ChainAST.from_json(text, repair=True).sections) == 1
