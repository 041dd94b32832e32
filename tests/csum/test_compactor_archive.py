"""The Compactor with a history archive: everything an agent loop over a real corpus
chain summarizes away can be recalled through the references its summaries carry; a
failing archive gives events and the compaction completes; re-insertion puts archived
lines back only within the budget. On SQLite files and a real redis-server, on asyncio
and trio."""

from __future__ import annotations

import io
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

import csum.cli
from archive_recall import recall_all, references_in
from cast import Message, Role, TextPart
from csum import (
    Budget,
    CompactionEvent,
    Compactor,
    HistoryArchive,
    StoreEvent,
    StoreEventKind,
    Stores,
)
from csum.archive import REINSERTED_HEADER, archived_references, question_identifiers, recalled_text
from csum.config import SUMMARY_ONLY, Clearing, as_budget
from csum.store_events import message_search_text
from csum.stores import RedisArchiveStore, SQLiteArchiveStore
from redis_server import needs_redis_client
from tests.csum.test_cache import corpus_chains


@pytest.fixture(params=["sqlite", "redis"])
async def archive(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[HistoryArchive]:
    if request.param == "sqlite":
        made = HistoryArchive(SQLiteArchiveStore(tmp_path / "archive.sqlite"), session="test")
    else:  # a session of its own on the shared server
        store = RedisArchiveStore(request.getfixturevalue("redis_url"))
        made = HistoryArchive(store, session=uuid.uuid4().hex)
    try:
        yield made
    finally:
        await made.delete_session()
        await made.aclose()


def turns(chain: list[Message]) -> list[list[Message]]:
    """The chain cut where an agent calls its model: before every AI message (after the
    question or the tool results it answers)."""
    steps: list[list[Message]] = []
    current: list[Message] = []
    for message in chain:
        if message.role is Role.AI and current:
            steps.append(current)
            current = []
        current.append(message)
    steps.append(current)
    return steps


async def run_loop(
    compactor: Compactor, chain: list[Message], heard: list[StoreEvent] | None = None
) -> tuple[list[Message], list[CompactionEvent]]:
    """Feed ``chain`` turn by turn, each time on top of the previous result; the store
    events of every call go to ``heard``."""
    events: list[CompactionEvent] = []
    history: list[Message] = []
    for step in turns(chain):
        result = await compactor.run([*history, *step])
        events.extend(result.events)
        if heard is not None:
            heard.extend(result.store_events)
        history = result.messages
    return history, events


def long_chain() -> list[Message]:
    """The longest of the real tau-bench chains."""
    return max(corpus_chains(40), key=len)


def tight(chain: list[Message], share: int) -> int:
    """A byte budget: the system prompt and 1/``share`` of the rest of ``chain``."""
    system = chain[0].size
    return system + (sum(m.size for m in chain) - system) // share


@pytest.mark.anyio
async def test_everything_summarized_away_is_recallable(archive: HistoryArchive) -> None:
    chain = long_chain()
    budget = tight(chain, 4)
    compactor = Compactor(
        budget=SUMMARY_ONLY.budget(budget).evolve(cooldown_turns=1),
        clearing=SUMMARY_ONLY.clearing,
        stores=Stores(archive=archive),
    )
    out, events = await run_loop(compactor, chain)
    events = [e for e in events if e.summarized_messages]
    assert len(events) >= 3  # several compactions, later ones summarizing summaries
    assert max(e.depth for e in events) >= 2
    for event in events:
        assert event.handler_calls == 1
        kinds = [e.kind for e in event.store_events]
        assert kinds == [StoreEventKind.ARCHIVED], kinds
        assert event.archived_messages >= event.summarized_messages > 0
    assert sum(m.size for m in out) <= budget
    recalled = await recall_all(archive, out)
    kept = set(out)
    gone = [m for m in chain if m not in kept]
    assert len(gone) > len(chain) // 2
    missing = [m for m in gone if m not in set(recalled)]
    assert missing == []
    # Every summary in the output names its batch on its last line.
    summaries = [m for m in out if "[archived: " in message_search_text(m)]
    assert summaries


@pytest.mark.anyio
async def test_everything_cleared_or_summarized_away_is_recallable(
    archive: HistoryArchive,
) -> None:
    """With clearing (keeping the newest 3 tool uses, given explicitly: this chain has
    too few for the defaults' 10): a compaction archives the results it clears, then
    what its summary replaces, and every message no longer in the chain whole comes back
    from the references the chain names."""
    chain = long_chain()
    budget = tight(chain, 4)
    compactor = Compactor(
        budget=Budget.bytes(budget, keep_ratio=0.1, summary_ratio=1 / 64, cooldown_turns=1),
        stores=Stores(archive=archive),
        clearing=Clearing(keep=3),
    )
    out, events = await run_loop(compactor, chain)
    assert sum(e.cleared_results for e in events) > 0
    assert sum(1 for e in events if e.summarized_messages) >= 2
    for event in events:
        kinds = [e.kind for e in event.store_events]
        assert set(kinds) <= {StoreEventKind.ARCHIVED}, kinds
        assert len(kinds) == bool(event.cleared_results) + bool(event.summarized_messages)
    assert sum(m.size for m in out) <= budget
    recalled = set(await recall_all(archive, out))
    kept = set(out)
    gone = [m for m in chain if m not in kept]
    assert len(gone) > len(chain) // 2
    assert [m for m in gone if m not in recalled] == []


@pytest.mark.anyio
async def test_summary_cut_to_fit_keeps_its_archive_line(tmp_path: Path) -> None:
    chain = long_chain()
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test")

    async def chatty(prompt: str) -> str:  # a summary far longer than the room left
        return "x" * len(prompt)

    result = await Compactor(chatty, budget=tight(chain, 3), stores=Stores(archive=archive)).run(
        chain, force=True
    )
    (event,) = result.events
    assert event.summary_truncated
    assert not result.over_budget
    references = references_in(result.messages)
    assert len(references) == 1
    assert len(await archive.recall(references[0])) == event.archived_messages
    await archive.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["folder", pytest.param("redis-down", marks=needs_redis_client)])
