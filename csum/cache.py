"""The summary cache: the same prompt, handler and budget never cost a second call.

Keys are a versioned xxh3-128 of what decides a summary; values carry a length and a
checksum (and, with a ``secret``, an HMAC), so a corrupt or foreign entry is a miss.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Final

import anyio
import anyio.lowlevel
import xxhash

from csum.store_events import EventSink, StoreClient, StoreEventKind, StoreSkippedError
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

Accept = Callable[[str], str | None]
"""Checks a stored summary as a fresh answer is checked: None to take it, else why not."""

RELEASE_TIMEOUT: Final = 5.0
"""Seconds a cancelled request still spends giving its workers' lock back."""


def cache_key(prompt: str, *, handler_id: str = "", summary_budget: int | None = None) -> str:
    """The cache key of a summary: versioned xxh3-128 of prompt, handler id and budget.

    Fields are length-prefixed, so no two different inputs hash the same bytes.
    """
    hasher = xxhash.xxh3_128()
    budget = "" if summary_budget is None else str(summary_budget)
    for value in (KEY_VERSION, handler_id, budget, prompt):
        data = value.encode("utf-8", "surrogatepass")
        hasher.update(b"%d:" % len(data))
        hasher.update(data)
    return f"s1:{hasher.hexdigest()}"


def _mac(secret: bytes, key: str, payload: bytes) -> bytes:
    """HMAC-SHA256 (hex) of key and summary: a signed entry cannot move to another key."""
    message = key.encode("ascii", "replace") + b"\x00" + payload
    return hmac.new(secret, message, hashlib.sha256).hexdigest().encode("ascii")


def encode_summary(text: str, *, secret: bytes | None = None, key: str = "") -> bytes:
    """The stored form of a summary: ``VERSION CHECKSUM LENGTH[ MAC]\\n`` then the UTF-8
    text; the MAC (with a ``secret``) is the HMAC-SHA256 of ``key`` and the text."""
    payload = text.encode("utf-8", "surrogatepass")
    checksum = xxhash.xxh3_64_hexdigest(payload).encode("ascii")
    head = b"%s %s %d" % (VALUE_VERSION, checksum, len(payload))
    if secret is not None:
        head += b" " + _mac(secret, key, payload)
    return head + b"\n" + payload


def _split_value(value: bytes) -> tuple[str, bytes, bytes | None] | None:
    """(text, payload, MAC or None) of a value whose version, length, checksum and UTF-8 hold."""
    head, newline, payload = value.partition(b"\n")
    fields = head.split(b" ")
    if not newline or len(fields) not in (3, 4) or fields[0] != VALUE_VERSION:
        return None
    length = fields[2]
    if not (length.isdigit() and int(length) == len(payload)):
        return None
    if xxhash.xxh3_64_hexdigest(payload).encode("ascii") != fields[1]:
        return None
    try:
        text = payload.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return text, payload, fields[3] if len(fields) == 4 else None


def decode_summary(value: bytes) -> str | None:
    """The summary stored in ``value``; None when its version, length or checksum is off
    (a MAC, if any, is not checked here: :class:`SummaryCache` with a secret does)."""
    split = _split_value(value)
    return None if split is None else split[0]


@dataclass
class _Flight:
    """A key being summarized in this process; later requests wait on ``done``."""

    done: anyio.Event = field(default_factory=anyio.Event)
    summary: str | None = None


