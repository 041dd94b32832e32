"""The history archive: what a compaction summarizes away stays retrievable.

Every message a summary replaces is stored under a reference derived from its content
(xxh3-64 of its JSON form: the same message always gets the same reference), and the
batch of messages one summary covers gets a reference of its own. The summary text
ends with a line naming that batch, ``[archived: 3f9c0a1b2c3d4e5f]``, so an agent (or
its ``recall`` tool, :mod:`csum.recall`) can fetch the originals back with
:meth:`HistoryArchive.recall`, or find them with :meth:`HistoryArchive.search`.

Stores hold nothing but what they were given, per session: :meth:`HistoryArchive.
delete_session` removes all of it in one call.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import xxhash
from pydantic import TypeAdapter

from cast import Message, ProviderProfile
from csum._search_text import message_search_text, search_text_of_json
from csum.reinsert import Insertion, archived_insertion, reinsert_archived
from csum.store_events import StoreEvent, StoreEventKind, failure_detail
from csum.stores import is_redis_url
from csum.stores._protocol import ArchiveRecord, ArchiveStore
from csum.stores._redis import RedisArchiveStore
from csum.stores._sqlite import SQLiteArchiveStore

__all__ = [
    "ARCHIVE_LINE_PREFIX",
    "MAX_QUERY_CHARS",
    "ArchiveHit",
    "ArchiveRecord",
    "ArchiveStore",
    "HistoryArchive",
    "RedisArchiveStore",
    "SQLiteArchiveStore",
    "archive_line",
    "archived_references",
    "batch_reference",
    "message_json",
    "message_reference",
    "message_search_text",
    "search_text_of_json",
    "split_archive_line",
]

MAX_QUERY_CHARS: Final = 1000
"""Longest text :meth:`HistoryArchive.search` takes (an identifier, a path, an error
line); longer ones are a ``ValueError``, not a scan SQLite may refuse."""
_REFERENCE = re.compile(r"[0-9a-f]{16}")

ARCHIVE_LINE_PREFIX: Final = "[archived: "
"""Start of the line a summary ends with, naming the archived batch it replaced."""
_LINE = re.compile(r"\[archived: ([0-9a-f]{16}(?: [0-9a-f]{16})*)\]")

EventSink = Callable[[StoreEvent], None]


_MESSAGE_JSON: Final = TypeAdapter(Message)
"""Serializes a message straight to UTF-8 JSON bytes (what stores keep and hash)."""


def message_json(message: Message) -> bytes:
    """The JSON form of a message, as stored and hashed (``Message.model_dump_json``)."""
    return _MESSAGE_JSON.dump_json(message)


def message_reference(message: Message) -> str:
    """The stable reference of a message: 16 hex digits of xxh3-64 of its JSON form."""
    return xxhash.xxh3_64_hexdigest(message_json(message))


def batch_reference(references: Sequence[str]) -> str:
    """The reference of an ordered batch of messages (what one summary covers)."""
    return xxhash.xxh3_64_hexdigest(("batch\x1f" + " ".join(references)).encode("ascii"))


def archive_line(*references: str) -> str:
    """The line a summary carries: ``[archived: REF ...]``."""
    return f"{ARCHIVE_LINE_PREFIX}{' '.join(references)}]"


def split_archive_line(text: str) -> tuple[str, str]:
    """(summary, its final ``[archived: ...]`` line); ("", the line) when the text is
    that line alone; (text, "") when it has none."""
    at = text.rfind("\n" + ARCHIVE_LINE_PREFIX)
    start = at + 1 if at >= 0 else 0
    if (
        not text.startswith(ARCHIVE_LINE_PREFIX, start)
        or not text.endswith("]")
        or "\n" in text[start:]
    ):
        return text, ""
    return text[: max(at, 0)], text[start:]


def archived_references(text: str) -> list[str]:
    """Every archive reference named in ``text`` (a summary, a chain's text), in order."""
    return [ref for match in _LINE.finditer(text) for ref in match.group(1).split()]


def _record(message: Message) -> ArchiveRecord:
    body = message_json(message)
    return ArchiveRecord(xxhash.xxh3_64_hexdigest(body), body)


def _check_query(text: object) -> None:
    """Refuse a search text no store can take (the reason, never the text, is said)."""
    if not isinstance(text, str):
        raise TypeError(f"the search query must be a str, not {type(text).__name__}")
    if not text.strip():
        raise ValueError("the search query must not be blank")
    if len(text) > MAX_QUERY_CHARS:
        raise ValueError(
            f"the search query is {len(text)} characters long: at most {MAX_QUERY_CHARS}"
        )
    if "\x00" in text:
        raise ValueError(f"the search query holds a NUL character at {text.index(chr(0))}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"the search query holds a lone surrogate at {exc.start}: not valid Unicode text"
        ) from None


@dataclass(frozen=True, slots=True)
class ArchiveHit:
    """A message found by :meth:`HistoryArchive.search`, with its lines that matched."""

    reference: str
    message: Message
    lines: tuple[str, ...]


class HistoryArchive:
    """The messages summarized away in one session, kept in ``store``.

    ``store``: an :class:`ArchiveStore`, or a location: a SQLite file path (the
    default kind) or a ``redis://`` URL. ``session`` (required: there is no shared
    default a second tenant could fall into) names whose messages these are: recall,
    search, re-insertion and deletion see this session only. ``reinsert_bytes`` > 0
    turns on re-insertion (:meth:`reinsert`) in the summarizer and the Compactor, up
    to that many bytes per call (off: 0; the Compactor takes less when its budget
    leaves less room).
    ``on_event`` hears what was archived and every store failure. After a failure
    while archiving or re-inserting (one ``archive_unavailable`` event), the store is
    left alone for ``breaker_seconds``: summaries then carry no archive line and
    questions get nothing re-inserted, at handler speed instead of one store timeout
    per summary. ``recall``, ``search`` and ``add`` always ask the store.
    """

    def __init__(
        self,
        store: ArchiveStore | str | Path,
        *,
        session: str,
        reinsert_bytes: int = 0,
        on_event: EventSink | None = None,
        breaker_seconds: float = 30.0,
    ) -> None:
        if not isinstance(session, str) or not session:
            raise ValueError(f"session must be a non-empty string, not {session!r}")
        if isinstance(reinsert_bytes, bool) or not isinstance(reinsert_bytes, int):
            raise TypeError(f"reinsert_bytes must be an int, not {reinsert_bytes!r}")
        if reinsert_bytes < 0:
            raise ValueError(f"reinsert_bytes must be 0 (off) or positive, not {reinsert_bytes}")
        if isinstance(breaker_seconds, bool) or not isinstance(breaker_seconds, int | float):
            raise TypeError(f"breaker_seconds must be a number, not {breaker_seconds!r}")
        if not breaker_seconds > 0:
            raise ValueError(f"breaker_seconds must be positive, not {breaker_seconds!r}")
        if isinstance(store, str) and is_redis_url(store):
            store = RedisArchiveStore(store)
        elif isinstance(store, str | Path):
            store = SQLiteArchiveStore(store)
        self.store: ArchiveStore = store
        self.session = session
        self.reinsert_bytes = reinsert_bytes
        self.on_event = on_event
        self.breaker_seconds = breaker_seconds
        self._skip_until = 0.0

    def __repr__(self) -> str:
        return f"HistoryArchive({self.store!r}, session={self.session!r})"

    async def add(self, messages: Iterable[Message]) -> str:
        """Archive ``messages`` as one batch; its reference. Store failures raise."""
        records = [_record(m) for m in messages]
        batch = batch_reference([r.reference for r in records])
        await self.store.put(self.session, batch, records)
        return batch

    async def add_summarized(
        self, messages: Sequence[Message], emit: EventSink | None = None
    ) -> str | None:
        """Archive what a summary replaces; the line the summary should end with.

        A store failure is reported as an event and gives None: the summary then names
        no reference (the compaction goes on); so does a store that failed less than
        ``breaker_seconds`` ago, silently.
        """
        if self._store_skipped():
            return None
        try:
            batch = await self.add(messages)
        except Exception as exc:  # noqa: BLE001 - a store failure must not fail a compaction
            self._failed(emit, exc)
            return None
        detail = f"{len(messages)} messages"
        self._emit(emit, StoreEvent(StoreEventKind.ARCHIVED, self.store.name, batch, detail))
        return archive_line(batch)

    async def recall(self, reference: str) -> list[Message]:
        """The messages under ``reference`` (a batch in order, or one message); [] if
        unknown. Anything but 16 hex digits (spaces around them aside) is a
        ``ValueError`` saying so."""
        if not isinstance(reference, str):
            raise TypeError(f"reference must be a str, not {type(reference).__name__}")
        wanted = reference.strip()
        if not _REFERENCE.fullmatch(wanted):
            raise ValueError(
                f"not an archive reference ({len(reference)} characters): "
                "a reference is 16 hex digits, as in an [archived: ...] line"
            )
        bodies = await self.store.get(self.session, wanted)
        return [Message.model_validate_json(body) for body in bodies]

    async def search(self, text: str, *, limit: int = 20) -> list[ArchiveHit]:
        """Archived messages containing ``text`` (case-insensitive substring), oldest
        first. A blank text, one holding NUL or a lone surrogate (no UTF-8 form), or one
        longer than :data:`MAX_QUERY_CHARS` is a ``ValueError`` naming what is wrong;
        ``limit`` must be a positive int."""
        _check_query(text)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, not {limit!r}")
        needle = text.casefold()
        hits = []
        for reference, body in await self.store.search(self.session, text, limit):
            message = Message.model_validate_json(body)
            searchable = message_search_text(message)
            lines = tuple(line for line in searchable.splitlines() if needle in line.casefold())
            hits.append(ArchiveHit(reference, message, lines))
        return hits

    async def delete_session(self) -> int:
        """Delete everything archived in this session; how many messages went."""
        return await self.store.delete_session(self.session)

    async def reinsert(
        self,
        messages: Sequence[Message],
        *,
        max_bytes: int | None = None,
        target: str | ProviderProfile | None = None,
    ) -> list[Message]:
        """``messages`` with archived lines the last question needs put back (see
        :func:`csum.reinsert.reinsert_archived`: a synthetic recall pair, or an
        assistant turn for a ``target`` that refuses undeclared tool calls); the input
        list when nothing is."""
        limit = self.reinsert_bytes if max_bytes is None else max_bytes
        return await reinsert_archived(self, messages, max_bytes=limit, target=target)

    async def insertion_reporting(
        self,
        messages: Sequence[Message],
        *,
        max_bytes: int,
        emit: EventSink | None = None,
        target: str | ProviderProfile | None = None,
    ) -> Insertion | None:
        """What :meth:`reinsert` would put back into ``messages``, for a keeper that
        inserts it into its own form of the chain; a store failure is reported as an
        event and gives None instead of raising (as does a store that failed less than
        ``breaker_seconds`` ago)."""
        if self._store_skipped():
            return None
        try:
            return await archived_insertion(self, messages, max_bytes=max_bytes, target=target)
        except Exception as exc:  # noqa: BLE001 - a store failure must not fail a compaction
            self._failed(emit, exc)
            return None

    def _store_skipped(self) -> bool:
        return time.monotonic() < self._skip_until

    def _failed(self, emit: EventSink | None, exc: Exception) -> None:
        """Report a store failure once and leave the store alone for
        ``breaker_seconds``."""
        if self._store_skipped():
            return
        self._skip_until = time.monotonic() + self.breaker_seconds
        detail = f"{failure_detail(exc)}; store skipped for {self.breaker_seconds:g} s"
        event = StoreEvent(StoreEventKind.ARCHIVE_UNAVAILABLE, self.store.name, "", detail)
        self._emit(emit, event)

    async def aclose(self) -> None:
        """Close the store's connections."""
        await self.store.aclose()

    def _emit(self, emit: EventSink | None, event: StoreEvent) -> None:
        if emit is not None:
            emit(event)
        if self.on_event is not None:
            self.on_event(event)