async def test_failing_archive_gives_events_and_the_compaction_completes(
    tmp_path: Path, where: str
) -> None:
    heard: list[StoreEvent] = []
    store = SQLiteArchiveStore(tmp_path) if where == "folder" else "redis://127.0.0.1:9/0"
    # Every failure reported: the circuit breaker's window made too short to matter.
    archive = HistoryArchive(
        store, session="test", reinsert_bytes=2000, on_event=heard.append, breaker_seconds=1e-9
    )
    chain = long_chain()
    budget = tight(chain, 4)
    plain_out, plain_events = await run_loop(
        Compactor(budget=as_budget(budget).evolve(cooldown_turns=1)), chain
    )
    reported: list[StoreEvent] = []
    compactor = Compactor(
        budget=as_budget(budget).evolve(cooldown_turns=1), stores=Stores(archive=archive)
    )
    out, events = await run_loop(compactor, chain, reported)
    assert out == plain_out  # no references named: nothing was stored, nothing re-inserted
    assert len(events) == len(plain_events) > 0
    for event in events:
        assert event.store_events
        assert all(e.kind is StoreEventKind.ARCHIVE_UNAVAILABLE for e in event.store_events)
        assert event.archived_messages == 0
        assert event.reinserted_bytes == 0
    assert heard == reported
    # Re-insertion also looked at each new question between compactions, and failed.
    assert {e.kind for e in reported} == {StoreEventKind.ARCHIVE_UNAVAILABLE}
    assert len(reported) > sum(len(e.store_events) for e in events)
    await archive.aclose()
    # With the default window, the store fails once and is left alone after that.
    store = SQLiteArchiveStore(tmp_path) if where == "folder" else "redis://127.0.0.1:9/0"
    once = HistoryArchive(store, session="test", reinsert_bytes=2000)
    reported = []
    compactor = Compactor(
        budget=as_budget(budget).evolve(cooldown_turns=1), stores=Stores(archive=once)
    )
    out, events = await run_loop(compactor, chain, reported)
    assert out == plain_out
    assert [e.kind for e in reported] == [StoreEventKind.ARCHIVE_UNAVAILABLE]
    await once.aclose()


def question_needing_the_archive(chain: list[Message], out: list[Message]) -> tuple[str, str]:
    """(question, identifier): a question naming an identifier found only in what
    ``out`` no longer holds."""
    held = "\n".join(message_search_text(m) for m in out)
    for message in chain:
        if message in out:
            continue
        for identifier in question_identifiers(message_search_text(message)):
            if identifier not in held and len(identifier) >= 6:
                return f"Earlier you saw {identifier}: what was it about?", identifier
    pytest.fail("the compaction left out no identifier")


