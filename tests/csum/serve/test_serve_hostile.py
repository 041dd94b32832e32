"""``csum serve`` under hostile traffic (issue 39): stalled stores, tenants, slow and
greedy clients, hostile bodies and upstreams. Each test fails on the gateway before its
fix; all run on 127.0.0.1 with bounded request loops."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import Message
from csum.config import Budget
from csum.serve import ServeConfig, create_app
from csum.stores import MemoryStore
from serve_processes import Process, recorded, reset, start_gateway, start_upstream

pytest.importorskip("starlette", reason="the serve extra is not installed")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-logs")


@pytest.fixture(scope="module")
def upstream(logs: Path) -> Iterator[Process]:
    server = start_upstream(logs)
    yield server
    server.stop()


def over_budget_body(conversation: int, turns: int = 24, model: str = "gpt-4o") -> bytes:
    """A Chat request of ``turns`` tool turns (about 1.3 KB each), its opening naming
    ``conversation`` (so conversations share no summary)."""
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Task {conversation}: find why the importer fails."},
    ]
    for i in range(turns):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{i}.py"})},
        }
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        text = "\n".join(
            f"m{i}.py:{n}: def load_{conversation}_{i}_{n}(path): return parse(path)"
            for n in range(20)
        )
        items.append({"role": "tool", "tool_call_id": f"call_{i}", "content": text})
    return json.dumps({"model": model, "messages": items}).encode()


# -- 1. a stalled store never hangs the gateway ----------------------------------------


class NeverAnswers(MemoryStore):
    """A store whose reads block a thread of I/O until ``release`` is set (a backend
    that never answers, its call not cancellable, as SQLite's)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    async def get(self, key: str) -> bytes | None:
        await anyio.to_thread.run_sync(self.release.wait)
        return None


@pytest.mark.anyio
async def test_a_store_that_never_answers_costs_the_deadline_and_healthz_says_stuck(
    upstream: Process,
) -> None:
    """Every worker held by a store call that never returns: each request is forwarded
    uncompacted at its deadline, and ``/healthz`` answers 503 ``stuck`` once the
    workers have been held for over twice the deadline (before: the requests hung and
    ``/healthz`` said ok)."""
    store = NeverAnswers()
    config = ServeConfig(
        upstream=upstream.url, budget=Budget.bytes(8192), deadline=0.5, compaction_workers=2
    )
    app = create_app(config, store=store)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            reset(upstream)
            statuses: list[int] = []

            async def one(n: int) -> None:
                answer = await client.post("/v1/chat/completions", content=over_budget_body(n))
                statuses.append(answer.status_code)

            with anyio.fail_after(10):
                async with anyio.create_task_group() as group:
                    for n in range(4):
                        group.start_soon(one, n)
            assert statuses == [200] * 4
            sent = [entry["body"].encode() for entry in recorded(upstream)]
            assert sorted(sent) == sorted(over_budget_body(n) for n in range(4))
            await anyio.sleep(1.1)  # the two workers now held for over 2 x 0.5 s
            health = await client.get("/healthz")
            assert health.status_code == 503, health.json()
            assert health.json()["status"] == "stuck"
            store.release.set()
            with anyio.fail_after(10):
                while (await client.get("/healthz")).status_code != 200:
                    await anyio.sleep(0.05)
    finally:
        store.release.set()
        await app.state.gateway.aclose()


async def _burst(base: str, count: int, first: int, timeout: float) -> list[int]:
    """``count`` over-budget requests at once; the status of each (0: no answer within
    ``timeout`` seconds)."""
    statuses = [0] * count
    limits = httpx.Limits(max_connections=count + 4)
    async with httpx.AsyncClient(base_url=base, timeout=timeout, limits=limits) as client:

        async def one(i: int) -> None:
            try:
                answer = await client.post(
                    "/v1/chat/completions", content=over_budget_body(first + i, turns=12)
                )
                statuses[i] = answer.status_code
            except httpx.HTTPError:
                statuses[i] = 0

        async with anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(one, i)
    return statuses


def _served_soon(gateway: Process, conversation: int) -> int:
    """The status of one over-budget request given 1 s (0: none in time)."""
    try:
        answer = httpx.post(
            gateway.url + "/v1/chat/completions",
            content=over_budget_body(conversation, turns=12),
            timeout=1.0,
        )
    except httpx.HTTPError:
        return 0
    return answer.status_code


def test_a_locked_sqlite_store_with_sixty_compactions_in_flight_never_hangs(
    upstream: Process, logs: Path, tmp_path: Path
) -> None:
    """60 over-budget requests at once while another process holds the SQLite store's
    lock for 2 s: every request is answered within its deadline (2 s, plus the time to
    relay), and a request after the stall is served within 1 s (before: the 40 worker
    threads of anyio's pool all held compactions whose store calls waited for a thread
    of that same pool, and no request was ever answered)."""
    path = tmp_path / "state.sqlite"
    gateway = start_gateway(
        upstream.url, logs, "--budget", "8KiB", "--store", str(path), "--deadline", "2"
    )
    try:
        assert _served_soon(gateway, 10_000) == 200 or path.exists()
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")
        released = threading.Timer(2.0, lambda: holder.execute("COMMIT"))
        released.start()
        statuses = anyio.run(_burst, gateway.url, 60, 0, 5.0)
        released.join()
        holder.close()
        assert statuses == [200] * 60
        assert _served_soon(gateway, 20_000) == 200
        assert httpx.get(gateway.url + "/healthz", timeout=1).json()["status"] == "ok"
    finally:
        gateway.stop()


def test_a_paused_redis_with_sixty_compactions_in_flight_never_hangs(
    upstream: Process, logs: Path, redis_own_server: Any
) -> None:
    """The same with the Redis store and redis-server paused (SIGSTOP) for 3 s."""
    gateway = start_gateway(
        upstream.url,
        logs,
        "--budget",
        "8KiB",
        "--store",
        redis_own_server.url,
        "--deadline",
        "2",
    )
    pid = redis_own_server.process.pid
    try:
        os.kill(pid, signal.SIGSTOP)
        resumed = threading.Timer(3.0, lambda: os.kill(pid, signal.SIGCONT))
        resumed.start()
        statuses = anyio.run(_burst, gateway.url, 60, 0, 5.0)
        resumed.join()
        assert statuses == [200] * 60
        time.sleep(0.2)
        assert _served_soon(gateway, 20_000) == 200
    finally:
        os.kill(pid, signal.SIGCONT)
        gateway.stop()


# -- 2. tenants: what one key's requests leave, another key's never see ----------------

OPENING = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Find why the importer fails."},
]


