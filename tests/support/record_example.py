"""Re-record csum's bundled example, ``csum/examples/claude_code_session.json``.

The real Claude Code CLI (from npm) works on this repository's own files, offline: its
model is :data:`SESSION`, a script served by ``tests/support/agent_model_server.py`` on
127.0.0.1, whose turns call Claude Code's real tools (Read, Grep, Glob, Bash) on a copy
of the committed tree (``git archive HEAD``); Claude Code runs them and logs the session
as it always does (``$CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl``). The log is
read with cast's ``claude_code`` codec and written as an Anthropic Messages request, the
form ``csum summarize --example`` reads. Three prompts (``claude -p``, then
``claude -p --resume``) make three sections. The model's words are the script's; every
tool result is what the tool returned. Commit first (the tree recorded is ``HEAD``), then
run from the repository root, with the package importable (``pip install -e .``, or
``PYTHONPATH=.``)::

    npm install --prefix /tmp/claude-code @anthropic-ai/claude-code
    python tests/support/record_example.py --claude /tmp/claude-code/node_modules/.bin/claude

It prints the sizes; ``--log PATH`` also keeps Claude Code's raw log. Paths in the
session are under ``/tmp/chaincast-recording/chaincast`` (a fixed place, so a
re-recording of an unchanged tree only differs where the tools' output does). Other
traffic is sent to a dead proxy on 127.0.0.1 (telemetry and updates are off too).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from agent_model_server import Api, Turn, agent_model_server
from cast.codecs import anthropic, claude_code

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "csum" / "examples" / "claude_code_session.json"
PLACE = Path("/tmp/chaincast-recording")
"""Where the recording runs: ``chaincast/`` (the tree), ``config/``, ``home/``, ``bin/``."""
WORK = PLACE / "chaincast"
SESSION_ID = "5c41a7ed-0e3a-4b1e-9d3c-0c4a5ca57e37"
MODEL = "claude-sonnet-4-5"
TOOLS = "Read,Grep,Glob,Bash"

Call = tuple[str, dict[str, Any]]


def turn(text: str, *calls: Call, thinking: str = "") -> dict[str, Any]:
    """One scripted model turn: optional thinking, text, then tool calls in parallel."""
    return {"thinking": thinking, "text": text, "calls": list(calls)}


def read(path: str, offset: int | None = None, limit: int | None = None) -> Call:
    spec: dict[str, Any] = {"file_path": str(WORK / path)}
    if offset is not None:
        spec["offset"] = offset
    if limit is not None:
        spec["limit"] = limit
    return ("Read", spec)


def grep(pattern: str, path: str, **options: Any) -> Call:
    return ("Grep", {"pattern": pattern, "path": str(WORK / path), **options})


def bash(command: str, description: str) -> Call:
    return ("Bash", {"command": command, "description": description})


def glob(pattern: str) -> Call:
    return ("Glob", {"pattern": pattern, "path": str(WORK)})


ANSWER_COMPACTOR = """\
Here is how csum keeps an agent's conversation under a budget.

**Where it lives.** `csum.Compactor` (`csum/compactor.py`) is what an agent loop calls \
before every model call: `await keeper.compact(messages)` returns the chain to send (a \
new list; your input is never changed), `compact_sync` does the same from synchronous \
code, and `run(messages)` returns a `CompactionResult` with sizes before and after, the \
handler calls and the events. `Summarizer` is the older reference algorithm (one \
summary per section); the Compactor makes one summary per compaction and keeps state \
across calls.

**The budget.** `budget=` takes bytes (`131072`, `"128KiB"`), tokens \
(`Budget.tokens(100_000)`) or a share of a model's window \
(`Budget.of_model("gpt-4o", 0.5)`); `csum.config.as_budget` reads all of them.

**When a chain goes over budget:**
1. Below the trigger (85 % of the limit by default) nothing happens; a call that \
compacts nothing only measures the messages added since the last call.
2. Past it, the first stage **clears** old tool results: each becomes a one-line \
placeholder with a short gist, without any handler call (the newest results are kept).
3. If that is not enough, everything older than the kept part is **summarized in one \
handler call** (the extractive handler offline, or an LLM handler); the system prompt, \
the current question and the newest turn stay verbatim, and the chain is brought down \
to the keep size so the next compaction comes many turns later.
4. A cooldown keeps it from compacting again on the next few calls while the chain \
stays under the budget itself.

