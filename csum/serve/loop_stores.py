"""Stores seen from a worker thread: every call runs on the gateway's event loop, where
the stores' connections live (``anyio.from_thread.run``)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.from_thread
from anyio.lowlevel import EventLoopToken

from csum.stores import SummaryStore
from csum.stores._protocol import ArchiveRecord, ArchiveStore

__all__ = ["LoopArchive", "LoopStore"]


class LoopStore:
    """A :class:`~csum.stores.SummaryStore` whose calls run on the loop of ``token``."""

    def __init__(self, inner: SummaryStore, token: EventLoopToken) -> None:
        self.inner = inner
        self.token = token
        self.name = inner.name

    async def get(self, key: str) -> bytes | None:
        return anyio.from_thread.run(self.inner.get, key, token=self.token)

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        anyio.from_thread.run(self.inner.set, key, value, ttl, token=self.token)

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        return anyio.from_thread.run(self.inner.acquire, key, token, ttl, token=self.token)

    async def release(self, key: str, token: str) -> None:
        anyio.from_thread.run(self.inner.release, key, token, token=self.token)

    async def aclose(self) -> None:
        """Nothing: the gateway closes the store it owns."""


class LoopArchive:
    """An :class:`~csum.stores.ArchiveStore` whose calls run on the loop of ``token``."""

    def __init__(self, inner: ArchiveStore, token: EventLoopToken) -> None:
        self.inner = inner
        self.token = token
        self.name = inner.name

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        anyio.from_thread.run(self.inner.put, session, batch, records, token=self.token)

    async def get(self, session: str, reference: str) -> list[bytes]:
        return anyio.from_thread.run(self.inner.get, session, reference, token=self.token)

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        return anyio.from_thread.run(self.inner.search, session, text, limit, token=self.token)

    async def delete_session(self, session: str) -> int:
        return anyio.from_thread.run(self.inner.delete_session, session, token=self.token)

    async def aclose(self) -> None:
        """Nothing: the gateway closes the store it owns."""
