"""``cast handoff`` and the agents' session-file codecs, without the agents: what is
written, round trips on the real Claude Code corpus, reasoning, budgets and bad input.
The real CLIs resume the written sessions in tests/cast/test_handoff_agents.py (slow)."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from cast import (
    SUMMARIZATION_TOOL_NAME,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    lint,
    port,
)
from cast.chainio import read_json_lines
from cast.cli import main
from cast.codecs import claude_code_session, codex_rollout, get_codec
from cast.errors import InputError
from cast.handoff import Handoff, handoff, read_session
from csum.tokens import EstimatedTokens
from handoff_checks import facts, lines_of, missing_in_order
from strategies import valid_chains
from tests.conftest import CLAUDE_CODE, corpus_files

SESSIONS = corpus_files(CLAUDE_CODE)
needs_corpus = pytest.mark.skipif(not SESSIONS, reason=f"the corpus is missing ({CLAUDE_CODE})")
SMALL = CLAUDE_CODE / "claudecode_spotter_8463c716_sub_agent-a7be2f0.json"
LARGE = CLAUDE_CODE / "claudecode_spotter_4d5611e5.json"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Empty Claude Code and Codex stores under ``tmp_path`` (``claude/``, ``codex/``)."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    (tmp_path / "work").mkdir()
    return tmp_path


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the hash of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _codex_lines(items: list[dict[str, Any]], cwd: str = "/work/app") -> list[dict[str, Any]]:
    """A rollout as Codex 0.171 writes one: its meta, its own context (developer
    instructions, environment), the conversation and the event lines around it."""
    stamp = "2026-03-01T10:00:00.000Z"
    sid = "0199a000-0000-7000-8000-000000000001"
    head: list[dict[str, Any]] = [
        {
            "timestamp": stamp,
            "type": "session_meta",
            "payload": {"id": sid, "timestamp": stamp, "cwd": cwd, "cli_version": "0.171.0"},
        },
        {"timestamp": stamp, "type": "event_msg", "payload": {"type": "task_started"}},
        {
            "timestamp": stamp,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions instructions>"}],
            },
        },
        {
            "timestamp": stamp,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>"}
                ],
            },
        },
        {"timestamp": stamp, "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
    ]
    return head + [{"timestamp": stamp, "type": "response_item", "payload": i} for i in items]


CODEX_ITEMS: list[dict[str, Any]] = [
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Fix the failing test in api/"}],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look at the test first."}],
        "encrypted_content": "gAAAAB-opaque",
    },
    {
        "type": "function_call",
        "name": "exec_command",
        "arguments": '{"cmd": "pytest api"}',
        "call_id": "call_1",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"},
    {
        "type": "custom_tool_call",
        "name": "apply_patch",
        "input": "*** Begin Patch\n*** End Patch",
        "call_id": "call_2",
    },
    {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done!"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Fixed: the test passes."}],
    },
]


@pytest.fixture
def codex_source(tmp_path: Path) -> Path:
    path = tmp_path / "rollout-2026-03-01T10-00-00-0199a000-0000-7000-8000-000000000001.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in _codex_lines(CODEX_ITEMS)))
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# The codecs ---------------------------------------------------------------------------


def test_claude_code_session_lines_chain_each_to_the_one_before() -> None:
    messages = [
        Message.human("list the files"),
        Message.ai("Listing.", ToolCall(id="toolu_1", name="Bash", arguments='{"command":"ls"}')),
        Message.tool("toolu_1", "Bash", "a.txt"),
        Message.ai("One file."),
    ]
    lines = claude_code_session.encode(messages, session_id="s-1", cwd="/w", start=NOW)
    assert [line["type"] for line in lines] == [
        "user",
        "assistant",
        "assistant",
        "user",
        "assistant",
    ]
    assert lines[0]["parentUuid"] is None
    for before, line in itertools.pairwise(lines):
        assert line["parentUuid"] == before["uuid"]
        assert line["timestamp"] > before["timestamp"]
    assert {line["sessionId"] for line in lines} == {"s-1"}
    assert {line["cwd"] for line in lines} == {"/w"}
    assert lines[0]["timestamp"] == "2026-03-01T12:00:00.000Z"
    # the two blocks of one response share its id, as Claude Code logs them
    assert lines[1]["message"]["id"] == lines[2]["message"]["id"]
    assert claude_code_session.decode(lines) == messages


def test_claude_code_session_decode_follows_the_branch_claude_code_resumes() -> None:
    """An edited prompt leaves two branches; the newest line's chain is the session."""
    lines = claude_code_session.encode([Message.human("first try"), Message.ai("answer 1")])
    retry = claude_code_session.encode([Message.human("second try"), Message.ai("answer 2")])
    retry[0]["parentUuid"] = None
    side = {**retry[1], "uuid": "side", "isSidechain": True, "parentUuid": retry[1]["uuid"]}
    assert claude_code_session.decode([*lines, *retry, side]) == [
        Message.human("second try"),
        Message.ai("answer 2"),
    ]
    # without uuids (the corpus keeps only the messages), the lines are read in order
    assert len(claude_code_session.decode([line["message"] for line in lines])) == 2


