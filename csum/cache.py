"""The summary cache: the same prompt, handler and budget never cost a second call.

A key is the xxh3-128 of everything that decides a summary: the prompt text, the
handler identity the user declares (model, its settings, the prompt template's
version...) and the summary budget, under a key version. A value is the summary text
behind a version line carrying its length and checksum, so a truncated or corrupt
entry is detected and ignored. Concurrent requests of one key call the handler once:
within a process they wait on the first (anyio), across workers on the store's short
lock with expiry. A store that fails is reported as an event and bypassed: the handler
is called, the compaction goes on.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio
import xxhash

from csum.store_events import StoreEvent, StoreEventKind, failure_detail
from csum.stores import MemoryStore, SummaryStore

__all__ = [
    "KEY_VERSION",
    "VALUE_VERSION",
    "SummaryCache",
    "cache_key",
    "decode_summary",
    "encode_summary",
]

KEY_VERSION: Final = "csum-cache-key/1"
"""Changes whenever what a key covers changes; old entries are then never looked up."""
VALUE_VERSION: Final = b"csum-summary/1"
"""First field of every stored value; another version reads as a miss."""

EventSink = Callable[[StoreEvent], None]


def _field(hasher: xxhash.xxh3_128, value: str) -> None:
    data = value.encode("utf-8", "surrogatepass")
    hasher.update(b"%d:" % len(data))
    hasher.update(data)


def cache_key(prompt: str, *, handler_id: str = "", summary_budget: int | None = None) -> str:
    """The cache key of a summary: versioned xxh3-128 of prompt, handler id and budget.

    Fields are length-prefixed, so no two different inputs hash the same bytes.
    """
    hasher = xxhash.xxh3_128()
    _field(hasher, KEY_VERSION)
    _field(hasher, handler_id)
    _field(hasher, "" if summary_budget is None else str(summary_budget))
    _field(hasher, prompt)
    return f"s1:{hasher.hexdigest()}"


def encode_summary(text: str) -> bytes:
    """The stored form of a summary: ``VERSION CHECKSUM LENGTH\\n`` then the UTF-8 text."""
    payload = text.encode("utf-8", "surrogatepass")
    checksum = xxhash.xxh3_64_hexdigest(payload).encode("ascii")
    return b"%s %s %d\n%s" % (VALUE_VERSION, checksum, len(payload), payload)


def decode_summary(value: bytes) -> str | None:
    """The summary stored in ``value``; None when its version, length or checksum is off."""
    head, newline, payload = value.partition(b"\n")
    fields = head.split(b" ")
    if not newline or len(fields) != 3 or fields[0] != VALUE_VERSION:
        return None
    _, checksum, length = fields
    if not length.isdigit() or int(length) != len(payload):
        return None
    if xxhash.xxh3_64_hexdigest(payload).encode("ascii") != checksum:
        return None
    try:
        return payload.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


@dataclass
class _Flight:
    """A key being summarized in this process; later requests wait on ``done``."""

    done: anyio.Event = field(default_factory=anyio.Event)
    summary: str | None = None


class SummaryCache:
    """Summaries by key in ``store`` (default: an in-memory LRU).

    ``handler_id`` names what produces the summaries (say ``"openai:gpt-4o-mini
    temperature=0 v3"``): change it when the model or its settings change, so old
    summaries are not served. ``summary_budget`` is the summary size the handler is held
    to, when it has one. ``ttl`` (seconds) bounds how long entries live. ``lock_ttl`` is
    how long another worker waits for the one summarizing a key before calling the
    handler itself. ``on_event`` hears every hit, miss and failure.
    """

    def __init__(
        self,
        store: SummaryStore | None = None,
        *,
        handler_id: str = "",
        summary_budget: int | None = None,
        ttl: float | None = None,
        lock_ttl: float = 30.0,
        poll_interval: float = 0.02,
        on_event: EventSink | None = None,
    ) -> None:
        if not isinstance(handler_id, str):
            raise TypeError(f"handler_id must be a str, not {type(handler_id).__name__}")
        for name, value in (("ttl", ttl), ("lock_ttl", lock_ttl), ("poll_interval", poll_interval)):
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        self.store: SummaryStore = MemoryStore() if store is None else store
        self.handler_id = handler_id
        self.summary_budget = summary_budget
        self.ttl = ttl
        self.lock_ttl = lock_ttl
        self.poll_interval = poll_interval
        self.on_event = on_event
        self._flights: dict[str, _Flight] = {}

    def __repr__(self) -> str:
        return f"SummaryCache({self.store!r}, handler_id={self.handler_id!r})"

    def key(self, prompt: str, *, summary_budget: int | None = None) -> str:
        """The key of ``prompt`` for this cache's handler and budget."""
        budget = self.summary_budget if summary_budget is None else summary_budget
        return cache_key(prompt, handler_id=self.handler_id, summary_budget=budget)

    async def aclose(self) -> None:
        """Close the store's connections."""
        await self.store.aclose()

    async def summarize(
        self,
        prompt: str,
        call: Callable[[], Awaitable[str]],
        *,
        summary_budget: int | None = None,
        emit: EventSink | None = None,
    ) -> tuple[str, bool]:
        """(summary, whether it came from the cache) for ``prompt``; ``call()`` on a miss.

        Exceptions of ``call`` propagate (and are never stored); store failures do not.
        """
        key = self.key(prompt, summary_budget=summary_budget)
        # A flight that failed wakes every waiter: the first to run starts the next
        # flight, the others wait on that one instead of each calling the handler.
        while (flight := self._flights.get(key)) is not None:
            await flight.done.wait()
            if flight.summary is not None:
                self._emit(emit, StoreEventKind.CACHE_HIT, key, "shared with a concurrent request")
                return flight.summary, True
        flight = _Flight()
        self._flights[key] = flight
        try:
            summary, hit = await self._lookup_or_call(key, call, emit)
            flight.summary = summary
            return summary, hit
        finally:
            if self._flights.get(key) is flight:
                del self._flights[key]
            flight.done.set()

    async def _lookup_or_call(
        self, key: str, call: Callable[[], Awaitable[str]], emit: EventSink | None
    ) -> tuple[str, bool]:
        try:
            cached = await self._read(key, emit)
            if cached is not None:
                return cached, True
            token = secrets.token_hex(8)
            locked, found = await self._lock(key, token, emit)
        except _StoreUnavailableError:
            return await call(), False
        if found is not None:
            return found, True
        try:
            summary = await call()
            try:
                await self.store.set(key, encode_summary(summary), self.ttl)
            except Exception as exc:  # noqa: BLE001 - a store failure only costs the cache
                self._failed(emit, key, exc)
            else:
                self._emit(emit, StoreEventKind.CACHE_MISS, key)
            return summary, False
        finally:
            if locked:
                await self._release_quietly(key, token, emit)

    async def _read(self, key: str, emit: EventSink | None, *, again: bool = False) -> str | None:
        """The stored summary of ``key``: None when absent or corrupt (reported unless
        this is a read ``again`` of the same key in one request).

        Raises :class:`_StoreUnavailableError` (already reported) when the store fails.
        """
        try:
            value = await self.store.get(key)
        except Exception as exc:
            self._failed(emit, key, exc)
            raise _StoreUnavailableError from exc
        if value is None:
            return None
        summary = decode_summary(value)
        if summary is None:
            if again:
                return None
            self._emit(
                emit,
                StoreEventKind.CACHE_CORRUPT,
                key,
                f"stored entry of {len(value)} bytes failed its version/length/checksum check",
            )
            return None
        self._emit(emit, StoreEventKind.CACHE_HIT, key)
        return summary

    async def _lock(self, key: str, token: str, emit: EventSink | None) -> tuple[bool, str | None]:
        """(whether we hold the workers' lock on ``key``, the summary if one arrived).

        While another worker holds the lock, poll for its summary; after ``lock_ttl``
        without one, give up the wait: (False, None), the caller summarizes unlocked.
        Raises :class:`_StoreUnavailableError` (already reported) when the store fails.
        """
        deadline = time.monotonic() + self.lock_ttl
        while True:
            try:
                acquired = await self.store.acquire(key, token, self.lock_ttl)
            except Exception as exc:
                self._failed(emit, key, exc)
                raise _StoreUnavailableError from exc
            if acquired:
                # The holder may have stored its summary between our read and our lock.
                try:
                    found = await self._read(key, emit, again=True)
                except _StoreUnavailableError:
                    found = None
                if found is not None:
                    await self._release_quietly(key, token, emit)
                    return False, found
                return True, None
            if time.monotonic() >= deadline:
                return False, None
            await anyio.sleep(self.poll_interval)
            found = await self._read(key, emit, again=True)
            if found is not None:
                return False, found

    async def _release_quietly(self, key: str, token: str, emit: EventSink | None) -> None:
        try:
            await self.store.release(key, token)
        except Exception as exc:  # noqa: BLE001 - the lock expires on its own
            self._failed(emit, key, exc)

    def _failed(self, emit: EventSink | None, key: str, exc: Exception) -> None:
        self._emit(emit, StoreEventKind.CACHE_UNAVAILABLE, key, failure_detail(exc))

    def _emit(
        self, emit: EventSink | None, kind: StoreEventKind, key: str, detail: str = ""
    ) -> None:
        event = StoreEvent(kind, self.store.name, key, detail)
        if emit is not None:
            emit(event)
        if self.on_event is not None:
            self.on_event(event)


class _StoreUnavailableError(Exception):
    """The store failed (already reported): summarize without it."""
