"""Real Claude Code through ``csum serve`` with thinking on (issue #38): a long session
handed to Claude Code is resumed through the gateway, whose small budget makes it
compact, against the scripted model on 127.0.0.1 that answers with signed thinking.
Every request the model receives passes ``cast.lint`` for Anthropic with
``thinking=True``, the user's newest message arrives verbatim, and the model's thinking
is never copied into plain text.

Slow: the CLIs come from ``bash .ci/agents.sh`` (``$CHAINCAST_AGENTS_DIR``, default
``~/.cache/chaincast-agents``); without them, the serve extra or the corpus, it skips
and says why.
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

for _module in ("starlette", "uvicorn", "httpx", "prometheus_client"):
    pytest.importorskip(_module, reason="the serve extra is not installed: pip install '.[serve]'")

from agent_model_server import AGENTS_DIR, THOUGHT, agent_cli, agent_model_server  # noqa: E402
from cast import TextPart, ToolResult, lint  # noqa: E402
from cast.cli import main  # noqa: E402
from cast.codecs import anthropic  # noqa: E402
from serve_processes import metric, start_gateway  # noqa: E402
from tests.conftest import CLAUDE_CODE  # noqa: E402

pytestmark = pytest.mark.slow

CLAUDE = agent_cli("claude")
SESSION = CLAUDE_CODE / "claudecode_spotter_4d5611e5.json"
TASK = "Please run echo in the shell, then continue where we left off."

if not CLAUDE.exists():
    pytest.skip(
        f"Claude Code is not installed in {AGENTS_DIR}: run bash .ci/agents.sh",
        allow_module_level=True,
    )
if not SESSION.exists():
    pytest.skip(f"the Claude Code corpus is missing ({CLAUDE_CODE})", allow_module_level=True)


def _handoff(claude_home: Path, work: Path) -> str:
    """A Claude Code session of the recorded one (``cast handoff``); its id."""
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ["CLAUDE_CONFIG_DIR"] = str(claude_home)
    try:
        argv = ["handoff", str(SESSION), "--to", "claude-code", "--cwd", str(work)]
        code = main(argv, stdout=out, stderr=err)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert code == 0, err.getvalue()
    return out.getvalue().splitlines()[0]


def test_claude_code_with_thinking_compacts_through_the_gateway_validly(tmp_path: Path) -> None:
    work, home, claude_home = tmp_path / "work", tmp_path / "home", tmp_path / "claude"
    for folder in (work, home):
        folder.mkdir()
    session_id = _handoff(claude_home, work)
    # three shell calls of 25 KB each in the newest turn: its tool loop alone outgrows
    # the budget, so the gateway compacts inside it (where a summary turn before a kept
    # assistant turn would open it without thinking)
    command = "seq 100000 105000"
    with agent_model_server(thinking=True, rounds=5, command=command) as model:
        gateway = start_gateway(model.base_url, tmp_path, "--budget", "40KiB")
        try:
            keep = ("PATH", "LANG", "TERM", "TMPDIR", "USER", "SHELL")
            env = {k: v for k, v in os.environ.items() if k in keep}
            env.update(
                HOME=str(home),
                CLAUDE_CONFIG_DIR=str(claude_home),
                ANTHROPIC_BASE_URL=gateway.url,
                ANTHROPIC_API_KEY="sk-ant-scripted",
                DISABLE_TELEMETRY="1",
                DISABLE_AUTOUPDATER="1",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            )
            argv = [str(CLAUDE), "-p", "--resume", session_id, TASK, "--allowedTools", "Bash"]
            result = subprocess.run(
                [*argv, "--model", "claude-sonnet-4-5"],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert result.returncode == 0, result.stderr
            compacted = metric(gateway, "csum_serve_compactions_total")
            failed = metric(gateway, "csum_serve_outcomes_total", outcome="failed")
        finally:
            gateway.stop()
    bodies = [
        b
        for b in model.bodies("/v1/messages")
        if {t.get("name") for t in b.get("tools") or []} & {"Bash"}
    ]
    assert len(bodies) >= 4  # the task, then the results of three calls
    assert compacted >= 1
    assert failed == 0
    for body in bodies:
        assert body["thinking"]["type"] in ("enabled", "adaptive")
        messages = anthropic.decode({"messages": body["messages"]})
        found = lint(messages, "anthropic", thinking=True)
        assert not [v for v in found if v.rule == "thinking-not-first"], found
        texts = [p.text for m in messages for p in m.parts if type(p) is TextPart]
        results = [p.content for m in messages for p in m.parts if type(p) is ToolResult]
        assert any(TASK in text for text in texts)  # the user's newest message, verbatim
        assert not [t for t in [*texts, *results] if THOUGHT in t]
