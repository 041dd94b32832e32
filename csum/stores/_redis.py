"""A summary store on a Redis server, shared by a fleet of workers."""

from __future__ import annotations

from csum.stores._redis_client import RedisBacked

__all__ = ["RedisStore"]

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
"""Delete the lock only if this worker still holds it (it may have expired and moved on)."""


class RedisStore(RedisBacked):
    """Summary entries on the Redis server at ``url`` under ``prefix``.

    TTLs are Redis expiries; the lock is ``SET key token NX PX ttl``, released by a
    compare-and-delete script, so a crashed worker's lock simply expires.
    """

    default_prefix = "csum:cache:"

    async def get(self, key: str) -> bytes | None:
        value = await self.connection.call("get", self.prefix + key)
        return value if isinstance(value, bytes) else None

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        px = None if ttl is None else max(1, int(ttl * 1000))
        await self.connection.call("set", self.prefix + key, value, px=px)

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        done = await self.connection.call(
            "set", f"{self.prefix}lock:{key}", token, nx=True, px=max(1, int(ttl * 1000))
        )
        return bool(done)

    async def release(self, key: str, token: str) -> None:
        await self.connection.call("eval", _RELEASE, 1, f"{self.prefix}lock:{key}", token)
