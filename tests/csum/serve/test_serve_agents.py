"""Real agents through ``csum serve`` (issue #38), each against the scripted model on
127.0.0.1 (tests/support/agent_model_server.py), with a budget small enough that the gateway
compacts inside the agent's own session, offline:

- Claude Code with thinking on, resuming a long recorded session handed to it;
- opencode, one ``opencode run`` of 14 tool turns (a read, twelve shell commands, an
  edit), on Anthropic Messages with thinking on and on Chat Completions;
- aider (Chat Completions through litellm; its requests end with a system message and
  hold the edited file's contents before the newest turn), twelve edits and twelve
  ``/run`` outputs in one session, each edit quoting the file as the request shows it.

Every request the model receives passes ``cast.lint`` for its provider (with the
request's ``thinking``), is within the budget or counted ``over_floor``, keeps the
system messages where the agent put them and the user's words verbatim, the model's
thinking is never copied into plain text, and a compaction carried a summary.

Slow: the agents come from ``bash .ci/agents.sh`` (``$CHAINCAST_AGENTS_DIR``, default
``~/.cache/chaincast-agents``); without one of them, the serve extra or the corpus, its
test skips and says why.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

for _module in ("starlette", "uvicorn", "httpx", "prometheus_client"):
    pytest.importorskip(_module, reason="the serve extra is not installed: pip install '.[serve]'")

from agent_model_server import (  # noqa: E402
    AGENTS_DIR,
    THOUGHT,
    Api,
    Call,
    ShellScript,
    Turn,
    agent_cli,
    agent_model_server,
    thinking_on,
    tool_names,
)
from cast import SUMMARIZATION_TOOL_NAME, Message, TextPart, ToolResult, lint  # noqa: E402
from cast.cli import main  # noqa: E402
from cast.codecs import anthropic, openai  # noqa: E402
from csum import SUMMARIZED_CONTENT_PREFIX  # noqa: E402
from serve_processes import Process, metric, start_gateway  # noqa: E402
from tests.conftest import CLAUDE_CODE  # noqa: E402

pytestmark = pytest.mark.slow

CLAUDE = agent_cli("claude")
OPENCODE = agent_cli("opencode")
AIDER = agent_cli("aider")
SESSION = CLAUDE_CODE / "claudecode_spotter_4d5611e5.json"
TASK = "Please run echo in the shell, then continue where we left off."
OFFLINE = {
    # anything but 127.0.0.1 goes to a closed port: nothing leaves the machine
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


def _installed(cli: Path) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not cli.exists(),
        reason=f"{cli.name} is not installed in {AGENTS_DIR}: run bash .ci/agents.sh",
    )


def _env(home: Path, **extra: str) -> dict[str, str]:
    keep = ("PATH", "LANG", "TMPDIR", "USER", "SHELL")
    env = {k: v for k, v in os.environ.items() if k in keep}
    return {**env, "HOME": str(home), "TERM": "dumb", **OFFLINE, **extra}


def _run(argv: list[str], work: Path, env: dict[str, str], stdin: str | None = None) -> str:
    """Run an agent to its end; its output (it must exit 0)."""
    result = subprocess.run(
        argv,
        cwd=work,
        env=env,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _texts(messages: list[Message]) -> list[str]:
    texts = [p.text for m in messages for p in m.parts if type(p) is TextPart]
    return texts + [p.content for m in messages for p in m.parts if type(p) is ToolResult]


def _summarized(messages: list[Message]) -> bool:
    """Whether the history holds a summary a compaction wrote (an AI text with the
    summary prefix, or a call of the summary tool)."""
    prefix = SUMMARIZED_CONTENT_PREFIX.strip()
    return any(text.lstrip().startswith(prefix) for text in _texts(messages)) or any(
        call.name == SUMMARIZATION_TOOL_NAME for m in messages for call in m.tool_calls
    )


class Gateway:
    """``csum serve`` in its own process before the scripted model, and its counters."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.compactions = 0.0
        self.failed = 0.0
        self.over_floor = 0.0

    def count(self) -> None:
        """Read the counters (before the gateway stops)."""
        self.compactions = metric(self.process, "csum_serve_compactions_total")
        self.failed = metric(self.process, "csum_serve_outcomes_total", outcome="failed")
        self.over_floor = metric(self.process, "csum_serve_outcomes_total", outcome="over_floor")


