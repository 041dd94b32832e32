"""The gateway as an ASGI app (Starlette, on asyncio and trio): ``POST`` to a compacted
endpoint goes through the :class:`~csum.serve.compaction.Rewriter` first, everything
else is forwarded untouched; answers are relayed as they arrive."""

from __future__ import annotations

import hmac
import json
import logging
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import anyio
import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from csum.serve.apis import Api, api_for
from csum.serve.body import RefusedError, check_items, parse, refusal
from csum.serve.compaction import Outcome, OutcomeKind, Rewriter
from csum.serve.config import CONVERSATION_HEADER, GATEWAY_KEY_HEADER, RETRY_AFTER, ServeConfig
from csum.serve.connections import Upstream, UpstreamBusyError, request_headers, response_headers
from csum.serve.telemetry import Metrics, annotate, outcome_attributes, span, tracer
from csum.serve.tenant import TenantKeys, client_key
from csum.serve.translate import TranslationError
from csum.serve.translate.pairs import (
    Translation,
    count_tokens,
    translated_headers,
    translation_for,
)
from csum.serve.translate.responses_tools import DROPPED_TOOLS_HEADER, chat_tools
from csum.stores import ArchiveStore, MemoryStore, SummaryStore, open_archive, open_store

__all__ = [
    "COUNT_TOKENS_PATH",
    "DECODED_ENCODINGS",
    "MAX_TRANSLATED_ANSWER",
    "Gateway",
    "RequestGuard",
    "create_app",
]

_log = logging.getLogger("csum.serve")

COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
DECODED_ENCODINGS = ("gzip", "x-gzip", "deflate")
"""``Content-Encoding`` values of request bodies the gateway decodes to measure them."""
MAX_TRANSLATED_ANSWER = 64 << 20
"""Largest non-streamed answer the gateway translates (502 beyond)."""
_CLOSE = {"connection": "close"}