def test_codex_rollout_lines_are_what_codex_reads_back() -> None:
    messages = [
        Message.human("list the files"),
        Message.ai("", ToolCall(id="call_1", name="exec_command", arguments='{"cmd":"ls"}')),
        Message.tool("call_1", "exec_command", "a.txt"),
        Message.ai("One file."),
    ]
    lines = codex_rollout.encode(messages, session_id="0199-id", cwd="/w", start=NOW)
    assert lines[0]["type"] == "session_meta"
    assert lines[0]["payload"]["id"] == "0199-id"
    assert lines[0]["payload"]["cwd"] == "/w"
    assert all(isinstance(line["timestamp"], str) for line in lines)
    items = [line["payload"] for line in lines if line["type"] == "response_item"]
    for item in items:
        if item["type"] == "message":  # never the short form Codex skips
            assert isinstance(item["content"], list)
    assert items[0]["content"] == [{"type": "input_text", "text": "list the files"}]
    assert items[-1]["content"] == [{"type": "output_text", "text": "One file."}]
    # each message is followed by the event the terminal UI shows it from
    events = [line["payload"] for line in lines if line["type"] == "event_msg"]
    assert events == [
        {"type": "user_message", "message": "list the files", "images": [], "kind": "plain"},
        {"type": "agent_message", "message": "One file."},
    ]
    assert "model_provider" not in lines[0]["payload"]
    named = codex_rollout.encode(messages, model_provider="scripted")
    assert named[0]["payload"]["model_provider"] == "scripted"
    assert codex_rollout.decode(lines) == messages


def test_codex_rollout_decode_reads_free_form_tools_and_compactions() -> None:
    messages = codex_rollout.decode(_codex_lines(CODEX_ITEMS))
    calls = [call for m in messages for call in m.tool_calls]
    assert [c.name for c in calls] == ["exec_command", "apply_patch"]
    assert json.loads(calls[1].arguments) == {"input": "*** Begin Patch\n*** End Patch"}
    assert [r.content for m in messages for r in m.tool_results] == ["1 failed", "Done!"]
    compacted = {
        "timestamp": "2026-03-01T10:05:00.000Z",
        "type": "compacted",
        "payload": {"message": "summary", "replacement_history": CODEX_ITEMS[:1]},
    }
    lines = [*_codex_lines(CODEX_ITEMS), compacted]
    assert codex_rollout.decode(lines) == [Message.human("Fix the failing test in api/")]


def test_the_session_codecs_never_change_their_input() -> None:
    lines = _codex_lines(CODEX_ITEMS)
    before = json.dumps(lines)
    codex_rollout.decode(lines)
    assert json.dumps(lines) == before


