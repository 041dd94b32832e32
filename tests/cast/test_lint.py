"""lint(): every problem a provider would reject, with its index, rule and the provider's text."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import (
    FAKE_GEMINI_SIGNATURE,
    Message,
    MessageFormatError,
    Reasoning,
    Role,
    TextPart,
    UnknownProviderError,
)
from cast import ToolCall as Call
from cast._lint import Violation, lint
from cast._port import port
from cast.providers import PROVIDERS, RULES, Rule, get_provider

FAKE = FAKE_GEMINI_SIGNATURE.encode()
LONG_ID = "call_PTLP8xhu3uwZk4l3nlnrrJha"


def ai(*parts: Any) -> Message:
    return Message(role=Role.AI, parts=parts)


def tool(call_id: str, name: str = "f") -> Message:
    return Message.tool(call_id, name, "result")


def found(violations: list[Violation]) -> list[tuple[int | None, str]]:
    return [(v.index, v.rule) for v in violations]


GOOD = [
    Message.system("sys"),
    Message.human("q"),
    ai(TextPart(text="looking"), Call(id="abc123XYZ", name="f")),
    tool("abc123XYZ"),
    Message.ai("done"),
]


@pytest.mark.parametrize("target", sorted(PROVIDERS))
def test_a_valid_chain_has_no_violations(target: str) -> None:
    chain = port(GOOD, target)
    assert lint(chain, target) == []


# fmt: off
@pytest.mark.parametrize(
    ("chain", "target", "source", "index", "rule", "text"),
    [
        pytest.param(
            [Message.human("q"), ai(Call(id="c1", name="f"), Call(id="c2", name="g")), tool("c1")],
            "openai", None, 1, Rule.MISSING_TOOL_RESULT,
            "The following tool_call_ids did not have response messages: c2",
            id="openai-missing-result",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="toolu_1", name="f")), Message.human("again")],
            "anthropic", None, 1, Rule.MISSING_TOOL_RESULT,
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1.",
            id="anthropic-missing-result",
        ),
        pytest.param(
            [Message.human("q"), tool("zz")], "openai", None, 1, Rule.ORPHAN_TOOL_MESSAGE,
            "messages with role 'tool' must be a response to a preceeding message",
            id="openai-orphan",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="a", name="f")), tool("a"), tool("b")],
            "anthropic", None, 3, Rule.UNKNOWN_TOOL_RESULT,
            "messages.3.content.0: unexpected `tool_use_id` found in `tool_result` blocks: b.",
            id="anthropic-unknown-result",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="a", name="f")), tool("a"), tool("a")],
            "gemini", None, 3, Rule.DUPLICATE_TOOL_RESULT,
            "function response turn comes immediately after a function call turn",
            id="gemini-duplicate-result",
        ),
        pytest.param(
            [Message.human("q"), Message.human("q2")], "bedrock", None, 1,
            Rule.CONSECUTIVE_HUMAN, RULES[Rule.CONSECUTIVE_HUMAN].text,
            id="consecutive-human",
        ),
        pytest.param(
            [Message.ai("hi")], "bedrock", None, 0, Rule.FIRST_MESSAGE,
            RULES[Rule.FIRST_MESSAGE].text, id="first-message",
        ),
        pytest.param(
            [Message.human("q"), Message.ai("a"), Message.system("late")], "bedrock", None, 2,
            Rule.SYSTEM_POSITION, "a system message may only open", id="bedrock-late-system",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id=LONG_ID, name="f")), tool(LONG_ID)],
            "mistral", None, 1, Rule.TOOL_CALL_ID_TOO_LONG,
            f"Tool call id was {LONG_ID} but must be a-z, A-Z, 0-9, with a length of 9.",
            id="mistral-long-id",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="abc_12345", name="f")), tool("abc_12345")],
            "mistral", None, 1, Rule.TOOL_CALL_ID_FORMAT,
            "Tool call id was abc_12345 but must be a-z, A-Z, 0-9, with a length of 9.",
            id="mistral-bad-chars",
        ),
        pytest.param(
            [Message.human("q"), ai(TextPart(text="x"), Call(id="x" * 51, name="f")),
             tool("x" * 51)],
            "openai", None, 1, Rule.TOOL_CALL_ID_TOO_LONG,
            "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with "
            "maximum length 40, but got a string with length 51 instead.",
            id="openai-long-id",
        ),
        pytest.param(
            [Message.human("q"), ai(TextPart(text="x"), Call(id="functions.f:0", name="f")),
             tool("functions.f:0")],
            "anthropic", None, 1, Rule.TOOL_CALL_ID_FORMAT,
            "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
            id="anthropic-kimi-id",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="t1", name="f")), tool("t1"),
             ai(Call(id="t1", name="g")), tool("t1", "g")],
            "anthropic", None, 3, Rule.DUPLICATE_TOOL_CALL_ID,
            "messages.3.content.0: `tool_use` ids must be unique", id="anthropic-duplicate-id",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="a", name="get_weather")), tool("a", "get_weather")],
            "gemini", None, 1, Rule.MISSING_THOUGHT_SIGNATURE,
            "Function call is missing a thought_signature in functionCall parts.",
            id="gemini-missing-signature",
        ),
        pytest.param(
            [Message.human("q"),
             ai(Call(id="a", name="f", reasoning=Reasoning(signature=b"EqQBCkgIARAB"))),
             tool("a")],
            "gemini", "anthropic", 1, Rule.FOREIGN_SIGNATURE, "Corrupted thought signature.",
            id="gemini-foreign-signature",
        ),
        pytest.param(
            [Message.human("q"),
             ai(TextPart(text="", reasoning=Reasoning(content="t", signature=b"CiQB0e2K")),
                Call(id="a", name="f")),
             tool("a")],
            "anthropic", "gemini", 1, Rule.FOREIGN_SIGNATURE,
            "messages.1.content.0: Invalid `signature` in `thinking` block",
            id="anthropic-foreign-signature",
        ),
        pytest.param(
            [Message.human("q"), ai(TextPart(text="a", reasoning=Reasoning(content="t")))],
            "anthropic", "anthropic", 1, Rule.UNSIGNED_REASONING,
            "messages.1.content.0.thinking.signature: Field required",
            id="anthropic-unsigned-thinking",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="a", name="f")), tool("a")],
            "deepseek", None, 1, Rule.MISSING_REASONING_CONTENT,
            "Missing `reasoning_content` field in the assistant message at message index 1.",
            id="deepseek-missing-reasoning",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="a", name="f")), tool("a"), Message.ai("answer")],
            "deepseek", None, 3, Rule.MISSING_REASONING_CONTENT,
            "at message index 3", id="deepseek-missing-reasoning-same-turn",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="a", name="f")), tool("a")],
            "kimi", None, 1, Rule.MISSING_REASONING_CONTENT,
            "thinking is enabled but reasoning_content is missing in assistant tool call "
            "message at index 1",
            id="kimi-missing-reasoning",
        ),
        pytest.param(
            [Message.human("q"), ai(TextPart(text="a", reasoning=Reasoning(content="t")))],
            "groq", None, 1, Rule.UNSUPPORTED_REASONING,
            "property 'reasoning_content' is unsupported", id="groq-reasoning",
        ),
        pytest.param(
            [Message.human("q"), ai(Call(id="abc123XYZ", name="f")), tool("abc123XYZ"),
             Message.human("more")],
            "mistral", None, 3, Rule.TOOL_THEN_HUMAN,
            "Unexpected role 'user' after role 'tool'", id="mistral-tool-then-user",
        ),
        pytest.param(
            [Message.system("s"), Message.ai("hello"), Message.human("hi")],
            "bedrock", None, 1, Rule.FIRST_TURN_NOT_HUMAN,
            "A conversation must start with a user message.", id="bedrock-first-turn",
        ),
    ],
)
def test_lint_finds_each_planted_problem(
    chain: list[Message], target: str, source: str | None, index: int, rule: Rule, text: str
) -> None:
    violations = lint(chain, target, source=source)
    matching = [v for v in violations if (v.index, v.rule) == (index, rule)]
    assert matching, violations
    assert text in matching[0].message
    assert matching[0].provider == target
    assert matching[0].verbatim is (rule in get_provider(target).errors)
    if rule not in (Rule.FIRST_MESSAGE, Rule.SYSTEM_POSITION):  # port refuses those two
        assert lint(port(chain, target, source=source), target, source=source) == []
# fmt: on


def test_violations_come_in_message_order_with_fields() -> None:
    chain = [
        Message.human("q"),
        ai(Call(id="bad id 1", name="f"), Call(id="abc123XYZ", name="g")),
        tool("bad id 1"),
        Message.human("and"),
    ]
    violations = lint(chain, "mistral")
    assert found(violations) == [
        (1, Rule.MISSING_TOOL_RESULT),
        (1, Rule.TOOL_CALL_ID_FORMAT),
        (3, Rule.TOOL_THEN_HUMAN),
    ]
    assert violations[1].field == "parts[0].id"
    assert str(violations[2]) == (
        "message 3: [mistral:tool-then-human] Unexpected role 'user' after role 'tool'"
    )


def test_signatures_are_trusted_without_a_source() -> None:
    chain = [
        Message.human("q"),
        ai(Call(id="a", name="f", reasoning=Reasoning(signature=b"theirs"))),
        tool("a"),
    ]
    assert lint(chain, "gemini") == []
    assert lint(chain, "gemini", source="gemini") == []
    assert found(lint(chain, "gemini", source="openai")) == [(1, Rule.FOREIGN_SIGNATURE)]
    fake = [chain[0], ai(Call(id="a", name="f", reasoning=Reasoning(signature=FAKE))), chain[2]]
    assert lint(fake, "vertex", source="anthropic") == []


def test_lint_never_raises_for_chain_problems_and_never_changes_its_input() -> None:
    chain = [
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_call_id": "x", "name": "f", "content": "r"},
            ],
        },
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "", "name": "f"}]},
    ]
    before = copy.deepcopy(chain)
    for target in PROVIDERS:
        violations = lint(chain, target)
        assert (0, Rule.FIRST_MESSAGE) in found(violations)
    assert chain == before


def test_lint_raises_for_malformed_messages_and_unknown_providers() -> None:
    with pytest.raises(MessageFormatError) as caught:
        lint([Message.human("q"), {"role": "nobody", "parts": []}], "openai")
    assert caught.value.index == 1
    with pytest.raises(UnknownProviderError):
        lint([Message.human("q")], "openia")


def test_every_rule_has_a_default_text() -> None:
    assert all(RULES[rule].text for rule in Rule)


# -- property: a planted problem is found at its index --------------------------------------


@st.composite
def valid_chains(draw: st.DrawFn) -> list[Message]:
    """Chains valid for every provider: unique 9-alphanumeric ids, no reasoning."""
    counter = iter(range(10**6))
    chain: list[Message] = [Message.system("s")]
    for n in range(draw(st.integers(1, 4))):
        chain.append(Message.human(f"q{n}"))
        for _ in range(draw(st.integers(1, 3))):
            ids = [f"id{next(counter):07d}" for _ in range(draw(st.integers(0, 2)))]
            calls = [Call(id=i, name="f") for i in ids]
            chain.append(ai(TextPart(text="t"), *calls))
            chain.extend(tool(i) for i in ids)
        chain.append(Message.ai("answer"))
    return chain


PLANTS = ["drop-result", "orphan", "bad-id", "duplicate-id", "human-after-tool"]


def renamed(chain: list[Message], at: int, old: str, new: str) -> list[Message]:
    """The chain with the call ``old`` of message ``at`` and its result renamed ``new``."""

    def rename(part: Any) -> Any:
        if isinstance(part, Call) and part.id == old:
            return part.model_copy(update={"id": new})
        if getattr(part, "tool_call_id", None) == old:
            return part.model_copy(update={"tool_call_id": new})
        return part

    return [
        m.model_copy(update={"parts": tuple(map(rename, m.parts))}) if i >= at else m
        for i, m in enumerate(chain)
    ]


@given(chain=valid_chains(), plant=st.sampled_from(PLANTS), data=st.data())
def test_a_planted_problem_is_found_at_its_index(
    chain: list[Message], plant: str, data: st.DataObject
) -> None:
    assert lint(chain, "mistral") == []
    with_calls = [i for i, m in enumerate(chain) if m.role is Role.AI and m.tool_calls]
    tools = [i for i, m in enumerate(chain) if m.role is Role.TOOL]
    humans = [i for i, m in enumerate(chain) if m.role is Role.HUMAN]
    if plant == "drop-result" and tools:
        at = data.draw(st.sampled_from(tools))
        owner = max(i for i in with_calls if i < at)
        del chain[at]
        expected, target = (owner, Rule.MISSING_TOOL_RESULT), "openai"
    elif plant == "orphan":
        at = data.draw(st.sampled_from(humans)) + 1
        chain.insert(at, tool("nobody"))
        expected, target = (at, Rule.ORPHAN_TOOL_MESSAGE), "anthropic"
    elif plant == "bad-id" and with_calls:
        at = data.draw(st.sampled_from(with_calls))
        old = chain[at].tool_calls[0].id
        chain = renamed(chain, at, old, old[:-1] + "_")  # same length, bad character
        expected, target = (at, Rule.TOOL_CALL_ID_FORMAT), "mistral"
    elif plant == "duplicate-id" and len(with_calls) >= 2:
        first, at = with_calls[0], with_calls[-1]
        chain = renamed(chain, at, chain[at].tool_calls[0].id, chain[first].tool_calls[0].id)
        expected, target = (at, Rule.DUPLICATE_TOOL_CALL_ID), "anthropic"
    elif plant == "human-after-tool" and tools:
        at = data.draw(st.sampled_from(tools)) + 1
        chain.insert(at, Message.human("interrupt"))
        expected, target = (at, Rule.TOOL_THEN_HUMAN), "mistral"
    else:
        return
    assert expected in found(lint(chain, target))
    assert lint(port(chain, target), target) == []
