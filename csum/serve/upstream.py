"""The upstream client: one pooled httpx ``AsyncClient`` (HTTP/1.1 keep-alive) that
forwards a request and hands back the response unread, for relaying as it arrives."""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from csum.serve.config import CONVERSATION_HEADER, GATEWAY_KEY_HEADER, ServeConfig

__all__ = [
    "HOP_BY_HOP",
    "POOL_WAIT",
    "Upstream",
    "UpstreamBusyError",
    "request_headers",
    "response_headers",
]

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
            limits=httpx.Limits(
                max_connections=config.max_connections,
                max_keepalive_connections=config.max_connections,
            ),
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
