"""``csum serve`` end to end, real processes on 127.0.0.1 only: the gateway under
uvicorn in a subprocess, the scripted upstream (tests/support/serve_upstream.py) under uvicorn
in another, and the official ``openai`` and ``anthropic`` SDKs as clients.

A 40-turn tool-heavy conversation per API stays within the budget at the upstream,
every upstream request passes ``cast.lint`` for the upstream's provider, requests
within the budget reach the upstream byte for byte, and the client sees every response
intact. Skipped when the serve extra (or an SDK) is missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

for _module in ("starlette", "uvicorn", "httpx", "prometheus_client"):
    pytest.importorskip(_module, reason="the serve extra is not installed: pip install '.[serve]'")
openai_sdk = pytest.importorskip("openai", reason="the openai SDK is not installed")
anthropic_sdk = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")

import httpx  # noqa: E402

from cast import Message, lint  # noqa: E402
from cast.codecs import anthropic, openai, openai_responses  # noqa: E402
from csum.config import Budget  # noqa: E402
from csum.serve import ServeConfig, create_app  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from serve_clients import (  # noqa: E402
    API_KEY,
    CHAT_READ_FILE,
    READ_FILE_SCHEMA,
    SYSTEM,
    anthropic_http,
    tool_output,
)
from serve_processes import (  # noqa: E402
    Process,
    free_port,
    metric,
    recorded,
    reset,
    sse_data,
    start_gateway,
    start_upstream,
)

BUDGET = 16384
TURNS = 40


@dataclass
class Turn:
    """One request as the client sent it and the response as its SDK gave it."""

    body: bytes
    stream: bool
    raw: bytes | None  # the response bytes (non-streaming)
    calls: list[tuple[str, str, str]]  # (id, name, arguments)
    text: str


@dataclass
class Run:
    turns: list[Turn] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def hook(self, request: httpx.Request) -> None:
        if request.url.path.startswith("/v1/"):
            self.bodies.append(request.content)


def chat_conversation(base: str, turns: int = TURNS, stream_every: int = 3) -> Run:
    run = Run()
    http = httpx.Client(event_hooks={"request": [run.hook]})
    client = openai_sdk.OpenAI(
        base_url=base + "/v1", api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [CHAT_READ_FILE]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Refactor the request handlers."},
    ]
    for turn in range(turns):
        stream = stream_every > 0 and turn % stream_every == stream_every - 1
        if stream:
            calls: dict[int, list[str]] = {}
            text = ""
            for chunk in client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=tools, stream=True
            ):
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for call in delta.tool_calls or []:
                    entry = calls.setdefault(call.index, ["", "", ""])
                    entry[0] += call.id or ""
                    entry[1] += (call.function.name or "") if call.function else ""
                    entry[2] += (call.function.arguments or "") if call.function else ""
            found = [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]
            raw = None
        else:
            response = client.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=messages, tools=tools
            )
            raw = response.http_response.content
            message = response.parse().choices[0].message
            text = message.content or ""
            found = [
                (c.id, c.function.name, c.function.arguments)
                for c in message.tool_calls or []
                if c.type == "function"
            ]
        run.turns.append(Turn(run.bodies[-1], stream, raw, found, text))
        if found:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in found
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": i, "content": tool_output(a)} for i, _, a in found
            )
        else:
            messages.append({"role": "assistant", "content": text})
            messages.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()
    return run


def responses_conversation(base: str, turns: int = TURNS) -> Run:
    run = Run()
    http = httpx.Client(event_hooks={"request": [run.hook]})
    client = openai_sdk.OpenAI(
        base_url=base + "/v1", api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [{"type": "function", "name": "read_file", "parameters": READ_FILE_SCHEMA}]
    items: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the request handlers."}]
    for turn in range(turns):
        response = client.responses.with_raw_response.create(
            model="gpt-4o", instructions=SYSTEM, input=items, tools=tools
        )
        parsed = response.parse()
        found = [
            (o.call_id, o.name, o.arguments) for o in parsed.output if o.type == "function_call"
        ]
        text = parsed.output_text
        run.turns.append(Turn(run.bodies[-1], False, response.http_response.content, found, text))
        if found:
            for call_id, name, arguments in found:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call_id,
                        "name": name,
                        "arguments": arguments,
                    }
                )
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": call_id,
                        "output": tool_output(arguments),
                    }
                )
        else:
            items.append({"role": "assistant", "content": text})
            items.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()
    return run


def messages_conversation(base: str, turns: int = TURNS, stream_every: int = 3) -> Run:
    run = Run()
    http = anthropic_http(event_hooks={"request": [run.hook]})
    client = anthropic_sdk.Anthropic(
        base_url=base, api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [{"name": "read_file", "description": "read a file", "input_schema": READ_FILE_SCHEMA}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the request handlers."}]
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    for turn in range(turns):
        stream = stream_every > 0 and turn % stream_every == stream_every - 1
        options: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": system,
            "messages": messages,
            "tools": tools,
        }
        if stream:
            with client.messages.stream(**options) as events:
                final = events.get_final_message()
            raw = None
        else:
            response = client.messages.with_raw_response.create(**options)
            raw = response.http_response.content
            final = response.parse()
        found = [(b.id, b.name, json.dumps(b.input)) for b in final.content if b.type == "tool_use"]
        text = "".join(b.text for b in final.content if b.type == "text")
        run.turns.append(Turn(run.bodies[-1], stream, raw, found, text))
        if found:
            messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)}
                        for i, n, a in found
                    ],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": tool_output(a)}
                        for i, _, a in found
                    ],
                }
            )
        else:
            messages.append({"role": "assistant", "content": text})
            messages.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()
    return run


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    provider: str
    decode: Callable[[Any], list[Message]]
    converse: Callable[[str], Run]


CASES = [
    Case("chat", "/v1/chat/completions", "openai", openai.decode, chat_conversation),
    Case(
        "responses",
        "/v1/responses",
        "openai-responses",
        openai_responses.decode,
        responses_conversation,
    ),
    Case("messages", "/v1/messages", "anthropic", anthropic.decode, messages_conversation),
]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve-logs")


@pytest.fixture(scope="module")
def upstream(logs: Path) -> Iterator[Process]:
    server = start_upstream(logs)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gateway(upstream: Process, logs: Path) -> Iterator[Process]:
    server = start_gateway(upstream.url, logs, "--budget", str(BUDGET))
    yield server
    server.stop()


def size_of(decode: Callable[[Any], list[Message]], body: bytes) -> int:
    return sum(m.size for m in decode(json.loads(body)))


def expected_answer(turn: Turn, answer: str) -> tuple[list[tuple[str, str, str]], str]:
    """(calls, text) the upstream sent, read from its recorded answer."""
    if answer.startswith(("data:", "event:")):
        events = sse_data(answer)
        if "choices" in answer:  # chat chunks
            calls: dict[int, list[str]] = {}
            text = ""
            for event in events:
                delta = event["choices"][0]["delta"]
                text += delta.get("content") or ""
                for call in delta.get("tool_calls") or []:
                    entry = calls.setdefault(call["index"], ["", "", ""])
                    entry[0] += call.get("id") or ""
                    entry[1] += call.get("function", {}).get("name") or ""
                    entry[2] += call.get("function", {}).get("arguments") or ""
            return [(c[0], c[1], c[2]) for _, c in sorted(calls.items())], text
        found: list[tuple[str, str, str]] = []
        text = ""
        for event in events:
            if (
                event["type"] == "content_block_start"
                and event["content_block"]["type"] == "tool_use"
            ):
                block = event["content_block"]
                found.append((block["id"], block["name"], ""))
            elif event["type"] == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "input_json_delta":
                    i, n, a = found[-1]
                    found[-1] = (i, n, a + delta["partial_json"])
                else:
                    text += delta["text"]
        return [(i, n, json.dumps(json.loads(a))) for i, n, a in found], text
    raise AssertionError("only streams are compared by content")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_forty_turn_tool_conversation_stays_within_budget(
    case: Case, upstream: Process, gateway: Process
) -> None:
    reset(upstream)
    compactions_before = metric(gateway, "csum_serve_compactions_total", endpoint=case.name)
    run = case.converse(gateway.url)
    received = [r for r in recorded(upstream) if r["path"] == case.path]
    assert len(received) == len(run.turns) == TURNS

    within = reused = 0
    previous: list[Message] | None = None
    for i, (turn, got) in enumerate(zip(run.turns, received, strict=True)):
        sent = got["body"].encode("utf-8", "surrogateescape")
        chain = case.decode(json.loads(sent))
        # within budget at the upstream, and valid for the upstream's provider
        assert sum(m.size for m in chain) <= BUDGET, f"turn {i}"
        assert lint(chain, case.provider) == [], f"turn {i}"
        # the client's API key reached the upstream
        key = got["headers"].get("authorization") or "Bearer " + got["headers"]["x-api-key"]
        assert key == f"Bearer {API_KEY}"
        # within budget: byte for byte
        if size_of(case.decode, turn.body) <= BUDGET:
            within += 1
            assert sent == turn.body, f"turn {i} was changed"
        # the client saw the upstream's answer intact
        if turn.raw is not None:
            assert turn.raw.decode() == got["answer"], f"turn {i}"
        else:
            assert (turn.calls, turn.text) == expected_answer(turn, got["answer"]), f"turn {i}"
        if previous is not None and chain[: len(previous)] == previous:
            reused += 1
        previous = chain
    compactions = (
        metric(gateway, "csum_serve_compactions_total", endpoint=case.name) - compactions_before
    )
    assert within >= 5  # the first turns went through untouched
    assert 1 <= compactions <= 10
    # between compactions the upstream saw the same prefix again (its prompt cache hits)
    assert reused == TURNS - 1 - compactions
    log = gateway.log_text()
    assert API_KEY not in log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    outcomes = {line.get("outcome") for line in lines if line.get("endpoint") == case.name}
    assert {"within_budget", "compacted", "reused"} <= outcomes  # structured, one a request
    assert API_KEY not in httpx.get(gateway.url + "/metrics").text


def test_other_paths_and_count_tokens_are_forwarded_untouched(
    upstream: Process, gateway: Process
) -> None:
    reset(upstream)
    big = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 40000}]})
    count = httpx.post(
        gateway.url + "/v1/messages/count_tokens", content=big, headers={"x-api-key": API_KEY}
    )
    models = httpx.get(gateway.url + "/v1/models?limit=2")
    httpx.put(gateway.url + "/v2/anything/else", content=b"\x00raw \xc3\xa9")
    httpx.get(gateway.url + "/v1/files/a%2Fb%20c?q=%2F")
    got = recorded(upstream)
    assert count.status_code == 200
    assert got[0]["body"].encode() == big.encode()  # over budget, yet not compacted
    assert models.json() == {"path": "/v1/models", "method": "GET", "query": "limit=2"}
    assert (got[2]["method"], got[2]["path"]) == ("PUT", "/v2/anything/else")
    assert got[2]["body"].encode("utf-8", "surrogateescape") == b"\x00raw \xc3\xa9"
    assert (got[3]["raw_path"], got[3]["query"]) == ("/v1/files/a%2Fb%20c", "q=%2F")


@pytest.mark.parametrize("status", [400, 401, 429, 500, 529])
def test_upstream_errors_reach_the_client_unchanged(
    status: int, upstream: Process, gateway: Process
) -> None:
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    response = httpx.post(
        gateway.url + "/v1/chat/completions", content=body, headers={"x-test-status": str(status)}
    )
    assert response.status_code == status
    assert response.headers["x-scripted"] == "yes"
    assert response.headers["retry-after"] == "0"
    assert response.content == (
        b'{"type":"error","error":{"type":"scripted_error","message":"scripted status"}}'
    )


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_streams_are_relayed_as_they_come(path: str, upstream: Process, gateway: Process) -> None:
    """The upstream sends one event, then waits until the client has read it: a gateway
    that buffered the stream would deadlock here (and time out)."""
    reset(upstream)
    body = json.dumps(
        {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    with (
        httpx.Client(timeout=20) as client,
        client.stream(
            "POST", gateway.url + path, content=body, headers={"x-test-hold": "1"}
        ) as response,
    ):
        chunks = response.iter_raw()
        first = next(chunks)
        assert first.startswith((b"data: ", b"event: "))
        httpx.post(upstream.url + "/_release", timeout=10).raise_for_status()
        rest = b"".join(chunks)
    assert first + rest == recorded(upstream)[0]["answer"].encode()


def test_healthz_and_metrics(gateway: Process) -> None:
    assert httpx.get(gateway.url + "/healthz").json()["status"] == "ok"
    # One request of its own, so the histograms have lines whatever ran before.
    small = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    assert httpx.post(gateway.url + "/v1/chat/completions", content=small).status_code == 200
    text = httpx.get(gateway.url + "/metrics").text
    for name in (
        "csum_serve_requests_total",
        "csum_serve_compactions_total",
        "csum_serve_bytes_saved_total",
        "csum_serve_tokens_saved_total",
        "csum_serve_handler_calls_total",
        "csum_serve_cache_hits_total",
        "csum_serve_upstream_seconds_bucket",
        "csum_serve_added_seconds_bucket",
    ):
        assert name in text


def test_gateway_key_and_body_limit(upstream: Process, logs: Path) -> None:
    server = start_gateway(upstream.url, logs, "--gateway-key", "gw-secret", "--max-body", "1KiB")
    try:
        reset(upstream)
        url = server.url + "/v1/chat/completions"
        small = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
        assert httpx.post(url, content=small).status_code == 401
        wrong = httpx.post(url, content=small, headers={"x-csum-key": "nope"})
        assert wrong.status_code == 401
        good = httpx.post(url, content=small, headers={"x-csum-key": "gw-secret"})
        assert good.status_code == 200
        large = httpx.post(url, content="x" * 2048, headers={"x-csum-key": "gw-secret"})
        assert large.status_code == 413
        got = recorded(upstream)
        assert len(got) == 1  # only the good one went upstream, without the gateway's key
        assert "x-csum-key" not in got[0]["headers"]
    finally:
        server.stop()


def _refactor_body() -> bytes:
    """A Chat request of eight tool turns, over a 4 KiB budget (compacted)."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Refactor."}]
    for i in range(8):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        items.append(
            {"role": "tool", "tool_call_id": f"c{i}", "content": tool_output('{"path": "a"}')}
        )
    return json.dumps({"model": "gpt-4o", "messages": items}).encode()