# Handoffs on the real corpus ----------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem.removeprefix("claudecode_"))
def test_a_round_trip_through_both_agents_keeps_every_text_call_and_result(
    path: Path, stores: Path
) -> None:
    work = str(stores / "work")
    source = read_session(path)
    to_codex = handoff(path, "codex", cwd=work, budget="100MB")
    in_codex = read_session(to_codex.path)
    back = handoff(to_codex.path, "claude-code", budget="100MB")
    in_claude = read_session(back.path)
    assert in_codex.agent == "codex"
    assert in_claude.agent == "claude-code"
    assert facts(in_codex.messages) == facts(source.messages)
    assert facts(in_claude.messages) == facts(source.messages)
    assert back.cwd == work  # the Codex session's own directory
    assert lint(in_codex.messages, "openai-responses") == []
    assert lint(in_claude.messages, "anthropic") == []


@needs_corpus
def test_the_session_goes_where_each_agent_looks_and_says_how_to_resume(stores: Path) -> None:
    work = stores / "work"
    code, out, err = _run("handoff", str(SMALL), "--to", "claude-code", "--cwd", str(work))
    assert code == 0, err
    session_id, command = out.splitlines()
    folder = "".join(c if c.isalnum() else "-" for c in str(work))
    path = stores / "claude" / "projects" / folder / f"{session_id}.jsonl"
    assert command == f"cd {work} && claude --resume {session_id}"
    assert {line["sessionId"] for line in lines_of(path)} == {session_id}

    code, out, err = _run("handoff", str(path), "--to", "codex")
    assert code == 0, err
    codex_id, command = out.splitlines()
    assert command == f"cd {work} && codex resume {codex_id}"
    (rollout,) = (stores / "codex" / "sessions").rglob(f"rollout-*-{codex_id}.jsonl")
    assert rollout.parent.parent.parent.parent == stores / "codex" / "sessions"  # YYYY/MM/DD
    assert lines_of(rollout)[0]["payload"]["id"] == codex_id


def test_codex_context_stays_behind_and_reasoning_is_dropped_with_a_note(
    codex_source: Path, stores: Path
) -> None:
    done = handoff(codex_source, "claude-code")
    assert done.cwd == "/work/app"  # the rollout's own directory
    assert done.notes == ("1 reasoning item dropped: only Codex's provider can verify them",)
    written = done.path.read_text(encoding="utf-8")
    assert "gAAAAB-opaque" not in written
    assert "environment_context" not in written
    assert "permissions instructions" not in written
    messages = read_session(done.path).messages
    conversation = [{"timestamp": "t", "type": "response_item", "payload": i} for i in CODEX_ITEMS]
    assert facts(messages) == facts(codex_rollout.decode(conversation))
    assert all(
        p.reasoning is None for m in messages for p in m.parts if isinstance(p, TextPart | ToolCall)
    )


def test_reasoning_text_is_kept_as_plain_text_when_asked(codex_source: Path, stores: Path) -> None:
    done = handoff(codex_source, "claude-code", reasoning="text")
    assert "kept as plain text" in done.notes[0]
    texts = [f[2] for f in facts(read_session(done.path).messages) if f[0] == "text"]
    assert "(thinking) Look at the test first." in texts
    assert "gAAAAB-opaque" not in done.path.read_text(encoding="utf-8")


@needs_corpus
def test_claude_thinking_never_reaches_codex(stores: Path) -> None:
    source = read_session(LARGE)
    thinking = [
        p.reasoning
        for m in source.messages
        for p in m.parts
        if isinstance(p, TextPart | ToolCall) and p.reasoning is not None
    ]
    assert thinking  # the session thought
    dropped = handoff(LARGE, "codex", cwd=str(stores / "work"), budget="100MB")
    assert dropped.notes == (
        f"{len(thinking)} thinking blocks dropped: only Claude Code's provider can verify them",
    )
    items = [line["payload"] for line in lines_of(dropped.path)[1:]]
    assert "reasoning" not in {item["type"] for item in items}
    kept = handoff(LARGE, "codex", cwd=str(stores / "work"), budget="100MB", reasoning="text")
    texts = {f[2] for f in facts(read_session(kept.path).messages) if f[0] == "text"}
    readable = [r.content for r in thinking if isinstance(r, Reasoning) and r.content.strip()]
    assert readable
    assert {f"(thinking) {content}".strip() for content in readable} <= texts