def tenant_history(secret: str, turns: int = 14) -> list[dict[str, Any]]:
    """The common opening, then tool turns whose results name ``secret``."""
    items: list[dict[str, Any]] = [dict(m) for m in OPENING]
    for i in range(turns):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"cfg{i}.py"})},
        }
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        lines = [f"cfg{i}.py:{n}: setting_{i}_{n} = load('{secret}-{i}-{n}')" for n in range(16)]
        if i == 1:
            lines.append(f"cfg1.py:99: VAULT_CODE = '{secret}-vault'")
        items.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "\n".join(lines)})
    return items


def ask(items: list[dict[str, Any]], question: str) -> bytes:
    return json.dumps(
        {"model": "gpt-4o", "messages": [*items, {"role": "user", "content": question}]}
    ).encode()


async def _tenant_run(
    upstream: Process, tmp_path: Path, requests: list[tuple[str, bytes, str | None]]
) -> list[str]:
    """Each (key, body, conversation header) through one in-process gateway with an
    archive that re-inserts; the bodies the upstream received, in order."""
    config = ServeConfig(
        upstream=upstream.url,
        budget=Budget.bytes(6144),
        archive=str(tmp_path / "archive.sqlite"),
        archive_reinsert_bytes=4096,
    )
    app = create_app(config)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            reset(upstream)
            for key, body, conversation in requests:
                headers = {"authorization": f"Bearer {key}"}
                if conversation is not None:
                    headers["x-csum-conversation"] = conversation
                answer = await client.post("/v1/chat/completions", content=body, headers=headers)
                assert answer.status_code == 200
    finally:
        await app.state.gateway.aclose()
    return [entry["body"] for entry in recorded(upstream)]