def _check_history(
    chains: list[list[Message]], budget: int, gateway: Gateway, provider: str, **lint_args: Any
) -> None:
    """The checks every agent's requests pass: lint-clean, within the budget (or
    counted over the floor), no failed compaction, at least two compactions, one of
    them with a summary, the model's thinking never in plain text."""
    over = 0
    for i, chain in enumerate(chains):
        assert lint(chain, provider, **lint_args) == [], f"request {i}"
        over += sum(m.size for m in chain) > budget
        assert not [t for t in _texts(chain) if THOUGHT in t], f"request {i}"
    assert over <= gateway.over_floor
    assert gateway.failed == 0
    assert gateway.compactions >= 2
    assert any(map(_summarized, chains))


# Claude Code --------------------------------------------------------------------------


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


@_installed(CLAUDE)
@pytest.mark.skipif(
    not SESSION.exists(), reason=f"the Claude Code corpus is missing ({CLAUDE_CODE})"
)
def test_claude_code_with_thinking_compacts_through_the_gateway_validly(tmp_path: Path) -> None:
    work, home, claude_home = tmp_path / "work", tmp_path / "home", tmp_path / "claude"
    for folder in (work, home):
        folder.mkdir()
    session_id = _handoff(claude_home, work)
    # three shell calls of 25 KB each in the newest turn: its tool loop alone outgrows
    # the budget, so the gateway compacts inside it (where a summary turn before a kept
    # assistant turn would open it without thinking)
    script = ShellScript(thinking=True, rounds=5, command="seq 100000 105000")
    with agent_model_server(script) as model:
        gateway = start_gateway(model.base_url, tmp_path, "--budget", "40KiB")
        try:
            env = _env(
                home,
                CLAUDE_CONFIG_DIR=str(claude_home),
                ANTHROPIC_BASE_URL=gateway.url,
                ANTHROPIC_API_KEY="sk-ant-scripted",
                DISABLE_TELEMETRY="1",
                DISABLE_AUTOUPDATER="1",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            )
            argv = [str(CLAUDE), "-p", "--resume", session_id, TASK, "--allowedTools", "Bash"]
            _run([*argv, "--model", "claude-sonnet-4-5"], work, env)
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


# opencode -----------------------------------------------------------------------------

OPENCODE_TASK = "Look at notes.txt, survey the numbers with seq, then mark the notes done."
SEQ_CALLS = 12
"""Shell calls opencode's session makes (about 3.5 KB of output each)."""


class OpencodeScript:
    """opencode's model: read notes.txt, run ``seq`` :data:`SEQ_CALLS` times, edit
    notes.txt (``TODO`` -> ``done``), then answer; with thinking on, every answer opens
    with a signed thinking block. Requests without opencode's tools (its title) get text.
    The step is the script's own count (a compacting gateway sends fewer turns)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.step = 0

    def __call__(self, api: Api, body: dict[str, Any]) -> Turn:
        if "bash" not in tool_names(body):
            return Turn(text="Survey of the notes")
        n, self.step = self.step, self.step + 1
        turn = Turn()
        if thinking_on(body):
            turn.thinking, turn.signature = THOUGHT, f"scripted-signature-{n:04d}"
        notes = str(self.work / "notes.txt")
        if n == 0:
            turn.calls.append(Call(f"toolu_oc{n:04d}", "read", {"filePath": notes}))
        elif n <= SEQ_CALLS:
            command = f"seq {n * 1000} {n * 1000 + 600}"
            turn.calls.append(Call(f"toolu_oc{n:04d}", "bash", {"command": command}))
        elif n == SEQ_CALLS + 1:
            edit = {"filePath": notes, "oldString": "TODO", "newString": "done"}
            turn.calls.append(Call(f"toolu_oc{n:04d}", "edit", edit))
        else:
            turn.text = "The notes are marked done."
        return turn


@dataclass(frozen=True)
class OpencodeRoute:
    """How opencode reaches the gateway: its AI SDK provider package, the API it speaks
    and the model's options."""

    package: str
    path: str
    provider: str
    """The cast provider profile its requests must pass."""
    options: dict[str, Any]

    def decode(self, body: dict[str, Any]) -> list[Message]:
        codec = anthropic if self.path == "/v1/messages" else openai
        return codec.decode(body)

    def system(self, body: dict[str, Any]) -> Any:
        """The system prompt as opencode sent it (Messages: ``system``; Chat: the
        system messages that open ``messages``)."""
        if self.path == "/v1/messages":
            return body["system"]
        messages = body["messages"]
        opening = next(i for i, m in enumerate(messages) if m["role"] != "system")
        assert all(m["role"] != "system" for m in messages[opening:])
        return messages[:opening]


