"""The framework codecs (pydantic-ai, LangChain, OpenAI Agents SDK) on their JSON forms,
with no framework needed: recorded histories, the command lines, format detection,
laws over generated chains, and the core importing with every framework absent."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

import cast.cli
import csum.cli
from cast import (
    SUMMARIZATION_TOOL_NAME,
    ChainAST,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    lint,
)
from cast.codecs import detect_format, langchain, openai_agents, openai_responses, pydantic_ai
from cast.errors import CodecError
from strategies import valid_chains

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codecs"
PYDANTIC_AI = FIXTURES / "pydantic_ai_function_model.json"
"""A pydantic-ai 2.68 run (FunctionModel): thinking with a signature, a tool retry,
structured tool returns, an image URL in the prompt."""
LANGCHAIN = FIXTURES / "langchain_create_agent.json"
"""A langchain 1.4 ``create_agent`` run: Anthropic thinking blocks, a tool error."""
TAU = "openai_taubench/taubench_gpt4o_airline_task027_trial1.json"

CODECS = {"pydantic_ai": pydantic_ai, "langchain": langchain}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def calls(messages: list[Message]) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, json.loads(c.arguments or "{}")) for m in messages for c in m.tool_calls]


def results(messages: list[Message]) -> list[tuple[str, str]]:
    return [(r.tool_call_id, r.content) for m in messages for r in m.tool_results]


def run(main: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# -- recorded histories -----------------------------------------------------------------


def test_pydantic_ai_recording() -> None:
    payload = load(PYDANTIC_AI)
    assert detect_format(payload) == "pydantic_ai"
    messages = pydantic_ai.decode(payload)
    assert [m.role for m in messages][:3] == [Role.SYSTEM, Role.HUMAN, Role.AI]
    assert messages[1].parts[1].url == "https://example.com/map.png"
    first = messages[2].parts[0]
    assert first.reasoning is not None
    assert first.reasoning.signature == b"EqQBCkYIARgCKkBmZmFrZQ=="
    assert results(messages) == [
        ("toolu_01A", '{"city":"Zürich","temp_c":4}'),
        ("toolu_01B", "city must not be empty"),
        ("toolu_01C", '{"city":"Bern","temp_c":6}'),
    ]
    ChainAST.from_messages(messages)
    assert pydantic_ai.decode(pydantic_ai.encode(messages)) == messages


def test_langchain_recording() -> None:
    payload = load(LANGCHAIN)
    assert detect_format(payload) == "langchain"
    messages = langchain.decode(payload)
    assert [m.role.value for m in messages] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert messages[1].parts[0].reasoning is not None
    assert results(messages)[1] == ("toolu_01Y", "no such order")
    ChainAST.from_messages(messages)
    assert langchain.decode(langchain.encode(messages)) == messages


def test_existing_formats_are_still_detected() -> None:
    assert detect_format([{"role": "user", "content": "hi"}]) == "openai"
    assert detect_format([{"role": "user", "parts": [{"text": "hi"}]}]) == "gemini"
    assert detect_format([{"role": "human", "parts": [{"type": "text", "text": "x"}]}]) in (
        "chaincast",
        "langchaingo",
    )
    assert detect_format([{"type": "function_call_output", "call_id": "c", "output": ""}]) == (
        "openai_responses"
    )


# -- the command lines ------------------------------------------------------------------


@pytest.mark.parametrize("source", [PYDANTIC_AI, LANGCHAIN], ids=["pydantic_ai", "langchain"])
@pytest.mark.parametrize("target", ["openai", "anthropic", "pydantic_ai", "langchain"])
def test_cast_convert_reads_and_writes_framework_forms(source: Path, target: str) -> None:
    original = CODECS[detect_format(load(source))].decode(load(source))
    code, out, err = run(cast.cli.main, "convert", str(source), "--to", target)
    assert code == 0, err
    payload = json.loads(out)
    assert detect_format(payload) == target
    from cast.codecs import get_codec

    converted = get_codec(target).decode(payload)
    assert [(c[1], c[2]) for c in calls(converted)] == [(c[1], c[2]) for c in calls(original)]
    # A target with no error flag marks a failed result in its text.
    kept = [r[1].removeprefix("[tool error] ") for r in results(converted)]
    assert kept == [r[1] for r in results(original)]
    if target in ("openai", "anthropic"):
        assert lint(converted, target) == []


def test_cast_convert_a_real_chain_to_framework_forms(corpus_dir: Path) -> None:
    """A recorded tau-bench chain: the framework forms are neutral (repair only, ids
    kept; it reuses one id, which the OpenAI output renames), LangChain holds arguments
    as objects (compact JSON text back)."""
    source = corpus_dir / TAU
    code, out, err = run(cast.cli.main, "convert", str(source), "--to", "chaincast")
    assert code == 0, err
    original = [Message.model_validate(m) for m in json.loads(out)]
    for fmt, codec in CODECS.items():
        code, out, err = run(cast.cli.main, "convert", str(source), "--to", fmt)
        assert code == 0, err
        converted = codec.decode(json.loads(out))
        assert calls(converted) == calls(original)
        assert results(converted) == results(original)
        assert [m.text for m in converted] == [m.text for m in original]


def enlarged(payload: Any) -> Any:
    """The recorded history with every tool output made a 3 KB log."""
    log = "".join(f"step {n}: compiled module {n} in 0.{n}s\n" for n in range(100))
    out = json.loads(json.dumps(payload))
    for item in out:
        for part in item.get("parts", []):
            if part.get("part_kind") == "tool-return":
                part["content"] = log
        if item.get("type") == "tool":
            item["data"]["content"] = log
    return out


@pytest.mark.parametrize("source", [PYDANTIC_AI, LANGCHAIN], ids=["pydantic_ai", "langchain"])
def test_csum_summarize_writes_the_input_form(source: Path, tmp_path: Path) -> None:
    fmt = detect_format(load(source))
    original = CODECS[fmt].decode(enlarged(load(source)))
    assert sum(m.size for m in original) > 6000
    path = tmp_path / "history.json"
    path.write_text(json.dumps(enlarged(load(source))), encoding="utf-8")
    output = tmp_path / "out.json"
    code, _, err = run(
        csum.cli.main, "summarize", str(path), "-o", str(output), "--budget", "5KiB", "--quiet"
    )
    assert code == 0, err
    payload = json.loads(output.read_text(encoding="utf-8"))
    assert detect_format(payload) == fmt
    summarized = CODECS[fmt].decode(payload)
    ChainAST.from_messages(summarized)
    assert sum(m.size for m in summarized) <= 5 * 1024
    assert summarized[-1] == original[-1]
    assert SUMMARIZATION_TOOL_NAME in [c[1] for c in calls(summarized)]


# -- laws over generated chains ---------------------------------------------------------


def holdable(chain: list[Message]) -> list[Message]:
    """The chain with what not every framework form holds taken out: media in system and
    AI messages, files other than images (the Agents SDK's Responses items)."""
    out = []
    for message in chain:
        parts = tuple(
            p for p in message.parts if p.type != "binary" or p.mime_type.startswith("image/")
        )
        if message.role in (Role.SYSTEM, Role.AI):
            parts = tuple(p for p in parts if p.type not in ("image_url", "binary"))
            if message.role is Role.SYSTEM and not parts:
                parts = (TextPart(text="system"),)
        out.append(Message(role=message.role, parts=parts))
    return out


@pytest.mark.parametrize("name", ["pydantic_ai", "langchain", "openai_agents"])
@given(chain=valid_chains().map(holdable))
def test_encoding_is_a_projection_keeping_calls_and_results(
    name: str, chain: list[Message]
) -> None:
    codec: Any = {**CODECS, "openai_agents": openai_agents}[name]
    once = codec.decode(json.loads(json.dumps(codec.encode(chain))))
    assert codec.decode(codec.encode(once)) == once
    assert calls(once) == calls(chain) or (name == "pydantic_ai" and _same_calls(once, chain))
    assert sorted(results(once)) == sorted(results(chain))
    ChainAST.from_messages(once)


@pytest.mark.parametrize("name", ["pydantic_ai", "langchain"])
@pytest.mark.parametrize("signature", [b"\n\n", b"\n", b"sig\n", b"abc"])
def test_a_signature_holding_line_breaks_reads_back_whole(name: str, signature: bytes) -> None:
    """The thinking part's id and signature share one field, split at the first line
    break: an empty id is kept so a signature with line breaks is not cut (Hypothesis
    found b"\n\n" read back as b"\n")."""
    codec: Any = CODECS[name]
    chain = [
        Message.human("hi"),
        Message(
            role=Role.AI,
            parts=(
                ToolCall(
                    id="call_1", name="f", reasoning=Reasoning(content="r", signature=signature)
                ),
            ),
        ),
        Message.tool("call_1", "f", "ok"),
    ]
    once = codec.decode(json.loads(json.dumps(codec.encode(chain))))
    assert codec.decode(codec.encode(once)) == once
    assert once[1].parts[0].reasoning.signature == signature


def test_a_responses_reasoning_id_stays_an_id_in_the_frameworks() -> None:
    """A Responses reasoning item without encrypted content keeps its id as the id (not
    as a signature LangChain would send to Anthropic), and an id without a signature read
    from a framework goes back to Responses without an empty ``encrypted_content``."""
    item = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "r"}]}
    chain = openai_responses.decode([{"role": "user", "content": "hi"}, item])
    blocks = langchain.encode(chain)[1]["data"]["content"]
    assert blocks == [{"type": "reasoning", "reasoning": "r", "id": "rs_1"}]
    parts = pydantic_ai.encode(chain)[1]["parts"]
    assert parts == [{"part_kind": "thinking", "content": "r", "id": "rs_1"}]
    for codec in CODECS.values():
        assert openai_responses.encode(codec.decode(codec.encode(chain)))["input"][1] == {
            **item,
            "summary": [{"type": "summary_text", "text": "r"}],
        }