@pytest.mark.anyio
@pytest.mark.parametrize("conversation", [None, "shared-id"])
async def test_another_tenant_never_gets_an_archived_line_back(
    upstream: Process, tmp_path: Path, conversation: str | None
) -> None:
    """Tenant B with its own key and the same opening as A (every agent session with a
    common first prompt has one), or naming A's conversation id: B's request gets none
    of A's archived lines re-inserted, and A's gets none of B's (before: the archive
    session was the opening's or the header's alone, and B read A's vault code)."""
    first_a = ask(tenant_history("alpha"), "Go on.")
    question = "What is the VAULT_CODE in cfg1.py?"
    first_b = ask(tenant_history("bravo"), question)
    later_a = ask([*tenant_history("alpha"), {"role": "user", "content": "Go on."}], question)
    sent = await _tenant_run(
        upstream,
        tmp_path,
        [
            ("sk-alpha", first_a, conversation),
            ("sk-bravo", first_b, conversation),
            ("sk-alpha", later_a, conversation),
        ],
    )
    assert "alpha-vault" not in sent[1]
    assert "bravo" not in sent[2]


@pytest.mark.anyio
async def test_summaries_are_not_shared_across_keys(upstream: Process) -> None:
    """The same over-budget request from two keys: the second key's compaction writes
    its own summary (no cache hit), so no tenant gets a summary another paid for, and
    the cache-hit counter tells nothing of what another sent (before: B hit A's)."""
    config = ServeConfig(upstream=upstream.url, budget=Budget.bytes(6144))
    app = create_app(config)
    body = over_budget_body(7)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            reset(upstream)
            for key in ("sk-alpha", "sk-bravo", "sk-alpha"):
                answer = await client.post(
                    "/v1/chat/completions",
                    content=body,
                    headers={"x-api-key": key, "x-csum-conversation": key},
                )
                assert answer.status_code == 200
            text = (await client.get("/metrics")).text
    finally:
        await app.state.gateway.aclose()
    assert "csum_serve_cache_hits_total 0.0" in text
    assert 'csum_serve_compactions_total{endpoint="chat"} 2.0' in text
    assert 'outcome="reused"} 1.0' in text


def test_tenants_are_keyed_hashes_of_the_credential() -> None:
    from csum.serve.tenant import ANONYMOUS, TenantKeys

    keys = TenantKeys("a-secret-of-sixteen-chars")
    alpha = keys.tenant_of({"authorization": "Bearer sk-alpha"}, "")
    assert alpha == keys.tenant_of({"authorization": "Bearer sk-alpha"}, "x=1")
    assert alpha != keys.tenant_of({"authorization": "Bearer sk-bravo"}, "")
    assert alpha != TenantKeys("another-secret-of-16").tenant_of(
        {"authorization": "Bearer sk-alpha"}, ""
    )
    assert "sk-alpha" not in alpha
    assert keys.tenant_of({}, "key=AIza-1") != keys.tenant_of({}, "key=AIza-2")
    assert keys.tenant_of({}, "") == ANONYMOUS
    assert "a-secret-of" not in repr(keys)


# -- 3. conversations that share an opening keep their own state -----------------------


@pytest.mark.anyio
async def test_conversations_sharing_an_opening_do_not_evict_each_other() -> None:
    """Two conversations of one tenant with the same opening, interleaved: each
    follow-up is rebuilt on its own compacted prefix (before: each compaction replaced
    the other's state, and every request compacted afresh)."""
    from csum.serve.apis import APIS
    from csum.serve.compaction import OutcomeKind, Rewriter

    config = ServeConfig(upstream="http://127.0.0.1:9", budget=Budget.bytes(6144))
    gateway = Rewriter(config, MemoryStore())
    histories = {name: tenant_history(name) for name in ("alpha", "bravo", "charlie")}
    for items in histories.values():
        assert (await gateway.rewrite(APIS[0], ask(items, "Go on."), None)).kind is (
            OutcomeKind.COMPACTED
        )
    for turn in range(3):
        for name, items in histories.items():
            items.append({"role": "user", "content": "Go on."})
            items.append({"role": "assistant", "content": f"Checked {name} {turn}."})
            outcome = await gateway.rewrite(APIS[0], ask(items, "Go on."), None)
            assert outcome.kind is OutcomeKind.REUSED, (name, turn)


