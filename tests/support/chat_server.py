"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for the framework
integration tests: each request body is recorded and answered by a Python function, so
the frameworks' real OpenAI model classes (and the official SDK under them) run
unmodified and nothing leaves the machine."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], dict[str, Any]]
"""Request body -> the assistant message to answer with (``content``, ``tool_calls``)."""


class ChatServer:
    """Where the server listens and what it received."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.requests: list[dict[str, Any]] = []


def _completion(message: dict[str, Any], model: str, n: int) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000 + n,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, **message},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@contextmanager
def chat_server(reply: Reply) -> Iterator[ChatServer]:
    """Serve ``POST /v1/chat/completions`` with ``reply`` until the block ends."""
    lock = threading.Lock()
    server_state: ChatServer | None = None

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            assert server_state is not None
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            with lock:
                server_state.requests.append(body)
                n = len(server_state.requests)
            try:
                message = reply(body)
            except Exception as exc:  # the test's reply failed: tell the client plainly
                self._send(500, {"error": {"message": repr(exc)}})
                return
            self._send(200, _completion(message, str(body.get("model", "")), n))

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_state = ChatServer(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
