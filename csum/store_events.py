"""What the stores share: how the summary cache and the history archive call their store
and the events they report (a store that fails never fails a compaction, it says so
here), and the strings of a message archive search (and the prompts) read."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar

from cast import Message, TextPart, ToolCall, ToolResult

__all__ = [
    "StoreClient",
    "StoreEvent",
    "StoreEventKind",
    "StoreSkippedError",
    "message_search_text",
    "message_strings",
    "redact_credentials",
    "search_text_of_json",
]

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/@\s:]*):([^/@\s]*)@")
"""``scheme://user:password@``: the password is what is hidden."""
_SECRET_PARAMETER = re.compile(r"(?i)([?&](?:password|passwd|pass|token|secret)=)[^&#\s]*")
"""``?password=...`` (redis-py takes the password as a URL parameter too)."""


def redact_credentials(text: str) -> str:
    """``text`` with every URL password replaced by ``***`` (``redis://:pw@host`` ->
    ``redis://:***@host``; ``?password=pw`` too). Store names, events, errors and
    ``repr`` pass through it, so a location is never shown with its secret."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", text)
    return _SECRET_PARAMETER.sub(lambda m: f"{m.group(1)}***", text)


class StoreEventKind(StrEnum):
    CACHE_HIT = "cache_hit"
    """A summary came from the store (or from a concurrent request of the same key)."""
    CACHE_MISS = "cache_miss"
    """No summary stored: the handler was called and its summary stored."""
    CACHE_UNAVAILABLE = "cache_unavailable"
    """The store failed (server down, file locked...): the handler was called instead."""
    CACHE_CORRUPT = "cache_corrupt"
    """A stored entry failed its version or checksum check: ignored and replaced."""
    CACHE_REJECTED = "cache_rejected"
    """A stored entry failed the checks a fresh answer gets (blank, over the size cap) or
    is not signed with the cache's secret: ignored (a miss) and replaced."""
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

    def __post_init__(self) -> None:
        # Whatever a store calls itself, an event never carries a URL's password.
        object.__setattr__(self, "store", redact_credentials(self.store))
        object.__setattr__(self, "detail", redact_credentials(self.detail))

    @property
    def failed(self) -> bool:
        """Whether this event reports a store failure."""
        return self.kind in {
            StoreEventKind.CACHE_UNAVAILABLE,
            StoreEventKind.CACHE_CORRUPT,
            StoreEventKind.CACHE_REJECTED,
            StoreEventKind.ARCHIVE_UNAVAILABLE,
        }


EventSink = Callable[[StoreEvent], None]
_T = TypeVar("_T")


class StoreSkippedError(Exception):
    """A store call failed (reported already) or was skipped: go on without the store."""


class _Store(Protocol):
    name: str

    async def aclose(self) -> None: ...


class StoreClient:
    """What the summary cache and the history archive share: each call of their store
    behind a circuit breaker (a failed store is left alone for ``breaker_seconds``, each
    failure reported once as ``failure``: a run goes on at handler speed instead of one
    store timeout per call), each :class:`StoreEvent` to the call's ``emit`` and to
    ``on_event``."""

    store: _Store

    def __init__(
        self, breaker_seconds: float, failure: StoreEventKind, on_event: EventSink | None
    ) -> None:
        if isinstance(breaker_seconds, bool) or not isinstance(breaker_seconds, int | float):
            raise TypeError(f"breaker_seconds must be a number, not {breaker_seconds!r}")
        if not breaker_seconds > 0:
            raise ValueError(f"breaker_seconds must be positive, not {breaker_seconds!r}")
        self._breaker_seconds = breaker_seconds
        self._breaker_until = 0.0
        self._breaker_lock = threading.Lock()  # requests of other threads may fail meanwhile
        self._failure = failure
        self.on_event = on_event

    async def aclose(self) -> None:
        """Close the store's connections."""
        await self.store.aclose()

    async def _use(self, emit: EventSink | None, key: str, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call()`` on the store; :class:`StoreSkippedError` when it fails or is skipped."""
        if time.monotonic() < self._breaker_until:
            raise StoreSkippedError
        try:
            return await call()
        except Exception as exc:
            self._failed(emit, key, exc)
            raise StoreSkippedError from exc

    def _failed(self, emit: EventSink | None, key: str, exc: Exception) -> None:
        """Report a store failure unless one was meanwhile, and leave the store alone."""
        with self._breaker_lock:
            if time.monotonic() < self._breaker_until:
                return
            self._breaker_until = time.monotonic() + self._breaker_seconds
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())  # (StoreEvent redacts it)
        detail += f"; store skipped for {self._breaker_seconds:g} s"
        self._emit(emit, self._failure, key, detail)

    def _emit(
        self, emit: EventSink | None, kind: StoreEventKind, key: str = "", detail: str = ""
    ) -> None:
        event = StoreEvent(kind, self.store.name, key, detail)
        for sink in (emit, self.on_event):
            if sink is not None:
                sink(event)


def message_strings(
    message: Message, *, argument_values: bool = False, call: str = "{}({})"
) -> list[str]:
    """The text of each text part, tool call (``call`` formatted with its name and
    arguments) and tool result. With ``argument_values`` a call gives the string values
    of its JSON arguments instead (what the agent passed, not the tool's parameter names,
    which are the same in every call); the raw arguments when they are not JSON."""
    out: list[str] = []
    for part in message.parts:
        if type(part) is TextPart:
            out.append(part.text)
        elif type(part) is ToolCall and not argument_values:
            out.append(call.format(part.name, part.arguments))
        elif type(part) is ToolCall:
            try:
                out.extend(_json_strings(json.loads(part.arguments)))
            except ValueError:
                out.append(part.arguments)
        elif type(part) is ToolResult:
            out.append(part.content)
    return out


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _json_strings(item)


def message_search_text(message: Message) -> str:
    """What search looks at: each text, tool call (name and arguments) and tool result."""
    return "\n".join(message_strings(message, call="{} {}"))


def search_text_of_json(body: bytes) -> str:
    """:func:`message_search_text` of a stored JSON body (what stores index and match)."""
    return message_search_text(Message.model_validate_json(body))