def test_states_of_one_key_are_bounded_and_other_versions_ignored() -> None:
    from cast import Message
    from csum.serve.conversation import (
        STATES_PER_KEY,
        ConversationState,
        ConversationStates,
        dumps,
    )

    states = ConversationStates()
    for n in range(STATES_PER_KEY + 2):
        history = [Message.human(f"q{n}")]
        states = states.with_state(ConversationState.after(history, history), None)
    again = ConversationStates.from_bytes(states.to_bytes())
    assert len(again.states) == STATES_PER_KEY
    assert again.match([Message.human(f"q{STATES_PER_KEY + 1}"), Message.ai("a")]) is not None
    assert again.match([Message.human("q0")]) is None  # the oldest was evicted
    single = ConversationState.after([Message.human("q")], [Message.human("q")])
    assert ConversationStates.from_bytes(dumps(single.record())).states == ()


# -- 4. a summarizer that fails or never answers ---------------------------------------


class Summarizer:
    """An OpenAI-compatible endpoint on 127.0.0.1 whose summary calls (model
    ``summarizer``) fail with 500 (``mode="fail"``) or get no answer until it stops
    (``mode="hang"``); other requests get a Chat answer. Counts the summary calls."""

    def __init__(self, mode: str) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        owner = self
        self.calls = 0
        self.stopping = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", "0")))
                if json.loads(data).get("model") == "summarizer":
                    owner.calls += 1
                    if mode == "hang":
                        owner.stopping.wait(30)
                        return
                    self._send(500, {"error": {"message": "down", "type": "server_error"}})
                    return
                message = {"role": "assistant", "content": "ok"}
                self._send(200, {"choices": [{"index": 0, "message": message}]})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["fail", "hang"])
async def test_a_summarizer_that_fails_or_never_answers_costs_one_policy_and_the_deadline(
    mode: str,
) -> None:
    """--summarizer upstream on an endpoint whose summary calls fail (500) or never
    answer: a failing summary is tried 1 + SUMMARY_RETRIES times in all (before: 16
    calls, retries nested in retries), and the request is answered within its deadline
    either way (4 attempts of 120 s for one that never answers before the deadline of
    item 1)."""
    from csum.serve.summary_handler import SUMMARY_RETRIES

    pytest.importorskip("openai", reason="the openai extra is not installed")
    endpoint = Summarizer(mode)
    config = ServeConfig(
        upstream=endpoint.url,
        budget=Budget.bytes(6144),
        summarizer="upstream",
        summarizer_model="summarizer",
        deadline=20.0 if mode == "fail" else 3.0,
    )
    app = create_app(config)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            with anyio.fail_after(8):
                answer = await client.post(
                    "/v1/chat/completions",
                    content=over_budget_body(3),
                    headers={"authorization": "Bearer sk-client"},
                )
        assert answer.status_code == 200
        if mode == "fail":
            assert endpoint.calls == 1 + SUMMARY_RETRIES
        else:
            assert endpoint.calls == 1
    finally:
        endpoint.stop()
        await app.state.gateway.aclose()


# -- 5. slow clients and connection limits ---------------------------------------------


def _read_all(sock: socket.socket, within: float) -> bytes:
    """What the gateway sends on ``sock`` until it closes it (at most ``within`` s)."""
    sock.settimeout(within)
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except TimeoutError:
        return data + b"<still open>"
    except ConnectionResetError:
        return data
    return data


def _connect(gateway: Process) -> socket.socket:
    port = int(gateway.url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=5)


@pytest.fixture(scope="module")
def strict_gateway(upstream: Process, logs: Path) -> Iterator[Process]:
    server = start_gateway(
        upstream.url,
        logs,
        "--header-timeout",
        "1",
        "--body-timeout",
        "1",
        "--max-connections-per-client",
        "6",
    )
    yield server
    server.stop()


def test_a_client_that_stops_mid_headers_or_sends_nothing_is_cut_off(
    strict_gateway: Process,
) -> None:
    """Headers that stop half-way, and a connection that sends nothing: 408 and the
    connection closed within the header timeout (before: both held open for good, and
    300 such sockets locked every client out of a 256-descriptor gateway)."""
    with _connect(strict_gateway) as silent, _connect(strict_gateway) as partial:
        partial.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\nx-a")
        cut = _read_all(partial, 4)
        quiet = _read_all(silent, 4)
    assert cut.startswith(b"HTTP/1.1 408 ")
    assert b"<still open>" not in cut
    assert quiet.startswith(b"HTTP/1.1 408 ")
    assert b"<still open>" not in quiet