@needs_corpus
def test_a_handoff_to_the_same_agent_drops_thinking_too(stores: Path) -> None:
    done = handoff(LARGE, "claude-code", cwd=str(stores / "work"), budget="100MB")
    assert done.notes == (
        "14 thinking blocks dropped: only the model that made them can verify them, and it "
        "may not be the one that resumes",
    )
    assert '"thinking"' not in done.path.read_text(encoding="utf-8")


@needs_corpus
def test_a_budget_below_the_session_keeps_the_first_task_a_summary_and_the_newest_turn(
    stores: Path,
) -> None:
    source = read_session(LARGE)
    done = handoff(LARGE, "codex", cwd=str(stores / "work"), budget="20000 tokens")
    assert done.compacted
    assert done.size_before > 20_000 >= done.size_after
    written = read_session(done.path).messages
    counter = EstimatedTokens()
    assert sum(map(counter.count, written)) <= 20_000
    # the user's first task, verbatim, after the Compactor's line saying a summary follows
    assert missing_in_order(facts(source.messages)[:1], facts(written)[:2]) == []
    summary = [m for m in written if any(c.name == SUMMARIZATION_TOOL_NAME for c in m.tool_calls)]
    assert len(summary) == 1
    at = written.index(summary[0])
    assert written[at + 1].tool_results[0].content.strip()
    # what is kept after the summary is the source's, verbatim and in order, up to its end
    # (a tool pair larger than the room kept goes into the summary)
    newest = facts(written[at + 2 :])
    assert missing_in_order(newest, facts(source.messages)) == []
    assert newest[-1] == facts(source.messages)[-1]


@needs_corpus
def test_a_budget_too_small_for_the_first_task_writes_nothing(stores: Path) -> None:
    code, out, err = _run(
        "handoff", str(LARGE), "--to", "codex", "--cwd", str(stores / "work"), "--budget", "50"
    )
    assert (code, out) == (2, "")
    assert err.startswith("cast handoff: error: --budget 50 is too small")
    assert len(err.splitlines()) == 1
    assert not (stores / "codex").exists()


# Bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not a Claude Code session or a Codex rollout"),
        ('{"a": 1}\n{"b": 2}\n', "not a Claude Code session or a Codex rollout"),
        ("not json\n", "is not JSON lines"),
        ('{"type": "user", "message": {"role": "user"}}\n', "the message has no content"),
        (
            '{"type": "session_meta", "payload": {"id": "x"}}\n',
            "holds no conversation",
        ),
    ],
    ids=["empty", "other-json", "not-json", "bad-line", "no-conversation"],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    stores: Path, text: str, problem: str
) -> None:
    source = stores / "session.jsonl"
    source.write_text(text, encoding="utf-8")
    code, out, err = _run("handoff", str(source), "--to", "codex", "--cwd", str(stores))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert problem in err
    assert source.read_text(encoding="utf-8") == text
    assert not (stores / "codex").exists()
    assert not (stores / "claude").exists()


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--to", "gemini-cli"], "unknown agent 'gemini-cli'"),
        (["--to", "codex", "--budget", "lots"], "bad --budget 'lots'"),
        (["--to", "codex", "--reasoning", "keep"], "invalid choice"),
    ],
)
def test_bad_options_exit_2(
    codex_source: Path, stores: Path, argv: list[str], problem: str
) -> None:
    code, out, err = _run("handoff", str(codex_source), *argv)
    assert (code, out) == (2, "")
    assert problem in err
    assert not (stores / "codex").exists()


def test_a_session_without_a_directory_needs_cwd(stores: Path, tmp_path: Path) -> None:
    source = tmp_path / "messages.json"
    source.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    code, _, err = _run("handoff", str(source), "--to", "codex")
    assert code == 2
    assert "records no working directory: pass --cwd" in err