def _error(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """An error of the gateway's own, in the shape both providers use."""
    return JSONResponse(refusal("anthropic", status, message, kind), status, headers)


class Gateway:
    """The state of one running gateway: config, upstream client, store, metrics."""

    def __init__(self, config: ServeConfig, store: SummaryStore | None = None) -> None:
        self.config = config
        self.metrics = Metrics()
        if store is None and config.store == "memory":
            store = MemoryStore(max_bytes=config.memory_store_bytes)
        self.store = open_store(config.store) if store is None else store
        self.archive_store: ArchiveStore | None = None
        if config.archive is not None:
            self.archive_store = open_archive(config.archive, ttl=config.archive_ttl)
        self.rewriter = Rewriter(config, self.store, self.archive_store)
        self.upstream = Upstream(config)
        self.tenants = TenantKeys(config.tenant_secret)
        self.tracer = tracer()

    async def aclose(self) -> None:
        """Close the upstream connections and the stores."""
        try:
            await self.upstream.aclose()
        finally:
            try:
                await self.store.aclose()
            finally:
                if self.archive_store is not None:
                    await self.archive_store.aclose()

    def unauthorized(self, request: Request) -> Response | None:
        """401 when the request lacks the gateway key (None when it has it, or none is set)."""
        key = self.config.gateway_key
        given = request.headers.get(GATEWAY_KEY_HEADER, "")
        if key is None or hmac.compare_digest(given.encode(), key.encode()):
            return None
        return _error(401, "authentication_error", f"missing or wrong {GATEWAY_KEY_HEADER}")

    async def forward(self, request: Request) -> Response:
        """Every proxied request: read, compact when it is one of the APIs, relay."""
        with span(self.tracer, "csum.serve.request", {"http.request.method": request.method}):
            started = time.perf_counter()
            refused = self.unauthorized(request)
            if refused is not None:
                return refused
            body = await self._request_body(request)
            if isinstance(body, Response):
                return body
            path, posted = request.url.path, request.method == "POST"
            api = api_for(path) if posted else None
            counting = posted and path.rstrip("/") == COUNT_TOKENS_PATH
            decoded = self._decoded(request, body) if api is not None or counting else body
            if isinstance(decoded, Response):
                return decoded
            if self.config.upstream_api == "openai" and counting:
                return self._count_tokens(decoded)
            upstream_api = self.config.upstream_api
            translation = None if api is None else translation_for(api.name, upstream_api)
            sending = await self._outgoing(request, api, (body, decoded), translation)
            if isinstance(sending, Response):
                return sending
            return await self._relay(request, started, body, sending)

    async def _request_body(self, request: Request) -> bytes | Response:
        """The body, or 413 past ``max_body_bytes`` (not all read), 408 past ``body_timeout``."""
        limit, timeout = self.config.max_body_bytes, self.config.body_timeout
        declared = request.headers.get("content-length")
        data = None
        if declared is None or not declared.isdigit() or int(declared) <= limit:
            try:
                with anyio.fail_after(timeout):
                    data = await _read_at_most(request.stream(), limit)
            except ClientDisconnect:
                return Response(status_code=499)
            except TimeoutError:
                late = f"request body not received within {timeout:g} s"
                return _error(408, "request_timeout", late, _CLOSE)
        if data is None:
            return _error(413, "request_too_large", f"request body over {limit} bytes")
        return data

    def _decoded(self, request: Request, body: bytes) -> bytes | Response:
        """A body the gateway reads, its ``Content-Encoding`` undone."""
        encoding = request.headers.get("content-encoding", "").strip().lower()
        if encoding not in DECODED_ENCODINGS:
            return body
        limit = self.config.max_body_bytes
        decoder = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib, automatically
        try:
            out = decoder.decompress(body, limit + 1)  # refused before it is all decoded
            if len(out) <= limit and not decoder.unconsumed_tail:
                return out + decoder.flush()
        except zlib.error as exc:
            return _error(400, "invalid_request_error", f"cannot decode the body: {exc}")
        return _error(413, "request_too_large", f"decoded request body over {limit} bytes")

    async def _outgoing(
        self,
        request: Request,
        api: Api | None,
        bodies: tuple[bytes, bytes],
        translation: Translation | None,
    ) -> _Sending | Response:
        """What goes upstream: the body (``bodies``: as it came, and decoded) compacted
        on the client's own chain, then translated when the upstream speaks another API."""
        came, body = bodies
        raw = request.scope.get("raw_path") or request.url.path.encode()
        # forwarded as the client wrote it (percent-escapes kept), unless translated
        target = raw.decode("latin-1").split("?", 1)[0]
        endpoint = "other" if api is None else api.name
        sending = _Sending(endpoint, target, request.url.path, came)
        if api is None:
            return sending
        outcome = await self._compacted(request, api, body, translation)
        sending.outcome = outcome
        if outcome.kind is OutcomeKind.REFUSED:
            return self._refused(api.name, api.provider, outcome.status, outcome.detail)
        if outcome.body is not None:
            sending.body = outcome.body
        if translation is None:
            return sending
        try:
            sending.body, sending.asked = self._translated(translation, body, outcome)
        except RefusedError as exc:
            return self._refused(api.name, translation.client.provider, exc.status, exc.message)
        except ValueError as exc:  # a TranslationError, or the codec's on a bad history
            return _error(400, "invalid_request_error", f"cannot translate: {exc}")
        sending.translation = translation
        sending.path = sending.target = translation.target.path
        return sending

    async def _compacted(
        self, request: Request, api: Api, body: bytes, translation: Translation | None
    ) -> Outcome:
        """The Rewriter's outcome for ``body`` (in a span), counted."""
        tenant = self.tenants.tenant_of(request.headers, request.url.query)
        upstream = None if translation is None else translation.target
        provider = (upstream or api).provider
        asks_upstream = self.config.summarizer == "upstream"
        api_key = client_key(request.headers, provider) if asks_upstream else None
        conversation = request.headers.get(CONVERSATION_HEADER)
        with span(self.tracer, "csum.serve.compaction", {"csum.endpoint": api.name}):
            outcome = await self.rewriter.rewrite(
                api, body, conversation, api_key, tenant, upstream=upstream
            )
            annotate(self.tracer, outcome_attributes(outcome))
        self.metrics.count(api.name, outcome)
        if outcome.kind is OutcomeKind.PROVIDER_STATE:
            _log.info(
                "history held by the provider, forwarded uncompacted",
                extra={"endpoint": api.name, "outcome": str(outcome.kind)},
            )
        return outcome

    async def _relay(
        self, request: Request, started: float, request_body: bytes, sending: _Sending
    ) -> Response:
        """Send ``sending`` upstream and relay its answer (translated back when it was)."""
        endpoint = sending.endpoint
        headers = request_headers(request.headers.items())
        if sending.body is not request_body:  # rewritten: sent as plain JSON
            headers = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
        translation = sending.translation
        if translation is not None:
            headers = translated_headers(headers, translation.target)
        sent = time.perf_counter()
        self.metrics.added_seconds.labels(endpoint).observe(sent - started)
        try:
            # a translated request goes without the client's query (Anthropic's ?beta=true)
            query = "" if translation is not None else request.url.query
            upstream = await self.upstream.send(
                request.method, sending.target, query, headers, sending.body
            )
        except (UpstreamBusyError, httpx.PoolTimeout):
            return self._busy(endpoint)
        except httpx.HTTPError as exc:
            return self._unreachable(endpoint, exc)
        self._answered(request, sending, upstream.status_code, (started, sent))
        if translation is not None and upstream.status_code == 200:
            return await self._translated_response(upstream, translation, sending.asked)
        return StreamingResponse(
            upstream.aiter_raw(),
            status_code=upstream.status_code,
            headers=response_headers(upstream.headers.multi_items()),
            background=BackgroundTask(self.upstream.close, upstream),
        )

    def _answered(
        self, request: Request, sending: _Sending, status: int, times: tuple[float, float]
    ) -> None:
        """Metrics, span attributes and the log line of an upstream answer."""
        (started, sent), endpoint = times, sending.endpoint
        self.metrics.upstream_seconds.labels(endpoint).observe(time.perf_counter() - sent)
        self.metrics.requests.labels(endpoint, str(status)).inc()
        annotate(self.tracer, {"csum.endpoint": endpoint, "http.response.status_code": status})
        outcome = sending.outcome
        _log.info(
            "%s %s -> %d",
            request.method,
            sending.path,
            status,
            extra={
                "endpoint": endpoint,
                "status": status,
                "outcome": None if outcome is None else str(outcome.kind),
                "added_ms": round((sent - started) * 1000, 3),
            },
        )

    def _translated(
        self, translation: Translation, body: bytes, outcome: Outcome
    ) -> tuple[bytes, dict[str, Any]]:
        """(the upstream's body, the client's request): the request and its history as
        the Rewriter read them, or ``body`` parsed here when it did not."""
        payload, chain = outcome.payload, outcome.chain
        if payload is None:
            try:
                payload = parse(body, self.config.max_depth, self.config.max_items)
            except ValueError as exc:
                raise TranslationError(f"the body is not JSON: {exc}") from exc
            if not isinstance(payload, dict):
                raise TranslationError("the body is not a JSON object")
        check_items(payload, translation.client.list_key, self.config.max_items)
        dropped = _dropped_header(translation, payload)
        if dropped and self.config.refuse_builtin_tools:
            names = dropped[DROPPED_TOOLS_HEADER]
            raise TranslationError(f"tools: built-in tools the upstream cannot run: {names}")
        out = translation.request(payload, chain)
        if self.config.upstream_model is not None:
            out["model"] = self.config.upstream_model
        return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode(), payload

    async def _translated_response(
        self, upstream: httpx.Response, translation: Translation, asked: dict[str, Any]
    ) -> Response:
        """The upstream's answer in the client's API, whole or streamed."""
        model = str(asked.get("model", ""))
        provider = translation.client.provider
        if "text/event-stream" not in upstream.headers.get("content-type", ""):
            try:
                data = await _read_at_most(upstream.aiter_bytes(), MAX_TRANSLATED_ANSWER)
            finally:
                await self.upstream.close(upstream)
            translated = _translated_answer(translation, data, model, asked)
            if isinstance(translated, str):
                message = f"the upstream's answer {translated}"
                return JSONResponse(refusal(provider, 502, message, "api_error"), 502)
            return JSONResponse(translated, headers=_dropped_header(translation, asked))
        stream = translation.stream(model, asked)

        async def events() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_bytes():
                    out = stream.feed(chunk)
                    if out:
                        yield out
            except httpx.HTTPError as exc:
                # the upstream cut the stream: the error event the client's SDK raises
                # on (data that is not JSON is one, in every translation)
                cut = f"\n\ndata: the upstream's stream was cut ({type(exc).__name__})\n\n"
                yield stream.feed(cut.encode())
                return
            tail = stream.close()
            if tail:
                yield tail

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", **_dropped_header(translation, asked)},
            background=BackgroundTask(self.upstream.close, upstream),
        )

    def _count_tokens(self, body: bytes) -> Response:
        """``count_tokens`` for an upstream that has none: estimated here."""
        try:
            payload = parse(body, self.config.max_depth, self.config.max_items)
            if isinstance(payload, dict):
                return JSONResponse(count_tokens(payload))
            problem = "the body is not a JSON object"
        except RefusedError as exc:
            return self._refused("messages", "anthropic", exc.status, exc.message)
        except ValueError as exc:
            problem = str(exc)
        return _error(400, "invalid_request_error", f"cannot count tokens: {problem}")

    def _refused(self, endpoint: str, provider: str, status: int, message: str) -> Response:
        """A request over the gateway's decoding bounds, in the client's error shape."""
        self.metrics.requests.labels(endpoint, str(status)).inc()
        _log.warning("request refused: %s", message, extra={"endpoint": endpoint, "status": status})
        return JSONResponse(refusal(provider, status, message), status)

    def _busy(self, endpoint: str) -> Response:
        """503 at once when ``max_connections`` upstream requests are in flight."""
        self.metrics.upstream_errors.labels("busy").inc()
        self.metrics.requests.labels(endpoint, "503").inc()
        _log.warning("upstream requests at their limit", extra={"endpoint": endpoint})
        limit = self.config.max_connections
        busy = f"{limit} upstream requests in flight already"
        return _error(503, "overloaded_error", busy, {"retry-after": str(RETRY_AFTER)})

    def _unreachable(self, endpoint: str, exc: httpx.HTTPError) -> Response:
        timeout = isinstance(exc, httpx.TimeoutException)
        status, kind = (504, "timeout") if timeout else (502, "unreachable")
        self.metrics.upstream_errors.labels(kind).inc()
        self.metrics.requests.labels(endpoint, str(status)).inc()
        _log.warning("upstream %s: %s", kind, type(exc).__name__, extra={"endpoint": endpoint})
        return _error(status, f"upstream_{kind}", f"upstream {kind}: {type(exc).__name__}")