@pytest.mark.anyio
@pytest.mark.parametrize("unit", ["bytes", "tokens"])
async def test_reinsertion_puts_lines_back_within_the_budget(
    archive: HistoryArchive, unit: str
) -> None:
    chain = long_chain()
    archive.reinsert_bytes = 1500
    limit = tight(chain, 2)
    budget = Budget.bytes(limit) if unit == "bytes" else Budget.tokens(limit // 4)
    compactor = Compactor(budget=budget, stores=Stores(archive=archive))
    first = await compactor.run(chain, force=True)
    question, identifier = question_needing_the_archive(chain, first.messages)
    asked = [*first.messages, Message.human(question)]
    second = await compactor.run(asked, force=True)
    (event,) = second.events
    added = recalled_text(second.messages)
    assert added.count(REINSERTED_HEADER) == 1
    assert identifier in added
    assert Message.human(question) in second.messages  # the question as it was asked
    assert event.reinserted_bytes > 0
    assert not second.over_budget
    assert second.size_after <= budget.limit
    assert event.bytes_after == sum(m.size for m in second.messages)


@pytest.mark.anyio
@pytest.mark.parametrize("unit", ["bytes", "tokens"])
async def test_reinsertion_never_takes_more_than_the_room_left(tmp_path: Path, unit: str) -> None:
    chain = long_chain()
    archive = HistoryArchive(tmp_path / "a.sqlite", session="test", reinsert_bytes=10**6)
    first = await Compactor(budget=tight(chain, 3), stores=Stores(archive=archive)).run(
        chain, force=True
    )
    question, _ = question_needing_the_archive(chain, first.messages)
    asked = [*first.messages, Message.human(question)]
    # Budgets from below to above what the compacted chain needs: re-insertion shrinks to
    # the room left (far less than the 1 MB it may take), so the chain always fits.
    low, high = tight(chain, 8), tight(chain, 2)
    fits = reinserted = 0
    for limit in range(low, high, max(1, (high - low) // 20)):
        budget = Budget.bytes(limit) if unit == "bytes" else Budget.tokens(limit // 4)
        compactor = Compactor(
            budget=as_budget(budget).evolve(keep_ratio=1.0, summary_reserve=0),
            stores=Stores(archive=archive),
        )
        result = await compactor.run(asked, force=True)
        if result.over_budget:
            continue
        fits += 1
        reinserted += result.reinserted_bytes > 0
        assert result.size_after <= budget.limit
    assert fits > 3
    assert reinserted > 3
    await archive.aclose()


def test_cli_archive_in_compactor_mode(tmp_path: Path) -> None:
    path = tmp_path / "archive.sqlite"
    out_file = tmp_path / "out.json"
    err = io.StringIO()
    argv = ["summarize", "--example", "--budget", "20KiB", "--archive", str(path)]
    argv += ["--session", "ticket-1", "-o"]
    assert csum.cli.main([*argv, str(out_file)], stdout=io.StringIO(), stderr=err) == 0
    assert "batches archived" in err.getvalue()
    text = out_file.read_text(encoding="utf-8")
    references = archived_references(text)
    assert references

    async def recall() -> list[Message]:
        archive = HistoryArchive(path, session="ticket-1")
        try:
            return await archive.recall(references[0])
        finally:
            await archive.aclose()

    assert anyio.run(recall)


def test_archive_must_be_a_history_archive() -> None:
    with pytest.raises(TypeError, match=r"archive must be a csum\.HistoryArchive"):
        Compactor(budget=1000, stores=Stores(archive="archive.sqlite"))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_question_leaves_for_the_archive_as_its_own_text(tmp_path: Path) -> None:
    """The lines re-insertion put into a question are copies of archived messages: when
    the question itself leaves the chain, the archive takes its own text only."""
    chain = long_chain()
    archive = HistoryArchive(tmp_path / "a.sqlite", session="test", reinsert_bytes=1500)
    first = await Compactor(budget=tight(chain, 2), stores=Stores(archive=archive)).run(
        chain, force=True
    )
    question, _ = question_needing_the_archive(chain, first.messages)
    asked = await Compactor(budget=tight(chain, 2), stores=Stores(archive=archive)).run(
        [*first.messages, Message.human(question)], force=True
    )
    assert recalled_text(asked.messages).startswith(REINSERTED_HEADER)
    answer = Message.ai("Here is what I found. " * 40)
    later = [*asked.messages, answer, Message.human("Go on."), Message.ai("Done.")]
    gone = await Compactor(budget=tight(chain, 6), stores=Stores(archive=archive)).run(
        later, force=True
    )
    assert answer not in gone.messages  # the question's whole turn left the chain
    everything = await recall_all(archive, gone.messages)
    # The recall pair left with its turn as copies: the archive did not take it again.
    assert not any(REINSERTED_HEADER in message_search_text(m) for m in everything)
    recalled = [m for m in everything if m.role is Role.HUMAN]
    mine = [m for m in recalled if question in message_search_text(m)]
    assert mine, "the question left the chain without reaching the archive"
    for message in mine:
        texts = [p.text for p in message.parts if isinstance(p, TextPart)]
        assert texts == [question]
    await archive.aclose()