def test_openai_agents_groups_items_as_decode_reads_them() -> None:
    """A hosted tool's item (web_search_call) is read into the AI message around it, so it
    joins that message's group: decode_counted's counts match the messages (the grouping
    had its own rule and made three groups of these two messages)."""
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {}}
    answer = {"role": "assistant", "content": "found it"}
    kept = {"type": "additional_tools", "role": "system", "tools": []}
    items: list[Any] = [{"role": "user", "content": "look"}, search, answer, kept]
    messages, counts = openai_agents.decode_counted(items)
    assert openai_agents.group_items(items) == [[items[0]], [search, answer], [kept]]
    assert [m.role for m in messages] == [Role.HUMAN, Role.AI, Role.SYSTEM]
    assert counts == [1, 1, 1]


def test_pydantic_ai_file_part_errors_name_the_content_field() -> None:
    """A response's file part holds its bytes under ``content``: a bad field is named there."""
    file = {"part_kind": "file", "content": {"data": "AAEC", "media_type": 7}}
    with pytest.raises(CodecError) as caught:
        pydantic_ai.decode([{"kind": "response", "parts": [file]}])
    assert caught.value.path == "[0].parts[0].content.media_type"
    file["content"] = {"data": "not base64!", "media_type": "image/png"}
    with pytest.raises(CodecError) as caught:
        pydantic_ai.decode([{"kind": "response", "parts": [file]}])
    assert caught.value.path == "[0].parts[0].content.data"


def _same_calls(a: list[Message], b: list[Message]) -> bool:
    return [c[:2] for c in calls(a)] == [c[:2] for c in calls(b)]


# -- no framework needed ----------------------------------------------------------------

_WITHOUT_FRAMEWORKS = """
import importlib.abc, json, sys

BLOCKED = ("pydantic_ai", "langchain", "langchain_core", "langgraph", "agents")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked")
        return None

sys.meta_path.insert(0, Block())
import cast, csum, csum.integrations
from cast.codecs import langchain, pydantic_ai
print(len(pydantic_ai.decode(json.load(open(sys.argv[1])))))
print(len(langchain.decode(json.load(open(sys.argv[2])))))
for module in ("pydantic_ai", "langchain", "openai_agents"):
    try:
        importlib.import_module("csum.integrations." + module)
    except ImportError as exc:
        print(exc)
"""


def test_the_core_imports_without_any_framework() -> None:
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_FRAMEWORKS, str(PYDANTIC_AI), str(LANGCHAIN)],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["9", "6"]
    assert "pip install 'chaincast[pydantic-ai]'" in lines[2]
    assert "pip install 'chaincast[langchain]'" in lines[3]
    assert "pip install 'chaincast[openai-agents]'" in lines[4]