def test_a_client_that_stops_mid_body_is_cut_off(strict_gateway: Process) -> None:
    """A body that stops after 10 of its 100 bytes: 408 in the provider's error shape
    within the body timeout, and the connection closed."""
    with _connect(strict_gateway) as slow:
        slow.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n"
            b"content-type: application/json\r\ncontent-length: 100\r\n\r\n"
            b'{"model":"'
        )
        answer = _read_all(slow, 4)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"<still open>" not in answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "request_timeout"


def test_connections_over_the_per_client_limit_get_503_at_once(
    strict_gateway: Process,
) -> None:
    """Six idle connections from one address, then a request: 503 with Retry-After at
    once (before: no limit, descriptors ran out and clients hung)."""
    held = [_connect(strict_gateway) for _ in range(6)]
    try:
        with _connect(strict_gateway) as extra:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
            answer = _read_all(extra, 3)
    finally:
        for sock in held:
            sock.close()
    assert answer.startswith(b"HTTP/1.1 503 ")
    assert b"retry-after: 1" in answer.lower()
    time.sleep(0.2)  # the held sockets closed: served again
    assert httpx.get(strict_gateway.url + "/healthz", timeout=3).status_code == 200


# -- 7. --max-connections: the request over it is refused at once ----------------------


def test_the_request_over_max_connections_is_refused_at_once(upstream: Process, logs: Path) -> None:
    """--max-connections 2 with two streams held open upstream: a third request gets
    503 (overloaded, Retry-After) at once, not a 504 blaming the upstream after the
    read timeout (before: it waited for the pool); once the streams end it is served."""
    gateway = start_gateway(upstream.url, logs, "--max-connections", "2")
    body = json.dumps(
        {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    try:
        reset(upstream)
        with httpx.Client(timeout=10) as client:
            streams = [
                client.stream(
                    "POST",
                    gateway.url + "/v1/chat/completions",
                    content=body,
                    headers={"x-test-hold": "1"},
                )
                for _ in range(2)
            ]
            opened = [s.__enter__() for s in streams]
            chunks = [response.iter_raw() for response in opened]  # kept: reading on
            try:
                for chunk in chunks:
                    assert next(chunk).startswith(b"data: ")
                third = httpx.get(gateway.url + "/v1/models", timeout=3)
            finally:
                httpx.post(upstream.url + "/_release", timeout=10).raise_for_status()
                for stream in streams:
                    stream.__exit__(None, None, None)
        assert third.status_code == 503
        assert third.headers["retry-after"] == "1"
        assert third.json()["error"]["type"] == "overloaded_error"
        assert httpx.get(gateway.url + "/v1/models", timeout=3).status_code == 200
    finally:
        gateway.stop()


# -- 6. hostile bodies: deep nesting, many tiny messages -------------------------------


def deep_body(depth: int, pad: int = 9000) -> bytes:
    """A Chat request over an 8 KiB budget with a field nested ``depth`` deep."""
    text = "x" * pad
    head = f'{{"model":"gpt-4o","messages":[{{"role":"user","content":"{text}"}}],"meta":'
    return (head + "[" * depth + "]" * depth + "}").encode()


async def _post(config: ServeConfig, path: str, body: bytes) -> httpx.Response:
    app = create_app(config)
    try:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            return await client.post(path, content=body)
    finally:
        await app.state.gateway.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [150, 5000])
async def test_deep_nesting_is_refused_in_the_providers_shape(
    upstream: Process, depth: int
) -> None:
    """A body over the budget nested past --max-depth (100): 400 in OpenAI's error
    shape (before: 5,000 levels answered a plain-text 500, the parser's RecursionError)."""
    config = ServeConfig(upstream=upstream.url, budget=Budget.bytes(8192))
    answer = await _post(config, "/v1/chat/completions", deep_body(depth))
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "levels deep" in error["message"]


@pytest.mark.anyio
async def test_deep_nesting_to_translate_is_refused_in_the_clients_shape(
    upstream: Process,
) -> None:
    """--upstream-api openai: any deep body of an Anthropic client, within the budget or
    not, is answered 400 in Anthropic's error shape (before: a plain-text 500)."""
    config = ServeConfig(upstream=upstream.url, upstream_api="openai")
    body = (
        '{"model":"claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}],'
        '"metadata":' + "[" * 5000 + "]" * 5000 + "}"
    ).encode()
    answer = await _post(config, "/v1/messages", body)
    assert answer.status_code == 400
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.anyio
async def test_many_tiny_messages_are_refused_before_they_are_decoded(upstream: Process) -> None:
    """30,000 one-word messages over the budget: 413 in OpenAI's shape, refused before
    the codec builds them (before: decoded and compacted, seconds and hundreds of MiB
    for 100,000)."""
    config = ServeConfig(upstream=upstream.url, budget=Budget.bytes(8192))
    items = [{"role": "user" if i % 2 else "assistant", "content": "ok"} for i in range(30_000)]
    body = json.dumps({"model": "gpt-4o", "messages": items}).encode()
    answer = await _post(config, "/v1/chat/completions", body)
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "request_too_large"


json_values = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=20,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(json_values)
def test_nesting_depth_is_the_depth_of_the_value(value: Any) -> None:
    from csum.serve.body import nesting_depth, parse

    assert nesting_depth(value) == _depth(value)
    assert parse(json.dumps(value).encode(), 100) == value


# -- 8. the smaller holes ---------------------------------------------------------------


class RawUpstream:
    """An upstream on 127.0.0.1 that answers every request one scripted way:
    ``not_json`` (200, an HTML page), ``cut`` (200, one SSE event of a Chat stream,
    then the connection closed mid-body) or ``big`` (200, a Chat answer of ``size``
    bytes)."""

    def __init__(self, mode: str, size: int = 0) -> None:
        self.mode, self.size = mode, size
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"content-length: (\d+)", head, re.I)[1])  # type: ignore[index]
                while len(rest) < length:
                    rest += conn.recv(65536)
                conn.sendall(self._answer())

    def _answer(self) -> bytes:
        if self.mode == "not_json":
            page = b"<html>upstream maintenance</html>"
            return b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: %d\r\n\r\n%s" % (
                len(page),
                page,
            )
        if self.mode == "cut":
            event = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":'
            event += b'[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n'
            return (
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(event), event)
            )
        message = {"role": "assistant", "content": "x" * self.size}
        body = json.dumps({"id": "c1", "model": "m", "choices": [{"message": message}]}).encode()
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (
                len(body),
                body,
            )
        )

    def stop(self) -> None:
        self.listener.close()


