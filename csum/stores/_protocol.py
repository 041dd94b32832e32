"""The protocol every summary-cache store implements: bytes by key, a TTL, a lock."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from csum.errors import StoreError

__all__ = ["StoreError", "SummaryStore"]


@runtime_checkable
class SummaryStore(Protocol):
    """Where a :class:`csum.SummaryCache` keeps its entries.

    Values are opaque bytes (the cache versions and checksums them). ``acquire`` and
    ``release`` are a short lock with expiry that lets workers sharing the store call
    the handler once per key; a store only one process uses may always grant it.
    Any method may raise: the cache treats every failure as "store unavailable".
    """

    name: str
    """A short label for events and logs (``memory``, ``sqlite:/path``, ``redis://host``)."""

    async def get(self, key: str) -> bytes | None:
        """The value stored under ``key``, or None (absent or expired)."""
        ...

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``; it expires after ``ttl`` seconds (None: never)."""
        ...

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        """Take the lock on ``key`` for ``ttl`` seconds unless another holder has it."""
        ...

    async def release(self, key: str, token: str) -> None:
        """Give the lock back if ``token`` still holds it."""
        ...

    async def aclose(self) -> None:
        """Release connections and files."""
        ...
