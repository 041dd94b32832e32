"""The OpenAI and Anthropic handlers against a real HTTP server on 127.0.0.1.

The server speaks each provider's JSON (responses and error bodies), so the official
SDKs run unmodified; nothing leaves the machine.
"""

from __future__ import annotations

import json
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest

from csum.handlers import (
    HandlerError,
    RetryPolicy,
    SummarizeHandler,
    anthropic,
    openai_compatible,
    resolve_handler,
)
from csum.prompt import DEFAULT_SYSTEM_PROMPT, text_request

anthropic_sdk = pytest.importorskip(
    "anthropic", reason="the anthropic extra is not installed: pip install '.[anthropic]'"
)
openai_sdk = pytest.importorskip(
    "openai", reason="the openai extra is not installed: pip install '.[openai]'"
)

PROMPT = "<instructions>\nsummarize\n</instructions>\n<messages>\n</messages>\n"
REQUEST = text_request(PROMPT)
FAST = {"backoff_base": 0.01, "backoff_max": 0.05}


# --- the fake provider --------------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer: status, JSON body, delay before answering, headers."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and left is expected here


class FakeProvider:
    """A ThreadingHTTPServer answering POSTs from a script (the last reply repeats)."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                with provider._lock:
                    provider.requests.append(
                        Recorded(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw or b"null"),
                        )
                    )
                    reply = provider.replies.pop(0) if len(provider.replies) > 1 else None
                    reply = reply or provider.replies[0]
                if reply.delay and provider._stop.wait(reply.delay):
                    return
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    fake = FakeProvider()
    yield fake
    fake.close()


# --- provider shapes ----------------------------------------------------------------


def openai_ok(text: str | None = "the summary", finish_reason: str = "stop") -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }
    )


def openai_error(status: int, message: str, kind: str, code: str | None = None) -> Reply:
    return Reply(
        status=status,
        body={"error": {"message": message, "type": kind, "param": None, "code": code}},
    )


def anthropic_ok(text: str | None = "the summary", stop_reason: str = "end_turn") -> Reply:
    content = [] if text is None else [{"type": "text", "text": text}]
    return Reply(
        body={
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 3},
        }
    )


def anthropic_error(status: int, message: str, kind: str) -> Reply:
    return Reply(status=status, body={"type": "error", "error": {"type": kind, "message": message}})


@dataclass(frozen=True)
class Provider:
    name: str
    make: Callable[..., SummarizeHandler]
    ok: Callable[..., Reply]
    error: Callable[[int, str, str], Reply]
    path: str
    empty: Reply

    def handler(self, server: FakeProvider, **options: Any) -> SummarizeHandler:
        base = server.url + ("/v1" if self.name == "openai" else "")
        options = {"base_url": base, "api_key": "test-key", **FAST, **options}
        return self.make(f"{self.name}-model", **options)


OPENAI = Provider(
    "openai",
    openai_compatible,
    openai_ok,
    openai_error,
    "/v1/chat/completions",
    openai_ok(None, "length"),
)
ANTHROPIC = Provider(
    "anthropic",
    anthropic,
    anthropic_ok,
    anthropic_error,
    "/v1/messages",
    anthropic_ok(None, "max_tokens"),
)
PROVIDERS = [pytest.param(OPENAI, id="openai"), pytest.param(ANTHROPIC, id="anthropic")]

pytestmark = pytest.mark.anyio


# --- behaviour ----------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_success_and_request_shape(provider: Provider, server: FakeProvider) -> None:
    server.script(provider.ok("  the summary \n"))
    summary = await provider.handler(server, system_prompt="SYSTEM")(REQUEST)
    assert summary == "the summary"
    (request,) = server.requests
    assert request.path == provider.path
    body = request.body
    assert body["model"] == f"{provider.name}-model"
    if provider.name == "openai":
        assert request.headers["authorization"] == "Bearer test-key"
        assert body["messages"] == [
            {"role": "system", "content": "SYSTEM"},
            {"role": "user", "content": PROMPT},
        ]
        assert body["max_completion_tokens"] == 1024
        assert "max_tokens" not in body
    else:
        # Older SDKs send x-api-key, newer ones a bearer token.
        auth = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        assert auth.endswith("test-key")
        assert body["system"] == "SYSTEM"
        assert body["messages"] == [{"role": "user", "content": PROMPT}]
        assert body["max_tokens"] == 1024
    # Our retries replace the SDK's: it must not add its own retry headers' worth of
    # attempts, and nothing but this one request was made.
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_default_system_prompt_goes_first(provider: Provider, server: FakeProvider) -> None:
    server.script(provider.ok())
    await provider.handler(server)(REQUEST)
    body = server.requests[0].body
    system = body["messages"][0]["content"] if provider.name == "openai" else body["system"]
    assert system == DEFAULT_SYSTEM_PROMPT


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_400_is_not_retried(provider: Provider, server: FakeProvider) -> None:
    server.script(provider.error(400, "messages: field required", "invalid_request_error"))
    with pytest.raises(HandlerError) as info:
        await provider.handler(server, max_retries=5)(REQUEST)
    assert len(server.requests) == 1
    error = info.value
    assert error.status_code == 400
    assert error.provider_message == "messages: field required"
    assert error.error_type == "invalid_request_error"
    assert error.attempts == 1
    assert not error.retryable
    assert isinstance(error.__cause__, openai_sdk.APIStatusError | anthropic_sdk.APIStatusError)
    text = str(error)
    assert "HTTP 400" in text
    assert "messages: field required" in text
    assert f"{provider.name}-model" in text


@pytest.mark.parametrize("status", [401, 403, 404, 422])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_other_4xx_are_not_retried(
    provider: Provider, server: FakeProvider, status: int
) -> None:
    server.script(provider.error(status, "nope", "some_error"))
    with pytest.raises(HandlerError) as info:
        await provider.handler(server)(REQUEST)
    assert info.value.status_code == status
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_is_retried_then_succeeds(provider: Provider, server: FakeProvider) -> None:
    server.script(
        provider.error(429, "Rate limit reached", "rate_limit_error"),
        provider.error(429, "Rate limit reached", "rate_limit_error"),
        provider.ok("after the wait"),
    )
    assert await provider.handler(server)(REQUEST) == "after the wait"
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [408, 409, 425])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_transient_4xx_are_retried_as_is_transient_says(
    provider: Provider, server: FakeProvider, status: int
) -> None:
    """One set of retried statuses (csum.is_transient's): 409 is a lock timeout, which
    the providers' SDKs retry too; 425 is "too early"."""
    server.script(provider.error(status, "try again", "conflict"), provider.ok("then"))
    assert await provider.handler(server)(REQUEST) == "then"
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_5xx_is_retried(provider: Provider, server: FakeProvider) -> None:
    server.script(
        provider.error(500, "internal", "api_error"),
        provider.error(529, "Overloaded", "overloaded_error"),
        provider.ok("finally"),
    )
    assert await provider.handler(server)(REQUEST) == "finally"
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_5xx_retries_run_out(provider: Provider, server: FakeProvider) -> None:
    server.script(provider.error(503, "unavailable", "api_error"))
    with pytest.raises(HandlerError) as info:
        await provider.handler(server, max_retries=2)(REQUEST)
    assert len(server.requests) == 3
    assert info.value.status_code == 503
    assert info.value.attempts == 3
    assert info.value.retryable
    assert "(3 attempts)" in str(info.value)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeout_is_retried_then_fails(provider: Provider, server: FakeProvider) -> None:
    server.script(Reply(delay=5.0, body={}))
    with pytest.raises(HandlerError) as info:
        await provider.handler(server, timeout=1.0, max_retries=1)(REQUEST)
    # The second request may still be on its way when its own timeout fires on a
    # loaded machine, so the client's count of attempts is the one to check.
    assert 1 <= len(server.requests) <= 2
    error = info.value
    assert error.status_code is None
    assert error.error_type == "timeout"
    assert error.attempts == 2
    assert "timed out" in str(error) or "no response within" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeout_then_success(provider: Provider, server: FakeProvider) -> None:
    server.script(Reply(delay=5.0, body={}), provider.ok("second try"))
    assert await provider.handler(server, timeout=1.0)(REQUEST) == "second try"
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_connection_errors_are_retried(provider: Provider) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}" + ("/v1" if provider.name == "openai" else "")
    handler = provider.make("m", base_url=base, api_key="k", max_retries=2, **FAST)
    with pytest.raises(HandlerError) as info:
        await handler(REQUEST)
    assert info.value.error_type == "connection"
    assert info.value.attempts == 3
    assert info.value.retryable


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_empty_content_is_an_error(provider: Provider, server: FakeProvider) -> None:
    server.script(provider.empty)
    with pytest.raises(HandlerError, match="no summary text") as info:
        await provider.handler(server)(REQUEST)
    assert len(server.requests) == 1
    assert info.value.error_type == "empty_response"
    assert "raise max" in str(info.value)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_blank_content_is_an_error(provider: Provider, server: FakeProvider) -> None:
    server.script(provider.ok("   \n "))
    with pytest.raises(HandlerError, match="no summary text"):
        await provider.handler(server)(REQUEST)


