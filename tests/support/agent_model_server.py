"""The scripted model on 127.0.0.1 that the real clients run against offline: the agent
CLIs, the bundled example's recording, the frameworks' own model classes (the official
SDKs under them). One server for all of them (the gateway's own tests use the recording
upstream of tests/serve_upstream.py, a process with fault injection).

It speaks the three APIs the clients call, each streamed (server-sent events) and not:
Anthropic Messages (``POST .../messages``: Claude Code with ``ANTHROPIC_BASE_URL``,
opencode with an Anthropic provider), OpenAI Chat Completions (``POST
.../chat/completions``: aider through litellm, opencode with an OpenAI-compatible
provider) and OpenAI Responses (``POST .../responses``: Codex with ``wire_api =
"responses"``). Every request body is recorded. A *reply* (``(api, body) -> Turn``)
writes each answer once, API-neutral; the server encodes it in the caller's API.
``.../messages/count_tokens`` answers an estimate (bytes / 4), ``GET .../models`` an
empty list, other paths 404.

The default reply is :class:`ShellScript`: when the newest input is the user's text,
call the agent's shell tool (``echo <marker>``), after its result answer in text.

Run in-process with :func:`agent_model_server` (a context manager), or as a script
(``python tests/support/agent_model_server.py PORT``) to watch an agent by hand.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

AGENTS_DIR = Path(
    os.environ.get("CHAINCAST_AGENTS_DIR") or Path.home() / ".cache" / "chaincast-agents"
)
"""Where ``bash .ci/agents.sh`` installs the pinned agent CLIs the slow tests drive."""


def agent_cli(name: str) -> Path:
    """The installed CLI ``name`` (``claude``, ``codex``, ``opencode``, ``aider``) under
    :data:`AGENTS_DIR` (aider in a virtual environment of its own)."""
    if name == "aider":
        return AGENTS_DIR / "aider" / "bin" / "aider"
    return AGENTS_DIR / "node_modules" / ".bin" / name


Api = Literal["messages", "chat", "responses"]
"""Anthropic Messages, OpenAI Chat Completions, OpenAI Responses."""


@dataclass
class Call:
    """A tool call of the model's answer."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Turn:
    """One answer of the model, in no API's format: thinking (Messages only: a signed
    block first), text, then tool calls."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    thinking: str = ""
    signature: str = ""

    @classmethod
    def from_blocks(cls, blocks: list[dict[str, Any]]) -> Turn:
        """The turn of Anthropic content blocks (``thinking``, ``text``, ``tool_use``)."""
        turn = cls()
        for block in blocks:
            if block["type"] == "thinking":
                turn.thinking, turn.signature = block["thinking"], block["signature"]
            elif block["type"] == "text":
                turn.text += block["text"]
            elif block["type"] == "tool_use":
                turn.calls.append(Call(block["id"], block["name"], block["input"]))
        return turn


Reply = Callable[[Api, dict[str, Any]], Turn]
"""The script: the API called and the request body -> the answer."""


class ModelServer:
    """Where the server listens and the requests it received, in order."""

    def __init__(self, base_url: str, reply: Reply) -> None:
        self.base_url = base_url
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        """``{"path": ..., "body": ...}`` of every POST."""
        self.lock = threading.Lock()
        """Held while a reply is written (a script's state is safe under it)."""

    def bodies(self, path: str) -> list[dict[str, Any]]:
        """The JSON bodies received on ``path`` (e.g. ``/v1/messages``)."""
        with self.lock:
            return [r["body"] for r in self.requests if r["path"] == path]


# The default script: one shell call per user text ----------------------------------

MARKER = "handoff-tool-ran"
"""What the scripted shell call echoes; a test finds it in the tool's result."""
FINAL_TEXT = "Done: the command ran."
"""The scripted text answer after a tool result."""
THOUGHT = "The user wants the shell: run the echo."
"""The scripted thinking (with ``thinking``): a test finds it never copied into text."""

_RESPONSES_SHELLS = ("shell_command", "exec_command", "shell")
"""Codex's shell tools, by version."""


def tool_names(body: dict[str, Any]) -> set[str]:
    """The names of the tools a request declares (Messages and Responses: ``name``;
    Chat Completions: ``function.name``)."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    return {str(t.get("name") or (t.get("function") or {}).get("name")) for t in tools}


def _anthropic_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def thinking_on(body: dict[str, Any]) -> bool:
    """Whether a Messages request turns thinking on."""
    setting = body.get("thinking")
    return isinstance(setting, dict) and setting.get("type") in ("enabled", "adaptive")


class ShellScript:
    """Call the shell tool when the newest input is the user's text (Messages: also
    after a result, up to ``rounds`` calls), else answer :data:`FINAL_TEXT`."""

    def __init__(self, thinking: bool = False, rounds: int = 1, command: str = "") -> None:
        self.thinking = thinking
        """Answer a Messages request that turns thinking on with a signed thinking
        block first, as Claude does."""
        self.rounds = rounds
        """Shell calls per user message on Messages (then the text answer)."""
        self.command = command
        """The shell command called (default: ``echo`` the marker)."""
        self.made = 0
        """Shell calls made on Messages since the newest user text (the script's own
        count: a compacting gateway may send fewer results than were made)."""
        self.answered = 0
        """Answers given (ids and signatures are numbered by it)."""

    def __call__(self, api: Api, body: dict[str, Any]) -> Turn:
        self.answered += 1
        n = self.answered
        if api == "messages":
            return self._messages(body, n)
        if api == "responses":
            return self._responses(body, n)
        return Turn(text=FINAL_TEXT)

    def _messages(self, body: dict[str, Any], n: int) -> Turn:
        messages = body.get("messages") or []
        if not body.get("stream"):
            return Turn(text=FINAL_TEXT)  # a side request (a title, a quota probe)
        turn = Turn()
        if self.thinking and thinking_on(body):
            turn.thinking, turn.signature = THOUGHT, f"scripted-signature-{n:04d}"
        if "Bash" not in tool_names(body):
            turn.text = FINAL_TEXT
            return turn
        last = messages[-1] if messages else {}
        if last.get("role") == "user" and not _anthropic_results(last):
            self.made = 0
        if last.get("role") != "user" or self.made >= self.rounds:
            turn.text = FINAL_TEXT
            return turn
        self.made += 1
        command = self.command or f"echo {MARKER}"
        arguments = {"command": command, "description": "Echo a marker"}
        turn.calls.append(Call(f"toolu_scripted{n:04d}", "Bash", arguments))
        return turn

    def _responses(self, body: dict[str, Any], n: int) -> Turn:
        items = body.get("input") or []
        last = items[-1] if items and isinstance(items[-1], dict) else {}
        if last.get("type", "message") != "message" or last.get("role") != "user":
            return Turn(text=FINAL_TEXT)
        names = tool_names(body)
        for name in _RESPONSES_SHELLS:
            if name in names:
                if name == "shell":
                    arguments: dict[str, Any] = {"command": ["echo", MARKER]}
                elif name == "exec_command":
                    arguments = {"cmd": f"echo {MARKER}"}
                else:
                    arguments = {"command": f"echo {MARKER}"}
                return Turn(calls=[Call(f"call_scripted{n:04d}", name, arguments)])
        return Turn(text=FINAL_TEXT)


# Anthropic Messages ------------------------------------------------------------------


def _sse(kind: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {kind}\n" if kind else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.thinking:
        blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": turn.signature})
    if turn.text or not turn.calls:
        blocks.append({"type": "text", "text": turn.text})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.calls
    )
    return blocks


def message_body(turn: Turn, model: str, n: int) -> dict[str, Any]:
    """A whole Messages response (the ``n``-th answer)."""
    return {
        "id": f"msg_scripted{n:012d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(turn),
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def message_events(turn: Turn, model: str, n: int) -> list[bytes]:
    """The same answer as server-sent events, in the order the Messages API streams them."""
    whole = message_body(turn, model, n)

    def event(kind: str, data: dict[str, Any]) -> bytes:
        return _sse(kind, {"type": kind, **data})

    start = {**whole, "content": [], "stop_reason": None}
    events = [event("message_start", {"message": start})]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "tool_use":
            empty: dict[str, Any] = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        elif block["type"] == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        events.append(event("content_block_start", {"index": index, "content_block": empty}))
        events.extend(
            event("content_block_delta", {"index": index, "delta": delta}) for delta in deltas
        )
        events.append(event("content_block_stop", {"index": index}))
    stop = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    events.append(event("message_delta", {"delta": stop, "usage": {"output_tokens": 20}}))
    events.append(event("message_stop", {}))
    return events


# OpenAI Chat Completions -------------------------------------------------------------


def _chat_calls(turn: Turn) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in turn.calls
    ]


_CHAT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def chat_body(turn: Turn, model: str, n: int) -> dict[str, Any]:
    """A whole Chat Completions response."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.calls:
        message["tool_calls"] = _chat_calls(turn)
    return {
        "id": f"chatcmpl-scripted{n:04d}",
        "object": "chat.completion",
        "created": 1_700_000_000 + n,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": _CHAT_USAGE,
    }


