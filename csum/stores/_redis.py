"""The Redis stores: the summary cache and the history archive on a server a fleet of
workers shares (the optional ``redis`` extra)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio.to_thread

from cast.chainio import install_hint
from csum.store_events import redact_credentials
from csum.stores._protocol import ArchiveRecord, StoreError, checked_ttl, matching

__all__ = ["DEFAULT_MAX_CONNECTIONS", "RedisArchiveStore", "RedisStore", "is_redis_url"]

DEFAULT_SOCKET_TIMEOUT = 1.0
"""Seconds to connect or wait for a reply: a dead server fails fast, the handler runs."""
DEFAULT_MAX_CONNECTIONS = 16
"""Connections one store keeps to its server at most; calls beyond wait for one (up to
``socket_timeout``)."""


def is_redis_url(location: str) -> bool:
    """Whether ``location`` names a Redis server rather than a file."""
    return location.startswith(("redis://", "rediss://", "unix://"))


class _RedisBacked:
    """Base of the Redis stores: one bounded redis-py pool every loop and thread shares."""

    default_prefix = "csum:"

    def __init__(
        self, url: str, *, prefix: str | None = None, socket_timeout: float = DEFAULT_SOCKET_TIMEOUT
    ) -> None:
        if not is_redis_url(url):
            shown = redact_credentials(url)
            raise ValueError(f"not a Redis URL (redis://, rediss:// or unix://): {shown!r}")
        try:
            import redis
        except ImportError as exc:  # pragma: no cover - depends on the environment
            hint = install_hint("redis")
            raise StoreError(f"the Redis store needs the redis client: {hint}") from exc
        self.url = url
        self.socket_timeout = socket_timeout
        self.prefix = self.default_prefix if prefix is None else prefix
        self.name = redact_credentials(url)
        """The URL without its password (events, logs and ``repr`` show this)."""
        self._redis: Any = redis
        self._client: Any = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, prefix={self.prefix!r})"

    def _sync_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                pool = self._redis.BlockingConnectionPool.from_url(
                    self.url,
                    max_connections=DEFAULT_MAX_CONNECTIONS,
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
            await anyio.to_thread.run_sync(client.close)
            await anyio.to_thread.run_sync(client.connection_pool.disconnect)


def _milliseconds(seconds: float) -> int:
    return max(1, int(seconds * 1000))


_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
"""Delete the lock only if this worker still holds it (it may have expired and moved on)."""


class RedisStore(_RedisBacked):
    """Summary entries on the Redis server at ``url`` under ``prefix``.

    TTLs are Redis expiries; the lock is ``SET key token NX PX ttl``, released by a
    compare-and-delete script, so a crashed worker's lock simply expires.
    """

    default_prefix = "csum:cache:"

    async def get(self, key: str) -> bytes | None:
        value = await self.call("get", self.prefix + key)
        return value if isinstance(value, bytes) else None

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        px = None if ttl is None else _milliseconds(ttl)
        await self.call("set", self.prefix + key, value, px=px)

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        lock = f"{self.prefix}lock:{key}"
        return bool(await self.call("set", lock, token, nx=True, px=_milliseconds(ttl)))

    async def release(self, key: str, token: str) -> None:
        await self.call("eval", _RELEASE, 1, f"{self.prefix}lock:{key}", token)


_SCAN_COUNT = 256
_PUT = """
for i = 4, #ARGV, 2 do
  if redis.call('hsetnx', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('rpush', KEYS[3], ARGV[i])
  end
end
redis.call('hset', KEYS[2], ARGV[1], ARGV[2])
if tonumber(ARGV[3]) > 0 then
  for k = 1, 3 do redis.call('pexpire', KEYS[k], ARGV[3]) end
end
return 1
"""
"""One round trip per batch: each new message stored once and appended to the order."""


class RedisArchiveStore(_RedisBacked):
    """Archived messages on the Redis server at ``url``: per session, a hash of messages
    (reference -> JSON), a hash of batches (reference -> message references) and the
    list of message references in archiving order. Search reads the session's messages
    in order and matches the text in this process (one session's archive is small next
    to what Redis scans per second). ``ttl`` (seconds, None: never) expires a session's
    keys that long after its last write.
    """

    default_prefix = "csum:archive:"

    def __init__(
        self,
        url: str,
        *,
        prefix: str | None = None,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        ttl: float | None = None,
    ) -> None:
        self.ttl = checked_ttl(ttl)
        super().__init__(url, prefix=prefix, socket_timeout=socket_timeout)

    def _keys(self, session: str) -> tuple[str, str, str]:
        base = f"{self.prefix}{session}:"
        return base + "messages", base + "batches", base + "order"

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        expiry = "0" if self.ttl is None else str(_milliseconds(self.ttl))
        refs = " ".join(r.reference for r in records)
        fields = [field for r in records for field in (r.reference, r.body)]
        await self.call("eval", _PUT, 3, *self._keys(session), batch, refs, expiry, *fields)

    async def get(self, session: str, reference: str) -> list[bytes]:
        messages, batches, _ = self._keys(session)
        refs_value = await self.call("hget", batches, reference)
        refs = refs_value.decode().split() if isinstance(refs_value, bytes) else [reference]
        if not refs:
            return []
        bodies = await self.call("hmget", messages, refs)
        return [body for body in bodies if isinstance(body, bytes)]

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        messages, _, order = self._keys(session)
        found: list[tuple[str, bytes]] = []
        start = 0
        while len(found) < limit:
            refs = await self.call("lrange", order, start, start + _SCAN_COUNT - 1)
            if not refs:
                break
            start += len(refs)
            bodies = await self.call("hmget", messages, refs)
            rows = zip([ref.decode() for ref in refs], bodies, strict=True)
            found += matching(rows, text, limit - len(found))
        return found

    async def delete_session(self, session: str) -> int:
        keys = self._keys(session)
        count = await self.call("hlen", keys[0])
        await self.call("delete", *keys)
        return int(count)
