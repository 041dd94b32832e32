"""cast.transforms: each transform returns a new tree and leaves its receiver alone."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from cast import (
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    ChainAST,
    ChainError,
    Header,
    IdTemplate,
    IdTemplateError,
    Message,
    Reasoning,
    Role,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
    contains_tool_call_reasoning,
    extract_reasoning_message,
)

S = Message.system
H = Message.human
T = Message.tool


def A(*parts: Any) -> Message:
    return Message(
        role=Role.AI, parts=[TextPart(text=p) if isinstance(p, str) else p for p in parts]
    )


def call(call_id: str, name: str = "f", arguments: str = "{}", **kw: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments, **kw)


def parse(*messages: Message) -> ChainAST:
    return ChainAST.from_messages(list(messages))


def all_call_ids(ast: ChainAST) -> list[str]:
    return [c.id for m in ast.to_messages() for c in m.tool_calls]


def check_new_tree(before: ChainAST, after: ChainAST, snapshot: list[Message]) -> None:
    """The receiver is unchanged; the result is a consistent, strictly parsable tree."""
    assert before.to_messages() == snapshot
    assert ChainAST.from_messages(after.to_messages()) == after
    assert after.size == sum(m.size for m in after.to_messages())
    assert all(s.size == sum(m.size for m in s.messages()) for s in after.sections)


# -- normalize_tool_call_ids ------------------------------------------------------------------

TOOLU = "toolu_{r:24:b}"
FITS = "toolu_" + "A" * 24


def test_normalize_keeps_fitting_ids_and_renames_the_others() -> None:
    chain = [
        H("a"),
        A(call(FITS), call("call_1", "g")),
        T("call_1", "g", "one"),
        T(FITS, "f", "fits"),
    ]
    ast = ChainAST.from_messages(chain)
    snapshot = copy.deepcopy(chain)
    out = ast.normalize_tool_call_ids(TOOLU)
    check_new_tree(ast, out, snapshot)
    kept, renamed = out.to_messages()[1].tool_calls
    assert kept.id == FITS
    assert renamed.id != "call_1"
    assert IdTemplate(TOOLU).matches(renamed.id)
    assert renamed.name == "g"
    # The results follow their calls.
    assert out.find_tool_call_responses(renamed.id) == [
        ToolResult(tool_call_id=renamed.id, name="g", content="one")
    ]
    assert out.find_tool_call_responses(FITS)[0].content == "fits"
    assert out.find_tool_call_responses("call_1") == []


def test_normalize_gives_reused_ids_unique_new_ones() -> None:
    chain = [
        H("a"),
        A(call(FITS, "first")),
        T(FITS, "first", "r1"),
        A(call(FITS, "second")),
        T(FITS, "second", "r2"),
        A(call("x", "third"), call("y", "fourth")),
        T("y", "fourth", "r4"),
        T("x", "third", "r3"),
    ]
    out = ChainAST.from_messages(chain).normalize_tool_call_ids(TOOLU)
    ids = all_call_ids(out)
    assert len(set(ids)) == 4
    assert ids[0] == FITS
    assert all(IdTemplate(TOOLU).matches(i) for i in ids)
    contents = {r.content: r.tool_call_id for m in out.to_messages() for r in m.tool_results}
    assert contents == {"r1": ids[0], "r2": ids[1], "r3": ids[2], "r4": ids[3]}


def test_normalize_duplicate_ids_inside_one_pair() -> None:
    chain = [H("a"), A(call("d", "f"), call("d", "g")), T("d", "f", "one"), T("d", "g", "two")]
    out = ChainAST.from_messages(chain).normalize_tool_call_ids("call_{r:8:x}")
    first, second = out.to_messages()[1].tool_calls
    assert first.id != second.id
    assert [r.tool_call_id for m in out.to_messages()[2:] for r in m.tool_results] == [
        first.id,
        second.id,
    ]


def test_normalize_is_deterministic_and_accepts_templates() -> None:
    ast = parse(H("a"), A(call("x"), call("y")), T("x", "f", "1"), T("y", "f", "2"))
    first = ast.normalize_tool_call_ids("call_{r:24:x}")
    assert ast.normalize_tool_call_ids("call_{r:24:x}") == first
    assert ast.normalize_tool_call_ids(IdTemplate("call_{r:24:x}")) == first
    assert (
        ChainAST.from_messages(ast.to_messages()).normalize_tool_call_ids("call_{r:24:x}") == first
    )


def test_normalize_with_function_name_template() -> None:
    calls = [call("get_user_1", "get_user"), call("x", "search"), call("get_user_2", "other")]
    ast = parse(H("a"), A(*calls), *(T(c.id, c.name, c.id) for c in calls))
    out = ast.normalize_tool_call_ids("{f}_{r:1:d}")
    kept, searched, other = out.to_messages()[1].tool_calls
    assert kept.id == "get_user_1"
    assert searched.id.startswith("search_")
    assert other.id.startswith("other_")  # the old id named another function
    assert out.normalize_tool_call_ids("{f}_{r:1:d}") == out
    answers = [(r.tool_call_id, r.content) for m in out.to_messages()[2:] for r in m.tool_results]
    assert answers == [(kept.id, "get_user_1"), (searched.id, "x"), (other.id, "get_user_2")]


def test_normalize_with_empty_function_name_is_idempotent() -> None:
    ast = parse(H("a"), A(call("x", "")), T("x", "", "r"))
    once = ast.normalize_tool_call_ids("{f}_{r:4:d}")
    assert all_call_ids(once)[0].startswith("function_")
    assert once.normalize_tool_call_ids("{f}_{r:4:d}") == once


def test_normalize_without_changes_returns_an_equal_tree() -> None:
    ast = parse(H("a"), A(call(FITS)), T(FITS, "f", "r"), A("done"))
    assert ast.normalize_tool_call_ids(TOOLU) == ast
    plain = parse(H("a"), A("no calls"))
    assert plain.normalize_tool_call_ids(TOOLU) == plain


def test_normalize_with_regex_template() -> None:
    ast = parse(H("a"), A(call("call_1")), T("call_1", "f", "r"))
    out = ast.normalize_tool_call_ids(IdTemplate.from_regex("[a-zA-Z0-9]{9}"))
    (new,) = all_call_ids(out)
    assert len(new) == 9
    assert new.isalnum()


def test_normalize_fails_when_the_template_has_too_few_ids() -> None:
    calls = [call(f"c{i}") for i in range(11)]
    results = [T(c.id, "f", "r") for c in calls]
    ast = parse(H("a"), A(*calls), *results)
    with pytest.raises(IdTemplateError, match="10 distinct ids"):
        ast.normalize_tool_call_ids("{r:1:d}")
    assert len(set(all_call_ids(ast.normalize_tool_call_ids("{r:2:d}")))) == 11


def test_normalize_counts_the_capacity_of_a_named_template_per_function_name() -> None:
    # "{f}_{r:1:d}" gives 10 ids per function name: 12 calls over two names fit.
    calls = [call(f"c{i}", name) for i in range(6) for name in ("alpha", "beta")]
    ast = parse(H("a"), A(*calls), *(T(c.id, c.name, "r") for c in calls))
    out = all_call_ids(ast.normalize_tool_call_ids("{f}_{r:1:d}"))
    assert len(set(out)) == 12
    assert sorted(i.split("_")[0] for i in out) == ["alpha"] * 6 + ["beta"] * 6
    eleven = [call(f"c{i}", "alpha") for i in range(11)]
    crowded = parse(H("a"), A(*eleven), *(T(c.id, c.name, "r") for c in eleven))
    with pytest.raises(IdTemplateError, match="10 distinct ids per function name"):
        crowded.normalize_tool_call_ids("{f}_{r:1:d}")


# -- clear_reasoning ----------------------------------------------------------------------------


def test_clear_reasoning_drops_reasoning_only() -> None:
    thought = Reasoning(content="hmm", signature=b"\x00\x01")
    chain = [
        S("s"),
        Message(role=Role.HUMAN, parts=[TextPart(text="q", reasoning=thought)]),
        A(TextPart(text="é", reasoning=thought), call("c1", reasoning=thought)),
        T("c1", "f", "r"),
        A("plain"),
    ]
    ast = ChainAST.from_messages(chain)
    snapshot = copy.deepcopy(chain)
    out = ast.clear_reasoning()
    check_new_tree(ast, out, snapshot)
    assert out.to_messages() == [
        S("s"),
        H("q"),
        A("é", call("c1")),
        T("c1", "f", "r"),
        A("plain"),
    ]
    assert ast.size - out.size == 3 * (3 + 2)
    assert not contains_tool_call_reasoning(out.to_messages())
    assert extract_reasoning_message(out.to_messages()) is None
    # Untouched messages are shared, not copied.
    assert out.to_messages()[0] is chain[0]
    assert out.to_messages()[4] is chain[4]


def test_clear_reasoning_without_reasoning_is_equal() -> None:
    ast = parse(H("a"), A(call("c")), T("c", "f", "r"))
    assert ast.clear_reasoning() == ast


# -- sanitize_tool_call_arguments -------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param('{"a": 1}', '{"a": 1}', id="valid-kept"),
        pytest.param('{"a":\n 1}', '{"a":\n 1}', id="newline-between-tokens-is-valid"),
        pytest.param('{"q": "line1\nline2"}', '{"q": "line1\\nline2"}', id="raw-newline"),
        pytest.param('{"q": "a\tb\rc"}', '{"q": "a\\tb\\rc"}', id="raw-tab-cr"),
        pytest.param('{"q": "\x01"}', '{"q": "\\u0001"}', id="raw-control-as-unicode"),
        pytest.param('{"q": "\\"\n"}', '{"q": "\\"\\n"}', id="after-escaped-quote"),
        pytest.param('{"q": "é\n😀"}', '{"q": "é\\n😀"}', id="non-ascii"),
        pytest.param("not json", "{}", id="invalid"),
        pytest.param('{"q": "open', "{}", id="truncated"),
        pytest.param("", "{}", id="empty"),
    ],
)
def test_sanitize_tool_call_arguments(arguments: str, expected: str) -> None:
    chain = [H("a"), A(call("c1", arguments=arguments)), T("c1", "f", "r")]
    ast = ChainAST.from_messages(chain)
    snapshot = copy.deepcopy(chain)
    out = ast.sanitize_tool_call_arguments()
    check_new_tree(ast, out, snapshot)
    (fixed,) = out.to_messages()[1].tool_calls
    assert fixed.arguments == expected
    json.loads(fixed.arguments)
    assert out.size - ast.size == len(expected.encode()) - len(arguments.encode())


def test_sanitize_keeps_string_values() -> None:
    raw = '{"q": "line1\nline2\ttab"}'
    out = parse(H("a"), A(call("c1", arguments=raw)), T("c1", "f", "r"))
    (fixed,) = out.sanitize_tool_call_arguments().to_messages()[1].tool_calls
    assert json.loads(fixed.arguments) == {"q": "line1\nline2\ttab"}


# -- append_human_message ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        pytest.param([], [H("new")], id="empty-chain-new-section"),
        pytest.param(
            [H("a"), A("x")], [H("a"), A("x"), H("new")], id="last-section-with-body-new-section"
        ),
        pytest.param([S("s")], [S("s"), H("new")], id="last-section-without-human-sets-it"),
        pytest.param(
            [S("s"), H("a")],
            [S("s"), Message(role=Role.HUMAN, parts=[TextPart(text="a"), TextPart(text="new")])],
            id="last-section-with-human-appends-a-part",
        ),
    ],
)
def test_append_human_message(chain: list[Message], expected: list[Message]) -> None:
    ast = ChainAST.from_messages(chain)
    snapshot = copy.deepcopy(chain)
    out = ast.append_human_message("new")
    check_new_tree(ast, out, snapshot)
    assert out.to_messages() == expected
    assert out.size == ast.size + 3


def test_append_human_message_counts_utf8() -> None:
    out = parse(H("a"), A("x")).append_human_message("漢字")
    assert out.sections[-1].size == 6
    assert len(out.sections) == 2


def test_append_human_message_rejects_non_text() -> None:
    with pytest.raises(TypeError):
        parse(H("a")).append_human_message(3)  # type: ignore[arg-type]


# -- add_tool_response / find_tool_call_responses ---------------------------------------------


def test_add_tool_response_replaces_the_content() -> None:
    chain = [H("a"), A(call("c1"), call("c2", "g")), T("c1", "f", "old"), T("c2", "g", "keep")]
    ast = ChainAST.from_messages(chain)
    snapshot = copy.deepcopy(chain)
    out = ast.add_tool_response("c1", "f", "brand new")
    check_new_tree(ast, out, snapshot)
    assert out.find_tool_call_responses("c1") == [
        ToolResult(tool_call_id="c1", name="f", content="brand new")
    ]
    assert out.find_tool_call_responses("c2")[0].content == "keep"
    assert out.size == ast.size - len("old") + len("brand new")


def test_add_tool_response_targets_the_latest_call_with_the_id() -> None:
    chain = [H("a"), A(call("c1")), T("c1", "f", "first"), A(call("c1")), T("c1", "f", "second")]
    out = ChainAST.from_messages(chain).add_tool_response("c1", "f", "updated")
    assert [r.content for r in out.find_tool_call_responses("c1")] == ["first", "updated"]


def test_add_tool_response_adds_the_missing_result() -> None:
    ai = A(call("c1"), call("c2", "g"))
    first = T("c1", "f", "r1")
    pair = BodyPair.build(ai, [first])  # c2 still waits for its result
    ast = ChainAST([Section(Header(human_message=H("a")), (pair,))])
    out = ast.add_tool_response("c2", "g", "r2")
    assert out.to_messages() == [H("a"), ai, first, T("c2", "g", "r2")]
    assert ChainAST.from_messages(out.to_messages()) == out  # now complete: parses strictly
    assert out.size == ast.size + len("c2") + len("g") + len("r2")
    assert ast.to_messages() == [H("a"), ai, first]


def test_add_tool_response_unknown_id_raises() -> None:
    ast = parse(H("a"), A(call("c1")), T("c1", "f", "r"))
    with pytest.raises(ChainError, match="'nope'") as info:
        ast.add_tool_response("nope", "f", "x")
    assert info.value.rule == "unknown-tool-call"


def test_find_tool_call_responses_in_chain_order() -> None:
    chain = [
        H("a"),
        A(call("c1"), call("c2")),
        Message(
            role=Role.TOOL,
            parts=[
                ToolResult(tool_call_id="c2", name="f", content="two"),
                ToolResult(tool_call_id="c1", name="f", content="one"),
            ],
        ),
        H("b"),
        A(call("c1")),
        T("c1", "f", "again"),
    ]
    ast = ChainAST.from_messages(chain)
    assert [r.content for r in ast.find_tool_call_responses("c1")] == ["one", "again"]
    assert [r.content for r in ast.find_tool_call_responses("c2")] == ["two"]
    assert ast.find_tool_call_responses("c3") == []


# -- reasoning queries ---------------------------------------------------------------------------

_THOUGHT = Reasoning(content="because", signature=b"sig")


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        pytest.param([H("a"), A("x")], False, id="none"),
        pytest.param(
            [A(call("c", reasoning=_THOUGHT)), T("c", "f", "r")], True, id="tool-call-reasoning"
        ),
        pytest.param([A(TextPart(text="t", reasoning=_THOUGHT))], False, id="text-reasoning-only"),
        pytest.param(
            [A(call("c", reasoning=Reasoning(signature=b"\x00")))], True, id="signature-only"
        ),
        pytest.param([], False, id="empty"),
    ],
)
def test_contains_tool_call_reasoning(chain: list[Message], expected: bool) -> None:
    assert contains_tool_call_reasoning(chain) is expected
    assert contains_tool_call_reasoning(iter(chain)) is expected


def test_extract_reasoning_message_returns_the_first_ai_text_with_reasoning() -> None:
    first = TextPart(text="one", reasoning=_THOUGHT)
    second = TextPart(text="two", reasoning=Reasoning(content="later"))
    chain = [
        Message(role=Role.HUMAN, parts=[TextPart(text="h", reasoning=_THOUGHT)]),
        A("plain", call("c", reasoning=_THOUGHT)),
        T("c", "f", "r"),
        A("x", first, second),
        A(TextPart(text="three", reasoning=_THOUGHT)),
    ]
    snapshot = copy.deepcopy(chain)
    message = extract_reasoning_message(chain)
    assert message == Message(role=Role.AI, parts=[first])
    assert message is not None
    assert message.size == first.size
    assert chain == snapshot


@pytest.mark.parametrize(
    "chain",
    [
        pytest.param([], id="empty"),
        pytest.param([A("x"), H("y")], id="no-reasoning"),
        pytest.param([A(call("c", reasoning=_THOUGHT))], id="tool-call-reasoning-only"),
        pytest.param(
            [Message(role=Role.HUMAN, parts=[TextPart(text="h", reasoning=_THOUGHT)])],
            id="human-reasoning-only",
        ),
    ],
)
def test_extract_reasoning_message_none(chain: list[Message]) -> None:
    assert extract_reasoning_message(chain) is None


# -- the receiver is never changed --------------------------------------------------------------


def test_transforms_share_untouched_sections() -> None:
    chain = [S("s"), H("a"), A("x"), H("b"), A(call("c1")), T("c1", "f", "r")]
    ast = ChainAST.from_messages(chain)
    out = ast.add_tool_response("c1", "f", "new")
    assert out.sections[0] is ast.sections[0]
    assert out.sections[1] is not ast.sections[1]
    assert ast.find_tool_call_responses("c1")[0].content == "r"


def test_summarization_pair_survives_transforms() -> None:
    pair = BodyPair.summarization("s", fake_signature=True, id_template="x_{r:4:d}", seed=1)
    chain = [H("a"), *pair.messages()]
    ast = ChainAST.from_messages(chain)
    assert ast.sections[0].body[0].type is BodyPairType.SUMMARIZATION
    out = ast.normalize_tool_call_ids("toolu_{r:24:b}").clear_reasoning()
    (summary_call,) = out.to_messages()[1].tool_calls
    assert summary_call.name == SUMMARIZATION_TOOL_NAME
    assert summary_call.reasoning is None
    assert out.sections[0].body[0].type is BodyPairType.SUMMARIZATION
    assert ast.to_messages() == chain


def test_transforms_never_mutate_dict_input() -> None:
    thought = {"content": "hm", "signature": b"\x01"}
    chain: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "text": "héllo", "reasoning": thought}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "f", "arguments": '{"a": "\n"}'},
                {"type": "tool_call", "id": "c1", "name": "g", "reasoning": thought},
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_call_id": "c1", "name": "f", "content": "1"}],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_call_id": "c1", "name": "g", "content": "2"}],
        },
    ]
    snapshot = copy.deepcopy(chain)
    ast = ChainAST.from_messages(chain)
    out = (
        ast.normalize_tool_call_ids("call_{r:24:x}")
        .clear_reasoning()
        .sanitize_tool_call_arguments()
        .append_human_message("more")
    )
    out = out.add_tool_response(all_call_ids(out)[0], "f", "new")
    assert chain == snapshot
    assert ChainAST.from_messages(chain) == ast
    assert len(set(all_call_ids(out))) == 2
