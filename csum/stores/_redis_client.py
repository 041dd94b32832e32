"""A redis-py client usable from asyncio and trio alike, from any thread.

One synchronous redis-py client (its connection pool is thread-safe) runs the commands
in anyio's worker threads, whatever the event loop. So every loop and thread shares
one bounded pool of connections: a script calling ``compact_sync`` a hundred times
(a new event loop each time) reuses the same few connections instead of leaving one
client per loop open. Needs the optional ``redis`` extra.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import anyio.to_thread

from cast.chainio import install_hint
from csum.store_events import redact_credentials
from csum.stores._protocol import StoreError

__all__ = ["DEFAULT_MAX_CONNECTIONS", "DEFAULT_SOCKET_TIMEOUT", "RedisBacked", "RedisConnection"]

DEFAULT_SOCKET_TIMEOUT = 1.0
"""Seconds to connect or wait for a reply: a dead server fails fast, the handler runs."""


def _import_redis() -> Any:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StoreError(
            f"the Redis store needs the redis client: {install_hint('redis')}"
        ) from exc
    return redis


DEFAULT_MAX_CONNECTIONS = 16
"""Connections one store keeps to its server at most; calls beyond wait for one (up to
``socket_timeout``)."""


class RedisConnection:
    """Runs Redis commands in worker threads on one shared, bounded connection pool;
    ``call`` never blocks the event loop."""

    def __init__(
        self,
        url: str,
        *,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            shown = redact_credentials(url)
            raise ValueError(f"not a Redis URL (redis://, rediss:// or unix://): {shown!r}")
        self.url = url
        self.socket_timeout = socket_timeout
        self.max_connections = max_connections
        self._redis = _import_redis()
        self._client: Any = None
        self._client_lock = threading.Lock()

    def _sync_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                pool = self._redis.BlockingConnectionPool.from_url(
                    self.url,
                    max_connections=self.max_connections,
                    timeout=self.socket_timeout,
                    socket_timeout=self.socket_timeout,
                    socket_connect_timeout=self.socket_timeout,
                    retry_on_timeout=False,
                )
                self._client = self._redis.Redis(connection_pool=pool)
            return self._client

    async def call(self, command: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``client.<command>(*args, **kwargs)``; errors come back as they are."""
        method = getattr(self._sync_client(), command)
        return await anyio.to_thread.run_sync(partial(method, *args, **kwargs))

    async def aclose(self) -> None:
        """Close every connection of the pool (the next call opens new ones)."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            await anyio.to_thread.run_sync(_close, client)


def _close(client: Any) -> None:
    client.close()
    client.connection_pool.disconnect()


class RedisBacked:
    """Base of the Redis stores: a connection to ``url`` and a key ``prefix``."""

    default_prefix = "csum:"

    def __init__(
        self,
        url: str,
        *,
        prefix: str | None = None,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
    ) -> None:
        self.connection = RedisConnection(url, socket_timeout=socket_timeout)
        self.prefix = self.default_prefix if prefix is None else prefix
        self.name = redact_credentials(url)
        """The URL without its password (events, logs and ``repr`` show this)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, prefix={self.prefix!r})"

    async def aclose(self) -> None:
        """Close this event loop's connections."""
        await self.connection.aclose()
