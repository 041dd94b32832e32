"""A history-archive store in one SQLite file, searched with FTS5 when SQLite has it.

Writes happen inside a compaction, searches only when an agent asks, so writes stay
cheap: a message row holds its reference and its JSON, nothing else. The full-text
index is contentless (it keeps no copy of the text), of trigrams (so a query matches
anywhere inside a word: ``foo_v3`` in ``libfoo_v3.so``, as on every store), and brought
up to date by the first search after new writes, from the JSON; deleting a session
removes its index entries and keeps the index's high-water mark below every row id
SQLite may hand out next, so rows written after a deletion are always indexed.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Final

from csum.store_events import search_text_of_json
from csum.stores._archive_protocol import ArchiveRecord
from csum.stores._sqlite_db import DEFAULT_BUSY_TIMEOUT, SQLiteDatabase, write

__all__ = ["SEARCH_TEXT_VERSION", "SQLiteArchiveStore", "fts5_available"]

SEARCH_TEXT_VERSION: Final = "2"
"""Version of the text derived from a message for the index; another version found in a
file makes the next search rebuild the index from the JSON."""

_TABLES = """
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
DROP TABLE IF EXISTS csum_archive_fts;
CREATE VIRTUAL TABLE IF NOT EXISTS csum_archive_text
    USING fts5(text, content='', tokenize='trigram');
CREATE TABLE IF NOT EXISTS csum_archive_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
"""The index of search version 2 (trigrams); version 1's word index (``csum_archive_fts``,
which found only whole words) is dropped, and the next search indexes every row again."""

_TRIGRAM = 3
"""Characters a trigram index needs in a query; shorter ones are matched with ``LIKE``."""
_MAX_LIKE_PATTERN = 40_000
"""Bytes of a ``LIKE`` pattern kept under SQLite's limit (50,000): longer ones scan."""


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 with the trigram tokenizer (3.34+)."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='trigram')")
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()
    return True


