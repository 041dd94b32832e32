"""Code the multi-process store tests run in their child processes (importable by spawn).

Each child process runs its own event loop and opens its own store connections, as a
real worker of a fleet would.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import xxhash

from cast import Message
from csum import HistoryArchive, Stores, Summarizer, SummaryCache
from csum.stores import open_store

HANDLER_DELAY = 0.02
"""Seconds each fake model call takes, so workers overlap."""


def prompt_id(prompt: str) -> str:
    return xxhash.xxh3_64_hexdigest(prompt.encode("utf-8", "surrogatepass"))


def fake_summary(prompt: str) -> str:
    """A deterministic summary: equal prompts, equal summaries in every process."""
    return f"summary of {prompt_id(prompt)}: {len(prompt)} bytes"


def summarize_with_cache(
    cache_location: str, chain_path: str, calls_location: str, out_path: str
) -> None:
    """Summarize the chain through the shared cache; count calls in ``calls_location``
    (a Redis URL: HINCRBY per prompt; else a folder: one file line per call)."""
    messages = [Message.model_validate(m) for m in json.loads(Path(chain_path).read_text())]

    async def main() -> dict[str, Any]:
        redis_client: Any = None
        if calls_location.startswith("redis://"):
            import redis.asyncio

            redis_client = redis.asyncio.Redis.from_url(calls_location)

        async def handler(prompt: str) -> str:
            if redis_client is not None:
                await redis_client.hincrby("test:calls", prompt_id(prompt), 1)
            else:
                with open(Path(calls_location) / f"{os.getpid()}.calls", "a") as log:
                    log.write(prompt_id(prompt) + "\n")
            await anyio.sleep(HANDLER_DELAY)
            return fake_summary(prompt)

        cache = SummaryCache(open_store(cache_location), handler_id="fake-model")
        try:
            result = await Summarizer(stores=Stores(cache=cache)).summarize(handler, messages)
        finally:
            await cache.aclose()
            if redis_client is not None:
                await redis_client.aclose()
        return {
            "messages": [m.model_dump(mode="json") for m in result.messages],
            "handler_calls": result.handler_calls,
            "cache_hits": result.cache_hits,
            "events": [str(e.kind) for e in result.store_events],
        }

    Path(out_path).write_text(json.dumps(anyio.run(main)))


def write_cache_entries(path: str, worker: int, count: int) -> None:
    """Write ``count`` entries of this worker's own and as many shared keys at once."""
    from csum.cache import encode_summary

    async def main() -> None:
        store = open_store(path)
        try:
            for i in range(count):
                await store.set(f"own:{worker}:{i}", encode_summary(f"worker {worker} entry {i}"))
                await store.set(f"shared:{i}", encode_summary(f"shared entry {i}"))
        finally:
            await store.aclose()

    anyio.run(main)


def write_archive(path: str, session: str, worker: int, count: int) -> None:
    """Archive ``count`` batches of two messages, some shared with the other workers."""

    async def main() -> None:
        archive = HistoryArchive(path, session=session)
        try:
            for i in range(count):
                await archive.add(
                    [Message.ai(f"worker {worker} step {i}"), Message.ai(f"shared step {i}")]
                )
        finally:
            await archive.aclose()

    anyio.run(main)


def count_rows(path: str, table: str) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        connection.close()


def open_at(path: str, kind: str, start: float) -> str:
    """Open a ``kind`` store ("archive" or "cache") on ``path`` once ``start`` (a
    ``time.time()``) has come, so that several processes set up a new file together;
    "ok" or the error."""
    import time

    from csum.stores import SQLiteArchiveStore, SQLiteStore

    while time.time() < start:
        pass
    try:
        store = SQLiteArchiveStore(path) if kind == "archive" else SQLiteStore(path)
        store.database.run_sync(lambda connection: connection.execute("SELECT 1").fetchall())
    except Exception as exc:  # reported to the test, which shows it
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def archive_cycle(path: str, session: str, worker: int, full_text: bool) -> tuple[int, int, int]:
    """Write three messages in ``session``, search them, delete the session: (found,
    deleted, found after deleting)."""
    from csum.stores import SQLiteArchiveStore

    async def main() -> tuple[int, int, int]:
        archive = HistoryArchive(SQLiteArchiveStore(path, full_text=full_text), session=session)
        try:
            await archive.add([Message.ai(f"{session} worker_{worker} step {i}") for i in range(3)])
            found = len(await archive.search(f"{session} worker_{worker}"))
            deleted = await archive.delete_session()
            left = len(await archive.search(f"{session} worker_{worker}"))
        finally:
            await archive.aclose()
        return found, deleted, left

    return anyio.run(main)
