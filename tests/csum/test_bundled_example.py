"""The bundled example (``csum summarize --example``) is the project's own recording:
Claude Code working on this repository's files against the scripted model of
``tests/support/record_example.py``; the slow test records it again with the real CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import record_example
from agent_model_server import agent_cli
from cast import ChainAST, lint
from cast.chainio import decode_chain

ROOT = Path(__file__).resolve().parents[2]


def _payload() -> dict[str, Any]:
    return dict(json.loads(record_example.EXAMPLE.read_text(encoding="utf-8")))


def _assistant_turns(payload: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in payload["messages"] if m["role"] == "assistant"]


def test_the_example_is_a_valid_anthropic_chain_of_three_sections() -> None:
    messages, fmt = decode_chain(_payload())
    assert fmt == "anthropic"
    ast = ChainAST.from_messages(messages)  # strict: no repair needed
    assert [s.header.human_message.text for s in ast.sections]  # type: ignore[union-attr] == [prompt for prompt, _ in record_example.SESSION]
    assert lint(messages, "anthropic") == []
    assert ast.size > 100_000  # large enough that the default 50 KiB budget compacts it


def test_each_model_turn_is_the_scripts() -> None:
    """Text, thinking and tool calls of every assistant turn are the script's turn, in
    order (a script changed without recording again fails here)."""
    turns = [spec for _, specs in record_example.SESSION for spec in specs]
    recorded = _assistant_turns(_payload())
    assert len(recorded) == len(turns)
    for n, (blocks, spec) in enumerate(zip(recorded, turns, strict=True)):
        expected = record_example._blocks(n, spec)
        assert [{k: b[k] for k in e} for b, e in zip(blocks, expected, strict=True)] == expected


def test_the_tools_ran_on_this_repositorys_files() -> None:
    """Every path the session read or searched is a file or folder of this repository."""
    work = str(record_example.WORK) + "/"
    paths = [
        block["input"].get("file_path") or block["input"]["path"]
        for turn in _assistant_turns(_payload())
        for block in turn
        if block["type"] == "tool_use" and block["name"] in {"Read", "Grep", "Glob"}
    ]
    assert len(paths) >= 15
    assert all(p.startswith(work) or p == str(record_example.WORK) for p in paths)  # Glob: all
    missing = [p for p in paths if not (ROOT / Path(p).relative_to(record_example.WORK)).exists()]
    assert missing == []


def test_every_tool_result_is_the_tools_output() -> None:
    """Reads come back numbered as Claude Code's Read tool numbers lines; the non-zero
    exits are the script's: inspect on the fixture's wrapper, lint with a wrong flag,
    lint finding the violations it reports for OpenAI."""
    results = [
        block
        for m in _payload()["messages"]
        if isinstance(m["content"], list)
        for block in m["content"]
        if block["type"] == "tool_result"
    ]
    readme = next(r["content"] for r in results if "# chaincast" in r["content"])
    assert readme.startswith("1\t# chaincast\n")
    errors = [r["content"].splitlines()[0] for r in results if r.get("is_error")]
    assert errors == ["Exit code 2", "Exit code 2", "Exit code 1"]


def _claude() -> str | None:
    """``$CHAINCAST_CLAUDE``, the one ``bash .ci/agents.sh`` installs, or ``claude`` on PATH."""
    installed = agent_cli("claude")
    if os.environ.get("CHAINCAST_CLAUDE"):
        return os.environ["CHAINCAST_CLAUDE"]
    return str(installed) if installed.exists() else shutil.which("claude")


@pytest.mark.slow
@pytest.mark.skipif(
    _claude() is None,
    reason="no Claude Code CLI: bash .ci/agents.sh installs it (or put claude on PATH or "
    "name it in $CHAINCAST_CLAUDE)",
)
def test_recording_again_gives_the_same_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real CLI against the scripted model: the same turns and the same kinds of
    results (file contents follow the committed tree, so only their shape is compared)."""
    out = tmp_path / "example.json"
    monkeypatch.setattr(
        "sys.argv", ["record_example", "--claude", str(_claude()), "--out", str(out)]
    )
    record_example.main()
    again = json.loads(out.read_text(encoding="utf-8"))
    bundled = _payload()
    assert _assistant_turns(again) == _assistant_turns(bundled)
    shape = [
        [(b["type"], b.get("is_error", False)) for b in m["content"]]
        if isinstance(m["content"], list)
        else m["content"]
        for m in again["messages"]
    ]
    assert shape == [
        [(b["type"], b.get("is_error", False)) for b in m["content"]]
        if isinstance(m["content"], list)
        else m["content"]
        for m in bundled["messages"]
    ]
