"""What the summary cache and the history archive report: hits, misses, failures.

A store that fails never fails a compaction; it says so here instead. Events reach the
``on_event`` callback of the cache or archive, and :class:`csum.SummaryResult` keeps the
events of its run.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["StoreEvent", "StoreEventKind", "failure_detail"]


class StoreEventKind(StrEnum):
    CACHE_HIT = "cache_hit"
    """A summary came from the store (or from a concurrent request of the same key)."""
    CACHE_MISS = "cache_miss"
    """No summary stored: the handler was called and its summary stored."""
    CACHE_UNAVAILABLE = "cache_unavailable"
    """The store failed (server down, file locked...): the handler was called instead."""
    CACHE_CORRUPT = "cache_corrupt"
    """A stored entry failed its version or checksum check: ignored and replaced."""
    ARCHIVED = "archived"
    """Messages summarized away were stored in the history archive."""
    ARCHIVE_UNAVAILABLE = "archive_unavailable"
    """The archive store failed: the summary carries no references for these messages."""


@dataclass(frozen=True, slots=True)
class StoreEvent:
    """One thing a store did or failed to do, for one summary."""

    kind: StoreEventKind
    store: str
    """The store's name (``memory``, ``sqlite:/path``, ``redis://host:port``)."""
    key: str = ""
    """The cache key, or the archive batch reference."""
    detail: str = ""
    """For failures: the exception, on one line."""

    @property
    def failed(self) -> bool:
        """Whether this event reports a store failure."""
        return self.kind in {
            StoreEventKind.CACHE_UNAVAILABLE,
            StoreEventKind.CACHE_CORRUPT,
            StoreEventKind.ARCHIVE_UNAVAILABLE,
        }


def failure_detail(exc: BaseException) -> str:
    """An exception on one line, for :attr:`StoreEvent.detail`."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())