def test_a_store_that_cannot_be_written_leaves_nothing(codex_source: Path, stores: Path) -> None:
    blocker = stores / "claude"
    blocker.write_text("a file where the store's folder should be", encoding="utf-8")
    code, out, err = _run("handoff", str(codex_source), "--to", "claude-code")
    assert (code, out) == (2, "")
    assert err.startswith("cast handoff: error: cannot write the Claude Code session store")
    assert err.rstrip().endswith("nothing was written")
    assert blocker.read_text(encoding="utf-8").startswith("a file")


def test_an_unwritable_folder_deep_in_the_store_is_removed_again(
    codex_source: Path, stores: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(InputError, match="Permission denied; nothing was written"):
        handoff(codex_source, "codex")
    assert not (stores / "codex").exists()  # the day's folders it made are gone


@needs_corpus
def test_the_source_file_and_the_source_store_are_never_changed(stores: Path) -> None:
    store = stores / "claude"
    first = handoff(SMALL, "claude-code", cwd=str(stores / "work"))
    before = _tree(store)
    stat = first.path.stat()
    handoff(first.path, "codex")
    handoff(first.path, "claude-code")  # into the same store: a new file beside it
    after = _tree(store)
    assert {k: v for k, v in after.items() if k in before} == before
    assert len(after) == len(before) + 1
    assert first.path.stat().st_mtime_ns == stat.st_mtime_ns


# The codecs through cast convert, and the package boundary -----------------------------


@needs_corpus
def test_cast_convert_reads_and_writes_session_files(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    code, _, err = _run("convert", str(SMALL), "--to", "codex_rollout", "-o", str(rollout))
    assert code == 0, err
    lines = read_json_lines(str(rollout))
    assert lines[0]["type"] == "session_meta"
    back = tmp_path / "session.jsonl"
    code, _, err = _run(
        "convert",
        str(rollout),
        "--from",
        "codex_rollout",
        "--to",
        "claude_code_session",
        "-o",
        str(back),
    )
    assert code == 0, err
    session = read_session(back)
    assert missing_in_order(facts(read_session(SMALL).messages), facts(session.messages)) == []
    assert get_codec("codex-rollout") is codex_rollout


def test_importing_cast_handoff_does_not_load_csum() -> None:
    code = "import sys, cast.handoff, cast.cli; print('csum' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_the_rollout_names_the_provider_codex_is_configured_with(
    codex_source: Path, stores: Path
) -> None:
    first = handoff(codex_source, "codex", cwd=str(stores / "work"))
    assert lines_of(first.path)[0]["payload"]["model_provider"] == "openai"  # no config
    (stores / "codex" / "config.toml").write_text('model_provider = "local"\n')
    second = handoff(codex_source, "codex", cwd=str(stores / "work"))
    assert lines_of(second.path)[0]["payload"]["model_provider"] == "local"


def test_handoff_results_say_what_was_done(codex_source: Path, stores: Path) -> None:
    done = handoff(codex_source, "codex", cwd=str(stores / "work"))
    assert isinstance(done, Handoff)
    assert (done.agent, done.compacted, done.unit) == ("codex", False, "tokens")
    assert done.size_before == done.size_after > 0
    assert done.resume_command.endswith(f"codex resume {done.session_id}")


@given(chain=valid_chains())
@settings(max_examples=60, deadline=None)
def test_the_session_codecs_keep_every_text_call_and_result_port_kept(chain: list[Message]) -> None:
    """Law: a chain made valid for an agent's provider is read back from that agent's
    session file with the same texts, calls and results (system prompts excepted: the
    agents keep their own)."""
    body = [m for m in chain if m.role is not Role.SYSTEM]
    for codec, provider in (
        (claude_code_session, "anthropic"),
        (codex_rollout, "openai-responses"),
    ):
        ported = port(body, provider)
        assert facts(codec.decode(codec.encode(ported))) == facts(ported)
