"""Re-insertion finds what a question names in the archive robustly: kebab-case names,
whole-token matches, a window around the name in a long line (real tau-bench JSON
records), statements before questions, the rarest name served first, and names the
chain still mentions without what was said about them. On a SQLite file and a real
redis-server, on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cast import Message, Role
from csum import HistoryArchive
from csum.archive import REINSERTED_HEADER, question_identifiers, recalled_text
from csum.store_events import message_search_text
from tests.csum import test_compactor_archive
from tests.csum.test_cache import corpus_chains

archive = test_compactor_archive.archive
"""The archive fixture: a SQLite file and a session on a real redis-server."""


def added_text(messages: list[Message]) -> str:
    """The re-inserted block (the synthetic recall result; "" when there is none)."""
    found = recalled_text(messages)
    assert found.count(REINSERTED_HEADER) <= 1
    return found


def test_kebab_case_names_are_identifiers() -> None:
    found = question_identifiers("Pin typing-extensions and rerun drop-oldest, well, e-mail it.")
    assert "typing-extensions" in found
    assert "drop-oldest" in found
    assert "e-mail" not in found  # a one-letter part is a word, not a name
    assert "Pin" not in found
    assert "well" not in found


def reservation_records() -> tuple[list[Message], dict[str, Any], str]:
    """A real tau-bench chain holding reservation records as one-line JSON tool results
    of 600+ bytes, one such record parsed, and one of its flight numbers."""
    for chain in corpus_chains(25)[::-1]:
        for message in chain:
            if message.role is not Role.TOOL:
                continue
            text = message_search_text(message)
            if len(text) < 600 or not text.startswith('{"reservation_id"'):
                continue
            record = json.loads(text)
            flights = record.get("flights") or []
            if len(flights) >= 2 and "price" in flights[1]:
                return chain, record, flights[1]["flight_number"]
    pytest.skip("no reservation record with two priced flights in the corpus")


@pytest.mark.anyio
async def test_a_long_record_comes_back_as_a_window_around_the_names(
    archive: HistoryArchive,
) -> None:
    chain, record, flight = reservation_records()
    reservation = record["reservation_id"]
    await archive.add([m for m in chain if m.role is not Role.SYSTEM])
    # The chain still names the reservation (the summary kept the name, not the record):
    # re-insertion looks it up all the same.
    asked = [
        chain[0],
        Message.human(f"Please downgrade reservation {reservation}."),
        Message.ai(f"I looked at reservation {reservation} earlier."),
        Message.human(f"What did flight {flight} cost on reservation {reservation}?"),
    ]
    snapshot = list(asked)
    back = await archive.reinsert(asked, max_bytes=1200)
    assert asked == snapshot
    text = added_text(back)
    assert len(text.encode()) <= 1200
    entries = text.splitlines()[1:]
    assert entries
    # The best entry is the record itself, cut around both names with the cut marked:
    # the flight's price sits right after its number.
    first = entries[0]
    assert reservation in first
    assert flight in first
    price = next(f["price"] for f in record["flights"] if f["flight_number"] == flight)
    assert f'"price": {price}' in first
    assert "…" in first
    assert len(first.encode()) < 600
    # Nothing the chain holds verbatim is put back, and running again adds nothing.
    assert await archive.reinsert(back, max_bytes=1200) is back


@pytest.mark.anyio
async def test_the_rarest_name_comes_first_in_a_small_room(archive: HistoryArchive) -> None:
    chain, record, _ = reservation_records()
    reservation, user = record["reservation_id"], record["user_id"]
    await archive.add([m for m in chain if m.role is not Role.SYSTEM])
    everywhere = len(await archive.search(user, limit=100))
    only = len(await archive.search(reservation, limit=100))
    assert everywhere > only  # the user id is in every record, the reservation in few
    asked = [Message.human(f"For {user}: what about {reservation}?")]
    text = added_text(await archive.reinsert(asked, max_bytes=500))
    entries = text.splitlines()[1:]
    assert entries
    assert reservation in entries[0]


@pytest.mark.anyio
async def test_whole_tokens_statements_first(archive: HistoryArchive) -> None:
    await archive.add(
        [
            Message.human("Why does cache_12 keep failing?"),
            Message.ai("cache_123 is fine: it answered in 4 ms."),
            Message.ai("cache_12 failed: disk quota exceeded on node 7."),
            Message.ai("Restarted cache_12 and it came back."),
        ]
    )
    text = added_text(
        await archive.reinsert([Message.human("What happened to cache_12?")], max_bytes=400)
    )
    entries = [line.split(") ", 1)[1] for line in text.splitlines()[1:]]
    assert "cache_123 is fine: it answered in 4 ms." not in entries  # another name
    # The statement holding a value first, the question that restates the name last.
    assert entries[0] == "cache_12 failed: disk quota exceeded on node 7."
    assert entries[-1] == "Why does cache_12 keep failing?"
    assert len(entries) == 3


@pytest.mark.anyio
async def test_the_part_never_exceeds_the_limit(archive: HistoryArchive) -> None:
    chain, record, flight = reservation_records()
    await archive.add([m for m in chain if m.role is not Role.SYSTEM])
    question = f"Flight {flight}, reservation {record['reservation_id']}, user {record['user_id']}?"
    asked = [Message.human(question)]
    sizes = []
    for limit in range(0, 3000, 97):
        back = await archive.reinsert(asked, max_bytes=limit)
        text = added_text(back)
        assert len(text.encode()) <= limit
        assert back is asked or back[0].parts[0] == asked[0].parts[0]  # its own text kept
        sizes.append(len(text.encode()))
    assert sizes[-1] > 2000  # the room is used