async def test_openai_without_choices(server: FakeProvider) -> None:
    reply = openai_ok()
    reply.body["choices"] = []
    server.script(reply)
    handler = OPENAI.handler(server)
    with pytest.raises(HandlerError, match="no choices"):
        await handler(REQUEST)


async def test_openai_token_limit_param(server: FakeProvider) -> None:
    server.script(openai_ok())
    await OPENAI.handler(server, max_output_tokens=77, token_limit_param="max_tokens")(REQUEST)
    await OPENAI.handler(server, max_output_tokens=None)(REQUEST)
    first, second = (r.body for r in server.requests)
    assert first["max_tokens"] == 77
    assert "max_completion_tokens" not in first
    assert "max_tokens" not in second
    assert "max_completion_tokens" not in second


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_given_client_is_used_with_its_retries_off(
    provider: Provider, server: FakeProvider
) -> None:
    if provider.name == "openai":
        client: Any = openai_sdk.AsyncOpenAI(
            base_url=server.url + "/v1", api_key="client-key", max_retries=5
        )
    else:
        client = anthropic_sdk.AsyncAnthropic(base_url=server.url, api_key="client-key")
    server.script(provider.error(429, "slow down", "rate_limit_error"), provider.ok("ok"))
    handler = provider.make("m", client=client, max_retries=1, **FAST)
    try:
        assert await handler(REQUEST) == "ok"
        assert len(server.requests) == 2  # one retry of ours, none of the SDK's
        server.script(provider.error(429, "slow down", "rate_limit_error"))
        with pytest.raises(HandlerError):
            await handler(REQUEST)
        assert len(server.requests) == 4
        headers = server.requests[0].headers
        assert "client-key" in headers.get("x-api-key", headers.get("authorization", ""))
        assert not client.is_closed()  # the caller's client stays open
    finally:
        await client.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_handler_works_across_event_loops(provider: Provider, server: FakeProvider) -> None:
    # Each call opens its own client, so a handler outlives the loop that first ran it.
    server.script(provider.ok("again"))
    handler = provider.handler(server)
    for backend in ("asyncio", "trio", "asyncio"):
        assert anyio.run(handler, REQUEST, backend=backend) == "again"
    assert len(server.requests) == 3


