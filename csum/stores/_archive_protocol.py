"""The protocol every history-archive store implements: messages by session and reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ArchiveRecord", "ArchiveStore"]


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """One archived message: its reference and its JSON form.

    Stores keep nothing else; the text search looks at is derived from the JSON
    (:func:`csum.archive.search_text_of_json`) when needed.
    """

    reference: str
    body: bytes
    """The message as UTF-8 JSON (:func:`csum.archive.message_json`)."""


@runtime_checkable
class ArchiveStore(Protocol):
    """Where a :class:`csum.HistoryArchive` keeps the messages summarized away.

    Everything lives under a session name; deleting the session removes all of it.
    A batch is the ordered list of message references one summary covers.
    """

    name: str

    async def put(self, session: str, batch: str, records: Sequence[ArchiveRecord]) -> None:
        """Store ``records`` (a message already stored is kept once) and the batch."""
        ...

    async def get(self, session: str, reference: str) -> list[bytes]:
        """JSON bodies under ``reference``: a batch's messages in order, one message, or
        nothing when the reference is unknown."""
        ...

    async def search(self, session: str, text: str, limit: int) -> list[tuple[str, bytes]]:
        """(reference, JSON body) of up to ``limit`` messages whose text contains ``text``
        (case-insensitive), oldest first."""
        ...

    async def delete_session(self, session: str) -> int:
        """Delete every message and batch of ``session``; how many messages went."""
        ...

    async def aclose(self) -> None: ...
