"""Following a chain's archive references down to every original message, as an agent
would: a summary folded into a later summary is archived in turn, its line included."""

from __future__ import annotations

from collections.abc import Sequence

from cast import Message
from csum import HistoryArchive
from csum.archive import archived_references
from csum.store_events import message_search_text


def references_in(messages: Sequence[Message]) -> list[str]:
    """Every ``[archived: ...]`` reference the messages' texts name, in order."""
    return [r for m in messages for r in archived_references(message_search_text(m))]


async def recall_all(archive: HistoryArchive, messages: Sequence[Message]) -> list[Message]:
    """Every archived message reachable from the references in ``messages``, following
    the references of recalled messages too; a reference recalling nothing fails."""
    found: list[Message] = []
    pending = references_in(messages)
    seen: set[str] = set()
    while pending:
        reference = pending.pop()
        if reference in seen:
            continue
        seen.add(reference)
        batch = await archive.recall(reference)
        assert batch, f"reference {reference} recalls nothing"
        found.extend(batch)
        pending.extend(references_in(batch))
    return found
