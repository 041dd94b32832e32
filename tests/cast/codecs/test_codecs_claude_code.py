"""Claude Code logs: every corpus session through ``decode``, the
merging rules, error locations and a Hypothesis round trip through ``encode``."""

from __future__ import annotations

import copy
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import anthropic, claude_code, detect_format, get_codec
from cast.errors import CodecError
from cast.messages import Message, Role, TextPart, ToolCall, ToolResult
from cast.parse import parse_chain
from tests.cast.codecs.test_codecs_anthropic import (
    anthropic_ai,
    anthropic_human,
    anthropic_tool,
    with_call_names,
)
from tests.conftest import CLAUDE_CODE, corpus_files

SESSIONS = corpus_files(CLAUDE_CODE)


def _count(entries: list[dict[str, Any]], kind: str) -> int:
    return sum(
        1
        for entry in entries
        if isinstance(entry["content"], list)
        for block in entry["content"]
        if block["type"] == kind
    )


def _without_log_fields(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The merged messages minus what the codec documents as not carried."""
    out = copy.deepcopy(messages)
    for message in out:
        if isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("is_error") is False:
                    block.pop("is_error")  # tool_result: false is the default, not written
    return out


@pytest.mark.skipif(not SESSIONS, reason="shared corpus not found next to the repository")
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in SESSIONS])
def test_corpus_session(path: Path) -> None:
    entries = json.loads(path.read_text(encoding="utf-8"))
    before = copy.deepcopy(entries)
    messages = claude_code.decode(entries)
    assert entries == before  # never mutated
    assert detect_format(entries) == "claude_code"

    # every call and every result survives the merge
    calls, results = _count(entries, "tool_use"), _count(entries, "tool_result")
    assert sum(len(m.tool_calls) for m in messages) == calls
    assert sum(len(m.tool_results) for m in messages) == results
    # results carry the name of their call
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    assert all(r.name == names[r.tool_call_id] for m in messages for r in m.tool_results)

    # the merged messages parse; repair only merges consecutive human messages (hook
    # notices and prompts logged as separate user entries)
    ast = parse_chain(messages, repair=True)
    repaired = ast.to_messages()
    assert sum(len(m.tool_calls) for m in repaired) == calls
    assert sum(len(m.tool_results) for m in repaired) == results

    # merged messages are API-shaped: the Anthropic codec writes them back exactly
    merged = claude_code.to_api_messages(entries)
    assert anthropic.encode(messages) == {"messages": _without_log_fields(merged)}
    assert claude_code.decode(claude_code.encode(messages)) == messages


@pytest.mark.skipif(not SESSIONS, reason="shared corpus not found next to the repository")
def test_assistant_entries_merge_and_results_follow() -> None:
    path = next(p for p in SESSIONS if "a2898e3" in p.name)
    entries = json.loads(path.read_text(encoding="utf-8"))
    merged = claude_code.to_api_messages(entries)
    roles = [m["role"] for m in merged]
    assert all(a != b for a, b in pairwise(roles))  # alternating turns
    first_ai = merged[1]["content"]
    uses = [b["id"] for b in first_ai if b["type"] == "tool_use"]
    assert len(uses) == 9  # one response logged over ten entries
    assert [b["tool_use_id"] for b in merged[2]["content"]] == uses


def _assistant(message_id: str, *blocks: Any) -> dict[str, Any]:
    return {"id": message_id, "type": "message", "role": "assistant", "content": list(blocks)}


def _result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}],
    }


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"path": call_id}}


def test_merging_rules() -> None:
    entries = [
        {"role": "user", "content": "go"},
        _assistant("m1", {"type": "text", "text": "reading"}),
        _assistant("m1", _use("a")),
        _result("a"),
        _assistant("m1", _use("b")),
        _result("b"),
        {"role": "user", "content": [{"type": "text", "text": "[Request interrupted]"}]},
        {"role": "user", "content": "hook notice"},
        _assistant("m2", {"type": "text", "text": "done"}),
    ]
    assert claude_code.to_api_messages(entries) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "reading"}, _use("a"), _use("b")],
        },
        {
            "role": "user",
            "content": [
                *_result("a")["content"],
                *_result("b")["content"],
                {"type": "text", "text": "[Request interrupted]"},
            ],
        },
        {"role": "user", "content": "hook notice"},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]


def test_log_lines_and_other_line_types() -> None:
    lines = [
        {"type": "summary", "summary": "Earlier work", "leafUuid": "x"},
        {"type": "user", "uuid": "1", "message": {"role": "user", "content": "hi"}},
        {
            "type": "assistant",
            "uuid": "2",
            "message": _assistant("m", {"type": "text", "text": "yo"}),
        },
    ]
    assert claude_code.decode(lines) == [Message.human("hi"), Message.ai("yo")]
    assert detect_format(lines) == "claude_code"


@pytest.mark.parametrize(
    ("entries", "path", "index"),
    [
        pytest.param({"role": "user"}, "", None, id="not-a-list"),
        pytest.param(["x"], "entries[0]", 0, id="entry-string"),
        pytest.param([{"role": "user"}], "entries[0].content", 0, id="no-content"),
        pytest.param(
            [{"type": "user", "uuid": "u"}], "entries[0].message", 0, id="line-without-message"
        ),
        pytest.param([{"role": "tool", "content": "x"}], "entries[0].role", 0, id="bad-role"),
        pytest.param(
            [{"role": "assistant", "id": "m", "content": 5}],
            "entries[0].content",
            0,
            id="content-number",
        ),
        pytest.param(
            [
                {"role": "user", "content": "go"},
                _assistant("m", {"type": "text", "text": "a"}),
                _result("a"),
                _assistant("m", {"type": "tool_use", "id": "t", "name": "f", "input": []}),
            ],
            "entries[3].content[0].input",
            3,
            id="error-located-in-the-log",
        ),
        pytest.param(
            [_result("a"), {"role": "user", "content": [{"type": "tool_result"}]}],
            "entries[1].content[0].tool_use_id",
            1,
            id="result-error-located-in-the-log",
        ),
    ],
)
def test_broken_logs_raise_codec_error(entries: Any, path: str, index: int | None) -> None:
    with pytest.raises(CodecError) as caught:
        claude_code.decode(entries)
    assert caught.value.path == path
    assert caught.value.index == index


def test_encode_rejects_a_system_prompt() -> None:
    with pytest.raises(CodecError):
        claude_code.encode([Message.system("s"), Message.human("h")])


def test_encode_rejects_a_later_system_message_where_it_stands() -> None:
    with pytest.raises(CodecError) as caught:
        claude_code.encode([Message.human("h"), Message.ai("a"), Message.system("s")])
    assert (caught.value.path, caught.value.index) == ("messages[2]", 2)


def test_encode_logs_results_after_their_calls() -> None:
    calls = [ToolCall(id="a", name="f"), ToolCall(id="b", name="f")]
    chain = [
        Message.human("go"),
        Message(role=Role.AI, parts=[TextPart(text="two calls"), *calls]),
        # answered in the other order
        Message(role=Role.TOOL, parts=[ToolResult(tool_call_id="b", name="f", content="B")]),
        Message(role=Role.TOOL, parts=[ToolResult(tool_call_id="a", name="f", content="A")]),
        Message.human("thanks"),
    ]
    log = claude_code.encode(chain)
    kinds = [
        (e["role"], e["content"][0]["type"] if isinstance(e["content"], list) else "str")
        for e in log
    ]
    assert kinds == [
        ("user", "str"),
        ("assistant", "text"),
        ("assistant", "tool_use"),
        ("assistant", "tool_use"),
        ("user", "tool_result"),
        ("user", "tool_result"),
        ("user", "text"),
    ]
    assert len({e["id"] for e in log if e["role"] == "assistant"}) == 1
    assert claude_code.decode(log) == chain
    assert get_codec("claude_code").decode(log) == chain


# -- Hypothesis round trip -------------------------------------------------------------

claude_code_chains = st.lists(anthropic_ai | anthropic_human | anthropic_tool, max_size=7).map(
    with_call_names
)


@given(claude_code_chains)
def test_hypothesis_round_trip(messages: list[Message]) -> None:
    log = claude_code.encode(messages)
    assert claude_code.decode(json.loads(json.dumps(log))) == messages