@pytest.mark.anyio
async def test_the_app_runs_in_process_on_asyncio_and_trio(upstream: Process) -> None:
    """The ASGI app itself under the anyio backend of the test (asyncio, trio), with the
    real upstream process: a compaction, a pass-through, and an unreachable upstream."""
    app = create_app(ServeConfig(upstream=upstream.url, budget=Budget.bytes(4096)))
    dead = create_app(ServeConfig(upstream=f"http://127.0.0.1:{free_port()}"))
    body = _refactor_body()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            reset(upstream)
            answer = await client.post("/v1/chat/completions", content=body)
            assert answer.status_code == 200
            models = await client.get("/v1/models")
            assert models.json()["path"] == "/v1/models"
        sent = recorded(upstream)[0]["body"]
        assert (
            sum(m.size for m in openai.decode(json.loads(sent)))
            <= 4096
            < size_of(openai.decode, body)
        )
        transport = httpx.ASGITransport(app=dead)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            failed = await client.post("/v1/models", content=b"{}")
        assert failed.status_code == 502
        assert failed.json()["error"]["type"] == "upstream_unreachable"
    finally:
        await app.state.gateway.aclose()
        await dead.state.gateway.aclose()


@pytest.mark.anyio
async def test_a_responses_request_on_provider_state_is_forwarded_and_counted(
    upstream: Process,
) -> None:
    """``previous_response_id``: the provider holds the history, the gateway sends the
    bytes as they came, counts ``outcome="provider_state"`` and logs it."""
    app = create_app(ServeConfig(upstream=upstream.url, budget=Budget.bytes(4096)))
    items = [{"type": "function_call_output", "call_id": "c1", "output": "x" * 8000}]
    body = json.dumps(
        {"model": "gpt-4o", "previous_response_id": "resp_1", "input": items}
    ).encode()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            reset(upstream)
            answer = await client.post("/v1/responses", content=body)
            assert answer.status_code == 200
            text = (await client.get("/metrics")).text
    finally:
        await app.state.gateway.aclose()
    assert recorded(upstream)[0]["body"].encode() == body
    line = 'csum_serve_outcomes_total{endpoint="responses",outcome="provider_state"} 1.0'
    assert line in text