class SummaryCache(StoreClient):
    """Summaries by key in ``store`` (default: an in-memory LRU).

    ``handler_id`` names what produces the summaries (``"openai:gpt-4o-mini v3"``):
    change it when the model or its settings change. ``summary_budget``: the summary
    size the handler is held to. ``ttl``: seconds entries live. ``lock_ttl``: how long
    another worker waits for the one summarizing a key before calling the handler
    itself. ``on_event`` hears every hit, miss and failure. ``secret``: entries are
    signed (HMAC-SHA256) and unsigned ones are misses (``cache_rejected``), for a store
    shared with writers you do not trust. ``breaker_seconds``: after a store failure
    (one ``cache_unavailable`` event) the store is left alone that long.

    Concurrent requests of one key call the handler once: within an event loop they
    wait on the first, across loops, threads and processes on the store's lock.
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
        secret: str | bytes | None = None,
        breaker_seconds: float = 30.0,
    ) -> None:
        if not isinstance(handler_id, str):
            raise TypeError(f"handler_id must be a str, not {type(handler_id).__name__}")
        for name, value in (
            ("ttl", ttl),
            ("lock_ttl", lock_ttl),
            ("poll_interval", poll_interval),
        ):
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if not isinstance(secret, str | bytes | None):
            raise TypeError(f"secret must be str or bytes, not {type(secret).__name__}")
        if secret is not None and not secret:
            raise ValueError("secret must not be empty")
        self.store: SummaryStore = MemoryStore() if store is None else store
        self.handler_id = handler_id
        self.summary_budget = summary_budget
        self.ttl = ttl
        self.lock_ttl = lock_ttl
        self.poll_interval = poll_interval
        self._secret = secret.encode("utf-8") if isinstance(secret, str) else secret
        self._flights: anyio.lowlevel.RunVar[dict[str, _Flight]] = anyio.lowlevel.RunVar(
            f"csum-cache-flights-{id(self)}"
        )
        super().__init__(breaker_seconds, StoreEventKind.CACHE_UNAVAILABLE, on_event)

    def __repr__(self) -> str:
        return f"SummaryCache({self.store!r}, handler_id={self.handler_id!r})"

    def key(self, prompt: str) -> str:
        """The key of ``prompt`` for this cache's handler and budget."""
        return cache_key(prompt, handler_id=self.handler_id, summary_budget=self.summary_budget)

    async def summarize(
        self,
        prompt: str,
        call: Callable[[], Awaitable[str]],
        *,
        emit: EventSink | None = None,
        accept: Accept | None = None,
    ) -> tuple[str, bool]:
        """(summary, whether it came from the cache) for ``prompt``; ``call()`` on a miss.

        ``accept`` checks a stored summary as a fresh answer is checked (a refused one is
        a miss, replaced). Exceptions of ``call`` propagate; store failures do not.
        """
        key = self.key(prompt)
        flights = self._flights.get({})  # the keys being summarized in the current event loop
        self._flights.set(flights)  # (an event is per loop)
        # A flight that failed wakes every waiter: the first to run starts the next
        # flight, the others wait on that one instead of each calling the handler.
        while (flight := flights.get(key)) is not None:
            await flight.done.wait()
            if flight.summary is not None and (accept is None or accept(flight.summary) is None):
                self._emit(emit, StoreEventKind.CACHE_HIT, key, "shared with a concurrent request")
                return flight.summary, True
            if flight.summary is not None:
                break  # taken by a request with other checks: this one asks on its own
        flight = _Flight()
        flights[key] = flight
        try:
            summary, hit = await self._lookup_or_call(key, call, emit, accept)
            flight.summary = summary
            return summary, hit
        finally:
            if flights.get(key) is flight:
                del flights[key]
            flight.done.set()

    async def _lookup_or_call(
        self,
        key: str,
        call: Callable[[], Awaitable[str]],
        emit: EventSink | None,
        accept: Accept | None = None,
    ) -> tuple[str, bool]:
        try:  # a skipped store raises too
            cached = await self._read(key, emit, accept=accept)
            if cached is not None:
                return cached, True
            token = secrets.token_hex(8)
            locked, found = await self._lock(key, token, emit, accept)
        except StoreSkippedError:
            return await call(), False
        if found is not None:
            return found, True
        try:
            summary = await call()
            value = encode_summary(summary, secret=self._secret, key=key)
            with suppress(StoreSkippedError):  # the store failed meanwhile (already reported)
                await self._use(emit, key, partial(self.store.set, key, value, self.ttl))
                self._emit(emit, StoreEventKind.CACHE_MISS, key)
            return summary, False
        finally:
            if locked:
                await self._release_shielded(key, token, emit)

    async def _read(
        self, key: str, emit: EventSink | None, *, again: bool = False, accept: Accept | None = None
    ) -> str | None:
        """The usable stored summary of ``key`` or None (reported unless read ``again``);
        :class:`StoreSkippedError` when the store fails or is skipped."""
        value = await self._use(emit, key, partial(self.store.get, key))
        if value is None:
            return None
        split = _split_value(value)
        kind, reason = StoreEventKind.CACHE_REJECTED, ""
        if split is None:
            kind = StoreEventKind.CACHE_CORRUPT
            reason = f"stored entry of {len(value)} bytes failed its version/length/checksum check"
        elif self._secret is not None and (
            split[2] is None or not hmac.compare_digest(split[2], _mac(self._secret, key, split[1]))
        ):
            reason = "stored entry is not signed with this cache's secret"
        elif accept is not None and (refused := accept(split[0])) is not None:
            reason = f"stored summary refused: {refused}"
        else:
            self._emit(emit, StoreEventKind.CACHE_HIT, key)
            return split[0]
        if not again:
            self._emit(emit, kind, key, reason)
        return None

    async def _lock(
        self, key: str, token: str, emit: EventSink | None, accept: Accept | None = None
    ) -> tuple[bool, str | None]:
        """(whether we hold the workers' lock on ``key``, the summary if one arrived):
        polls while another worker holds it, for at most ``lock_ttl``."""
        deadline = time.monotonic() + self.lock_ttl
        while True:
            if await self._use(emit, key, partial(self.store.acquire, key, token, self.lock_ttl)):
                # The holder may have stored its summary between our read and our lock.
                found = None
                with suppress(StoreSkippedError):
                    found = await self._read(key, emit, again=True, accept=accept)
                if found is not None:
                    await self._release_shielded(key, token, emit)
                    return False, found
                return True, None
            if time.monotonic() >= deadline:
                return False, None
            await anyio.sleep(self.poll_interval)
            found = await self._read(key, emit, again=True, accept=accept)
            if found is not None:
                return False, found

    async def _release_shielded(self, key: str, token: str, emit: EventSink | None) -> None:
        """Give the lock back, also when cancelled (else the next worker waits ``lock_ttl``)."""
        with anyio.move_on_after(RELEASE_TIMEOUT, shield=True):
            try:
                await self.store.release(key, token)
            except Exception as exc:  # noqa: BLE001 - the lock expires on its own
                self._failed(emit, key, exc)
