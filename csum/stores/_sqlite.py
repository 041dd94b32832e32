"""The SQLite stores: the summary cache and the history archive in one file each, shared
by the processes of one machine (WAL, a busy timeout, work in anyio's worker threads)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

import anyio.to_thread

from csum.store_events import search_text_of_json
from csum.stores._protocol import ArchiveRecord, StoreError, checked_ttl, matching

__all__ = ["SEARCH_TEXT_VERSION", "SQLiteArchiveStore", "SQLiteDatabase", "SQLiteStore"]

T = TypeVar("T")
_Statement = tuple[str, Sequence[object]]

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a write waits for another process's lock before failing (``busy_timeout``)."""


class SQLiteDatabase:
    """A lazily opened SQLite file in WAL mode; ``run`` executes work in a worker thread,
    one call at a time. ``schema`` (idempotent statements) creates the tables."""

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
        """WAL and the schema, retried: SQLite says "locked" at once where waiting deadlocks."""
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
                if not _locked(exc) or time.monotonic() + pause > deadline:
                    raise
            else:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def run_sync(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection in the calling thread; a call queued behind one
        that waited out the busy timeout fails at once, so calls made together (a
        compaction's summaries) cost one timeout."""
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
                if _locked(exc):
                    self._locked_out_at = time.monotonic()
                raise

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection in a worker thread."""
        return await anyio.to_thread.run_sync(self.run_sync, work)

    async def write(self, statements: Sequence[_Statement]) -> int:
        """Run ``statements`` in one transaction; the rows the last one changed."""
        return await self.run(partial(_write, statements))

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite failed on another connection's lock."""
    return "locked" in str(exc) or "busy" in str(exc)


@contextmanager
def _transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction, rolled back on error."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _write(statements: Sequence[_Statement], connection: sqlite3.Connection) -> int:
    with _transaction(connection):
        return [connection.execute(sql, parameters).rowcount for sql, parameters in statements][-1]


_CACHE_SCHEMA = """
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
        self.database = SQLiteDatabase(path, _CACHE_SCHEMA, busy_timeout=busy_timeout)
        self.name = f"sqlite:{self.database.path}"
        self._writes = 0

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.database.path)!r})"

    async def get(self, key: str) -> bytes | None:
        rows = await self.database.run(lambda db: db.execute(_GET, (key, time.time())).fetchall())
        value = rows[0][0] if rows else None
        return bytes(value) if isinstance(value, bytes | memoryview) else None

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        now = time.time()
        self._writes += 1
        statements: list[_Statement] = [(_SET, (key, value, None if ttl is None else now + ttl))]
        if self._writes % PURGE_EVERY == 0:
            statements += [(sql, (now,)) for sql in _PURGE]
        await self.database.write(statements)

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        now = time.time()
        return await self.database.write([(_ACQUIRE, (key, token, now + ttl, now))]) == 1

    async def release(self, key: str, token: str) -> None:
        await self.database.run(lambda db: db.execute(_RELEASE, (key, token)))

    async def aclose(self) -> None:
        await self.database.aclose()


_GET = "SELECT value FROM csum_summaries WHERE key = ? AND (expires IS NULL OR expires > ?)"
_SET = "INSERT OR REPLACE INTO csum_summaries (key, value, expires) VALUES (?, ?, ?)"
_PURGE = (
    "DELETE FROM csum_summaries WHERE expires IS NOT NULL AND expires <= ?",
    "DELETE FROM csum_locks WHERE expires <= ?",
)
_ACQUIRE = (
    "INSERT INTO csum_locks (key, token, expires) VALUES (?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires = excluded.expires "
    "WHERE csum_locks.expires <= ?"
)
"""Take the lock row (key, token, expires) unless a holder's has not expired by now."""
_RELEASE = "DELETE FROM csum_locks WHERE key = ? AND token = ?"


SEARCH_TEXT_VERSION: Final = "2"
"""Version of the text derived from a message for the index; another version found in a
file makes the next search rebuild the index from the JSON."""

_ARCHIVE_TABLES = """
CREATE TABLE IF NOT EXISTS csum_archive_messages (
    id INTEGER PRIMARY KEY, session TEXT NOT NULL, ref TEXT NOT NULL, body BLOB NOT NULL,
    UNIQUE (session, ref)
);
CREATE TABLE IF NOT EXISTS csum_archive_batches (
    session TEXT NOT NULL, ref TEXT NOT NULL, refs TEXT NOT NULL, PRIMARY KEY (session, ref)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS csum_archive_sessions (
    session TEXT PRIMARY KEY, written REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS csum_archive_sessions_written ON csum_archive_sessions (written);
"""
_FTS = """
CREATE VIRTUAL TABLE IF NOT EXISTS csum_archive_text
    USING fts5(text, content='', tokenize='trigram');
CREATE TABLE IF NOT EXISTS csum_archive_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
"""The contentless trigram index of the messages' search text."""

_FORGET_INDEX = "INSERT INTO csum_archive_text (csum_archive_text) VALUES ('delete-all')"
_TRIGRAM = 3
"""Characters a trigram index needs in a query; shorter ones are matched with ``LIKE``."""
_MAX_LIKE_PATTERN = 40_000
"""Bytes of a ``LIKE`` pattern kept under SQLite's limit (50,000): longer ones scan."""


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 with the trigram tokenizer (3.34+)."""
    with closing(sqlite3.connect(":memory:")) as connection:
        try:
            connection.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='trigram')")
        except sqlite3.OperationalError:
            return False
    return True


class SQLiteArchiveStore:
    """Archived messages in the SQLite file ``path`` (created when missing).

    ``ttl`` (seconds, None: never) expires a session that long after its last write
    (each write deletes the expired sessions; sessions last written before write times
    were kept never expire). ``full_text`` (default: when SQLite has FTS5 with trigrams)
    indexes the messages' text in a contentless index the first search after new writes
    brings up to date (writes stay cheap); without it, search scans the JSON with
    ``LIKE`` (an ASCII query) or reads the session's messages. Either way candidates are
    checked as every store checks them (:func:`~csum.stores._protocol.matching`).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        full_text: bool | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        ttl: float | None = None,
    ) -> None:
        self.ttl = checked_ttl(ttl)
        self.full_text = fts5_available() if full_text is None else full_text
        schema = _ARCHIVE_TABLES + (_FTS if self.full_text else "")
        self.database = SQLiteDatabase(path, schema, busy_timeout=busy_timeout)
        self.name = f"sqlite:{self.database.path}"

    def __repr__(self) -> str:
        return f"SQLiteArchiveStore({str(self.database.path)!r}, full_text={self.full_text})"

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        await self.database.run(partial(_put, session, batch, records))
        if self.ttl is not None:
            await self.database.run(partial(_expire, time.time() - self.ttl, self.full_text))

    async def get(self, session: str, reference: str) -> list[bytes]:
        return await self.database.run(partial(_archived, session, reference))

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        return await self.database.run(partial(_search, session, text, limit, self.full_text))

    async def delete_session(self, session: str) -> int:
        return await self.database.run(partial(_delete_session, session, self.full_text))

    async def aclose(self) -> None:
        await self.database.aclose()


def _put(
    session: str, batch: str, records: Sequence[ArchiveRecord], connection: sqlite3.Connection
) -> None:
    with _transaction(connection):
        connection.executemany(
            "INSERT OR IGNORE INTO csum_archive_messages (session, ref, body) VALUES (?, ?, ?)",
            [(session, record.reference, record.body) for record in records],
        )
        connection.execute(
            "INSERT OR REPLACE INTO csum_archive_batches (session, ref, refs) VALUES (?, ?, ?)",
            (session, batch, " ".join(r.reference for r in records)),
        )
        connection.execute(
            "INSERT OR REPLACE INTO csum_archive_sessions (session, written) VALUES (?, ?)",
            (session, time.time()),
        )


def _expire(cutoff: float, fts: bool, connection: sqlite3.Connection) -> None:
    """Delete the sessions last written before ``cutoff`` (``time.time()``)."""
    rows = connection.execute(
        "SELECT session FROM csum_archive_sessions WHERE written < ?", (cutoff,)
    ).fetchall()
    for (session,) in rows:
        _delete_session(session, fts, connection, written_before=cutoff)


def _archived(session: str, reference: str, connection: sqlite3.Connection) -> list[bytes]:
    row = connection.execute(
        "SELECT refs FROM csum_archive_batches WHERE session = ? AND ref = ?", (session, reference)
    ).fetchone()
    refs = str(row[0]).split() if row is not None else [reference]
    sql = "SELECT body FROM csum_archive_messages WHERE session = ? AND ref = ?"
    rows = (connection.execute(sql, (session, ref)).fetchone() for ref in refs)
    return [bytes(row[0]) for row in rows if row is not None]


def _set_meta(connection: sqlite3.Connection, **values: str) -> None:
    sql = "INSERT OR REPLACE INTO csum_archive_meta (key, value) VALUES (?, ?)"
    connection.executemany(sql, values.items())


def _indexed_upto(connection: sqlite3.Connection) -> int:
    """The largest message id indexed (0 after forgetting another version's index)."""
    meta = dict(connection.execute("SELECT key, value FROM csum_archive_meta").fetchall())
    if meta.get("search_text_version") == SEARCH_TEXT_VERSION:
        return int(meta.get("indexed_upto") or 0)
    connection.execute(_FORGET_INDEX)
    _set_meta(connection, search_text_version=SEARCH_TEXT_VERSION, indexed_upto="0")
    return 0


def _bring_index_up_to_date(connection: sqlite3.Connection) -> None:
    """Index the messages written since the last search."""
    with _transaction(connection):
        upto = _indexed_upto(connection)
        rows = connection.execute(
            "SELECT id, body FROM csum_archive_messages WHERE id > ? ORDER BY id", (upto,)
        ).fetchall()
        connection.executemany(
            "INSERT INTO csum_archive_text (rowid, text) VALUES (?, ?)",
            [(row_id, search_text_of_json(body)) for row_id, body in rows],
        )
        _set_meta(connection, indexed_upto=str(rows[-1][0] if rows else upto))


_MATCHING = (
    "SELECT m.ref, m.body FROM csum_archive_text f JOIN csum_archive_messages m ON m.id = f.rowid "
    "WHERE csum_archive_text MATCH ? AND m.session = ? ORDER BY m.id"
)
_LIKE = (
    "SELECT ref, body FROM csum_archive_messages "
    "WHERE session = ? AND CAST(body AS TEXT) LIKE ? ESCAPE '\\' ORDER BY id"
)
_ALL = "SELECT ref, body FROM csum_archive_messages WHERE session = ? ORDER BY id"


def _search(
    session: str, text: str, limit: int, fts: bool, connection: sqlite3.Connection
) -> list[tuple[str, bytes]]:
    # The JSON holds strings escaped: LIKE looks for the escaped form of the text.
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    escaped = escaped.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    statement: tuple[str, tuple[str, ...]] = (_ALL, (session,))
    if fts and len(text) >= _TRIGRAM and "\x00" not in text:
        _bring_index_up_to_date(connection)
        statement = (_MATCHING, ('"' + text.replace('"', '""') + '"', session))
    elif text.isascii() and "\x00" not in text and len(pattern) <= _MAX_LIKE_PATTERN:
        # LIKE folds ASCII letters only: other queries read the session's messages.
        statement = (_LIKE, (session, pattern))
    return matching(connection.execute(*statement), text, limit)


def _delete_session(
    session: str, fts: bool, connection: sqlite3.Connection, *, written_before: float | None = None
) -> int:
    """Delete ``session`` (if last written before ``written_before``, read in the same
    transaction: another process's write in between keeps it); how many messages went."""
    with _transaction(connection):
        if (
            written_before is not None
            and not connection.execute(
                "SELECT 1 FROM csum_archive_sessions WHERE session = ? AND written < ?",
                (session, written_before),
            ).fetchone()
        ):
            return 0
        upto = _indexed_upto(connection) if fts else 0
        if fts:
            indexed = connection.execute(
                "SELECT id, body FROM csum_archive_messages WHERE session = ? AND id <= ?",
                (session, upto),
            ).fetchall()
            # A contentless index forgets a row given the text it indexed for it.
            connection.executemany(
                "INSERT INTO csum_archive_text (csum_archive_text, rowid, text) "
                "VALUES ('delete', ?, ?)",
                [(row_id, search_text_of_json(body)) for row_id, body in indexed],
            )
        deleted = connection.execute(
            "DELETE FROM csum_archive_messages WHERE session = ?", (session,)
        ).rowcount
        connection.execute("DELETE FROM csum_archive_batches WHERE session = ?", (session,))
        connection.execute("DELETE FROM csum_archive_sessions WHERE session = ?", (session,))
        if fts:
            # SQLite gives a new row the largest id + 1: ids freed at the end are handed
            # out again. The mark must stay below them, or those rows would never be
            # indexed (and deleting them would remove entries the index never had).
            (largest,) = connection.execute("SELECT max(id) FROM csum_archive_messages").fetchone()
            _set_meta(connection, indexed_upto=str(min(upto, int(largest or 0))))
    return int(deleted)