@pytest.mark.anyio
async def test_opentelemetry_spans_of_a_request_and_its_compaction(upstream: Process) -> None:
    """With the otel extra: a ``csum.serve.request`` span per request (endpoint, status)
    and a ``csum.serve.compaction`` child (outcome, bytes, depth); no key in them."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra (and its SDK) is missing")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from csum.serve import telemetry as tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert tracing.tracer() is not None  # the extra is there: the gateway makes spans
    app = create_app(ServeConfig(upstream=upstream.url, budget=Budget.bytes(4096)))
    app.state.gateway.tracer = provider.get_tracer("test")
    body = _refactor_body()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            headers = {"authorization": f"Bearer {API_KEY}"}
            answer = await client.post("/v1/chat/completions", content=body, headers=headers)
            assert answer.status_code == 200
            await client.get("/v1/models", headers=headers)
    finally:
        await app.state.gateway.aclose()
    spans = exporter.get_finished_spans()
    requests = [s for s in spans if s.name == "csum.serve.request"]
    compactions = [s for s in spans if s.name == "csum.serve.compaction"]
    assert len(requests) == 2
    assert len(compactions) == 1
    compaction = compactions[0]
    assert compaction.parent is not None
    assert compaction.parent.span_id == requests[0].context.span_id
    assert compaction.attributes is not None
    assert compaction.attributes["csum.outcome"] == "compacted"
    assert compaction.attributes["csum.summary_depth"] == 1
    assert requests[0].attributes is not None
    assert requests[0].attributes["csum.endpoint"] == "chat"
    assert requests[0].attributes["http.response.status_code"] == 200
    assert all(API_KEY not in str(dict(s.attributes or {})) for s in spans)


def test_an_anthropic_client_on_an_openai_compatible_upstream(
    upstream: Process, logs: Path
) -> None:
    """Claude Code's case on a local OpenAI-compatible server: the anthropic SDK, every
    other turn streamed, tool calls both ways; the upstream sees only Chat Completions."""
    server = start_gateway(
        upstream.url,
        logs,
        "--budget",
        str(BUDGET),
        "--upstream-api",
        "openai",
        "--upstream-model",
        "local-model",
    )
    try:
        reset(upstream)
        run = messages_conversation(server.url, turns=24, stream_every=2)
        got = recorded(upstream)
        counted = anthropic_sdk.Anthropic(
            base_url=server.url, api_key=API_KEY, max_retries=0
        ).messages.count_tokens(
            model="claude-sonnet-4-6", messages=[{"role": "user", "content": "x" * 400}]
        )
        compactions = metric(server, "csum_serve_compactions_total", endpoint="messages")
    finally:
        server.stop()
    assert counted.input_tokens > 0
    assert len(got) == len(run.turns) == 24  # count_tokens answered by the gateway
    streamed = 0
    for i, (turn, entry) in enumerate(zip(run.turns, got, strict=True)):
        assert entry["path"] == "/v1/chat/completions"
        payload = json.loads(entry["body"])
        assert payload["model"] == "local-model"
        assert payload["tools"][0]["function"]["name"] == "read_file"
        chain = openai.decode(payload)
        assert sum(m.size for m in chain) <= BUDGET, f"turn {i}"
        assert lint(chain, "openai") == [], f"turn {i}"
        if payload.get("stream"):
            streamed += 1
            calls, text = expected_answer(turn, entry["answer"])
        else:
            answer = json.loads(entry["answer"])["choices"][0]["message"]
            text = answer.get("content") or ""
            calls = [
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in answer.get("tool_calls") or []
            ]
        normalized = [(c, n, json.dumps(json.loads(a))) for c, n, a in calls]
        assert (turn.calls, turn.text) == (normalized, text), f"turn {i}"
    assert streamed == 12
    assert compactions >= 1  # counted under the endpoint the client called


def test_summaries_from_a_model_through_a_separate_endpoint(upstream: Process, logs: Path) -> None:
    """--summarizer openai with only --summarizer-model: the summaries come from a model
    (here the scripted upstream's "summarizer", reached at the SDK's base URL with the
    key of OPENAI_API_KEY, both from the environment), and the compacted requests carry
    them."""
    handler_key = "sk-handler-key"
    env = {"OPENAI_BASE_URL": upstream.url + "/v1", "OPENAI_API_KEY": handler_key}
    flags = ("--budget", str(BUDGET), "--summarizer", "openai", "--summarizer-model", "summarizer")
    server = start_gateway(upstream.url, logs, *flags, env=env)
    try:
        reset(upstream)
        chat_conversation(server.url, turns=20, stream_every=0)
        got = recorded(upstream)
    finally:
        server.stop()
    calls = [json.loads(e["body"]) for e in got if json.loads(e["body"])["model"] == "summarizer"]
    served = [e for e in got if json.loads(e["body"])["model"] == "gpt-4o"]
    assert len(served) == 20
    assert calls, "no summarization call reached the model"
    assert all(
        e["headers"]["authorization"] == f"Bearer {handler_key}"
        for e in got
        if json.loads(e["body"])["model"] == "summarizer"
    )
    answers = [
        json.loads(e["answer"])["choices"][0]["message"]["content"]
        for e in got
        if json.loads(e["body"])["model"] == "summarizer"
    ]
    assert all(a.startswith("Summary ") for a in answers)
    carried = [e for e in served if any(a in e["body"] for a in answers)]
    assert carried, "no compacted request carries the model's summary"
    for entry in served:
        chain = openai.decode(json.loads(entry["body"]))
        assert sum(m.size for m in chain) <= BUDGET
        assert lint(chain, "openai") == []


def summary_answer(entry: dict[str, Any]) -> str:
    answer = json.loads(entry["answer"])
    if "choices" in answer:
        return str(answer["choices"][0]["message"]["content"])
    return "".join(b["text"] for b in answer["content"] if b["type"] == "text")


@pytest.mark.parametrize("case", [CASES[0], CASES[2]], ids=["chat", "messages"])
def test_summaries_from_the_upstream_with_the_clients_own_key(
    case: Case, upstream: Process, logs: Path
) -> None:
    """--summarizer upstream: the summaries come from the upstream itself, asked with
    the key of the request being compacted (a bearer token for OpenAI, x-api-key for
    Anthropic), and that key is in no log line, metric or stored state."""
    state = logs / f"state-{case.name}.db"
    server = start_gateway(
        upstream.url,
        logs,
        "--budget",
        str(BUDGET),
        "--summarizer",
        "upstream",
        "--summarizer-model",
        "summarizer",
        "--store",
        str(state),
        "--log-level",
        "debug",
    )
    try:
        reset(upstream)
        case.converse(server.url, 20, 0)
        got = recorded(upstream)
        metrics_text = httpx.get(server.url + "/metrics", timeout=10).text
    finally:
        server.stop()
    summaries = [e for e in got if json.loads(e["body"])["model"] == "summarizer"]
    served = [e for e in got if json.loads(e["body"])["model"] != "summarizer"]
    assert len(served) == 20
    assert summaries, "no summarization call reached the upstream"
    for entry in summaries:
        assert entry["path"] == case.path
        headers = entry["headers"]
        given = headers.get("x-api-key") or headers["authorization"].removeprefix("Bearer ")
        assert given == API_KEY
    answers = [summary_answer(e) for e in summaries]
    assert all(a.startswith("Summary ") for a in answers)
    assert any(any(a in e["body"] for a in answers) for e in served)
    for entry in served:
        chain = case.decode(json.loads(entry["body"]))
        assert sum(m.size for m in chain) <= BUDGET
    assert API_KEY not in server.log_text()
    assert API_KEY not in metrics_text
    assert API_KEY.encode() not in state.read_bytes()


def test_summaries_from_a_separate_summarizer(upstream: Process, logs: Path) -> None:
    """--summarizer openai with --summarizer-url, --summarizer-model and the key read
    from --summarizer-key-env: the operator's key, not the client's, asks for them."""
    summarizer_key = "sk-summarizer-operator-key"
    server = start_gateway(
        upstream.url,
        logs,
        "--budget",
        str(BUDGET),
        "--summarizer",
        "openai",
        "--summarizer-url",
        upstream.url + "/v1",
        "--summarizer-model",
        "summarizer",
        "--summarizer-key-env",
        "CSUM_TEST_SUMMARIZER_KEY",
        env={"CSUM_TEST_SUMMARIZER_KEY": summarizer_key},
    )
    try:
        reset(upstream)
        chat_conversation(server.url, turns=20, stream_every=0)
        got = recorded(upstream)
    finally:
        server.stop()
    summaries = [e for e in got if json.loads(e["body"])["model"] == "summarizer"]
    assert summaries
    assert {e["headers"]["authorization"] for e in summaries} == {f"Bearer {summarizer_key}"}
    assert summarizer_key not in server.log_text()


def test_two_gateways_on_one_redis_send_what_one_gateway_sends(
    upstream: Process, gateway: Process, logs: Path, redis_url: str
) -> None:
    # replicas that share a store share the tenant secret (each would draw its own)
    shared = {"CSUM_TENANT_SECRET": "replicas-share-this-secret"}
    flags = ("--budget", str(BUDGET), "--store", redis_url)
    first = start_gateway(upstream.url, logs, *flags, env=shared)
    second = start_gateway(upstream.url, logs, *flags, env=shared)
    try:
        alternate = Alternating([first.url, second.url])
        reset(upstream)
        chat_conversation_over(alternate, turns=20)
        replicas = [r["body"] for r in recorded(upstream)]
    finally:
        first.stop()
        second.stop()
    reset(upstream)
    chat_conversation(gateway.url, turns=20, stream_every=0)
    single = [r["body"] for r in recorded(upstream)]
    assert len(replicas) == len(single) == 20
    assert replicas == single
    assert metric(gateway, "csum_serve_outcomes_total", outcome="reused") > 0


def test_redis_killed_mid_conversation_fails_no_request(
    upstream: Process, logs: Path, redis_own_server: RedisServer
) -> None:
    server = start_gateway(
        upstream.url, logs, "--budget", str(BUDGET), "--store", redis_own_server.url
    )
    try:
        reset(upstream)
        alternate = Alternating([server.url], kill_at=12, redis=redis_own_server)
        chat_conversation_over(alternate, turns=20)
        got = recorded(upstream)
        assert len(got) == 20
        for entry in got:
            chain = openai.decode(json.loads(entry["body"]))
            assert sum(m.size for m in chain) <= BUDGET
        assert metric(server, "csum_serve_store_failures_total") > 0
    finally:
        server.stop()


class Alternating(httpx.BaseTransport):
    """Sends each request to the next gateway in turn (a round-robin load balancer);
    optionally kills a Redis server before request ``kill_at``."""

    def __init__(
        self, bases: list[str], kill_at: int | None = None, redis: RedisServer | None = None
    ) -> None:
        self.bases = bases
        self.count = 0
        self.kill_at = kill_at
        self.redis = redis
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.kill_at is not None and self.count == self.kill_at and self.redis is not None:
            self.redis.kill()
        base = httpx.URL(self.bases[self.count % len(self.bases)])
        self.count += 1
        request.url = request.url.copy_with(host=base.host, port=base.port)
        return self.inner.handle_request(request)


def chat_conversation_over(transport: httpx.BaseTransport, turns: int) -> None:
    """:func:`chat_conversation`'s requests (non-streaming) through ``transport``."""
    http = httpx.Client(transport=transport)
    client = openai_sdk.OpenAI(
        base_url="http://127.0.0.1:1/v1", api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [CHAT_READ_FILE]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Refactor the request handlers."},
    ]
    for turn in range(turns):
        message = (
            client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
            .choices[0]
            .message
        )
        calls = [c for c in message.tool_calls or [] if c.type == "function"]
        if calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.function.name,
                                "arguments": c.function.arguments,
                            },
                        }
                        for c in calls
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": c.id, "content": tool_output(c.function.arguments)}
                for c in calls
            )
        else:
            messages.append({"role": "assistant", "content": message.content})
            messages.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()