MESSAGES_BODY = json.dumps(
    {"model": "claude", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
).encode()


@pytest.mark.anyio
async def test_a_translated_answer_that_is_not_json_is_a_502_in_the_clients_shape() -> None:
    """--upstream-api openai, the upstream answers 200 with an HTML page: 502 in
    Anthropic's error shape (before: a plain-text 500)."""
    upstream = RawUpstream("not_json")
    try:
        config = ServeConfig(upstream=upstream.url, upstream_api="openai")
        answer = await _post(config, "/v1/messages", MESSAGES_BODY)
    finally:
        upstream.stop()
    assert answer.status_code == 502
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == "api_error"


@pytest.mark.anyio
async def test_a_translated_answer_over_the_bound_is_refused_not_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A non-streamed answer to translate is read up to MAX_TRANSLATED_ANSWER bytes,
    then refused 502 (before: held whole at any size: 150 MB cost +580 MiB)."""
    import csum.serve.app as app_module

    monkeypatch.setattr(app_module, "MAX_TRANSLATED_ANSWER", 50_000)
    upstream = RawUpstream("big", size=200_000)
    try:
        config = ServeConfig(upstream=upstream.url, upstream_api="openai")
        answer = await _post(config, "/v1/messages", MESSAGES_BODY)
    finally:
        upstream.stop()
    assert answer.status_code == 502
    assert "over 50000 bytes" in answer.json()["error"]["message"]


def test_a_translated_stream_the_upstream_cuts_ends_with_the_error_event(
    logs: Path,
) -> None:
    """The Chat upstream of an Anthropic client cuts its stream after one event: the
    client gets a Messages ``error`` event, the one its SDK raises on (before: a broken
    connection)."""
    upstream = RawUpstream("cut")
    gateway = start_gateway(upstream.url, logs, "--upstream-api", "openai")
    streaming = json.loads(MESSAGES_BODY) | {"stream": True}
    try:
        with httpx.Client(timeout=10) as client:
            answer = client.post(gateway.url + "/v1/messages", json=streaming)
    finally:
        gateway.stop()
        upstream.stop()
    assert answer.status_code == 200
    events = [line for line in answer.text.splitlines() if line.startswith("event: ")]
    assert events[0] == "event: message_start"
    assert events[-1] == "event: error"


def test_content_length_with_transfer_encoding_is_refused(strict_gateway: Process) -> None:
    """Both framings on one request (request smuggling behind a front proxy): 400 and
    the connection closed (before: served, the connection kept)."""
    with _connect(strict_gateway) as sock:
        sock.sendall(
            b"POST /v1/models HTTP/1.1\r\nhost: gateway\r\ncontent-length: 5\r\n"
            b"transfer-encoding: chunked\r\n\r\n0\r\n\r\n"
        )
        answer = _read_all(sock, 4)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"<still open>" not in answer


@pytest.mark.parametrize("path", [b"/v1/../admin", b"/v1/%2e%2e/admin", b"/./v1/models"])
def test_dot_segments_in_the_path_are_refused(
    strict_gateway: Process, upstream: Process, path: bytes
) -> None:
    """A path with a dot segment would leave the upstream's path prefix: 400, nothing
    forwarded (before: forwarded as written)."""
    reset(upstream)
    with _connect(strict_gateway) as sock:
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n")
        answer = _read_all(sock, 4)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert recorded(upstream) == []


@pytest.mark.anyio
async def test_metrics_need_the_gateway_key_when_one_is_set(upstream: Process) -> None:
    """/metrics tells whether someone sent a text before (its cache-hit counter): behind
    the gateway key when one is set (before: open to anyone)."""
    app = create_app(ServeConfig(upstream=upstream.url, gateway_key="gw-secret"))
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            refused = await client.get("/metrics")
            allowed = await client.get("/metrics", headers={"x-csum-key": "gw-secret"})
    finally:
        await app.state.gateway.aclose()
    assert refused.status_code == 401
    assert allowed.status_code == 200
    assert "csum_serve_cache_hits_total" in allowed.text


def test_secrets_in_the_query_are_in_no_log_line(strict_gateway: Process) -> None:
    """Gemini's style, ``?key=...``: the access log shows ``key=REDACTED`` (before: the
    key itself)."""
    secret = "AIzaSy-query-secret-0123"
    answer = httpx.get(f"{strict_gateway.url}/v1/models?alt=sse&key={secret}", timeout=5)
    assert answer.status_code == 200
    time.sleep(0.2)
    text = strict_gateway.log_text()
    assert secret not in text
    assert "key=REDACTED" in text


@pytest.mark.anyio
async def test_a_gzip_body_is_measured_decoded(upstream: Process) -> None:
    """A gzip body over the budget once decoded, under it compressed: compacted and sent
    as plain JSON (before: measured compressed, forwarded uncompacted); one within the
    budget decoded goes byte for byte, compressed."""
    import gzip

    from cast.codecs import openai

    config = ServeConfig(upstream=upstream.url, budget=Budget.bytes(8192))
    over = gzip.compress(over_budget_body(11))
    within = gzip.compress(json.dumps({"model": "m", "messages": [{"role": "user"}]}).encode())
    assert len(over) < 8192
    app = create_app(config)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            reset(upstream)
            gzipped = {"content-encoding": "gzip"}
            answer = await client.post("/v1/chat/completions", content=over, headers=gzipped)
            assert answer.status_code == 200
            (compacted,) = recorded(upstream)
            # within the budget decoded: forwarded compressed, as it came (the scripted
            # upstream reads no gzip, and says so)
            answer = await client.post("/v1/chat/completions", content=within, headers=gzipped)
            assert answer.status_code == 500
    finally:
        await app.state.gateway.aclose()
    assert "content-encoding" not in compacted["headers"]
    chain = openai.decode(json.loads(compacted["body"]))
    assert sum(m.size for m in chain) <= 8192


@pytest.mark.anyio
async def test_the_memory_store_is_bounded_in_bytes(upstream: Process) -> None:
    """--store memory holds at most --memory-store-bytes of state and summaries, least
    recently used dropped first (before: 4,096 entries of any size)."""
    store = MemoryStore(max_bytes=1000)
    await store.set("a", b"x" * 400)
    await store.set("b", b"x" * 400)
    await store.get("a")
    await store.set("c", b"x" * 400)
    assert await store.get("b") is None
    assert await store.get("a") is not None
    assert store.size_bytes <= 1000
    await store.set("huge", b"x" * 5000)
    assert await store.get("huge") is None
    app = create_app(ServeConfig(upstream=upstream.url, memory_store_bytes=1 << 20))
    try:
        assert app.state.gateway.store.max_bytes == 1 << 20
    finally:
        await app.state.gateway.aclose()


@pytest.mark.anyio
async def test_a_flood_of_tiny_content_blocks_is_refused_before_it_is_parsed(
    upstream: Process,
) -> None:
    """50,000 one-letter text blocks in one Messages turn: 413 in Anthropic's shape,
    from the text alone (before: parsed, decoded and compacted)."""
    config = ServeConfig(upstream=upstream.url, budget=Budget.bytes(8192))
    blocks = [{"type": "text", "text": "w"} for _ in range(50_000)]
    turn = {"role": "user", "content": blocks}
    body = json.dumps({"model": "claude", "max_tokens": 8, "messages": [turn]}).encode()
    answer = await _post(config, "/v1/messages", body)
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "request_too_large"


def test_roles_quoted_inside_strings_are_not_counted() -> None:
    """The pre-parse count reads structure only: a tool result quoting ``"role"``
    30,000 times is one message (its quotes are escaped in the JSON text)."""
    from csum.serve.body import check_roles

    text = '{"role": "user"}' * 30_000
    body = json.dumps({"messages": [{"role": "tool", "content": text}]}).encode()
    check_roles(body, 10)  # does not raise


# -- 8. archive expiry -------------------------------------------------------------------

OLD = Message.human("the old secret").model_dump_json().encode()
NEW = Message.human("a new line").model_dump_json().encode()


@pytest.mark.anyio
async def test_archive_sessions_expire_after_their_last_write_in_sqlite(tmp_path: Path) -> None:
    """SQLiteArchiveStore(ttl=): a write deletes the sessions last written over ``ttl``
    seconds before (before: kept for good)."""
    from csum.stores import SQLiteArchiveStore
    from csum.stores._protocol import ArchiveRecord

    store = SQLiteArchiveStore(tmp_path / "archive.sqlite", ttl=0.3)
    try:
        await store.put("old", "b1", [ArchiveRecord("m1", OLD)])
        await anyio.sleep(0.5)
        await store.put("new", "b2", [ArchiveRecord("m2", NEW)])
        assert await store.get("old", "b1") == []
        assert await store.search("old", "secret", 5) == []
        assert await store.get("new", "b2") == [NEW]
    finally:
        await store.aclose()


@pytest.mark.anyio
async def test_archive_sessions_expire_after_their_last_write_in_redis(redis_url: str) -> None:
    """RedisArchiveStore(ttl=): a session's keys expire ``ttl`` after its last write."""
    from csum.stores import RedisArchiveStore
    from csum.stores._protocol import ArchiveRecord

    store = RedisArchiveStore(redis_url, ttl=0.3)
    try:
        await store.put("old", "b1", [ArchiveRecord("m1", OLD)])
        assert await store.get("old", "b1") == [OLD]
        await anyio.sleep(0.6)
        assert await store.get("old", "b1") == []
    finally:
        await store.aclose()


def test_the_gateway_archive_has_a_ttl(tmp_path: Path) -> None:
    app = create_app(ServeConfig(upstream="http://127.0.0.1:9", archive=str(tmp_path / "a.sqlite")))
    assert app.state.gateway.archive_store.ttl == 7 * 24 * 3600
    anyio.run(app.state.gateway.aclose)
