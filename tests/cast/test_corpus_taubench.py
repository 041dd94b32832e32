"""The tau-bench corpus (real GPT-4o runs) through cast: round trips, sizes, id reuse."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cast import ChainAST, IdTemplate, Message, Role
from corpus_openai import load_openai_chain
from tests.conftest import TAUBENCH, corpus_files

FILES = corpus_files(TAUBENCH, "taubench_*.json")
TOOLU = "toolu_{r:24:b}"

pytestmark = pytest.mark.skipif(not FILES, reason="tau-bench corpus not found beside the repo")


def _params() -> list[object]:
    return [pytest.param(path, id=path.stem.removeprefix("taubench_gpt4o_")) for path in FILES]


def _call_ids(messages: list[Message]) -> list[str]:
    return [c.id for m in messages for c in m.tool_calls]


def _reuses_ids(messages: list[Message]) -> bool:
    return any(count > 1 for count in Counter(_call_ids(messages)).values())


def _pairing(ast: ChainAST) -> list[tuple[str, str, str]]:
    """(call name, call arguments, result content) for every result, in chain order."""
    out = []
    for section in ast.sections:
        for pair in section.body:
            calls = {c.id: c for c in pair.tool_calls}
            for message in pair.tool_messages:
                for result in message.tool_results:
                    call = calls[result.tool_call_id]
                    out.append((call.name, call.arguments, result.content))
    return out


def _utf8(text: str | None) -> int:
    return len((text or "").encode("utf-8"))


def _raw_size(item: dict[str, Any]) -> int:
    """The size of an OpenAI message, from the raw JSON: UTF-8 bytes of its texts."""
    if item["role"] == "tool":
        return _utf8(item["tool_call_id"]) + _utf8(item["name"]) + _utf8(item["content"])
    calls = item.get("tool_calls") or ()
    return _utf8(item["content"]) + sum(
        _utf8(c["id"]) + _utf8(c["function"]["name"]) + _utf8(c["function"]["arguments"])
        for c in calls
    )


def test_corpus_is_complete(corpus_dir: Path) -> None:
    assert len(FILES) == 25
    reusing = [path.name for path in FILES if _reuses_ids(load_openai_chain(path))]
    assert len(reusing) == 7


def test_helper_maps_the_openai_shape(corpus_dir: Path) -> None:
    path = FILES[0]
    raw = json.loads(path.read_text(encoding="utf-8"))
    messages = load_openai_chain(path)
    assert len(messages) == len(raw)
    for item, message in zip(raw, messages, strict=True):
        assert message.role is Role(item["role"])
        if item["role"] == "tool":
            (result,) = message.tool_results
            assert result.tool_call_id == item["tool_call_id"]
            assert result.name == item["name"]
            assert result.content == item["content"]
        else:
            assert message.text == (item["content"] or "")
            assert _call_ids([message]) == [c["id"] for c in item.get("tool_calls") or ()]


@pytest.mark.parametrize("path", _params())
def test_round_trip_and_sizes(path: Path) -> None:
    messages = load_openai_chain(path)
    ast = ChainAST.from_messages(messages)
    assert ast.to_messages() == messages
    assert messages[0].role is Role.SYSTEM
    assert ast.size == sum(m.size for m in messages)
    for section in ast.sections:
        assert section.size == section.header.size + sum(p.size for p in section.body)
        for pair in section.body:
            assert pair.size == sum(m.size for m in pair.messages())
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert ast.size == sum(map(_raw_size, raw))


@pytest.mark.parametrize("path", _params())
def test_normalize_gives_unique_ids_and_keeps_the_pairing(path: Path) -> None:
    messages = load_openai_chain(path)
    ast = ChainAST.from_messages(messages)
    out = ast.normalize_tool_call_ids(TOOLU)
    ids = _call_ids(out.to_messages())
    assert len(ids) == len(set(ids)) == len(_call_ids(messages))
    assert all(IdTemplate(TOOLU).matches(i) for i in ids)
    assert ChainAST.from_messages(out.to_messages()) == out
    assert _pairing(out) == _pairing(ast)
    assert (
        out.size - ast.size
        == sum(len(new) - len(old) for new, old in zip(ids, _call_ids(messages), strict=True)) * 2
    )
    assert ast.to_messages() == messages
    assert out.normalize_tool_call_ids(TOOLU) == out
