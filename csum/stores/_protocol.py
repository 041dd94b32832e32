"""The protocols stores implement: the summary cache's (bytes by key, a TTL, a lock) and
the history archive's (messages by session and reference)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Protocol, runtime_checkable

from csum.errors import StoreError
from csum.store_events import search_text_of_json

__all__ = ["ArchiveRecord", "ArchiveStore", "StoreError", "SummaryStore", "checked_ttl", "matching"]


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

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``; it expires after ``ttl`` seconds (None: never)."""

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        """Take the lock on ``key`` for ``ttl`` seconds unless another holder has it."""

    async def release(self, key: str, token: str) -> None:
        """Give the lock back if ``token`` still holds it."""

    async def aclose(self) -> None:
        """Release connections and files."""


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """One archived message: its reference and its JSON form (UTF-8,
    :func:`csum.archive.message_json`); the search text is derived from the JSON."""

    reference: str
    body: bytes


@runtime_checkable
class ArchiveStore(Protocol):
    """Where a :class:`csum.HistoryArchive` keeps the messages summarized away.

    Everything lives under a session name; deleting the session removes all of it.
    A batch is the ordered list of message references one summary covers.
    """

    name: str

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        """Store ``records`` (a message already stored is kept once) and the batch."""

    async def get(self, session: str, reference: str) -> list[bytes]:
        """JSON bodies under ``reference``: a batch's messages in order, one message, or
        nothing when the reference is unknown."""

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        """(reference, JSON body) of up to ``limit`` messages whose text contains ``text``
        (case-insensitive), oldest first."""

    async def delete_session(self, session: str) -> int:
        """Delete every message and batch of ``session``; how many messages went."""

    async def aclose(self) -> None: ...


def checked_ttl(ttl: float | None) -> float | None:
    """An archive store's ``ttl``: positive seconds or None (never expires)."""
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be positive seconds or None, got {ttl!r}")
    return ttl


def matching(rows: Iterable[tuple[str, object]], text: str, limit: int) -> list[tuple[str, bytes]]:
    """The first ``limit`` of ``rows`` (reference, JSON body or None) whose message text
    contains ``text`` (case-insensitive): every archive store's one meaning of a query."""
    needle = text.casefold()
    found = (
        (ref, body)
        for ref, body in rows
        if isinstance(body, bytes) and needle in search_text_of_json(body).casefold()
    )
    return list(islice(found, limit))
