"""cast.parse: the seven parse rules (and duplicate results), strict and with repair."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cast import (
    FALLBACK_RESPONSE_CONTENT,
    SUMMARIZATION_TOOL_NAME,
    BodyPairType,
    ChainAST,
    ChainError,
    ChainIssue,
    Message,
    MessageFormatError,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    diagnose,
)
from cast.parse import _built, _ChainBuilder, _well_formed, parse_chain
from strategies import mutilated_chains, valid_chains

S = Message.system
H = Message.human
T = Message.tool


def A(*parts: Any) -> Message:
    """An AI message from strings (text parts) and ToolCalls."""
    return Message(
        role=Role.AI, parts=[TextPart(text=p) if isinstance(p, str) else p for p in parts]
    )


def call(call_id: str, name: str = "f", arguments: str = '{"x": 1}') -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def results(*triples: tuple[str, str, str]) -> Message:
    """One tool message holding several results."""
    return Message(
        role=Role.TOOL,
        parts=[ToolResult(tool_call_id=i, name=n, content=c) for i, n, c in triples],
    )


def fallback(call_id: str, name: str = "f") -> Message:
    return T(call_id, name, FALLBACK_RESPONSE_CONTENT)


# -- repairable rules --------------------------------------------------------------------------

# id, chain, (index, rule, fragments of the message), repaired chain, diagnose [(index, rule)]
REPAIRABLE = [
    pytest.param(
        [H("a"), H("b")],
        (1, "consecutive-human", ["message 0"]),
        [Message(role=Role.HUMAN, parts=[TextPart(text="a"), TextPart(text="b")])],
        [(1, "consecutive-human")],
        id="rule3-human-after-human-merges",
    ),
    pytest.param(
        [S("s"), H("a"), H("b"), H("c"), A("ok")],
        (2, "consecutive-human", ["message 1"]),
        [
            S("s"),
            Message(role=Role.HUMAN, parts=[TextPart(text=t) for t in "abc"]),
            A("ok"),
        ],
        [(2, "consecutive-human"), (3, "consecutive-human")],
        id="rule3-three-humans-after-system",
    ),
    pytest.param(
        [H("a"), T("z", "f", "r"), H("b")],
        (1, "orphan-tool-message", ["'z'"]),
        [Message(role=Role.HUMAN, parts=[TextPart(text="a"), TextPart(text="b")])],
        [(1, "orphan-tool-message"), (2, "consecutive-human")],
        id="rule3-merge-names-the-human-across-a-dropped-message",
    ),
    pytest.param(
        [H("a"), A("x"), T("c1", "f", "r")],
        (2, "orphan-tool-message", ["'c1'"]),
        [H("a"), A("x")],
        [(2, "orphan-tool-message")],
        id="rule5-tool-after-completion-dropped",
    ),
    pytest.param(
        [S("s"), T("c1", "f", "r"), H("a")],
        (1, "orphan-tool-message", ["'c1'"]),
        [S("s"), H("a")],
        [(1, "orphan-tool-message")],
        id="rule5-tool-after-system-dropped",
    ),
    pytest.param(
        [H("a"), A(call("c1")), T("c1", "f", "r"), H("b"), T("c1", "f", "again")],
        (4, "orphan-tool-message", ["'c1'"]),
        [H("a"), A(call("c1")), T("c1", "f", "r"), H("b")],
        [(4, "orphan-tool-message")],
        id="rule5-tool-after-human-dropped",
    ),
    pytest.param(
        [H("a"), A(call("c1"), call("c2", "g")), T("c1", "f", "r")],
        (1, "missing-tool-result", ["'c2'"]),
        [H("a"), A(call("c1"), call("c2", "g")), T("c1", "f", "r"), fallback("c2", "g")],
        [(1, "missing-tool-result")],
        id="rule6-missing-result-at-chain-end",
    ),
    pytest.param(
        [H("a"), A("hm", call("c1"), call("c2")), H("b")],
        (1, "missing-tool-result", ["'c1'", "'c2'"]),
        [H("a"), A("hm", call("c1"), call("c2")), fallback("c1"), fallback("c2"), H("b")],
        [(1, "missing-tool-result")],
        id="rule6-missing-results-before-next-human",
    ),
    pytest.param(
        [H("a"), A(call("c1")), A("done")],
        (1, "missing-tool-result", ["'c1'"]),
        [H("a"), A(call("c1")), fallback("c1"), A("done")],
        [(1, "missing-tool-result")],
        id="rule6-missing-result-before-next-ai",
    ),
    pytest.param(
        [H("a"), A(call("c1")), T("c1", "f", "r"), T("c9", "g", "extra")],
        (3, "unknown-tool-result", ["'c9'", "message 1"]),
        [
            H("a"),
            A(call("c1"), ToolCall(id="c9", name="g", arguments="{}")),
            T("c1", "f", "r"),
            T("c9", "g", "extra"),
        ],
        [(3, "unknown-tool-result")],
        id="rule7-unknown-result-gets-a-call",
    ),
    pytest.param(
        [H("a"), A(call("c1")), results(("c9", "g", "x"), ("c1", "f", "r"))],
        (2, "unknown-tool-result", ["'c9'"]),
        [
            H("a"),
            A(call("c1"), ToolCall(id="c9", name="g", arguments="{}")),
            results(("c9", "g", "x"), ("c1", "f", "r")),
        ],
        [(2, "unknown-tool-result")],
        id="rule7-unknown-result-inside-a-multi-result-message",
    ),
    pytest.param(
        [H("a"), A(call("c1")), T("c1", "f", "r"), T("c1", "f", "r2")],
        (3, "duplicate-tool-result", ["'c1'"]),
        [H("a"), A(call("c1")), T("c1", "f", "r")],
        [(3, "duplicate-tool-result")],
        id="duplicate-result-message-dropped",
    ),
    pytest.param(
        [
            H("a"),
            A(call("c1"), call("c2")),
            results(("c1", "f", "r"), ("c1", "f", "x"), ("c2", "f", "y")),
        ],
        (2, "duplicate-tool-result", ["'c1'"]),
        [H("a"), A(call("c1"), call("c2")), results(("c1", "f", "r"), ("c2", "f", "y"))],
        [(2, "duplicate-tool-result")],
        id="duplicate-result-part-dropped",
    ),
    pytest.param(
        [H("a"), A(call("c1")), T("c9", "g", "x"), T("c9", "g", "y")],
        (2, "unknown-tool-result", ["'c9'"]),
        [
            H("a"),
            A(call("c1"), ToolCall(id="c9", name="g", arguments="{}")),
            T("c9", "g", "x"),
            fallback("c1"),
        ],
        [
            (2, "unknown-tool-result"),
            (3, "duplicate-tool-result"),
            (1, "missing-tool-result"),
        ],
        id="every-repair-at-once",
    ),
]


@pytest.mark.parametrize(("chain", "error", "repaired", "issues"), REPAIRABLE)
def test_strict_parse_raises_with_index_rule_and_ids(
    chain: list[Message],
    error: tuple[int, str, list[str]],
    repaired: list[Message],
    issues: list[tuple[int, str]],
) -> None:
    index, rule, fragments = error
    with pytest.raises(ChainError) as info:
        ChainAST.from_messages(chain)
    assert info.value.index == index
    assert info.value.rule == rule
    assert str(info.value).startswith(f"message {index}: ")
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize(("chain", "error", "repaired", "issues"), REPAIRABLE)
def test_repair_applies_the_documented_fix(
    chain: list[Message],
    error: tuple[int, str, list[str]],
    repaired: list[Message],
    issues: list[tuple[int, str]],
) -> None:
    ast = ChainAST.from_messages(chain, repair=True)
    assert ast.to_messages() == repaired
    # The repaired chain parses strictly, to the same tree.
    assert ChainAST.from_messages(repaired) == ast
    assert ast.size == sum(m.size for m in repaired)


@pytest.mark.parametrize(("chain", "error", "repaired", "issues"), REPAIRABLE)
def test_diagnose_reports_each_issue(
    chain: list[Message],
    error: tuple[int, str, list[str]],
    repaired: list[Message],
    issues: list[tuple[int, str]],
) -> None:
    found = diagnose(chain)
    assert [(issue.index, issue.rule) for issue in found] == issues
    assert not any(issue.fatal for issue in found)
    # The first issue is the strict error, followed by what repair does about it.
    with pytest.raises(ChainError) as info:
        ChainAST.from_messages(chain)
    assert found[0].message.startswith(f"{info.value.detail}; repair ")
    assert str(found[0]).startswith(f"message {found[0].index}: [{found[0].rule}]")


# -- rules that repair cannot fix ----------------------------------------------------------------

FATAL = [
    pytest.param([A("x")], 0, "first-message", id="rule1-ai-first"),
    pytest.param([T("c1", "f", "r"), H("a")], 0, "first-message", id="rule1-tool-first"),
    pytest.param([A(call("c1")), T("c1", "f", "r")], 0, "first-message", id="rule1-ai-call-first"),
]

RULE2 = [
    pytest.param([S("s"), H("a"), A("x"), S("t")], 3, id="later-section"),
    pytest.param([H("a"), S("s")], 1, id="after-human"),
    pytest.param([S("s"), S("t")], 1, id="two-systems"),
]


@pytest.mark.parametrize(("chain", "index"), RULE2)
def test_a_late_system_message_is_an_error_in_strict_mode(chain: list[Message], index: int) -> None:
    with pytest.raises(ChainError) as info:
        ChainAST.from_messages(chain)
    assert (info.value.index, info.value.rule) == (index, "system-position")
    (issue,) = diagnose(chain)
    assert (issue.index, issue.rule, issue.fatal) == (index, "system-position", False)


def test_repair_merges_leading_system_messages_and_opens_sections_for_later_ones() -> None:
    """Several leading system messages (OpenAI, DeepSeek) become one header system
    message; one sent mid-chain (Anthropic, OpenAI) opens a section, in place."""
    merged = ChainAST.from_messages([S("s"), S("t"), H("a"), A("x")], repair=True)
    (section,) = merged.sections
    assert section.header.system_message == Message(
        role=Role.SYSTEM, parts=[TextPart(text="s"), TextPart(text="t")]
    )
    chain = [S("s"), H("a"), A("x"), S("t"), H("b"), A("y")]
    ast = ChainAST.from_messages(chain, repair=True)
    assert [s.header.system_message for s in ast.sections] == [chain[0], chain[3]]
    assert ast.to_messages() == chain
    assert ast.size == sum(m.size for m in chain)
    after_human = ChainAST.from_messages([H("a"), S("s"), H("b")], repair=True)
    assert after_human.to_messages() == [H("a"), S("s"), H("b")]


@pytest.mark.parametrize(("chain", "index", "rule"), FATAL)
@pytest.mark.parametrize(
    "repair", [pytest.param(False, id="strict"), pytest.param(True, id="repair")]
)
def test_fatal_rules_raise_even_with_repair(
    chain: list[Message], index: int, rule: str, repair: bool
) -> None:
    with pytest.raises(ChainError) as info:
        ChainAST.from_messages(chain, repair=repair)
    assert (info.value.index, info.value.rule) == (index, rule)


@pytest.mark.parametrize(("chain", "index", "rule"), FATAL)
def test_diagnose_reports_fatal_issues_without_raising(
    chain: list[Message], index: int, rule: str
) -> None:
    found = diagnose(chain)
    assert found[-1] == ChainIssue(index, rule, found[-1].message, fatal=True)
    assert found[-1].message


def test_diagnose_reports_every_repairable_issue_in_order() -> None:
    chain = [H("a"), H("b"), A("x"), S("s")]
    ChainAST.from_messages(chain, repair=True)
    found = diagnose(chain)
    assert [(i.index, i.rule, i.fatal) for i in found] == [
        (1, "consecutive-human", False),
        (3, "system-position", False),
    ]


def test_diagnose_finds_nothing_in_a_valid_chain() -> None:
    assert diagnose([S("s"), H("a"), A(call("c1")), T("c1", "f", "r"), A("ok")]) == []


# -- the tree a valid chain builds -----------------------------------------------------------


def test_sections_headers_and_pairs() -> None:
    chain = [
        S("s"),
        H("a"),
        A("thinking", call("c1"), call("c2")),
        T("c2", "f", "two"),
        T("c1", "f", "one"),
        A("done"),
        A(call("sum", SUMMARIZATION_TOOL_NAME), call("c3")),
        results(("c3", "f", "x"), ("sum", SUMMARIZATION_TOOL_NAME, "summary")),
        H("b"),
        A("reply"),
        H("c"),
    ]
    ast = ChainAST.from_messages(chain)
    assert len(ast.sections) == 3
    first, second, third = ast.sections
    assert first.header.system_message == S("s")
    assert first.header.human_message == H("a")
    assert [pair.type for pair in first.body] == [
        BodyPairType.REQUEST_RESPONSE,
        BodyPairType.COMPLETION,
        BodyPairType.SUMMARIZATION,
    ]
    assert first.body[0].tool_messages == (T("c2", "f", "two"), T("c1", "f", "one"))
    assert second.header.system_message is None
    assert second.header.human_message == H("b")
    assert [pair.type for pair in second.body] == [BodyPairType.COMPLETION]
    assert third.body == ()
    assert ast.to_messages() == chain
    assert ast.to_messages()[2] is chain[2]  # nodes hold the caller's messages


def test_rule3_human_joins_a_header_without_human() -> None:
    ast = ChainAST.from_messages([S("s"), H("a"), A("x")])
    assert len(ast.sections) == 1
    assert ast.sections[0].header.human_message == H("a")


def test_rule3_human_after_a_body_opens_a_section() -> None:
    ast = ChainAST.from_messages([S("s"), A("x"), H("a")])
    assert [s.header.messages() for s in ast.sections] == [[S("s")], [H("a")]]


def test_rule4_each_ai_message_opens_a_pair() -> None:
    ast = ChainAST.from_messages([H("a"), A("x"), A("y"), A(call("c")), T("c", "f", "r")])
    assert [len(pair.messages()) for pair in ast.sections[0].body] == [1, 1, 2]


def test_summarization_type_needs_the_first_call() -> None:
    late = A(call("c1"), call("s", SUMMARIZATION_TOOL_NAME))
    chain = [H("a"), late, T("c1", "f", "r"), T("s", SUMMARIZATION_TOOL_NAME, "x")]
    assert ChainAST.from_messages(chain).sections[0].body[0].type is BodyPairType.REQUEST_RESPONSE


def test_the_same_id_may_be_reused_by_later_pairs() -> None:
    chain = [H("a"), A(call("c1")), T("c1", "f", "one"), A(call("c1", "g")), T("c1", "g", "two")]
    assert ChainAST.from_messages(chain).to_messages() == chain


def test_empty_chain() -> None:
    ast = ChainAST.from_messages([])
    assert ast.sections == ()
    assert ast.size == 0
    assert ast.to_messages() == []
    assert diagnose([]) == []


# -- input forms ----------------------------------------------------------------------------


def _dict_chain() -> list[dict[str, Any]]:
    return [
        {"role": "system", "parts": [{"type": "text", "text": "sé"}]},
        {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"role": "user", "parts": [{"type": "binary", "mime_type": "a/b", "data": b"\x00"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "f", "arguments": "{}"},
                {"type": "tool_call", "id": "c2", "name": "g"},
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_call_id": "c1", "name": "f", "content": "r"}],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_call_id": "c7", "name": "h", "content": "?"}],
        },
    ]


@pytest.mark.parametrize(
    "repair", [pytest.param(False, id="strict"), pytest.param(True, id="repair")]
)
def test_dict_input_is_never_mutated(repair: bool) -> None:
    chain = _dict_chain()
    if not repair:
        del chain[2]  # the rest is still broken: strict parse raises
    snapshot = copy.deepcopy(chain)
    try:
        ChainAST.from_messages(chain, repair=repair)
    except ChainError:
        assert not repair
    diagnose(chain)
    assert chain == snapshot


def test_message_input_is_never_mutated() -> None:
    chain = [H("a"), H("b"), A(call("c1")), T("c9", "g", "x")]
    snapshot = copy.deepcopy(chain)
    ChainAST.from_messages(chain, repair=True)
    assert chain == snapshot
    assert [m.size for m in chain] == [m.size for m in snapshot]


def test_dicts_with_role_aliases_parse_like_messages() -> None:
    chain = [
        {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "parts": [{"type": "text", "text": "hello"}]},
    ]
    assert ChainAST.from_messages(chain).to_messages() == [H("hi"), A("hello")]


def test_any_iterable_is_accepted() -> None:
    chain = [H("a"), A("b")]
    assert ChainAST.from_messages(iter(chain)).to_messages() == chain
    assert ChainAST.from_messages(tuple(chain)).to_messages() == chain


@pytest.mark.parametrize(
    ("item", "field"),
    [
        pytest.param(
            {"role": "human", "parts": [{"type": "text"}]}, "parts.0.text.text", id="field"
        ),
        pytest.param({"role": "robot", "parts": []}, "role", id="role"),
        pytest.param({"parts": []}, "role", id="missing-role"),
        pytest.param("hello", "", id="not-a-dict"),
    ],
)
def test_malformed_message_raises_format_error(item: object, field: str) -> None:
    chain: list[Any] = [H("a"), A("b"), item]
    with pytest.raises(MessageFormatError) as info:
        ChainAST.from_messages(chain, repair=True)
    assert info.value.index == 2
    assert info.value.field == field
    assert isinstance(info.value, ChainError)
    with pytest.raises(MessageFormatError):
        diagnose(chain)


def test_chain_error_survives_pickling() -> None:
    with pytest.raises(ChainError) as info:
        ChainAST.from_messages([H("a"), H("b")])
    clone = pickle.loads(pickle.dumps(info.value))
    assert (clone.index, clone.rule, str(clone)) == (1, "consecutive-human", str(info.value))


@settings(max_examples=300)
@given(st.one_of(valid_chains(), mutilated_chains()), st.booleans())
@example([H("q"), A(call("a"), call("b")), T("a", "f", "1"), T("a", "f", "2")], True)
@example([H("q"), A(call("a")), T("a", "f", "1"), T("b", "f", "2")], True)
@example([H("q"), A(call("a")), H("r")], True)
@example(
    [H("q"), A(call("a")), T("a", "f", "1"), H("r"), H("s"), A(call("b")), T("a", "f", "2")], True
)
def test_the_fast_path_agrees_with_the_builder(chain: list[Message], repair: bool) -> None:
    # The parse reads a chain in one loop on local state while it breaks no rule, then
    # hands that state to the builder at the first item the builder must read. It must
    # give what the builder alone gives: the same tree, the same issues, the same error.
    def parse(fast: bool) -> tuple[ChainAST | ChainError, list[ChainIssue]]:
        issues: list[ChainIssue] = []
        builder = _ChainBuilder(repair, issues)
        try:
            return _built(chain, builder, _well_formed(chain, builder) if fast else 0), issues
        except ChainError as error:
            return error, issues

    (fast, fast_issues), (built, built_issues) = parse(True), parse(False)
    assert fast_issues == built_issues
    if isinstance(built, ChainError):
        assert isinstance(fast, ChainError)
        assert (fast.index, fast.rule, str(fast)) == (built.index, built.rule, str(built))
    else:
        assert fast == built
        assert isinstance(fast, ChainAST)
        assert fast.size == built.size
        assert parse_chain(chain, repair=repair) == built
