"""A history-archive store on a Redis server, shared by a fleet of workers."""

from __future__ import annotations

from collections.abc import Sequence

from csum.store_events import search_text_of_json
from csum.stores._archive_protocol import ArchiveRecord
from csum.stores._redis_client import DEFAULT_SOCKET_TIMEOUT, RedisBacked

__all__ = ["RedisArchiveStore"]

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


class RedisArchiveStore(RedisBacked):
    """Archived messages on the Redis server at ``url``: per session, a hash of messages
    (reference -> JSON), a hash of batches (reference -> message references) and the
    list of message references in archiving order.

    Search reads the session's messages in order and matches the text in this process:
    an archive of one session stays small next to what Redis scans per second.
    ``ttl`` (seconds, None: never) expires a session's keys that long after its last
    write.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str | None = None,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        ttl: float | None = None,
    ) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be positive seconds or None, got {ttl!r}")
        super().__init__(url, prefix=prefix, socket_timeout=socket_timeout)
        self.ttl = ttl

    default_prefix = "csum:archive:"

    def _keys(self, session: str) -> tuple[str, str, str]:
        base = f"{self.prefix}{session}:"
        return base + "messages", base + "batches", base + "order"

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        # One round trip per batch: each new message is stored once and appended to the
        # session's order; the batch lists them all.
        messages, batches, order = self._keys(session)
        expiry = "0" if self.ttl is None else str(max(1, int(self.ttl * 1000)))
        args: list[str | bytes] = [batch, " ".join(r.reference for r in records), expiry]
        for record in records:
            args += [record.reference, record.body]
        await self.connection.call("eval", _PUT, 3, messages, batches, order, *args)

    async def get(self, session: str, reference: str) -> list[bytes]:
        messages, batches, _ = self._keys(session)
        refs_value = await self.connection.call("hget", batches, reference)
        refs = refs_value.decode().split() if isinstance(refs_value, bytes) else [reference]
        if not refs:
            return []
        bodies = await self.connection.call("hmget", messages, refs)
        return [body for body in bodies if isinstance(body, bytes)]

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        messages, _, order = self._keys(session)
        needle = text.casefold()
        found: list[tuple[str, bytes]] = []
        start = 0
        while len(found) < limit:
            refs = await self.connection.call("lrange", order, start, start + _SCAN_COUNT - 1)
            if not refs:
                break
            start += len(refs)
            bodies = await self.connection.call("hmget", messages, refs)
            for ref, body in zip(refs, bodies, strict=True):
                if isinstance(body, bytes) and needle in search_text_of_json(body).casefold():
                    found.append((ref.decode(), body))
        return found[:limit]

    async def delete_session(self, session: str) -> int:
        keys = self._keys(session)
        count = await self.connection.call("hlen", keys[0])
        await self.connection.call("delete", *keys)
        return int(count)
