"""Stores for the summary cache and the history archive, behind small async protocols.

``MemoryStore`` (the default: one process), ``SQLiteStore`` (a file, several processes
on one machine), ``RedisStore`` (a server, a fleet of workers; the ``redis`` extra).
:func:`open_store` picks one from a location string, as the CLI's ``--cache`` does.
"""

from __future__ import annotations

from pathlib import Path

from csum.stores._memory import MemoryStore
from csum.stores._protocol import StoreError, SummaryStore
from csum.stores._redis import RedisStore
from csum.stores._sqlite import SQLiteStore

__all__ = [
    "MemoryStore",
    "RedisStore",
    "SQLiteStore",
    "StoreError",
    "SummaryStore",
    "is_redis_url",
    "open_store",
]


def is_redis_url(location: str) -> bool:
    """Whether ``location`` names a Redis server rather than a file."""
    return location.startswith(("redis://", "rediss://", "unix://"))


def open_store(location: str | Path) -> SummaryStore:
    """The store at ``location``: ``memory``, a ``redis://`` URL, or a SQLite file path."""
    if isinstance(location, Path):
        return SQLiteStore(location)
    if not isinstance(location, str) or not location:
        raise ValueError(f"a store location must be a non-empty string, not {location!r}")
    if location == "memory":
        return MemoryStore()
    if is_redis_url(location):
        return RedisStore(location)
    return SQLiteStore(location)