async def _read_at_most(chunks: AsyncIterator[bytes], limit: int) -> bytes | None:
    """All of ``chunks`` joined; None as soon as they pass ``limit`` bytes (read no further)."""
    out: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            return None
        out.append(chunk)
    return b"".join(out)


class RequestGuard:
    """Refuses (400) what a proxy must not pass on: both ``Content-Length`` and
    ``Transfer-Encoding`` (request smuggling; the connection closed), and a path with a
    dot segment, percent-encoded too (it would leave the upstream's path prefix)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope["headers"]}
            raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
            path = unquote(raw.split("?", 1)[0]).replace("\\", "/")
            problem = None
            if b"content-length" in names and b"transfer-encoding" in names:
                problem = "both Content-Length and Transfer-Encoding"
            elif any(part in (".", "..") for part in path.split("/")):
                problem = "a dot segment in the path"
            if problem is not None:
                refused = f"request refused: {problem}"
                await _error(400, "invalid_request_error", refused, _CLOSE)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@dataclass(slots=True)
class _Sending:
    """A request on its way upstream (``asked``: the client's request, when translated)."""

    endpoint: str  # the client's API (or "other"): the metrics' label
    target: str
    path: str
    body: bytes = field(repr=False)
    outcome: Outcome | None = None
    translation: Translation | None = None
    asked: dict[str, Any] = field(default_factory=dict, repr=False)


def _translated_answer(
    translation: Translation, data: bytes | None, model: str, asked: dict[str, Any]
) -> dict[str, Any] | str:
    """The upstream's answer ``data`` (None: too large) in the client's API, or what is wrong."""
    if data is None:
        return f"is over {MAX_TRANSLATED_ANSWER} bytes"
    try:
        answer = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return f"cannot be read: not JSON ({type(exc).__name__})"
    if not isinstance(answer, dict):
        return "cannot be read: not a JSON object"
    try:
        return translation.response(answer, model, asked)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        return f"cannot be read: not an answer of its API ({type(exc).__name__})"


def _dropped_header(translation: Translation, asked: dict[str, Any]) -> dict[str, str]:
    """The header naming the built-in tools a translated Responses request loses, if any."""
    try:
        dropped = chat_tools(asked).dropped if translation.client.name == "responses" else []
    except TranslationError:  # tools it cannot carry: the request is refused
        dropped = []
    return {DROPPED_TOOLS_HEADER: ", ".join(dropped)} if dropped else {}


def create_app(config: ServeConfig, *, store: SummaryStore | None = None) -> Starlette:
    """The gateway app for ``config`` (``store``: an open store, closed with the app)."""
    gateway = Gateway(config, store)

    async def healthz(request: Request) -> Response:
        workers, stuck = gateway.rewriter.pool.state()
        status = "stuck" if stuck else "ok"
        return JSONResponse({"status": status, "workers": workers}, 503 if stuck else 200)

    async def metrics(request: Request) -> Response:
        refused = gateway.unauthorized(request)  # its counters tell what others sent
        return refused or Response(
            gateway.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await gateway.aclose()

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/{path:path}", gateway.forward, methods=methods),
        ],
        lifespan=lifespan,
        middleware=[Middleware(RequestGuard)],
    )
    app.state.gateway = gateway
    return app
