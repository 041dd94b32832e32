"""Detection by what only one format has (issue 40, class 4): each codec scores its own
evidence; when two formats read a payload differently, detection names both and the
command lines exit 2 naming them and the option, never guessing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import cast.cli
from cast.codecs import (
    EVIDENCE,
    FITS,
    AmbiguousFormatError,
    anthropic,
    detect_format,
    get_codec,
    openai,
)
from tests.conftest import CORPUS

PAYLOADS = CORPUS / "payloads"
SETS = ("set1", "set3", "set4", "project-fixtures")
USER = {"role": "user", "content": "search the news"}


@pytest.mark.parametrize(
    "block",
    [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
        {"type": "container_upload", "file_id": "file_1"},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "x", "server_name": "s", "input": {}},
        {"type": "text", "text": "cited", "citations": [{"type": "web_search_result_location"}]},
        {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
    ],
    ids=lambda block: block["type"] + ("+citations" if "citations" in block else ""),
)
def test_blocks_only_anthropic_has_detect_anthropic_without_system(block: dict[str, Any]) -> None:
    payload = {"messages": [USER, {"role": "assistant", "content": [block]}]}
    assert anthropic.detect_messages(payload["messages"]) == EVIDENCE
    assert detect_format(payload) == "anthropic"


def test_chat_fields_are_openai_evidence() -> None:
    tool = {"role": "tool", "tool_call_id": "c1", "content": "x"}
    assert openai.detect_messages([USER, tool]) == EVIDENCE
    assert openai.detect_messages([USER]) == FITS
    mistral = {"role": "assistant", "content": [{"type": "thinking", "thinking": [{"text": "t"}]}]}
    assert detect_format([USER, mistral]) == "openai"  # its thinking holds chunks


def test_plain_text_is_openai_both_read_it_alike() -> None:
    assert detect_format([USER, {"role": "assistant", "content": "ok"}]) == "openai"


CACHED = {
    "messages": [
        {"role": "system", "content": [{"type": "text", "text": "s", "cache_control": {}}]},
        USER,
    ]
}


def test_two_formats_that_read_a_payload_differently_are_named() -> None:
    with pytest.raises(AmbiguousFormatError) as caught:
        detect_format(CACHED)
    assert caught.value.formats == ("anthropic", "openai")


def test_cast_convert_without_from_exits_2_naming_both(tmp_path: Path) -> None:
    source = tmp_path / "cached.json"
    source.write_text(json.dumps(CACHED), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = cast.cli.main(["convert", str(source), "--to", "gemini"], stdout=out, stderr=err)
    assert code == 2
    assert out.getvalue() == ""
    assert "--from anthropic or --from openai" in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1
    given = ["convert", str(source), "--from", "anthropic", "--to", "gemini"]
    assert cast.cli.main(given, stdout=io.StringIO(), stderr=io.StringIO()) == 0


def _corpus_payloads() -> list[Path]:
    return sorted(p for name in SETS for p in (PAYLOADS / name).glob("*/*.json"))


@pytest.mark.skipif(not PAYLOADS.is_dir(), reason="the shared corpus's payloads are absent")
@pytest.mark.parametrize(
    "path", _corpus_payloads(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.stem}"
)
def test_every_real_payload_is_detected_or_named(path: Path) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    codec = path.parent.name
    found = detected(payload)
    if isinstance(found, tuple):  # named, never guessed
        assert codec in found
    elif found != codec:  # another format that reads it alike (plain text: openai)
        assert get_codec(found).decode(payload) == get_codec(codec).decode(payload)


def detected(payload: Any) -> str | tuple[str, ...]:
    """The detected format, or the formats named when two read the payload differently."""
    try:
        return detect_format(payload)
    except AmbiguousFormatError as error:
        return error.formats
