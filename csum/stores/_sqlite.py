"""A summary store in one SQLite file, safe for several processes on one machine."""

from __future__ import annotations

import sqlite3
import time
from functools import partial
from pathlib import Path

from csum.stores._sqlite_db import DEFAULT_BUSY_TIMEOUT, SQLiteDatabase, write

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS csum_summaries (
    key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS csum_locks (
    key TEXT PRIMARY KEY, token TEXT NOT NULL, expires REAL NOT NULL
) WITHOUT ROWID;
"""

PURGE_EVERY = 256
"""Expired entries are deleted once every this many writes (reads skip them anyway)."""


class SQLiteStore:
    """Summary entries in the SQLite file ``path`` (created when missing).

    WAL mode and a busy timeout let several processes read and write the same file; the
    lock rows give them single flight. Expiry times are wall-clock (``time.time()``),
    since several processes compare them.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.database = SQLiteDatabase(path, _SCHEMA, busy_timeout=busy_timeout)
        self.name = f"sqlite:{self.database.path}"
        self._writes = 0

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.database.path)!r})"

    async def get(self, key: str) -> bytes | None:
        return await self.database.run(partial(_get, key=key, now=time.time()))

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        now = time.time()
        self._writes += 1
        purge = self._writes % PURGE_EVERY == 0
        await self.database.run(
            partial(
                _set,
                key=key,
                value=value,
                expires=None if ttl is None else now + ttl,
                purge_before=now if purge else None,
            )
        )

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        now = time.time()
        return await self.database.run(
            partial(_acquire, key=key, token=token, now=now, expires=now + ttl)
        )

    async def release(self, key: str, token: str) -> None:
        await self.database.run(partial(_release, key=key, token=token))

    async def aclose(self) -> None:
        await self.database.aclose()


def _get(connection: sqlite3.Connection, *, key: str, now: float) -> bytes | None:
    row = connection.execute(
        "SELECT value FROM csum_summaries WHERE key = ? AND (expires IS NULL OR expires > ?)",
        (key, now),
    ).fetchone()
    if row is None:
        return None
    value = row[0]
    return bytes(value) if isinstance(value, bytes | memoryview) else None


def _set(
    connection: sqlite3.Connection,
    *,
    key: str,
    value: bytes,
    expires: float | None,
    purge_before: float | None,
) -> None:
    def statements() -> None:
        connection.execute(
            "INSERT OR REPLACE INTO csum_summaries (key, value, expires) VALUES (?, ?, ?)",
            (key, value, expires),
        )
        if purge_before is not None:
            connection.execute(
                "DELETE FROM csum_summaries WHERE expires IS NOT NULL AND expires <= ?",
                (purge_before,),
            )
            connection.execute("DELETE FROM csum_locks WHERE expires <= ?", (purge_before,))

    write(connection, statements)


def _acquire(
    connection: sqlite3.Connection, *, key: str, token: str, now: float, expires: float
) -> bool:
    def statements() -> bool:
        cursor = connection.execute(
            "INSERT INTO csum_locks (key, token, expires) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires = excluded.expires "
            "WHERE csum_locks.expires <= ?",
            (key, token, expires, now),
        )
        return cursor.rowcount == 1

    return write(connection, statements)


def _release(connection: sqlite3.Connection, *, key: str, token: str) -> None:
    connection.execute("DELETE FROM csum_locks WHERE key = ? AND token = ?", (key, token))
