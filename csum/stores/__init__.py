"""Stores for the summary cache and the history archive, behind small async protocols.

``MemoryStore`` (the default: one process), ``SQLiteStore`` (a file, several processes
on one machine), ``RedisStore`` (a server, a fleet of workers; the ``redis`` extra).
:func:`open_store` picks one from a location string, as the CLI's ``--cache`` does;
:func:`open_archive` picks the history archive's.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from pathlib import Path

from csum._checks import check_count
from csum.stores._protocol import ArchiveStore, StoreError, SummaryStore
from csum.stores._redis import RedisArchiveStore, RedisStore, is_redis_url
from csum.stores._sqlite import SQLiteArchiveStore, SQLiteStore

__all__ = [
    "ArchiveStore",
    "MemoryStore",
    "RedisArchiveStore",
    "RedisStore",
    "SQLiteArchiveStore",
    "SQLiteStore",
    "StoreError",
    "SummaryStore",
    "is_redis_url",
    "open_archive",
    "open_store",
]


def open_store(location: str | Path) -> SummaryStore:
    """The store at ``location``: ``memory``, a ``redis://`` URL, or a SQLite file path."""
    if not isinstance(location, str | Path) or location == "":
        raise ValueError(f"a store location must be a non-empty string, not {location!r}")
    if location == "memory":
        return MemoryStore()
    if isinstance(location, str) and is_redis_url(location):
        return RedisStore(location)
    return SQLiteStore(location)


def open_archive(location: str | Path, *, ttl: float | None = None) -> ArchiveStore:
    """The history archive's store at ``location``: a ``redis://`` URL or a SQLite file path."""
    if isinstance(location, str) and is_redis_url(location):
        return RedisArchiveStore(location, ttl=ttl)
    return SQLiteArchiveStore(location, ttl=ttl)


class MemoryStore:
    """An LRU of at most ``max_entries`` values in this process (no I/O, never fails),
    and of at most ``max_bytes`` bytes of keys and values when given (the least
    recently used go first; a value larger than that alone is not kept). Its lock is
    always granted: within a process the cache's single flight makes concurrent requests
    of one key wait for the first.
    """

    name = "memory"

    def __init__(self, max_entries: int = 4096, *, max_bytes: int | None = None) -> None:
        check_count("max_entries", max_entries, type_error=False)
        check_count("max_bytes", max_bytes, none=True, type_error=False)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.size_bytes = 0
        """Bytes of the keys and values held now."""
        self._entries: OrderedDict[str, tuple[bytes, float | None]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (
            f"MemoryStore(max_entries={self.max_entries}, max_bytes={self.max_bytes}, "
            f"entries={len(self._entries)})"
        )

    async def get(self, key: str) -> bytes | None:
        value, expires = self._entries.get(key, (None, None))
        if expires is not None and expires <= time.monotonic():
            self._drop(key)
            return None
        if value is not None:
            self._entries.move_to_end(key)
        return value

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        expires = None if ttl is None else time.monotonic() + ttl
        self._drop(key)
        size, limit = len(key) + len(value), self.max_bytes or math.inf
        if size > limit:
            return
        self._entries[key] = (value, expires)
        self.size_bytes += size
        while len(self._entries) > self.max_entries or self.size_bytes > limit:
            self._drop(next(iter(self._entries)))  # the least recently used

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.size_bytes -= len(key) + len(entry[0])

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        return True

    async def release(self, key: str, token: str) -> None:
        pass

    async def aclose(self) -> None:
        pass