# --- construction -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "factory", "hint"),
    [
        pytest.param("openai", openai_compatible, "pip install 'chaincast[openai]'", id="openai"),
        pytest.param("anthropic", anthropic, "pip install 'chaincast[anthropic]'", id="anthropic"),
    ],
)
def test_missing_sdk_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, module: str, factory: Callable[..., Any], hint: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=hint.replace("[", r"\[").replace("]", r"\]")):
        factory("m")


@pytest.mark.parametrize(
    ("factory", "options", "message"),
    [
        pytest.param(openai_compatible, {"model": ""}, "model", id="openai-model"),
        pytest.param(openai_compatible, {"timeout": 0}, "timeout", id="openai-timeout"),
        pytest.param(openai_compatible, {"max_retries": -1}, "max_retries", id="openai-retries"),
        pytest.param(
            openai_compatible, {"max_output_tokens": 0}, "max_output_tokens", id="openai-tokens"
        ),
        pytest.param(anthropic, {"model": ""}, "model", id="anthropic-model"),
        pytest.param(anthropic, {"timeout": -1.0}, "timeout", id="anthropic-timeout"),
        pytest.param(anthropic, {"max_tokens": 0}, "max_tokens", id="anthropic-tokens"),
        pytest.param(anthropic, {"backoff_base": -1}, "backoff_base", id="anthropic-backoff"),
    ],
)
def test_bad_options(factory: Callable[..., Any], options: dict[str, Any], message: str) -> None:
    options = {"model": "m", **options}
    with pytest.raises(ValueError, match=message):
        factory(options.pop("model"), **options)


def test_resolve_handler() -> None:
    assert callable(resolve_handler("openai:gpt-4o-mini"))
    assert callable(resolve_handler("anthropic:claude-3-5-haiku-latest"))
    assert callable(resolve_handler("openai:llama3:8b"))  # colons in the model name
    assert callable(resolve_handler(" Extractive "))


@pytest.mark.parametrize(
    "spec", ["", "bogus", "openai", "openai:", "anthropic: ", "extractive:0", "extractive:x"]
)
def test_resolve_handler_rejects(spec: str) -> None:
    with pytest.raises(ValueError, match="handler"):
        resolve_handler(spec)


# --- the retry policy ---------------------------------------------------------------


def test_backoff_grows_exponentially_with_jitter() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=10.0, jitter=0.5)
    rng = random.Random(7)
    for retry, full in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (60, 10.0)]:
        delay = policy.delay(retry, None, rng)
        assert full * 0.5 <= delay <= full
    no_jitter = RetryPolicy(backoff_base=1.0, backoff_max=10.0, jitter=0)
    assert no_jitter.delay(3, None, rng) == 4.0


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    policy = RetryPolicy(backoff_base=0.1, backoff_max=5.0, jitter=0)
    rng = random.Random(0)
    assert policy.delay(1, 2.0, rng) == 2.0
    assert policy.delay(1, 60.0, rng) == 5.0
    assert policy.delay(1, 0.0, rng) == 0.1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_after_header_is_read(provider: Provider, server: FakeProvider) -> None:
    limited = provider.error(429, "slow down", "rate_limit_error")
    limited.headers["retry-after-ms"] = "200"
    server.script(limited, provider.ok())
    started = time.monotonic()
    await provider.handler(server, backoff_base=0.0, backoff_max=1.0)(REQUEST)
    assert time.monotonic() - started >= 0.19
    assert len(server.requests) == 2