def test_fifty_concurrent_conversations_do_not_mix(upstream: Process, gateway: Process) -> None:
    """50 conversations x 20 turns at once through one gateway (6 KB tool results, so
    nearly all go over the budget and are compacted, their state stored): no request
    fails, and every upstream request holds only its own conversation's messages.

    This test failed under load (a client ReadError, no response) while the gateway
    kept idle connections 5 s, as long as the client's pool (httpx's keepalive_expiry):
    the gateway closed a connection the client had just reused. Measured on 20-turn
    runs under load: gateway 5 s / client 5 s failed in 2 of 4 runs (compaction on the
    loop) and 2 of 9 (in worker threads); gateway 5 s / client 2 s and gateway 75 s
    (the default) / client 5 s passed 4 of 4 each. Hence the default --keep-alive 75."""
    import anyio

    conversations, turns = 50, 20
    reset(upstream)
    before = metric(gateway, "csum_serve_compactions_total", endpoint="chat")
    failures: list[str] = []

    async def converse(client: httpx.AsyncClient, c: int) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"conversation-{c:03d}: refactor the handlers."},
        ]
        for turn in range(turns):
            body = {"model": "gpt-4o", "messages": messages}
            response = await client.post(gateway.url + "/v1/chat/completions", json=body)
            if response.status_code != 200:
                failures.append(f"{c}/{turn}: {response.status_code}")
                return
            message = response.json()["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            messages.append({k: v for k, v in message.items() if v is not None})
            for call in calls:
                output = f"conversation-{c:03d} " + tool_output(call["function"]["arguments"]) * 5
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            if not calls:
                messages.append({"role": "user", "content": f"conversation-{c:03d}: go on."})

    async def main() -> None:
        limits = httpx.Limits(max_connections=conversations)
        async with (
            httpx.AsyncClient(timeout=120, limits=limits) as client,
            anyio.create_task_group() as group,
        ):
            for c in range(conversations):
                group.start_soon(converse, client, c)

    anyio.run(main)
    assert failures == []
    got = [r for r in recorded(upstream) if r["path"] == "/v1/chat/completions"]
    assert len(got) == conversations * turns
    for entry in got:
        names = set(re.findall(r"conversation-\d{3}", entry["body"]))
        assert len(names) == 1, names
        chain = openai.decode(json.loads(entry["body"]))
        assert sum(m.size for m in chain) <= BUDGET
    after = metric(gateway, "csum_serve_compactions_total", endpoint="chat")
    assert after - before >= conversations * 3 // 4  # (a run of text answers may not)


@pytest.mark.anyio
async def test_codex_built_in_tools_are_dropped_with_a_header_or_refused(upstream: Process) -> None:
    """Codex CLI on a Chat upstream (``--upstream-api openai``): its built-in tools are
    left out of the translated request and named in ``x-csum-dropped-tools``; with
    ``refuse_builtin_tools`` the request gets a 400 naming them, the upstream nothing."""
    tools = [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        {"type": "custom", "name": "apply_patch", "description": "Edit files."},
        {"type": "web_search", "external_web_access": True},
    ]
    body = json.dumps({"model": "gpt-4o", "input": "Add a.txt", "tools": tools}).encode()
    dropping = create_app(ServeConfig(upstream=upstream.url, upstream_api="openai"))
    refusing = create_app(
        ServeConfig(upstream=upstream.url, upstream_api="openai", refuse_builtin_tools=True)
    )
    try:
        reset(upstream)
        transport = httpx.ASGITransport(app=dropping)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            answer = await client.post("/v1/responses", content=body)
        assert answer.status_code == 200
        assert answer.headers["x-csum-dropped-tools"] == "web_search"
        (sent,) = recorded(upstream)
        names = [t["function"]["name"] for t in json.loads(sent["body"])["tools"]]
        assert names == ["exec_command", "apply_patch"]
        reset(upstream)
        transport = httpx.ASGITransport(app=refusing)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            refused = await client.post("/v1/responses", content=body)
        assert refused.status_code == 400
        assert "web_search" in refused.json()["error"]["message"]
        assert recorded(upstream) == []
    finally:
        await dropping.state.gateway.aclose()
        await refusing.state.gateway.aclose()


@pytest.mark.anyio
async def test_a_translated_request_carries_no_anthropic_query_or_headers(
    upstream: Process,
) -> None:
    """Claude Code on a Chat upstream: its ``?beta=true`` and ``anthropic-*`` headers are
    Anthropic's and stay behind; the key moves to ``authorization``."""
    app = create_app(ServeConfig(upstream=upstream.url, upstream_api="openai"))
    body = json.dumps(
        {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    headers = {
        "x-api-key": API_KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "interleaved-thinking-2025-05-14",
    }
    try:
        reset(upstream)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            answer = await client.post("/v1/messages?beta=true", content=body, headers=headers)
        assert answer.status_code == 200
    finally:
        await app.state.gateway.aclose()
    (sent,) = recorded(upstream)
    assert sent["path"] == "/v1/chat/completions"
    assert sent["query"] == ""
    assert not [name for name in sent["headers"] if name.startswith("anthropic-")]
    assert sent["headers"]["authorization"] == f"Bearer {API_KEY}"


def _history(api: str, pairs: int) -> tuple[str, dict[str, Any], int]:
    """(path, a request of ``api`` with ``pairs`` tool calls and results, its items)."""
    out = "line of a long file " * 40
    if api == "responses":
        items: list[dict[str, Any]] = [{"role": "user", "content": "Find the bug."}]
        for i in range(pairs):
            items.append(
                {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"}
            )
            items.append({"type": "function_call_output", "call_id": f"c{i}", "output": out})
        return "/v1/responses", {"model": "m", "instructions": SYSTEM, "input": items}, len(items)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the bug."}]
    for i in range(pairs):
        if api == "chat":
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "read", "arguments": "{}"},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": out})
        else:
            use = {"type": "tool_use", "id": f"c{i}", "name": "read", "input": {}}
            messages.append({"role": "assistant", "content": [use]})
            result = {"type": "tool_result", "tool_use_id": f"c{i}", "content": out}
            messages.append({"role": "user", "content": [result]})
    if api == "chat":
        payload = {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, *messages]}
        return "/v1/chat/completions", payload, len(messages) + 1
    payload = {"model": "m", "max_tokens": 50, "system": SYSTEM, "messages": messages}
    return "/v1/messages", payload, len(messages)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("client", "target"),
    [
        ("messages", "openai"),
        ("chat", "anthropic"),
        ("responses", "openai"),
        ("responses", "anthropic"),
    ],
)
@pytest.mark.parametrize("compacted", [True, False])
async def test_a_translated_request_is_parsed_and_decoded_once(
    client: str, target: str, compacted: bool, upstream: Process, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request compacted on the client's chain and translated for the upstream: its
    body parsed once, its history decoded once (the translation encodes the compacted
    chain as it is), compacted or within the budget. (The first request of a
    conversation also decodes its opening alone, to know it again by its raw text.)"""
    import csum.serve.app as app_module
    import csum.serve.compaction as compaction_module

    codec = {"messages": anthropic, "chat": openai, "responses": openai_responses}[client]
    list_key = "input" if client == "responses" else "messages"
    decoded: list[int] = []
    parsed: list[bytes] = []

    def counted(function: Callable[..., Any], log: list[Any], what: Callable[[Any], Any]) -> Any:
        def wrapper(value: Any, *args: Any) -> Any:
            log.append(what(value))
            return function(value, *args)

        return wrapper

    def items(payload: Any) -> int:
        found = payload if isinstance(payload, list) else payload.get(list_key)
        return len(found) if isinstance(found, list) else -1

    monkeypatch.setattr(codec, "decode", counted(codec.decode, decoded, items))
    for module in (app_module, compaction_module):
        name = "parse" if module is app_module else "scan"
        monkeypatch.setattr(module, name, counted(getattr(module, name), parsed, bytes))
    path, payload, whole = _history(client, 30)
    if not compacted:
        whole = 3 + (client == "chat")  # a tool call and its result after the opening
        payload = {**payload, list_key: payload[list_key][:whole]}
    body = json.dumps(payload).encode()
    config = ServeConfig(upstream=upstream.url, upstream_api=target, budget=Budget.bytes(12_000))
    app = create_app(config)
    try:
        reset(upstream)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
            answer = await http.post(path, content=body, headers={"x-api-key": API_KEY})
        assert answer.status_code == 200
    finally:
        await app.state.gateway.aclose()
    (sent,) = recorded(upstream)
    assert (len(sent["body"]) < len(body) * 2 / 3) is compacted
    assert parsed == [body]
    assert decoded.count(whole) == 1, decoded
    assert all(n == whole or n <= 2 for n in decoded), decoded
