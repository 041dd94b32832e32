"""A redis-py client usable from asyncio and trio alike.

On asyncio it is redis-py's asyncio client (one per event loop: its connections belong
to the loop that made them). Other backends (trio) get the synchronous client run in
anyio's worker threads. Both need the optional ``redis`` extra.
"""

from __future__ import annotations

import asyncio
import weakref
from functools import partial
from typing import Any

import anyio.to_thread

from cast.chainio import install_hint
from csum.stores._protocol import StoreError

__all__ = ["DEFAULT_SOCKET_TIMEOUT", "RedisBacked", "RedisConnection"]

DEFAULT_SOCKET_TIMEOUT = 1.0
"""Seconds to connect or wait for a reply: a dead server fails fast, the handler runs."""


def _on_asyncio() -> bool:
    """Whether the caller runs in an asyncio event loop (else: trio, or no loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _import_redis() -> Any:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StoreError(
            f"the Redis store needs the redis client: {install_hint('redis')}"
        ) from exc
    return redis


class RedisConnection:
    """Runs Redis commands for the current event loop; ``call`` never blocks the loop."""

    def __init__(self, url: str, *, socket_timeout: float = DEFAULT_SOCKET_TIMEOUT) -> None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"not a Redis URL (redis://, rediss:// or unix://): {url!r}")
        self.url = url
        self.socket_timeout = socket_timeout
        self._redis = _import_redis()
        self._async_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._sync_client: Any = None

    def _options(self) -> dict[str, Any]:
        return {
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.socket_timeout,
            "retry_on_timeout": False,
        }

    def _async_client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            client = self._redis.asyncio.Redis.from_url(self.url, **self._options())
            self._async_clients[loop] = client
        return client

    async def call(self, command: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``client.<command>(*args, **kwargs)``; errors come back as they are."""
        if _on_asyncio():
            return await getattr(self._async_client(), command)(*args, **kwargs)
        if self._sync_client is None:
            self._sync_client = self._redis.Redis.from_url(self.url, **self._options())
        method = getattr(self._sync_client, command)
        return await anyio.to_thread.run_sync(partial(method, *args, **kwargs))

    async def aclose(self) -> None:
        """Close the current loop's client (and the threaded one)."""
        if _on_asyncio():
            client = self._async_clients.pop(asyncio.get_running_loop(), None)
            if client is not None:
                await client.aclose()
        if self._sync_client is not None:
            client, self._sync_client = self._sync_client, None
            await anyio.to_thread.run_sync(client.close)


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
        self.name = url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.connection.url!r}, prefix={self.prefix!r})"

    async def aclose(self) -> None:
        """Close this event loop's connections."""
        await self.connection.aclose()
