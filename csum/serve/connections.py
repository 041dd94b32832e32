"""The gateway's HTTP connections, both sides. The clients', under uvicorn: :func:`protocol`
adds a header timeout (408, closed) and connection limits, in all and per address (503
with ``Retry-After``, closed). The upstream's: one pooled httpx ``AsyncClient`` (HTTP/1.1
keep-alive) that forwards a request and hands back the response unread, for relaying as
it arrives."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any, ClassVar

import h11
import httpx
from uvicorn.protocols.http.h11_impl import H11Protocol

from csum.serve.body import refusal
from csum.serve.config import CONVERSATION_HEADER, GATEWAY_KEY_HEADER, RETRY_AFTER, ServeConfig

__all__ = [
    "HOP_BY_HOP",
    "POOL_WAIT",
    "Upstream",
    "UpstreamBusyError",
    "protocol",
    "request_headers",
    "response_headers",
]


def protocol(config: ServeConfig) -> type[Any]:
    """uvicorn's h11 protocol with ``config``'s header timeout and client connection limits."""
    limits = {
        "header_timeout": config.header_timeout,
        "max_connections": config.max_client_connections,
        "max_per_client": config.max_connections_per_client,
        "per_client": Counter[str](),
    }
    return type("GatewayProtocol", (_LimitedProtocol,), limits)


class _LimitedProtocol(H11Protocol):
    """uvicorn's h11 protocol with the limits :func:`protocol` sets on its subclass."""

    header_timeout: ClassVar[float]
    max_connections: ClassVar[int]
    max_per_client: ClassVar[int]
    per_client: ClassVar[Counter[str]]
    """Connections open per client address, over every connection of the class."""
    _header_timer: asyncio.TimerHandle | None = None
    _peer = ""
    _over = ""
    """What this connection is one too many of (empty: within the limits)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._peer = self.client[0] if self.client else ""
        self.per_client[self._peer] += 1
        if len(self.connections) > self.max_connections:
            self._over = "connections to the gateway"
        elif self.per_client[self._peer] > self.max_per_client:
            self._over = "connections from this client"
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.per_client[self._peer] -= 1
        if self.per_client[self._peer] <= 0:
            del self.per_client[self._peer]
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._over:  # answered once its request is sent, so it reads the answer
            self._answer(503, "overloaded_error", f"too many {self._over}; retry later")
            return
        waiting = self.conn.their_state is h11.IDLE
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()  # the request line and headers are in
        elif waiting and self._header_timer is None and not self.transport.is_closing():
            self._arm()  # the first bytes of a kept-alive connection's next request

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._over:
            self._answer(503, "overloaded_error", f"too many {self._over}; retry later")
        elif self.conn.their_state is h11.IDLE:
            message = f"request headers not received within {self.header_timeout:g} s"
            self._answer(408, "request_timeout", message)

    def _answer(self, status: int, kind: str, message: str) -> None:
        """A whole HTTP/1.1 error response, then the connection closed (unless closing)."""
        self._disarm()
        if self.transport.is_closing():
            return
        body = json.dumps(refusal("anthropic", status, message, kind)).encode()
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            f"retry-after: {RETRY_AFTER}\r\n"
            "connection: close\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.close()


POOL_WAIT = 1.0
"""Seconds a request may wait for a pooled upstream connection (then 503)."""


class UpstreamBusyError(Exception):
    """``max_connections`` upstream requests are in flight already."""


HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that belong to one connection, never forwarded (RFC 9110, 7.6.1)."""

_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length", GATEWAY_KEY_HEADER, CONVERSATION_HEADER}


def request_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client's headers to send upstream: all but hop-by-hop ones, ``host``,
    ``content-length`` (recomputed) and the gateway's own. API keys pass through."""
    return [(k, v) for k, v in headers if k.lower() not in _NOT_FORWARDED]


def response_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The upstream's headers to send the client: all but hop-by-hop ones."""
    return {k: v for k, v in headers if k.lower() not in HOP_BY_HOP}


class Upstream:
    """Sends requests to the upstream base URL (its path a prefix), at most
    ``max_connections`` in flight (one more raises :class:`UpstreamBusyError`)."""

    def __init__(self, config: ServeConfig) -> None:
        self.base = config.upstream.rstrip("/")
        self.limit = config.max_connections
        self.in_flight: set[httpx.Request] = set()
        """The requests sent and not closed yet."""
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout, pool=POOL_WAIT),
            limits=httpx.Limits(max_connections=self.limit, max_keepalive_connections=self.limit),
            follow_redirects=False,
            trust_env=False,
        )
        # Only what the client sent goes upstream: drop httpx's own defaults.
        for name in ("accept", "accept-encoding", "user-agent"):
            del self.client.headers[name]

    async def send(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> httpx.Response:
        """The upstream's response to the client's ``path`` and raw ``query``, its body
        not read yet (close it with :meth:`close`)."""
        if len(self.in_flight) >= self.limit:
            raise UpstreamBusyError
        url = f"{self.base}{path}?{query}" if query else f"{self.base}{path}"
        request = self.client.build_request(method, url, headers=headers, content=body)
        self.in_flight.add(request)
        try:
            return await self.client.send(request, stream=True)
        except BaseException:
            self.in_flight.discard(request)
            raise

    async def close(self, response: httpx.Response) -> None:
        """Close ``response`` and count its request out of flight."""
        self.in_flight.discard(response.request)
        await response.aclose()

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.client.aclose()
