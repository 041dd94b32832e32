"""A history-archive store in one SQLite file, searched with FTS5 when SQLite has it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from csum.stores._archive_protocol import ArchiveRecord
from csum.stores._sqlite_db import DEFAULT_BUSY_TIMEOUT, SQLiteDatabase, write

__all__ = ["SQLiteArchiveStore", "fts5_available"]

_TABLES = """
CREATE TABLE IF NOT EXISTS csum_archive_messages (
    id INTEGER PRIMARY KEY, session TEXT NOT NULL, ref TEXT NOT NULL, body TEXT NOT NULL,
    text TEXT NOT NULL, UNIQUE (session, ref)
);
CREATE TABLE IF NOT EXISTS csum_archive_batches (
    session TEXT NOT NULL, ref TEXT NOT NULL, refs TEXT NOT NULL, PRIMARY KEY (session, ref)
) WITHOUT ROWID;
"""
_FTS = """
CREATE VIRTUAL TABLE IF NOT EXISTS csum_archive_fts USING fts5(
    text, content='csum_archive_messages', content_rowid='id'
);
"""
"""An external-content index: the text is stored once, in the messages table."""


def fts5_available() -> bool:
    """Whether this Python's SQLite was built with FTS5."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()
    return True


class SQLiteArchiveStore:
    """Archived messages in the SQLite file ``path`` (created when missing).

    ``full_text`` (default: when SQLite has FTS5) indexes the text for search; without
    it, search scans with ``LIKE``. Either way, results are checked for the exact text.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        full_text: bool | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        self.full_text = fts5_available() if full_text is None else full_text
        schema = _TABLES + (_FTS if self.full_text else "")
        self.database = SQLiteDatabase(path, schema, busy_timeout=busy_timeout)
        self.name = f"sqlite:{self.database.path}"

    def __repr__(self) -> str:
        return f"SQLiteArchiveStore({str(self.database.path)!r}, full_text={self.full_text})"

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        await self.database.run(
            partial(_put, session=session, batch=batch, records=records, fts=self.full_text)
        )

    async def get(self, session: str, reference: str) -> list[str]:
        return await self.database.run(partial(_get, session=session, reference=reference))

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, str]]:
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
    connection: sqlite3.Connection,
    *,
    session: str,
    batch: str,
    records: Sequence[ArchiveRecord],
    fts: bool,
) -> None:
    def statements() -> None:
        insert = (
            "INSERT INTO csum_archive_messages (session, ref, body, text) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (session, ref) DO NOTHING RETURNING id"
        )
        for record in records:
            row = connection.execute(
                insert, (session, record.reference, record.body, record.text)
            ).fetchone()
            if fts and row is not None:
                connection.execute(
                    "INSERT INTO csum_archive_fts (rowid, text) VALUES (?, ?)",
                    (row[0], record.text),
                )
        connection.execute(
            "INSERT OR REPLACE INTO csum_archive_batches (session, ref, refs) VALUES (?, ?, ?)",
            (session, batch, " ".join(r.reference for r in records)),
        )

    write(connection, statements)


def _body(connection: sqlite3.Connection, session: str, reference: str) -> str | None:
    row = connection.execute(
        "SELECT body FROM csum_archive_messages WHERE session = ? AND ref = ?",
        (session, reference),
    ).fetchone()
    return None if row is None else str(row[0])


def _get(connection: sqlite3.Connection, *, session: str, reference: str) -> list[str]:
    row = connection.execute(
        "SELECT refs FROM csum_archive_batches WHERE session = ? AND ref = ?",
        (session, reference),
    ).fetchone()
    refs = str(row[0]).split() if row is not None else [reference]
    bodies = (_body(connection, session, ref) for ref in refs)
    return [body for body in bodies if body is not None]


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _search(
    connection: sqlite3.Connection, *, session: str, text: str, limit: int, fts: bool
) -> list[tuple[str, str]]:
    needle = text.casefold()
    rows: list[tuple[str, str, str]]
    phrase = '"' + text.replace('"', '""') + '"'
    if fts and any(ch.isalnum() for ch in text):
        rows = connection.execute(
            "SELECT m.ref, m.body, m.text FROM csum_archive_fts f "
            "JOIN csum_archive_messages m ON m.id = f.rowid "
            "WHERE csum_archive_fts MATCH ? AND m.session = ? ORDER BY m.id",
            (phrase, session),
        ).fetchall()
    else:
        rows = connection.execute(
            "SELECT ref, body, text FROM csum_archive_messages "
            "WHERE session = ? AND text LIKE ? ESCAPE '\\' ORDER BY id",
            (session, _like_pattern(text)),
        ).fetchall()
    found = [(ref, body) for ref, body, body_text in rows if needle in body_text.casefold()]
    return found[:limit]


def _delete_session(connection: sqlite3.Connection, *, session: str, fts: bool) -> int:
    def statements() -> int:
        if fts:
            connection.execute(
                "INSERT INTO csum_archive_fts (csum_archive_fts, rowid, text) "
                "SELECT 'delete', id, text FROM csum_archive_messages WHERE session = ?",
                (session,),
            )
        deleted = connection.execute(
            "DELETE FROM csum_archive_messages WHERE session = ?", (session,)
        ).rowcount
        connection.execute("DELETE FROM csum_archive_batches WHERE session = ?", (session,))
        return int(deleted)

    return write(connection, statements)
