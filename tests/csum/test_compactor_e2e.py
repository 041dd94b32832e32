"""End to end: an agent loop talks to a local OpenAI-compatible server on 127.0.0.1
through the official ``openai`` SDK; the Compactor runs before every model call and
summarizes through the same server (``csum.handlers.openai_compatible``).

The server plays both roles: a request whose system message is csum's summarizer
prompt gets a summary (the offline extractive summary of the prompt); any other request
is the agent's model, which calls a tool that returns a large result a few times per
question, then answers. The test checks what the server received: every model request
fits the budget, is a valid chain that lints clean for OpenAI and keeps the system
prompt; every summary request came from a compaction event.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cast import ChainAST, lint
from cast.codecs import openai as openai_codec
from csum import CompactionEvent, Compactor
from csum.handlers import openai_compatible, summarize_extractive
from csum.prompt import DEFAULT_SYSTEM_PROMPT, text_request

openai_sdk = pytest.importorskip(
    "openai", reason="the openai extra is not installed: pip install '.[openai]'"
)

BUDGET = 24_000
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class LocalModel:
    """An OpenAI-compatible chat server: the agent's model and the summarizer."""

    def __init__(self) -> None:
        self.model_requests: list[dict[str, Any]] = []
        self.summary_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with server.lock:
                    reply = server.answer(body)
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(5)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if messages[0]["role"] == "system" and messages[0]["content"] == DEFAULT_SYSTEM_PROMPT:
            self.summary_requests.append(body)
            return _completion(
                {"role": "assistant", "content": _model_summary(messages[1]["content"])}
            )
        self.model_requests.append(body)
        turn = len(self.model_requests)
        if messages[-1]["role"] == "tool" and turn % 5 == 0:
            message = {"role": "assistant", "content": f"done with step {turn}: FACT-{turn:06x}"}
        else:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{turn:04d}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"src/m{turn}.py"}),
                        },
                    }
                ],
            }
        return _completion(message)


def _model_summary(prompt: str) -> str:
    """What the local model writes: like a model, it reads the prompt as text."""
    return summarize_extractive(text_request(prompt), 1500)


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": "local",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@pytest.fixture
def server() -> Iterator[LocalModel]:
    model = LocalModel()
    yield model
    model.close()


def read_file(path: str, turn: int) -> str:
    lines = [
        f"# {path} line {i}: value_{turn}_{i} = compute({i})" for i in range(40 + turn % 7 * 30)
    ]
    return "\n".join(lines)


@pytest.mark.anyio
async def test_agent_loop_against_a_local_server(server: LocalModel) -> None:
    events: list[CompactionEvent] = []
    summarizer = openai_compatible(
        "local-summarizer", base_url=server.url, api_key="k", max_retries=0
    )
    compactor = Compactor(summarizer, budget=BUDGET, target="openai", on_event=events.append)
    client = openai_sdk.AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0)
    history = openai_codec.decode(
        {
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "Refactor the project."},
            ]
        }
    )
    try:
        for turn in range(1, 61):
            history = await compactor.compact(history)
            payload = openai_codec.encode(history)
            response = await client.chat.completions.create(
                model="local", messages=payload["messages"], tools=TOOLS
            )
            reply = response.choices[0].message.model_dump(exclude_none=True)
            turn_messages: list[dict[str, Any]] = [reply]
            if reply.get("tool_calls"):
                for call in reply["tool_calls"]:
                    path = json.loads(call["function"]["arguments"])["path"]
                    turn_messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "content": read_file(path, turn),
                        }
                    )
            # Decoded together, so each result gets its call's name, as on the server.
            history = [*history, *openai_codec.decode({"messages": turn_messages})]
            if not reply.get("tool_calls") and turn % 15 == 0:
                question = {"role": "user", "content": f"Now the next task ({turn})."}
                history = [*history, *openai_codec.decode({"messages": [question]})]
    finally:
        await client.close()

    assert events, "the loop never needed a compaction"
    assert len(server.summary_requests) == sum(e.handler_calls for e in events)
    for body in server.model_requests:
        sent = openai_codec.decode({"messages": body["messages"]})
        ChainAST.from_messages(sent)
        assert sum(m.size for m in sent) <= BUDGET
        assert lint(sent, "openai") == []
        assert sent[0].text == "You are a coding agent."
    assert all(not e.over_budget for e in events)
