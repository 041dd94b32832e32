"""What a summary looks like to a provider that refuses tool calls in a request that
declares no tools (Anthropic, Bedrock): ``cast.lint`` reports such a request when told
the declared tools, and a Compactor aimed at those providers writes its summaries as
plain-text turns, not as a call of the (never declared) summary tool."""

from __future__ import annotations

import pytest

from cast import SUMMARIZATION_TOOL_NAME, Message, ToolCall, ToolResult, get_provider, lint
from cast.providers import Rule
from csum import Compactor

TOOL_ROUNDS = [
    m
    for i in range(6)
    for m in (
        Message.human(f"check host {i}"),
        Message.ai("", ToolCall(id=f"call_{i}", name="ping", arguments="{}")),
        Message.tool(f"call_{i}", "ping", f"host {i}: ok " * 300),
        Message.ai(f"host {i} is up"),
    )
]
CHAT_ROUNDS = [
    m
    for i in range(6)
    for m in (Message.human(f"question {i}: " + "why? " * 300), Message.ai(f"because {i}. " * 200))
]
CHAIN = [Message.system("You watch hosts."), *TOOL_ROUNDS, *CHAT_ROUNDS]


def tool_parts(messages: list[Message]) -> list[object]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolCall | ToolResult)]


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("anthropic", "Requests which include tool_use or tool_result blocks must define tools."),
        ("bedrock", "The toolConfig field must be defined when using toolUse and toolResult"),
    ],
)
def test_lint_knows_tool_history_needs_tools(target: str, text: str) -> None:
    found = lint(CHAIN, target, tools=[])
    assert [v.rule for v in found] == [Rule.TOOLS_NOT_DECLARED]
    assert found[0].index == 2
    assert found[0].message.startswith(text)
    assert found[0].verbatim
    assert lint(CHAIN, target) == []  # tools not given: nothing assumed
    assert lint(CHAIN, target, tools=["ping"]) == []
    assert get_provider(target).tools_with_tool_history


@pytest.mark.parametrize("target", ["openai", "openai-responses", "gemini", "vertex", "mistral"])
def test_providers_that_take_tool_history_without_tools(target: str) -> None:
    assert not get_provider(target).tools_with_tool_history
    assert Rule.TOOLS_NOT_DECLARED not in {v.rule for v in lint(CHAIN, target, tools=[])}


def test_tools_must_be_names() -> None:
    with pytest.raises(TypeError, match="iterable of tool names"):
        lint(CHAIN, "anthropic", tools="ping")


@pytest.mark.parametrize("target", ["anthropic", "bedrock"])
def test_the_summary_is_a_text_turn_where_a_tool_call_could_be_refused(target: str) -> None:
    """A chain whose tool rounds are all summarized used to keep a call of the
    undeclared summary tool: sent with no tools, Anthropic and Bedrock refuse it."""
    out = Compactor(budget=16_000, target=target).compact_sync(CHAIN)
    assert sum(m.size for m in out) <= 16_000
    assert tool_parts(out) == []  # the tool rounds were all summarized, as text
    assert lint(out, target, tools=[]) == []
    assert any("host 0" in m.text or "ping" in m.text for m in out)


def test_elsewhere_the_summary_stays_the_reference_pair() -> None:
    for target in (None, "openai"):
        out = Compactor(budget=16_000, target=target).compact_sync(CHAIN)
        names = [p.name for p in tool_parts(out) if isinstance(p, ToolCall)]
        assert names == [SUMMARIZATION_TOOL_NAME]
    untargeted = Compactor(budget=16_000).compact_sync(CHAIN)
    assert [v.rule for v in lint(untargeted, "anthropic", tools=[])] == [Rule.TOOLS_NOT_DECLARED]