ROUTES = [
    OpencodeRoute(
        "@ai-sdk/anthropic",
        "/v1/messages",
        "anthropic",
        {"thinking": {"type": "enabled", "budgetTokens": 2000}},
    ),
    OpencodeRoute("@ai-sdk/openai-compatible", "/v1/chat/completions", "openai", {}),
]


def _opencode_config(route: OpencodeRoute, base_url: str) -> dict[str, Any]:
    """A provider at ``base_url`` (the gateway)."""
    model = {
        "name": "scripted",
        "tool_call": True,
        "reasoning": bool(route.options),
        "limit": {"context": 200000, "output": 8000},
        "options": route.options,
    }
    provider = {
        "npm": route.package,
        "name": "csum gateway",
        "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-scripted"},
        "models": {"scripted-model": model},
    }
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"csum": provider},
        "model": "csum/scripted-model",
        "small_model": "csum/scripted-model",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
    }


@_installed(OPENCODE)
@pytest.mark.parametrize("route", ROUTES, ids=[r.provider for r in ROUTES])
def test_opencode_compacts_through_the_gateway_validly(
    route: OpencodeRoute, tmp_path: Path
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    for folder in (work, home):
        folder.mkdir()
    (work / "notes.txt").write_text("notes: TODO\n", encoding="utf-8")
    budget = 16 * 1024
    with agent_model_server(OpencodeScript(work)) as model:
        gateway = Gateway(start_gateway(model.base_url, tmp_path, "--budget", f"{budget}"))
        try:
            config = tmp_path / "opencode.json"
            text = json.dumps(_opencode_config(route, gateway.process.url))
            config.write_text(text, encoding="utf-8")
            env = _env(
                home,
                OPENCODE_CONFIG=str(config),
                OPENCODE_DISABLE_AUTOUPDATE="1",
                OPENCODE_DISABLE_MODELS_FETCH="1",
                OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
                OPENCODE_DISABLE_LSP_DOWNLOAD="1",
                OPENCODE_DISABLE_SHARE="1",
                OPENCODE_DISABLE_CLAUDE_CODE="1",
                OPENCODE_DISABLE_AUTOCOMPACT="1",  # the gateway compacts, not opencode
            )
            _run([str(OPENCODE), "run", OPENCODE_TASK], work, env)
            gateway.count()
        finally:
            gateway.process.stop()
    assert (work / "notes.txt").read_text(encoding="utf-8") == "notes: done\n"
    bodies = [b for b in model.bodies(route.path) if b.get("tools")]
    assert len(bodies) == SEQ_CALLS + 3  # the task, then the results of 14 calls
    first = bodies[0]
    (task,) = [t for t in _texts(route.decode(first)) if OPENCODE_TASK in t]
    thinking = route.path == "/v1/messages"
    chains = []
    for i, body in enumerate(bodies):
        assert thinking_on(body) is thinking, f"request {i}"
        assert route.system(body) == route.system(first), f"request {i}"  # as sent
        chain = route.decode(body)
        assert task in _texts(chain), f"request {i}"  # the user's task, verbatim
        chains.append(chain)
    _check_history(chains, budget, gateway, route.provider, thinking=thinking)


# aider --------------------------------------------------------------------------------

EDITS = 12
"""Rounds of aider's session: an edit asked for, then a ``/run`` whose output (3 KB)
joins the chat."""
ASK = "Add line {k} to notes.txt, before END."


FILES = "I have *added these files to the chat*"
"""How aider's message holding the files' current contents opens."""


def aider_reply(api: Api, body: dict[str, Any]) -> Turn:
    """aider's model: the edit the newest request asks for, as a SEARCH/REPLACE block
    (aider's ``diff`` format) that quotes the end of notes.txt as the request shows it
    (aider sends the files' contents before the newest turn); without it, no edit."""
    said = [
        m["content"]
        for m in body.get("messages") or []
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    ]
    found = re.fullmatch(ASK.format(k=r"(\d+)").replace(".", r"\."), said[-1] if said else "")
    shown = [text for text in said if text.startswith(FILES)]
    notes = re.search(r"^notes\.txt\n```\n(.*?)```$", shown[-1] if shown else "", re.M | re.S)
    if found is None or notes is None:
        return Turn(text="I do not see notes.txt in the chat.")
    end = "".join(notes.group(1).splitlines(keepends=True)[-2:])
    new = end.replace("END\n", f"line {found.group(1)}\nEND\n")
    block = f"notes.txt\n```\n<<<<<<< SEARCH\n{end}=======\n{new}>>>>>>> REPLACE\n```\n"
    return Turn(text=f"Adding line {found.group(1)}.\n\n{block}")


@_installed(AIDER)
def test_aider_compacts_through_the_gateway_validly(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    for folder in (work, home / ".aider" / "caches"):
        folder.mkdir(parents=True)
    (work / "notes.txt").write_text("notes:\nEND\n", encoding="utf-8")
    # aider fetches litellm's model prices unless its cache holds some: a known model
    # (aider's settings for gpt-4o: the diff format, its reminder as a system message)
    prices = {"openai/gpt-4o": {"max_input_tokens": 128000, "litellm_provider": "openai"}}
    cache = home / ".aider" / "caches" / "model_prices_and_context_window.json"
    cache.write_text(json.dumps(prices), encoding="utf-8")
    lines = [line for k in range(1, EDITS + 1) for line in (ASK.format(k=k), f"/run seq {k} 700")]
    # aider sends the files' contents as a message before the newest turn: the default
    # target (0.1 of the budget) keeps only the newest turn, a model then edits blind
    # (docs/serve.md); room for a few turns over aider's 10 KB fixed part keeps them
    budget = 32 * 1024
    with agent_model_server(aider_reply) as model:
        flags = ("--budget", f"{budget}", "--keep-ratio", "0.6")
        gateway = Gateway(start_gateway(model.base_url, tmp_path, *flags))
        try:
            env = _env(
                home,
                OPENAI_API_BASE=f"{gateway.process.url}/v1",
                OPENAI_API_KEY="sk-scripted",
                LITELLM_LOCAL_MODEL_COST_MAP="True",
            )
            argv = [
                str(AIDER),
                *("--model", "openai/gpt-4o", "--weak-model", "openai/gpt-4o"),
                *("--no-check-update", "--no-analytics", "--no-show-model-warnings"),
                *("--yes-always", "--no-git", "--no-pretty", "--no-fancy-input"),
                "--no-show-release-notes",
                # aider summarizes its own history past this: leave it to the gateway
                *("--max-chat-history-tokens", "1000000"),
                "notes.txt",
            ]
            _run(argv, work, env, stdin="\n".join(lines) + "\n")
            gateway.count()
        finally:
            gateway.process.stop()
    numbered = "".join(f"line {k}\n" for k in range(1, EDITS + 1))
    assert (work / "notes.txt").read_text(encoding="utf-8") == f"notes:\n{numbered}END\n"
    bodies = model.bodies("/v1/chat/completions")
    assert len(bodies) == EDITS
    first = bodies[0]["messages"]
    assert [m["role"] for m in (first[0], first[-1])] == ["system", "system"]
    chains = []
    for k, body in enumerate(bodies, 1):
        messages = body["messages"]
        # aider's system prompt first and its reminder last, as it sent them
        assert messages[0] == first[0], f"request {k}"
        assert messages[-1] == first[-1], f"request {k}"
        # the newest ask verbatim, and the first (the session's task) while it fits
        assert messages[-2] == {"role": "user", "content": ASK.format(k=k)}, f"request {k}"
        chain = openai.decode(body)
        assert k == 1 or ASK.format(k=1) in _texts(chain), f"request {k}"
        chains.append(chain)
    _check_history(chains, budget, gateway, "openai")
