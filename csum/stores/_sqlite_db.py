"""One SQLite file shared by processes: WAL, a busy timeout, work in a worker thread.

The summary store and the archive store both keep their tables this way: the stdlib
``sqlite3`` module runs in anyio's worker threads (so neither event loop blocks on disk
or on another process's lock), one connection per database object, one call at a time.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from csum.errors import StoreError

__all__ = ["SQLiteDatabase"]

T = TypeVar("T")

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a write waits for another process's lock before failing (``busy_timeout``)."""


class SQLiteDatabase:
    """A lazily opened SQLite file in WAL mode; ``run`` executes work in a worker thread.

    ``schema`` (statements run once per connection, idempotent) creates the tables.
    """

    def __init__(
        self, path: str | Path, schema: str, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> None:
        self.path = Path(path)
        self.schema = schema
        self.busy_timeout = busy_timeout
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._locked_out_at = -1.0
        """When a call last gave up on another process's lock (``time.monotonic``)."""

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,  # autocommit; writes open their own transactions
            check_same_thread=False,  # used from worker threads, one at a time (_lock)
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            self._set_up(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _set_up(self, connection: sqlite3.Connection) -> None:
        """WAL mode and the tables, retried while another process sets up the same file.

        SQLite answers "database is locked" at once, without waiting out the busy
        timeout, where waiting could deadlock: switching a new file to WAL, or a schema
        statement upgrading its read of the schema to a write while another connection
        does the same. The schema therefore runs in one ``BEGIN IMMEDIATE`` transaction
        (the write lock is taken first, and waited for), and the whole set-up is
        retried, with a short growing pause, until the busy timeout has passed.
        """
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.005
        while True:
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = NORMAL")
                connection.executescript(f"BEGIN IMMEDIATE;\n{self.schema}\nCOMMIT;")
            except sqlite3.OperationalError as exc:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                message = str(exc)
                if ("locked" not in message and "busy" not in message) or (
                    time.monotonic() + pause > deadline
                ):
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.2)
            else:
                return

    def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work``, one call at a time. A call that queued behind one which waited
        out the busy timeout fails at once instead of waiting it out again: calls made
        together (a compaction's summaries) cost one timeout, not one each."""
        queued_at = time.monotonic()
        with self._lock:
            if self._locked_out_at >= queued_at:
                raise StoreError(
                    f"{self.path} is locked by another process (the call before this one "
                    f"waited {self.busy_timeout:g} s for it): not tried again"
                )
            try:
                if self._connection is None:
                    self._connection = self._connect()
                return work(self._connection)
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    self._locked_out_at = time.monotonic()
                raise

    def run_sync(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection in the calling thread."""
        return self._call(work)

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection in a worker thread."""
        return await anyio.to_thread.run_sync(self._call, work)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)


def write(connection: sqlite3.Connection, statements: Callable[[], T]) -> T:
    """Run ``statements`` in one ``BEGIN IMMEDIATE`` transaction (rolled back on error)."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        result = statements()
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
    return result