Summaries are shaped for the provider the chain goes to (`target="anthropic"` gets a \
text turn, others a call of the summary tool), and a handler failure never loses the \
chain. The presets (`LOW_COST`, `SUMMARY_ONLY`) and the defaults are described in \
`docs/compactor.md` ("Defaults and why")."""

ANSWER_CODECS = """\
cast reads these wire formats, each a module of `cast/codecs/`:

| format | what it is |
|---|---|
| `openai` | Chat Completions `messages` (also DeepSeek, Mistral, vLLM) |
| `openai_responses` | the Responses API `input` items |
| `anthropic` | the Messages API `{"system", "messages"}` with content blocks |
| `bedrock` | Bedrock Converse `messages` |
| `gemini` | Gemini `contents` with `parts` |
| `langchaingo` | langchaingo's `MessageContent` JSON |
| `claude_code` | Claude Code session logs (one content block per log line) |
| `chaincast` | cast's own lossless form |
| `pydantic_ai`, `langchain`, `openai_agents` | the frameworks' message dumps |

**Detection.** When no `--format` is given, `cast.chainio.decode_chain` calls \
`detect_format` (`cast/codecs/_registry.py`). Each codec registers how to recognise its \
payloads: first every codec's check of the whole payload runs, in registration order \
(a top-level `contents` or `input`, log lines with `type` and `message`, ...), then the \
checks of the message objects (the `messages` list, or the list itself: Anthropic \
content blocks, Bedrock's `toolUse`, ...). The first codec that takes the payload names \
the format; a list of plain-text user/assistant messages fits OpenAI and Anthropic \
alike and is read as `openai`. When none takes it, `detect_format` raises a \
`CodecError` ("cannot detect the format: ..."), and the command lines print it with the \
list of formats to pass with `--format`.

Claude Code logs are the odd one out: an assistant answer is spread over several log \
lines sharing `message.id`, with tool results in between, so `claude_code.py` first \
merges them into API-shaped messages and then decodes them with the Anthropic codec."""

ANSWER_CLI = """\
Done. What the three commands show on `anthropic_thinking_tool_use.json` (the fixture \
wraps the request in `{"source", "payload"}`, so I wrote its `payload` to `chain.json` \
first: `cast inspect` cannot detect a format on the wrapper):

- **`cast inspect chain.json`**: format `anthropic`, 4 messages, 653 B in one section: a \
`request_response` pair (the `get_weather` call and its result) and a completion; it \
parses strictly, no repair needed.
- **`cast lint chain.json --target anthropic`**: 0 violations. For OpenAI it reports 3 \
`unsupported-reasoning` violations: the assistant messages carry Anthropic thinking \
blocks, which OpenAI's Chat Completions does not take back.
- **`cast convert chain.json --to openai -o openai.json`** drops that reasoning, and \
`cast lint openai.json --target openai` then reports 0 violations.