def chat_events(turn: Turn, model: str, n: int, usage: bool) -> list[bytes]:
    """The same answer as Chat Completions chunks (a usage chunk when ``usage``)."""
    head = {
        "id": f"chatcmpl-scripted{n:04d}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000 + n,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _sse(None, {**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    if turn.text:
        events.append(chunk({"content": turn.text}))
    for index, call in enumerate(_chat_calls(turn)):
        start = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        events.append(chunk({"tool_calls": [{"index": index, **start}]}))
        arguments = {"arguments": call["function"]["arguments"]}
        events.append(chunk({"tool_calls": [{"index": index, "function": arguments}]}))
    events.append(chunk({}, "tool_calls" if turn.calls else "stop"))
    if usage:
        events.append(_sse(None, {**head, "choices": [], "usage": _CHAT_USAGE}))
    events.append(b"data: [DONE]\n\n")
    return events


# OpenAI Responses --------------------------------------------------------------------


def _response_items(turn: Turn, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text or not turn.calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_scripted{n:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for k, call in enumerate(turn.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_scripted{n:04d}_{k}",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
        )
    return items


def response_body(turn: Turn, model: str, n: int) -> dict[str, Any]:
    """A whole Responses response."""
    return {
        "id": f"resp_scripted{n:04d}",
        "object": "response",
        "created_at": 1_700_000_000 + n,
        "status": "completed",
        "model": model,
        "output": _response_items(turn, n),
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        },
    }


def response_events(turn: Turn, model: str, n: int) -> list[bytes]:
    """The same answer as Responses events."""
    done = response_body(turn, model, n)
    start = {**done, "status": "in_progress", "output": []}
    del start["usage"]
    events = [_sse("response.created", {"type": "response.created", "response": start})]
    for index, item in enumerate(done["output"]):
        added = {"type": "response.output_item.added", "output_index": index, "item": item}
        events.append(_sse(added["type"], added))
        if item["type"] == "message":
            delta = {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": turn.text,
            }
            events.append(_sse(delta["type"], delta))
        finished = {"type": "response.output_item.done", "output_index": index, "item": item}
        events.append(_sse(finished["type"], finished))
    events.append(_sse("response.completed", {"type": "response.completed", "response": done}))
    return events


# The server --------------------------------------------------------------------------


def _api(path: str) -> Api | None:
    if path.endswith("/messages"):
        return "messages"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the requests are recorded, not logged."""

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            # one answer a connection: a client may outlive the event loop its pooled
            # connection was opened on (an SDK client reused across asyncio.run calls)
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def _json(self, status: int, value: dict[str, Any]) -> None:
            self._send(status, json.dumps(value).encode(), "application/json")

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
            if self.path.split("?")[0].endswith("/models"):
                self._json(200, {"object": "list", "data": [], "models": []})
                return
            self._json(404, {"error": {"message": "not found"}})

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
            if path.endswith("/messages/count_tokens"):
                self._json(200, {"input_tokens": len(raw) // 4})
                return
            api = _api(path)
            if api is None or not isinstance(body, dict):
                self._json(404, {"error": {"message": f"no route {path}"}})
                return
            with server.lock:
                server.requests.append({"path": path, "body": body})
                n = len(server.requests)
                try:
                    turn = server.reply(api, body)
                except Exception as exc:  # the test's script failed: tell the client plainly
                    self._json(500, {"error": {"message": repr(exc)}})
                    return
            model = str(body.get("model", "scripted"))
            stream = bool(body.get("stream"))
            if api == "messages":
                if stream:
                    self._stream(message_events(turn, model, n))
                else:
                    self._json(200, message_body(turn, model, n))
            elif api == "chat":
                if stream:
                    options = body.get("stream_options") or {}
                    self._stream(chat_events(turn, model, n, bool(options.get("include_usage"))))
                else:
                    self._json(200, chat_body(turn, model, n))
            elif stream or "stream" not in body:  # Codex streams without saying so
                self._stream(response_events(turn, model, n))
            else:
                self._json(200, response_body(turn, model, n))

    return Handler


@contextmanager
def agent_model_server(reply: Reply | None = None, port: int = 0) -> Iterator[ModelServer]:
    """A running scripted model on 127.0.0.1 answering with ``reply`` (default: a
    :class:`ShellScript`; ``port`` 0: any free port)."""
    server = ModelServer("", reply or ShellScript())
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
        thread.join()


if __name__ == "__main__":
    with agent_model_server(port=int(sys.argv[1])) as running:
        print(f"scripted model on {running.base_url}", flush=True)
        threading.Event().wait()