class SQLiteArchiveStore:
    """Archived messages in the SQLite file ``path`` (created when missing).

    ``ttl`` (seconds, None: never) expires a session that many seconds after its last
    write: each write deletes the sessions expired by then (sessions last written
    before write times were kept never expire). ``full_text`` (default: when SQLite
    has FTS5 with trigrams) indexes the messages' text for search; without it, search
    scans the JSON with ``LIKE`` (an ASCII query) or reads the session's messages (any
    other). Either way, candidates are checked for the text (case-insensitive
    substring, ``str.casefold``) before they are returned, so every store gives one
    meaning to a query.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        full_text: bool | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        ttl: float | None = None,
    ) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be positive seconds or None, got {ttl!r}")
        self.ttl = ttl
        self.full_text = fts5_available() if full_text is None else full_text
        schema = _TABLES + (_FTS if self.full_text else "")
        self.database = SQLiteDatabase(path, schema, busy_timeout=busy_timeout)
        self.name = f"sqlite:{self.database.path}"

    def __repr__(self) -> str:
        return f"SQLiteArchiveStore({str(self.database.path)!r}, full_text={self.full_text})"

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        await self.database.run(partial(_put, session=session, batch=batch, records=records))
        if self.ttl is not None:
            cutoff = time.time() - self.ttl
            await self.database.run(partial(_expire, cutoff=cutoff, fts=self.full_text))

    async def get(self, session: str, reference: str) -> list[bytes]:
        return await self.database.run(partial(_get, session=session, reference=reference))

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        return await self.database.run(
            partial(_search, session=session, text=text, limit=limit, fts=self.full_text)
        )

    async def delete_session(self, session: str) -> int:
        return await self.database.run(
            partial(_delete_session, session=session, fts=self.full_text)
        )

    async def aclose(self) -> None:
        await self.database.aclose()


def _put(
    connection: sqlite3.Connection, *, session: str, batch: str, records: Sequence[ArchiveRecord]
) -> None:
    def statements() -> None:
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

    write(connection, statements)


def _expire(connection: sqlite3.Connection, *, cutoff: float, fts: bool) -> None:
    """Delete the sessions last written before ``cutoff`` (``time.time()``)."""
    rows = connection.execute(
        "SELECT session FROM csum_archive_sessions WHERE written < ?", (cutoff,)
    ).fetchall()
    for (session,) in rows:
        _delete_session(connection, session=session, fts=fts)
        write(
            connection,
            partial(
                connection.execute,
                "DELETE FROM csum_archive_sessions WHERE session = ? AND written < ?",
                (session, cutoff),
            ),
        )


def _body(connection: sqlite3.Connection, session: str, reference: str) -> bytes | None:
    row = connection.execute(
        "SELECT body FROM csum_archive_messages WHERE session = ? AND ref = ?",
        (session, reference),
    ).fetchone()
    return None if row is None else bytes(row[0])


def _get(connection: sqlite3.Connection, *, session: str, reference: str) -> list[bytes]:
    row = connection.execute(
        "SELECT refs FROM csum_archive_batches WHERE session = ? AND ref = ?",
        (session, reference),
    ).fetchone()
    refs = str(row[0]).split() if row is not None else [reference]
    bodies = (_body(connection, session, ref) for ref in refs)
    return [body for body in bodies if body is not None]


def _meta(connection: sqlite3.Connection, key: str) -> str | None:
    row = connection.execute("SELECT value FROM csum_archive_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(connection: sqlite3.Connection, key: str, value: str) -> None:
    connection.execute(
        "INSERT OR REPLACE INTO csum_archive_meta (key, value) VALUES (?, ?)", (key, value)
    )


def _bring_index_up_to_date(connection: sqlite3.Connection) -> None:
    """Index the messages written since the last search (all of them after a change of
    :data:`SEARCH_TEXT_VERSION`)."""

    def statements() -> None:
        upto = int(_meta(connection, "indexed_upto") or 0)
        if _meta(connection, "search_text_version") != SEARCH_TEXT_VERSION:
            connection.execute(
                "INSERT INTO csum_archive_text (csum_archive_text) VALUES ('delete-all')"
            )
            upto = 0
            _set_meta(connection, "search_text_version", SEARCH_TEXT_VERSION)
        rows = connection.execute(
            "SELECT id, body FROM csum_archive_messages WHERE id > ? ORDER BY id", (upto,)
        ).fetchall()
        if rows:
            connection.executemany(
                "INSERT INTO csum_archive_text (rowid, text) VALUES (?, ?)",
                [(row_id, search_text_of_json(body)) for row_id, body in rows],
            )
            upto = rows[-1][0]
        _set_meta(connection, "indexed_upto", str(upto))

    write(connection, statements)


def _like_pattern(text: str) -> str:
    # The JSON holds strings escaped: look for the escaped form of the text.
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    escaped = escaped.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _search(
    connection: sqlite3.Connection, *, session: str, text: str, limit: int, fts: bool
) -> list[tuple[str, bytes]]:
    rows: Iterable[tuple[str, bytes]]
    pattern = _like_pattern(text)
    if fts and len(text) >= _TRIGRAM and "\x00" not in text:
        _bring_index_up_to_date(connection)
        phrase = '"' + text.replace('"', '""') + '"'
        rows = connection.execute(
            "SELECT m.ref, m.body FROM csum_archive_text f "
            "JOIN csum_archive_messages m ON m.id = f.rowid "
            "WHERE csum_archive_text MATCH ? AND m.session = ? ORDER BY m.id",
            (phrase, session),
        )
    elif text.isascii() and "\x00" not in text and len(pattern) <= _MAX_LIKE_PATTERN:
        # LIKE folds ASCII letters only: other queries read the session's messages.
        rows = connection.execute(
            "SELECT ref, body FROM csum_archive_messages "
            "WHERE session = ? AND CAST(body AS TEXT) LIKE ? ESCAPE '\\' ORDER BY id",
            (session, pattern),
        )
    else:
        rows = connection.execute(
            "SELECT ref, body FROM csum_archive_messages WHERE session = ? ORDER BY id",
            (session,),
        )
    needle = text.casefold()
    found: list[tuple[str, bytes]] = []
    for ref, body in rows:
        if needle in search_text_of_json(body).casefold():
            found.append((ref, bytes(body)))
            if len(found) == limit:
                break
    return found


def _delete_session(connection: sqlite3.Connection, *, session: str, fts: bool) -> int:
    def statements() -> int:
        if fts and _meta(connection, "search_text_version") != SEARCH_TEXT_VERSION:
            # Indexed by another version: forget the whole index (the next search
            # rebuilds it) rather than leave entries of the deleted messages behind.
            connection.execute(
                "INSERT INTO csum_archive_text (csum_archive_text) VALUES ('delete-all')"
            )
            _set_meta(connection, "indexed_upto", "0")
        elif fts:
            upto = int(_meta(connection, "indexed_upto") or 0)
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
        if fts:
            # SQLite gives a new row the largest id + 1: ids freed at the end are handed
            # out again. The mark must stay below them, or those rows would never be
            # indexed (and deleting them would remove entries the index never had).
            (largest,) = connection.execute("SELECT max(id) FROM csum_archive_messages").fetchone()
            upto = int(_meta(connection, "indexed_upto") or 0)
            _set_meta(connection, "indexed_upto", str(min(upto, int(largest or 0))))
        return int(deleted)

    return write(connection, statements)