So a chain recorded against Claude can be sent to an OpenAI model after `convert`; \
`--to` takes any provider `cast lint` knows."""

SESSION: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "I'm new to this repository. How does csum keep an agent's conversation under a "
        "budget? Find where the Compactor lives, read its entry points and the budget "
        "settings, and explain what happens to a chain that goes over budget.",
        [
            turn(
                "I'll start with the README and the package's public names.",
                read("README.md"),
                read("csum/__init__.py"),
                thinking="The user wants the Compactor's flow. The README and csum's "
                "__init__ will say which module defines it and what it exports.",
            ),
            turn(
                "The Compactor is exported from `csum/compactor.py`. Let me find its "
                "methods and see how big the modules around it are.",
                grep(
                    r"^\s+(async )?def [a-z]\w*\(",
                    "csum/compactor.py",
                    output_mode="content",
                    **{"-n": True},
                ),
                bash("wc -l csum/*.py | sort -n | tail -20", "Count lines of csum modules"),
            ),
            turn(
                "Reading the module's opening and the Compactor class.",
                read("csum/compactor.py", limit=200),
                grep("class Compactor", "csum", output_mode="content", **{"-n": True, "-A": 30}),
            ),
            turn(
                "Now the budget settings and the clearing stage.",
                read("csum/config.py", limit=220),
                read("csum/clearing.py", limit=160),
                thinking="Budget holds the limit and the trigger/keep ratios; clearing is "
                "the first stage. Read both before the docs.",
            ),
            turn(
                "Checking which defaults the modules define.",
                grep(r"^DEFAULT_\w+", "csum", output_mode="content", **{"-n": True}),
            ),
            turn(
                "The user documentation should confirm the order of the stages.",
                read("docs/compactor.md", limit=160),
                grep(r"^## ", "docs/compactor.md", output_mode="content", **{"-n": True}),
            ),
            turn(
                "",
                read("docs/compactor.md", offset=120, limit=120),
            ),
            turn(ANSWER_COMPACTOR),
        ],
    ),
    (
        "Thanks. Which wire formats can cast read, and how does it tell them apart when "
        "no --format is given?",
        [
            turn(
                "Let me list the codecs.",
                glob("cast/codecs/*.py"),
                read("cast/codecs/__init__.py"),
            ),
            turn(
                "Format detection lives in the registry, it seems.",
                grep("def detect_format", "cast", output_mode="content", **{"-n": True}),
                grep("detect_format", "cast", output_mode="files_with_matches"),
            ),
            turn(
                "",
                read("cast/codecs/_registry.py"),
                thinking="detect_format is in _registry.py; read all of it, then see how "
                "chainio calls it.",
            ),
            turn(
                "And how the command lines call it:",
                grep(
                    r"def (decode_chain|known_formats|read_json)",
                    "cast/chainio.py",
                    output_mode="content",
                    **{"-n": True, "-A": 25},
                ),
            ),
            turn(
                "Claude Code logs need merging; checking that codec and the format docs.",
                read("cast/codecs/claude_code.py", limit=120),
                read("docs/codecs.md", limit=120),
            ),
            turn(ANSWER_CODECS),
        ],
    ),
    (
        "Try it: take one of the codec test fixtures, inspect it with the cast CLI, lint it "
        "for Anthropic and OpenAI, and convert it to OpenAI.",
        [
            turn(
                "",
                bash("ls tests/fixtures/codecs", "List codec fixtures"),
                bash("python -m cast --help", "Show cast CLI help"),
            ),
            turn(
                "I'll use the Anthropic fixture with thinking and a tool call.",
                bash(
                    "python -m cast inspect tests/fixtures/codecs/anthropic_thinking_tool_use.json",
                    "Inspect the fixture",
                ),
            ),
            turn(
                "The fixture wraps the request in a `source`/`payload` object. Let me look "
                "and extract the payload.",
                read("tests/fixtures/codecs/anthropic_thinking_tool_use.json"),
                thinking="Detection failed on the wrapper; write payload to chain.json.",
            ),
            turn(
                "",
                bash(
                    'python -c "import json; json.dump(json.load(open('
                    "'tests/fixtures/codecs/anthropic_thinking_tool_use.json'))['payload'], "
                    "open('chain.json', 'w'), indent=1)\" && python -m cast inspect chain.json",
                    "Extract the payload and inspect it",
                ),
            ),
            turn(
                "",
                bash("python -m cast lint chain.json --provider anthropic", "Lint for Anthropic"),
            ),
            turn(
                "The option is `--target`.",
                bash("python -m cast lint chain.json --target anthropic", "Lint for Anthropic"),
                bash(
                    "python -m cast lint chain.json --target openai --source anthropic",
                    "Lint for OpenAI",
                ),
            ),
            turn(
                "",
                bash(
                    "python -m cast convert chain.json --to openai -o openai.json && "
                    "python -m cast lint openai.json --target openai && head -c 1500 openai.json",
                    "Convert to OpenAI and lint it",
                ),
            ),
            turn(ANSWER_CLI),
        ],
    ),
]
"""The sections: a prompt, then the model's turns (each answers the previous turn's tool
results; a turn without calls ends the section)."""


def _tool_id(n: int, k: int) -> str:
    digest = hashlib.sha256(f"{n}:{k}".encode()).digest()
    return "toolu_01" + base64.b32encode(digest).decode().rstrip("=").lower()[:22]


def _blocks(n: int, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the ``n``-th scripted turn (ids and signatures derived from n)."""
    blocks: list[dict[str, Any]] = []
    if spec["thinking"]:
        signature = base64.b64encode(hashlib.sha256(spec["thinking"].encode()).digest())
        blocks.append(
            {"type": "thinking", "thinking": spec["thinking"], "signature": signature.decode()}
        )
    if spec["text"]:
        blocks.append({"type": "text", "text": spec["text"]})
    for k, (name, arguments) in enumerate(spec["calls"]):
        blocks.append({"type": "tool_use", "id": _tool_id(n, k), "name": name, "input": arguments})
    return blocks


