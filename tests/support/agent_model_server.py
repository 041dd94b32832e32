"""A scripted model on 127.0.0.1 for driving the real coding-agent CLIs offline.

It speaks the two APIs the agents stream from: Anthropic Messages (``POST /v1/messages``,
what Claude Code calls with ``ANTHROPIC_BASE_URL``) and OpenAI Responses (``POST
/v1/responses``, what Codex calls through a ``model_provider`` with ``wire_api =
"responses"``), both as server-sent events. Every request body is recorded. The script
is the same for both: when the newest input is the user's text, call the agent's shell
tool with ``echo <marker>``; when it is a tool's result, answer in text and stop. Side
requests (titles, token counts, quota probes) get a short text answer.

Run in-process with :func:`agent_model_server` (a context manager), or as a script
(``python tests/support/agent_model_server.py PORT``) to watch an agent by hand.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

AGENTS_DIR = Path(
    os.environ.get("CHAINCAST_AGENTS_DIR") or Path.home() / ".cache" / "chaincast-agents"
)
"""Where ``bash .ci/agents.sh`` installs the pinned agent CLIs the slow tests drive."""


def agent_cli(name: str) -> Path:
    """The installed CLI ``name`` (``claude``, ``codex``) under :data:`AGENTS_DIR`."""
    return AGENTS_DIR / "node_modules" / ".bin" / name


MARKER = "handoff-tool-ran"
"""What the scripted shell call echoes; a test finds it in the tool's result."""
FINAL_TEXT = "Done: the command ran."
"""The scripted text answer after a tool result."""


class ModelServer:
    """Where the server listens and the request bodies it received, in order."""

    def __init__(
        self, base_url: str, thinking: bool = False, rounds: int = 1, command: str = ""
    ) -> None:
        self.base_url = base_url
        self.thinking = thinking
        """Answer a Messages request that turns thinking on with a signed thinking
        block first, as Claude does."""
        self.rounds = rounds
        """Shell calls per user message on Messages (then the text answer)."""
        self.command = command
        """The shell command called on Messages (default: ``echo`` the marker)."""
        self.made = 0
        """Shell calls made on Messages since the newest user text (the script's own
        count: a compacting gateway may send fewer results than were made)."""
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def bodies(self, path: str) -> list[dict[str, Any]]:
        """The JSON bodies received on ``path`` (e.g. ``/v1/messages``)."""
        with self.lock:
            return [r["body"] for r in self.requests if r["path"] == path]


