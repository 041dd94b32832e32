"""``cast handoff`` with the real agents: Claude Code and Codex CLI resume a handed-off
session offline, against the scripted model on 127.0.0.1 (tests/support/agent_model_server.py).

Slow (about a minute): CI installs the CLIs with ``bash .ci/agents.sh`` into
``$CHAINCAST_AGENTS_DIR`` (default ``~/.cache/chaincast-agents``), where these tests
find them; without them, or without the corpus, they skip and say why.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_model_server import AGENTS_DIR, MARKER, ModelServer, agent_cli, agent_model_server
from cast import SUMMARIZATION_TOOL_NAME, Message, lint
from cast.cli import main
from cast.codecs import anthropic, openai_responses
from cast.handoff import read_session
from csum import SUMMARIZED_CONTENT_PREFIX
from csum.tokens import EstimatedTokens
from handoff_checks import Fact, facts, lines_of, missing_in_order
from tests.conftest import CLAUDE_CODE

pytestmark = pytest.mark.slow

CLAUDE = agent_cli("claude")
CODEX = agent_cli("codex")
SMALL = CLAUDE_CODE / "claudecode_spotter_8463c716_sub_agent-a7be2f0.json"
LARGE = CLAUDE_CODE / "claudecode_spotter_4d5611e5.json"
MODEL = "claude-sonnet-4-5"
TIMEOUT = 180

if not (CLAUDE.exists() and CODEX.exists()):
    pytest.skip(
        f"the agent CLIs are not installed in {AGENTS_DIR}: run bash .ci/agents.sh",
        allow_module_level=True,
    )
if not SMALL.exists() or not LARGE.exists():
    pytest.skip(f"the Claude Code corpus is missing ({CLAUDE_CODE})", allow_module_level=True)


@dataclass
class Agents:
    """The scripted model and the two agents' homes, stores and working folder."""

    server: ModelServer
    root: Path
    work: Path
    claude_home: Path
    codex_home: Path

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "TERM", "TMPDIR", "USER", "SHELL")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(
            HOME=str(self.root / "home"),
            CLAUDE_CONFIG_DIR=str(self.claude_home),
            CODEX_HOME=str(self.codex_home),
            ANTHROPIC_BASE_URL=self.server.base_url,
            ANTHROPIC_API_KEY="sk-ant-scripted",
            SCRIPTED_API_KEY="scripted",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        return env

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=self.work,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def claude(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(CLAUDE), "-p", *args, "--allowedTools", "Bash", "--model", MODEL)

    def codex(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(CODEX), "exec", *args)

    def handoff(self, source: Path, to: str, *extra: str) -> str:
        """``cast handoff`` in-process, in the agents' environment; the new session id."""
        out, err = io.StringIO(), io.StringIO()
        saved = dict(os.environ)
        os.environ.update(CLAUDE_CONFIG_DIR=str(self.claude_home), CODEX_HOME=str(self.codex_home))
        try:
            code = main(["handoff", str(source), "--to", to, *extra], stdout=out, stderr=err)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        assert code == 0, err.getvalue()
        session_id, command = out.getvalue().splitlines()
        verb = "claude --resume" if to == "claude-code" else "codex resume"
        assert command.endswith(f"{verb} {session_id}")
        return session_id

    def first_request(self, path: str, since: int) -> dict[str, Any]:
        """The first main request (one offering the shell tool) after ``since`` requests."""
        with self.server.lock:
            received = self.server.requests[since:]
        for request in received:
            tools = {t.get("name") for t in request["body"].get("tools") or []}
            if request["path"] == path and tools & {"Bash", "exec_command", "shell_command"}:
                body: dict[str, Any] = request["body"]
                return body
        raise AssertionError(f"no main request on {path}: {[r['path'] for r in received]}")

    def mark(self) -> int:
        with self.server.lock:
            return len(self.server.requests)


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    with agent_model_server() as server:
        work = tmp_path / "work"
        codex_home = tmp_path / "codex"
        for folder in (work, codex_home, tmp_path / "home"):
            folder.mkdir()
        (codex_home / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "scripted"\n\n'
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{server.base_url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "SCRIPTED_API_KEY"\n',
            encoding="utf-8",
        )
        yield Agents(server, tmp_path, work, tmp_path / "claude", codex_home)


def _claude_file(agents: Agents, session_id: str) -> Path:
    folder = "".join(c if c.isalnum() else "-" for c in str(agents.work))
    return agents.claude_home / "projects" / folder / f"{session_id}.jsonl"


def _codex_file(agents: Agents, session_id: str) -> Path:
    (found,) = (agents.codex_home / "sessions").rglob(f"rollout-*-{session_id}.jsonl")
    return found


def _anthropic_messages(body: dict[str, Any]) -> list[Message]:
    return anthropic.decode({"messages": body["messages"]})


def _responses_messages(body: dict[str, Any]) -> list[Message]:
    return openai_responses.decode(body["input"])


def _rules(messages: list[Message], target: str) -> set[str]:
    return {violation.rule for violation in lint(messages, target)}


def _claude_baseline(agents: Agents) -> set[str]:
    """The lint rules Claude Code's own first request of a new session trips."""
    since = agents.mark()
    result = agents.claude("Please run echo in the shell")
    assert result.returncode == 0, result.stderr
    return _rules(_anthropic_messages(agents.first_request("/v1/messages", since)), "anthropic")


def _codex_baseline(agents: Agents) -> set[str]:
    since = agents.mark()
    result = agents.codex("--skip-git-repo-check", "-s", "danger-full-access", "Please run echo")
    assert result.returncode == 0, result.stderr
    body = agents.first_request("/v1/responses", since)
    return _rules(_responses_messages(body), "openai-responses")


def _resume_claude(agents: Agents, session_id: str) -> dict[str, Any]:
    """Resume in Claude Code; checks it ran the tool and appended to the session, and
    returns its first request."""
    path = _claude_file(agents, session_id)
    written = path.read_text(encoding="utf-8")
    since = agents.mark()
    result = agents.claude("--resume", session_id, "continue")
    assert result.returncode == 0, result.stderr + result.stdout
    after = path.read_text(encoding="utf-8")
    assert after.startswith(written)
    assert len(after) > len(written)
    appended = lines_of(path)[len(written.splitlines()) :]
    results = [
        block
        for line in appended
        if line.get("type") == "user" and isinstance(line["message"]["content"], list)
        for block in line["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert any(MARKER in json.dumps(block["content"]) for block in results)
    return agents.first_request("/v1/messages", since)


def _resume_codex(agents: Agents, session_id: str) -> dict[str, Any]:
    path = _codex_file(agents, session_id)
    written = path.read_text(encoding="utf-8")
    since = agents.mark()
    result = agents.codex(
        "resume",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        session_id,
        "continue",
    )
    assert result.returncode == 0, result.stderr + result.stdout
    after = path.read_text(encoding="utf-8")
    assert after.startswith(written)
    assert len(after) > len(written)
    appended = lines_of(path)[len(written.splitlines()) :]
    outputs = [
        line["payload"]
        for line in appended
        if line.get("type") == "response_item"
        and line["payload"].get("type") == "function_call_output"
    ]
    assert any(MARKER in json.dumps(item["output"]) for item in outputs)
    return agents.first_request("/v1/responses", since)


def _summary(messages: list[Message]) -> tuple[int, Fact]:
    """Where the last summary a compaction made ends, and its fact (the Compactor writes
    it as a summary pair, or for Anthropic as an AI text)."""
    found: tuple[int, Fact] | None = None
    for index, message in enumerate(messages):
        for fact in facts([message]):
            if fact[0] == "text" and fact[2].startswith(SUMMARIZED_CONTENT_PREFIX.strip()):
                found = index, fact
        if any(call.name == SUMMARIZATION_TOOL_NAME for call in message.tool_calls):
            found = index + 1, facts([messages[index + 1]])[0]
    assert found is not None, "no summary was made"
    return found


def test_a_claude_code_session_resumes_in_codex(agents: Agents) -> None:
    baseline = _codex_baseline(agents)
    source = read_session(SMALL)
    session_id = agents.handoff(SMALL, "codex", "--cwd", str(agents.work))
    request = _resume_codex(agents, session_id)
    received = _responses_messages(request)
    assert missing_in_order(facts(source.messages), facts(received)) == []
    assert _rules(received, "openai-responses") <= baseline


def test_a_codex_session_resumes_in_claude_code(agents: Agents) -> None:
    baseline = _claude_baseline(agents)
    since = agents.mark()
    result = agents.codex("--skip-git-repo-check", "-s", "danger-full-access", "List the files")
    assert result.returncode == 0, result.stderr
    (rollout,) = (agents.codex_home / "sessions").rglob("rollout-*.jsonl")
    recorded = read_session(rollout)
    assert agents.first_request("/v1/responses", since)  # the real Codex wrote it
    session_id = agents.handoff(rollout, "claude-code")
    request = _resume_claude(agents, session_id)
    received = _anthropic_messages(request)
    expected = facts(recorded.messages)
    assert ("text", "human", "List the files") in expected
    assert [f for f in expected if f[0] == "result"]  # the recorded tool call's result
    assert missing_in_order(expected, facts(received)) == []
    assert _rules(received, "anthropic") <= baseline


def test_a_round_trip_through_both_agents_keeps_the_conversation(agents: Agents) -> None:
    source = read_session(SMALL)
    to_codex = agents.handoff(SMALL, "codex", "--cwd", str(agents.work))
    _resume_codex(agents, to_codex)  # Codex appends its own turn
    back = agents.handoff(_codex_file(agents, to_codex), "claude-code")
    request = _resume_claude(agents, back)
    received = facts(_anthropic_messages(request))
    assert missing_in_order(facts(source.messages), received) == []
    assert ("text", "human", "continue") in received  # the turn Codex added came along


def test_a_budget_below_the_session_compacts_what_the_agent_resumes(agents: Agents) -> None:
    budget = 20_000
    source = read_session(LARGE)
    counter = EstimatedTokens()
    assert sum(map(counter.count, source.messages)) > 4 * budget
    session_id = agents.handoff(
        LARGE, "claude-code", "--cwd", str(agents.work), "--budget", f"{budget} tokens"
    )
    written = read_session(_claude_file(agents, session_id)).messages
    assert sum(map(counter.count, written)) <= budget
    at, summary = _summary(written)
    newest = facts(written[at + 1 :])
    assert newest
    assert set(newest) <= set(facts(source.messages))
    request = _resume_claude(agents, session_id)
    received = facts(_anthropic_messages(request))
    assert missing_in_order([summary], received) == []
    assert missing_in_order(newest, received) == []
    assert missing_in_order([facts(source.messages)[0]], received) == []  # the first task
