"""port(): repaired, id-remapped, reasoning-ported chains every target accepts, idempotently."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import (
    FAKE_GEMINI_SIGNATURE,
    FALLBACK_RESPONSE_CONTENT,
    IdTemplate,
    Message,
    MessageFormatError,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    UnknownProviderError,
)
from cast._lint import lint
from cast._port import OPENING_HUMAN_TEXT, SYSTEM_IN_TURN_TEXT, port
from cast.codecs import anthropic, claude_code, gemini, openai
from cast.constants import TOOL_BRIDGE_TEXT
from cast.parse import diagnose, parse_chain
from cast.providers import PROVIDERS, ProviderProfile, get_provider
from tests.conftest import CORPUS, corpus_files

TARGETS = sorted(PROVIDERS)
FAKE = FAKE_GEMINI_SIGNATURE.encode()
MISTRAL_ID = re.compile(r"[a-zA-Z0-9]{9}")


def dumps(messages: list[Message]) -> list[str]:
    return [m.model_dump_json() for m in messages]


def call(call_id: str, name: str = "lookup", arguments: str = "{}", **kw: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments, **kw)


def ai(*parts: Any) -> Message:
    return Message(role=Role.AI, parts=parts)


def tool(call_id: str, content: str = "ok", name: str = "lookup") -> Message:
    return Message.tool(call_id, name, content)


# -- encoders: each target's wire format, and what must hold on the wire ------------------


def _openai(**options: Any) -> Callable[[list[Message]], Any]:
    return lambda messages: openai.encode(messages, **options)


ENCODERS: dict[str, Callable[[list[Message]], Any]] = {
    "openai": _openai(tool_names=False),
    "openai-responses": _openai(tool_names=False),  # no Responses codec: the chat shape
    "groq": _openai(tool_names=False),
    "mistral": _openai(),
    "deepseek": _openai(reasoning_field="reasoning_content"),
    "kimi": _openai(reasoning_field="reasoning_content"),
    "ollama": _openai(reasoning_field="reasoning"),
    "vllm": _openai(reasoning_field="reasoning"),
    "anthropic": anthropic.encode,
    "bedrock": anthropic.encode,  # Converse has no codec; the Messages shape is the closest
    "gemini": gemini.encode,
    "vertex": lambda messages: gemini.encode(messages, include_ids=False),
}


def check_wire(target: str, payload: Any) -> None:
    """What the target would check on the wire, read from the encoded payload."""
    profile = get_provider(target)
    if profile.wire_format == "gemini":
        for content in payload["contents"]:
            calls = [p for p in content["parts"] if "functionCall" in p]
            if content["role"] == "model" and calls:
                assert "thoughtSignature" in calls[0], content
            for part in calls:
                assert ("id" in part["functionCall"]) is profile.ids_on_wire
        return
    if profile.wire_format in ("anthropic", "bedrock"):
        messages = payload["messages"]
        assert not messages or messages[0]["role"] == "user"
        seen: set[str] = set()
        for message in messages:
            if message["role"] != "assistant":
                continue
            for block in message["content"]:
                if block["type"] == "tool_use":
                    assert profile.accepts_id(block["id"]), block["id"]
                    assert block["id"] not in seen
                    seen.add(block["id"])
                if block["type"] == "thinking":
                    assert block["signature"]
        return
    previous = None
    for message in payload["messages"]:
        if message["role"] == "assistant":
            calls = message.get("tool_calls", [])
            for item in calls:
                assert profile.accepts_id(item["id"]), item["id"]
            if target in ("deepseek", "kimi") and calls:
                assert message.get("reasoning_content") is not None
            if target in ("openai", "groq", "mistral"):
                assert "reasoning_content" not in message
        if target == "mistral" and message["role"] == "user":
            assert previous != "tool"
        previous = message["role"]


def check_ported(out: list[Message], target: str, source: str | None) -> None:
    assert lint(out, target, source=source) == []
    assert lint(out, target) == []
    parse_chain(out)  # strict: raises on any structure problem
    check_wire(target, ENCODERS[target](out))


# -- unit behaviour -----------------------------------------------------------------------


def test_repair_answers_every_call_right_after_it_and_removes_orphans() -> None:
    chain = [
        Message.system("be brief"),
        Message.human("hi"),
        tool("stray", "before any call"),
        ai(call("c1"), call("c2")),
        tool("c1", "one"),
        tool("zz", "answers nothing"),
        tool("c1", "answered twice"),
        Message.human("and?"),
        tool("c2", "too late"),
        Message.ai("done"),
    ]
    out = port(chain, "openai")
    assert [m.role for m in out] == [
        Role.SYSTEM,
        Role.HUMAN,
        Role.AI,
        Role.TOOL,
        Role.TOOL,
        Role.HUMAN,
        Role.AI,
    ]
    assert [r.content for m in out for r in m.tool_results] == ["one", FALLBACK_RESPONSE_CONTENT]
    assert [r.tool_call_id for m in out for r in m.tool_results] == ["c1", "c2"]
    assert out[2].tool_calls == chain[3].tool_calls  # no call was invented for "zz"
    assert diagnose(chain)  # the input had problems ...
    assert diagnose(out) == []  # ... the output has none


@pytest.mark.parametrize(
    ("target", "kept", "renamed"),
    [
        pytest.param(
            "anthropic",
            ["toolu_01Pjr3rJaMRG6ZGtAByoNUZw", "call_abc"],
            ["functions.f:0"],
            id="anthropic",
        ),
        pytest.param("openai", ["functions.f:0", "call_abc"], ["x" * 41], id="openai-length"),
        pytest.param("mistral", ["aB3xK9mP2"], ["call_abc", "functions.f:0"], id="mistral"),
        pytest.param("bedrock", ["call_abc"], ["a.b", "y" * 65], id="bedrock"),
        pytest.param("kimi", ["a.b", "x" * 200], [], id="kimi-any"),
    ],
)
def test_only_ids_the_target_rejects_are_remapped(
    target: str, kept: list[str], renamed: list[str]
) -> None:
    ids = kept + renamed
    chain = [Message.human("go"), ai(*(call(i, name=f"f{n}") for n, i in enumerate(ids)))]
    chain += [tool(i, f"result {n}", name=f"f{n}") for n, i in enumerate(ids)]
    out = port(chain, target)
    new_ids = [c.id for c in out[1].tool_calls]
    profile = get_provider(target)
    assert new_ids[: len(kept)] == kept
    for old, new in zip(renamed, new_ids[len(kept) :], strict=True):
        assert new != old
        assert profile.accepts_id(new)
    results = [r for m in out[2:] for r in m.tool_results]
    assert [r.tool_call_id for r in results] == new_ids  # each result follows its call
    assert [r.content for r in results] == [f"result {n}" for n in range(len(ids))]


def test_mistral_ids_are_nine_alphanumerics_and_deterministic() -> None:
    chain = [
        Message.human("weather?"),
        ai(call("call_PTLP8xhu3uwZk4l3nlnrrJha", "get_weather")),
        tool("call_PTLP8xhu3uwZk4l3nlnrrJha", "sunny", "get_weather"),
    ]
    first = port(chain, "mistral")
    new_id = first[1].tool_calls[0].id
    assert MISTRAL_ID.fullmatch(new_id)
    assert first[2].tool_results[0].tool_call_id == new_id
    assert dumps(port(chain, "mistral")) == dumps(first)
    payload = openai.encode(first)
    assert payload["messages"][1]["tool_calls"][0]["id"] == new_id
    assert payload["messages"][2] == {
        "role": "tool",
        "tool_call_id": new_id,
        "content": "sunny",
        "name": "get_weather",
    }


def test_repeated_ids_are_made_unique_and_results_keep_answering_their_call() -> None:
    # tau-bench reuses ids across turns (see the corpus README).
    chain = [
        Message.human("two lookups"),
        ai(call("call_1", "first")),
        tool("call_1", "first result", "first"),
        ai(call("call_1", "second")),
        tool("call_1", "second result", "second"),
    ]
    for target in ("openai", "anthropic", "gemini"):
        out = port(chain, target)
        first_id, second_id = out[1].tool_calls[0].id, out[3].tool_calls[0].id
        assert first_id == "call_1"
        assert second_id != first_id
        assert out[2].tool_results[0].tool_call_id == first_id
        assert out[4].tool_results[0] == ToolResult(
            tool_call_id=second_id, name="second", content="second result"
        )


SIGNED = Reasoning(content="thinking about it", signature=b"EqQBCkgIARABGAIiQL")
UNSIGNED = Reasoning(content="plain reasoning")


def reasoning_chain() -> list[Message]:
    return [
        Message.human("q"),
        ai(TextPart(text="", reasoning=SIGNED), TextPart(text="let me look"), call("c1")),
        tool("c1"),
        ai(TextPart(text="answer", reasoning=UNSIGNED)),
    ]


def reasonings(messages: list[Message]) -> list[Reasoning]:
    return [
        p.reasoning
        for m in messages
        for p in m.parts
        if isinstance(p, TextPart | ToolCall) and p.reasoning is not None
    ]


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        pytest.param("anthropic", "anthropic", [SIGNED], id="anthropic-same-keeps-signed"),
        pytest.param("anthropic", "gemini", [], id="anthropic-foreign-drops"),
        pytest.param("anthropic", None, [], id="anthropic-unknown-drops"),
        pytest.param("vllm", "vllm", [SIGNED, UNSIGNED], id="vllm-same-keeps"),
        pytest.param("vllm", "deepseek", [], id="vllm-foreign-drops"),
        pytest.param("openai", "openai", [], id="openai-strips-always"),
        pytest.param("mistral", "mistral", [], id="mistral-strips-always"),
        pytest.param(
            "gemini",
            "anthropic",
            [Reasoning(signature=FAKE)],
            id="gemini-foreign-fake-sig",
        ),
        pytest.param(
            "deepseek",
            "anthropic",
            [Reasoning(), Reasoning()],
            id="deepseek-empty-content",
        ),
        pytest.param("kimi", "openai", [Reasoning()], id="kimi-tool-call-messages"),
        pytest.param(
            "deepseek",
            "deepseek",
            [SIGNED, UNSIGNED],
            id="deepseek-same-keeps",
        ),
    ],
)
def test_reasoning_is_kept_only_for_the_same_source(
    target: str, source: str | None, expected: list[Reasoning]
) -> None:
    chain = reasoning_chain()
    out = port(chain, target, source=source)
    assert reasonings(out) == expected
    check_ported(out, target, source)


def test_reasoning_only_text_parts_go_with_their_reasoning() -> None:
    out = port(reasoning_chain(), "openai", source="anthropic")
    assert out[1].parts == (TextPart(text="let me look"), call("c1"))


def test_gemini_signs_the_first_call_of_every_ai_turn() -> None:
    theirs = Reasoning(signature=b"CiQB0e2Kb8kz")
    chain = [
        Message.human("q"),
        ai(call("a"), call("b")),  # parallel calls: only the first is signed
        tool("a"),
        tool("b"),
        ai(TextPart(text="next"), call("c", reasoning=theirs)),  # Gemini's own signature
        tool("c"),
        Message.ai("done"),
    ]
    out = port(chain, "gemini")
    assert [c.reasoning for c in out[1].tool_calls] == [Reasoning(signature=FAKE), None]
    assert out[4].tool_calls[0].reasoning == Reasoning(signature=FAKE)
    assert port(chain, "gemini", source="gemini")[4].tool_calls[0].reasoning == theirs
    contents = gemini.encode(out)["contents"]
    assert contents[1]["parts"][0]["thoughtSignature"] == FAKE_GEMINI_SIGNATURE
    assert "thoughtSignature" not in contents[1]["parts"][1]


def test_deepseek_gets_empty_reasoning_content_on_tool_call_turns() -> None:
    chain = [
        Message.human("q"),
        ai(call("a")),
        tool("a"),
        Message.ai("answer after tools"),
        Message.human("thanks"),
        Message.ai("no tools in this turn"),
    ]
    wire = openai.encode(port(chain, "deepseek"))["messages"]
    assert wire[1]["reasoning_content"] == ""
    assert wire[1]["content"] is None
    assert wire[3]["reasoning_content"] == ""  # same turn as a tool call
    assert "reasoning_content" not in wire[5]
    kimi = openai.encode(port(chain, "kimi"))["messages"]
    assert kimi[1]["reasoning_content"] == ""
    assert "reasoning_content" not in kimi[3]  # Kimi asks it of tool-call messages only


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param('{"city": "Paris"}', '{"city": "Paris"}', id="valid-kept"),
        pytest.param('{"text": "a\nb"}', '{"text": "a\\nb"}', id="raw-newline-escaped"),
        pytest.param("", "{}", id="empty"),
        pytest.param("{not json", "{}", id="invalid"),
        pytest.param("[1, 2]", "{}", id="array"),
        pytest.param('{"x": NaN}', "{}", id="nan"),
        pytest.param("null", "{}", id="null"),
    ],
)
def test_arguments_become_json_objects(arguments: str, expected: str) -> None:
    chain = [Message.human("q"), ai(call("c1", arguments=arguments)), tool("c1")]
    for target in ("openai", "anthropic", "gemini"):
        out = port(chain, target)
        assert out[1].tool_calls[0].arguments == expected
        ENCODERS[target](out)


def test_mistral_gets_an_ai_message_between_tool_and_human() -> None:
    chain = [Message.human("q"), ai(call("a")), tool("a"), Message.human("more")]
    out = port(chain, "mistral")
    assert [m.role for m in out] == [Role.HUMAN, Role.AI, Role.TOOL, Role.AI, Role.HUMAN]
    assert out[3] == Message.ai(TOOL_BRIDGE_TEXT)
    assert [m.role for m in port(chain, "openai")] == [m.role for m in chain]


@pytest.mark.parametrize("target", ["anthropic", "bedrock", "gemini", "vertex"])
def test_targets_that_open_with_a_human_message_get_one(target: str) -> None:
    chain = [Message.system("sys"), Message.ai("Hello! How can I help?"), Message.human("hi")]
    out = port(chain, target)
    assert out[:3] == [chain[0], Message.human(OPENING_HUMAN_TEXT), chain[1]]
    assert port(chain, "openai") == chain


def test_port_is_idempotent_byte_for_byte_and_keeps_valid_chains() -> None:
    chain = [
        Message.system("s"),
        Message.human("q"),
        ai(TextPart(text="hm", reasoning=SIGNED), call("toolu_abc", arguments='{"a": 1}')),
        tool("toolu_abc"),
        Message.ai("done"),
    ]
    once = port(chain, "anthropic", source="anthropic")
    assert once == chain  # nothing to fix: the chain comes back as it was
    for target in TARGETS:
        first = port(chain, target)
        assert dumps(port(first, target)) == dumps(first)


def test_port_accepts_dicts_and_never_changes_its_input() -> None:
    chain = [
        {"role": "user", "parts": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "a.b", "name": "f", "arguments": "{"}],
        },
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_call_id": "a.b", "name": "f", "content": "r"},
            ],
        },
    ]
    before = copy.deepcopy(chain)
    out = port(chain, "anthropic")
    assert chain == before
    assert out[1].tool_calls[0].arguments == "{}"
    messages = [Message.model_validate(item) for item in chain]
    frozen = dumps(messages)
    port(messages, "mistral")
    assert dumps(messages) == frozen


@pytest.mark.parametrize(
    ("chain", "error"),
    [
        pytest.param([{"role": "user", "parts": "nope"}], MessageFormatError, id="bad-dict"),
    ],
)
def test_port_refuses_what_no_repair_fixes(chain: list[Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        port(chain, "openai")


@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_opening_with_an_ai_message_gets_an_opening_human(target: str) -> None:
    """Replays of earlier turns (recorded requests open with an assistant message):
    a placeholder human message opens them; tool messages before any call go."""
    chain = [Message.tool("c0", "f", "stray"), Message.ai("Hello!"), Message.human("hi")]
    out = port(chain, target)
    assert out[:2] == [Message.human(OPENING_HUMAN_TEXT), chain[1]]
    assert lint(out, target) == []


def test_system_messages_after_the_first_stay_in_their_place() -> None:
    chain = [
        Message.system("a"),
        Message.system("b"),
        Message.human("q"),
        Message.ai("x"),
        Message.system("late"),
        Message.human("r"),
    ]
    merged = Message(role=Role.SYSTEM, parts=[TextPart(text="a"), TextPart(text="b")])
    for target in ("openai", "anthropic", "openai-responses", "deepseek"):
        out = port(chain, target)
        assert out == [merged, *chain[2:]]
        assert lint(out, target) == []
    for target in ("bedrock", "gemini", "mistral"):
        out = port(chain, target)
        assert out[0] == merged  # never moved ahead of the user's task
        in_turn = Message(
            role=Role.HUMAN,
            parts=[TextPart(text=SYSTEM_IN_TURN_TEXT), TextPart(text="late"), TextPart(text="r")],
        )
        assert out[1:] == [chain[2], chain[3], in_turn]
        assert lint(out, target) == []
        assert port(out, target) == out


def test_a_system_reminder_after_the_question_stays_after_it() -> None:
    """aider's shape: every request ends with a system message after the user's."""
    chain = [Message.system("rules"), Message.human("fix foo"), Message.system("reply in diffs")]
    for target in PROVIDERS:
        out = port(chain, target)
        texts = "\n".join(m.text for m in out)
        assert texts.index("fix foo") < texts.index("reply in diffs"), target
        assert lint(out, target) == [], target


def test_unknown_targets_and_sources_are_errors() -> None:
    with pytest.raises(UnknownProviderError, match="mistral"):
        port([Message.human("q")], "mistrall")
    with pytest.raises(UnknownProviderError):
        port([Message.human("q")], "openai", source="nobody")


def test_port_to_an_unregistered_profile() -> None:
    digits = ProviderProfile(
        "test-digits", "openai", IdTemplate("{r:6:d}"), id_pattern=r"[0-9]{6}", max_id_length=6
    )
    chain = [Message.human("q"), ai(call("call_1")), tool("call_1")]
    out = port(chain, digits)
    assert re.fullmatch(r"[0-9]{6}", out[1].tool_calls[0].id)
    assert lint(out, digits) == []


def test_empty_chain() -> None:
    assert port([], "gemini") == []


# -- the corpus: every chain, every pair of providers -------------------------------------


CHAINS = corpus_files(CORPUS, "*/*.json")


@cache
def load_corpus(path: Path) -> tuple[list[Message], str]:
    """A corpus chain and the provider that produced it."""
    data = json.loads(path.read_text())
    if path.parent.name == "openai_taubench":
        return openai.decode(data), "openai"
    return claude_code.decode(data), "anthropic"


@pytest.mark.skipif(not CHAINS, reason="shared corpus not found next to the repository")
@pytest.mark.parametrize("path", CHAINS, ids=lambda p: p.stem)
def test_corpus_ports_between_every_pair_of_providers(path: Path) -> None:
    chain, origin = load_corpus(path)
    for source in TARGETS:
        # The chain as ``source`` would hold it, then ported on to every target.
        held = port(chain, source, source=origin)
        check_ported(held, source, origin)
        for target in TARGETS:
            out = port(held, target, source=source)
            check_ported(out, target, source)
            assert dumps(port(out, target, source=source)) == dumps(out)


@pytest.mark.skipif(not CHAINS, reason="shared corpus not found next to the repository")
def test_corpus_ids_survive_when_the_target_accepts_them() -> None:
    for path in CHAINS:
        chain, origin = load_corpus(path)
        out = port(chain, origin, source=origin)
        assert len(out) <= len(chain) + 1
        kept = [c.id for m in out for c in m.tool_calls]
        original = [c.id for m in chain for c in m.tool_calls]
        if len(set(original)) == len(original):
            assert kept == original, path.name


# -- properties ---------------------------------------------------------------------------

IDS = st.one_of(
    st.sampled_from(
        [
            "call_PTLP8xhu3uwZk4l3nlnrrJha",
            "toolu_01Pjr3rJaMRG6ZGtAByoNUZw",
            "aB3xK9mP2",
            "functions.get_weather:0",
            "chatcmpl-tool-f227417118b24070b61554cc4416aba9",
            "",
            "a.b:c",
            "with space",
            "x" * 70,
            "dup",
        ]
    ),
    st.text(max_size=12),
)
REASONING = st.one_of(
    st.none(),
    st.builds(
        Reasoning,
        content=st.sampled_from(["", "thinking"]),
        signature=st.sampled_from([b"", b"sig-bytes", FAKE]),
    ),
)
ARGUMENTS = st.sampled_from(
    ['{"a": 1}', "{}", "", "not json", "[1]", '{"t": "a\tb"}', '{"x": NaN}', "null"]
)
NAMES = st.sampled_from(["lookup", "get_weather", "f"])


@st.composite
def ai_turn(draw: st.DrawFn) -> list[Message]:
    """An AI message and (most of the time) the results of its calls."""
    parts: list[Any] = []
    if draw(st.booleans()):
        parts.append(
            TextPart(
                text=draw(st.sampled_from(["", "ok", "let me see"])), reasoning=draw(REASONING)
            )
        )
    calls = [
        ToolCall(
            id=draw(IDS), name=draw(NAMES), arguments=draw(ARGUMENTS), reasoning=draw(REASONING)
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    parts.extend(calls)
    results = [Message.tool(c.id, c.name, f"result of {c.id}") for c in calls]
    if results and draw(st.booleans()):
        results = draw(st.permutations(results))
    return [Message(role=Role.AI, parts=tuple(parts)), *results]


@st.composite
def chains(draw: st.DrawFn) -> list[Message]:
    chain: list[Message] = []
    if draw(st.booleans()):
        chain.append(Message.system("system prompt"))
    for n in range(draw(st.integers(1, 4))):
        if n or draw(st.booleans()) or not chain:
            chain.append(Message.human(f"question {n}"))
        for _ in range(draw(st.integers(0, 3))):
            chain.extend(draw(ai_turn()))
    return chain


@st.composite
def mutilated_chains(draw: st.DrawFn) -> list[Message]:
    """A chain with messages deleted, repeated, swapped or inserted (never the first, so
    the chain stays one that repair can fix)."""
    chain = draw(chains())
    for _ in range(draw(st.integers(0, 4))):
        if len(chain) < 2:
            break
        at = draw(st.integers(1, len(chain) - 1))
        action = draw(st.sampled_from(["delete", "repeat", "swap", "orphan", "human"]))
        if action == "delete":
            del chain[at]
        elif action == "repeat":
            chain.insert(at, chain[at])
        elif action == "swap" and at + 1 < len(chain):
            chain[at], chain[at + 1] = chain[at + 1], chain[at]
        elif action == "orphan":
            chain.insert(at, Message.tool(draw(IDS), "lookup", "orphan"))
        elif action == "human":
            chain.insert(at, Message.human("interjection"))
    return chain


@given(
    chain=st.one_of(chains(), mutilated_chains()),
    target=st.sampled_from(TARGETS),
    source=st.one_of(st.none(), st.sampled_from(TARGETS)),
)
def test_ported_chains_lint_clean_and_port_is_idempotent(
    chain: list[Message], target: str, source: str | None
) -> None:
    out = port(chain, target, source=source)
    check_ported(out, target, source)
    assert dumps(port(out, target, source=source)) == dumps(out)
    assert dumps(port(chain, target, source=source)) == dumps(out)  # deterministic


@given(chain=st.one_of(chains(), mutilated_chains()), target=st.sampled_from(TARGETS))
def test_port_between_providers_in_sequence(chain: list[Message], target: str) -> None:
    """A chain that moves from provider to provider stays valid at every stop."""
    current, source = chain, None
    for stop in (target, "mistral", "anthropic", "gemini", target):
        current = port(current, stop, source=source)
        check_ported(current, stop, source)
        source = stop