class Script:
    """The model: the turn a request asks for is the count of assistant messages in it."""

    def __init__(self) -> None:
        self.turns = [spec for _, turns in SESSION for spec in turns]
        self.errors: list[str] = []

    def __call__(self, api: Api, body: dict[str, Any]) -> Turn:
        if not any(tool.get("name") == "Read" for tool in body.get("tools", [])):
            return Turn(text="Repository tour")  # a side request (a title)
        n = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if n >= len(self.turns):
            self.errors.append(f"request for turn {n}: the script has {len(self.turns)}")
            return Turn(text="(the script has ended)")
        return Turn.from_blocks(_blocks(n, self.turns[n]))


def _export_tree(target: Path) -> None:
    """The committed tree (``git archive HEAD``) without the example it re-records."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "HEAD"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")


def _environment(base_url: str) -> dict[str, str]:
    bin_dir = PLACE / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"  # a wrapper, not a link: a venv's python needs its own path
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(PLACE / "home"),
        "CLAUDE_CONFIG_DIR": str(PLACE / "config"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-offline",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",  # anything but the scripted model goes nowhere
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }


def record(claude: str) -> list[dict[str, Any]]:
    """Run the session; the lines of Claude Code's log."""
    if PLACE.exists():
        shutil.rmtree(PLACE)
    WORK.mkdir(parents=True)
    (PLACE / "home").mkdir()
    _export_tree(WORK)
    (WORK / "csum" / "examples" / EXAMPLE.name).unlink(missing_ok=True)
    script = Script()
    with agent_model_server(script) as server:
        env = _environment(server.base_url)
        for k, (prompt, _) in enumerate(SESSION):
            session = ["--session-id", SESSION_ID] if k == 0 else ["--resume", SESSION_ID]
            argv = [claude, "-p", prompt, *session, "--model", MODEL, "--allowedTools", TOOLS]
            done = subprocess.run(
                argv, cwd=WORK, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"claude exited {done.returncode}: {done.stderr[-2000:]}")
    if script.errors:
        raise SystemExit("; ".join(script.errors))
    logs = list((PLACE / "config" / "projects").glob(f"*/{SESSION_ID}.jsonl"))
    if len(logs) != 1:
        raise SystemExit(f"expected one session log, found {logs}")
    return [json.loads(line) for line in logs[0].read_text(encoding="utf-8").splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claude", default="claude", help="the Claude Code CLI to run")
    parser.add_argument("--out", type=Path, default=EXAMPLE, help="where to write the example")
    parser.add_argument("--log", type=Path, help="also keep Claude Code's raw log here")
    args = parser.parse_args()
    version = subprocess.run(
        [args.claude, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    lines = record(args.claude)
    if args.log:
        args.log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    messages = claude_code.decode(lines)
    text = json.dumps(anthropic.encode(messages), indent=1, ensure_ascii=False) + "\n"
    args.out.write_text(text, encoding="utf-8")
    calls = sum(len(m.tool_calls) for m in messages)
    print(
        f"{version}: {len(lines)} log lines -> {len(messages)} messages, {calls} tool calls, "
        f"{len(text.encode()):,} bytes in {args.out}"
    )
    if os.environ.get("KEEP_RECORDING") is None:
        shutil.rmtree(PLACE)


if __name__ == "__main__":
    main()
