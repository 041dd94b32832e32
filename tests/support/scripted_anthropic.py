"""A scripted Anthropic Messages server on 127.0.0.1: each ``POST /v1/messages`` body is
recorded and answered by a Python function, streaming (server-sent events) or not, so a
real client (the Claude Code CLI, the official SDK) runs unmodified and nothing leaves
the machine.

Reusable by any test or script that drives a real Anthropic client offline: point the
client's base URL (``ANTHROPIC_BASE_URL``) at :attr:`AnthropicServer.base_url`.
``POST /v1/messages/count_tokens`` answers an estimate (bytes / 4); other paths 404.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], list[dict[str, Any]]]
"""Request body -> the content blocks of the answer (``text``, ``tool_use``, ``thinking``)."""


class AnthropicServer:
    """Where the server listens and every request body it received, in order."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.requests: list[dict[str, Any]] = []


def message_body(blocks: list[dict[str, Any]], model: str, n: int) -> dict[str, Any]:
    """A whole Messages response holding ``blocks`` (the ``n``-th answer)."""
    uses_tool = any(block["type"] == "tool_use" for block in blocks)
    return {
        "id": f"msg_scripted{n:012d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if uses_tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def message_events(blocks: list[dict[str, Any]], model: str, n: int) -> list[bytes]:
    """The same answer as server-sent events, in the order the Messages API streams them."""
    whole = message_body(blocks, model, n)

    def event(kind: str, data: dict[str, Any]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    start = {**whole, "content": [], "stop_reason": None}
    events = [event("message_start", {"message": start})]
    for index, block in enumerate(blocks):
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


@contextmanager
def anthropic_server(reply: Reply) -> Iterator[AnthropicServer]:
    """Serve the Messages API with ``reply`` on a free port until the block ends."""
    lock = threading.Lock()
    state: list[AnthropicServer] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.partition("?")[0]
            if path.endswith("/messages/count_tokens"):
                self._send_json(200, {"input_tokens": len(json.dumps(body)) // 4})
                return
            if not path.endswith("/messages"):
                self._send_json(404, {"type": "error", "error": {"message": f"no {path}"}})
                return
            with lock:
                state[0].requests.append(body)
                n = len(state[0].requests)
            blocks = reply(body)
            model = str(body.get("model", "scripted"))
            if body.get("stream"):
                payload = b"".join(message_events(blocks, model, n))
                self._send(200, payload, "text/event-stream")
            else:
                self._send_json(200, message_body(blocks, model, n))

        def _send_json(self, status: int, value: dict[str, Any]) -> None:
            self._send(status, json.dumps(value).encode(), "application/json")

        def _send(self, status: int, payload: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the requests are recorded, not logged."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.append(AnthropicServer(f"http://127.0.0.1:{httpd.server_address[1]}"))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state[0]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