def _sse(kind: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {kind}\n" if kind else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


# Anthropic Messages ------------------------------------------------------------------


def _results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _anthropic_wants_tool(body: dict[str, Any], rounds: int = 1, made: int = 0) -> str | None:
    """The Bash tool's name when the newest user turn is text, or holds tool results
    and the model made fewer than ``rounds`` calls since the last text (``made``)."""
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if "Bash" not in tools:
        return None
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return None
    if not _results(messages[-1]):
        return "Bash"
    return "Bash" if made < rounds else None


THOUGHT = "The user wants the shell: run the echo."
"""The scripted thinking (with ``thinking``): a test finds it never copied into text."""


def _thinking_events(n: int) -> list[bytes]:
    start = {"type": "thinking", "thinking": "", "signature": ""}
    deltas = [
        {"type": "thinking_delta", "thinking": THOUGHT},
        {"type": "signature_delta", "signature": f"scripted-signature-{n:04d}"},
    ]
    return [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        *(
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
            for d in deltas
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]


def anthropic_events(
    body: dict[str, Any],
    n: int,
    thinking: bool = False,
    rounds: int = 1,
    command: str = "",
    made: int = 0,
) -> list[bytes]:
    """The SSE events of the scripted answer to a Messages request (with ``thinking``
    and a request that turns it on: a signed thinking block first)."""
    model = body.get("model", "claude-sonnet-4-5")
    tool = _anthropic_wants_tool(body, rounds, made)
    message = {
        "id": f"msg_scripted{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events = [_sse("message_start", {"type": "message_start", "message": message})]
    index = 0
    setting = body.get("thinking")
    if thinking and isinstance(setting, dict) and setting.get("type") in ("enabled", "adaptive"):
        events += _thinking_events(n)
        index = 1
    if tool is not None:
        block = {"type": "tool_use", "id": f"toolu_scripted{n:04d}", "name": tool, "input": {}}
        shell = command or f"echo {MARKER}"
        arguments = json.dumps({"command": shell, "description": "Echo a marker"})
        events += [
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": arguments},
                },
            ),
        ]
        stop = "tool_use"
    else:
        events += [
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": FINAL_TEXT},
                },
            ),
        ]
        stop = "end_turn"
    events += [
        _sse("content_block_stop", {"type": "content_block_stop", "index": index}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_body(body: dict[str, Any], n: int) -> dict[str, Any]:
    """A non-streaming text answer (side requests)."""
    return {
        "id": f"msg_scripted{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sonnet-4-5"),
        "content": [{"type": "text", "text": FINAL_TEXT}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


# OpenAI Responses --------------------------------------------------------------------

_SHELL_TOOLS = ("shell_command", "exec_command", "shell")


def _responses_tool(body: dict[str, Any]) -> tuple[str, str] | None:
    """(tool name, arguments) of the shell call to make, or None to answer in text."""
    items = body.get("input") or []
    if not items or not isinstance(items[-1], dict):
        return None
    last = items[-1]
    if last.get("type", "message") != "message" or last.get("role") != "user":
        return None
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    for name in _SHELL_TOOLS:
        if name in names:
            if name == "shell":
                return name, json.dumps({"command": ["echo", MARKER]})
            if name == "exec_command":
                return name, json.dumps({"cmd": f"echo {MARKER}"})
            return name, json.dumps({"command": f"echo {MARKER}"})
    return None


def responses_events(body: dict[str, Any], n: int) -> list[bytes]:
    """The SSE events of the scripted answer to a Responses request."""
    model = body.get("model", "gpt-5-codex")
    response: dict[str, Any] = {
        "id": f"resp_scripted{n:04d}",
        "object": "response",
        "created_at": 1700000000 + n,
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    tool = _responses_tool(body)
    if tool is not None:
        name, arguments = tool
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_scripted{n:04d}",
            "call_id": f"call_scripted{n:04d}",
            "name": name,
            "arguments": arguments,
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_scripted{n:04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
        }
    events = [
        _sse("response.created", {"type": "response.created", "response": response}),
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
    ]
    if tool is None:
        events.append(
            _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": FINAL_TEXT,
                },
            )
        )
    done = {**response, "status": "completed", "output": [item]}
    done["usage"] = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    events += [
        _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        _sse("response.completed", {"type": "response.completed", "response": done}),
    ]
    return events


# The server --------------------------------------------------------------------------


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _stream(self, events: list[bytes]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path.endswith("/models"):
                self._send(200, b'{"object": "list", "data": [], "models": []}', "application/json")
                return
            self._send(404, b'{"error": {"message": "not found"}}', "application/json")

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0]
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            with server.lock:
                server.requests.append({"path": path, "body": body})
                n = len(server.requests)
            if path.endswith("/messages/count_tokens"):
                self._send(200, b'{"input_tokens": 100}', "application/json")
            elif path.endswith("/messages"):
                if body.get("stream"):
                    with server.lock:
                        messages = body.get("messages") or []
                        if messages and not _results(messages[-1]):
                            server.made = 0
                        made = server.made
                        events = anthropic_events(
                            body, n, server.thinking, server.rounds, server.command, made
                        )
                        if b'"tool_use"' in b"".join(events):
                            server.made += 1
                    self._stream(events)
                else:
                    self._send(
                        200, json.dumps(anthropic_body(body, n)).encode(), "application/json"
                    )
            elif path.endswith("/responses"):
                self._stream(responses_events(body, n))
            else:
                self._send(404, b'{"error": {"message": "not found"}}', "application/json")

    return Handler


@contextmanager
def agent_model_server(
    port: int = 0, *, thinking: bool = False, rounds: int = 1, command: str = ""
) -> Iterator[ModelServer]:
    """A running scripted model on 127.0.0.1 (``port`` 0: any free port; ``thinking``,
    ``rounds``, ``command``: see :class:`ModelServer`)."""
    server = ModelServer("", thinking, rounds, command)
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(server))
    httpd.daemon_threads = True
    server.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()


if __name__ == "__main__":
    with agent_model_server(int(sys.argv[1])) as running:
        print(f"scripted model on {running.base_url}", flush=True)
        threading.Event().wait()
