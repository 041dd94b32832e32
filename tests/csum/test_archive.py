"""The history archive: what a compaction summarizes away is stored under content
references, named in the summary, recalled, searched, re-inserted and deleted; on SQLite
files (FTS5 and LIKE) and a real redis-server, on asyncio and trio."""

from __future__ import annotations

import json
import multiprocessing
import re
import sqlite3
import time
from pathlib import Path

import anyio
import pytest
from pydantic import TypeAdapter

from archive_recall import recall_all
from cast import Message, Role, ToolCall
from csum import (
    RECALL_TOOL_NAME,
    SUMMARIZED_CONTENT_PREFIX,
    HistoryArchive,
    RecallTool,
    StoreEvent,
    StoreEventKind,
    Stores,
    Summarizer,
    SummarizerConfig,
    SummaryCache,
    is_summarized,
    recall_tool_definition,
)
from csum.archive import (
    REINSERTED_HEADER,
    archive_line,
    archived_references,
    message_reference,
    question_identifiers,
    recalled_text,
    split_archive_line,
)
from csum.store_events import message_search_text
from csum.stores import ArchiveStore, SQLiteArchiveStore
from store_workers import count_rows, open_at, write_archive
from tests.csum.test_cache import CountingHandler, corpus_chains

CONFIG = {"last_section_bytes": 4096, "max_body_pair_bytes": 2048}


def summary_texts(messages: list[Message]) -> list[str]:
    return [message_search_text(m) for m in messages if archived_references(message_search_text(m))]


# -- references ------------------------------------------------------------------------------


def test_references_are_derived_from_content() -> None:
    a = Message.ai("ls -la /etc")
    assert message_reference(a) == message_reference(Message.ai("ls -la /etc"))
    assert message_reference(a) != message_reference(Message.ai("ls -la /etc "))
    assert message_reference(a) != message_reference(Message.human("ls -la /etc"))
    assert len(message_reference(a)) == 16
    line = archive_line("0123456789abcdef", "fedcba9876543210")
    assert archived_references(f"text\n{line}") == ["0123456789abcdef", "fedcba9876543210"]
    assert archived_references("[archived: not-a-ref]") == []


# -- the archive in the summarizer -----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("qa", [False, True], ids=["sections", "qa"])
async def test_everything_summarized_away_is_recallable(
    archive_store: ArchiveStore, qa: bool
) -> None:
    archive = HistoryArchive(archive_store, session="s1")
    config = SummarizerConfig(
        **CONFIG, use_qa=qa, summarize_human_in_qa=qa, max_qa_sections=3, max_qa_bytes=8192
    )
    for chain in corpus_chains(4):
        result = await Summarizer(config, stores=Stores(archive=archive)).summarize(
            CountingHandler(), chain
        )
        assert result.handler_calls > 0
        # Follow references transitively, as an agent would: a summary folded into a
        # later summary is itself archived, references included.
        assert any(archived_references(text) for text in summary_texts(result.messages))
        recalled = await recall_all(archive, result.messages)
        kept = set(result.messages) | set(recalled)
        assert all(message in kept for message in chain)
        archived = [e for e in result.store_events if e.kind is StoreEventKind.ARCHIVED]
        assert len(archived) == result.handler_calls


@pytest.mark.anyio
async def test_summaries_keep_their_shape_and_idempotence(tmp_path: Path) -> None:
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test")
    cache = SummaryCache()
    summarizer = Summarizer(SummarizerConfig(**CONFIG), stores=Stores(archive=archive, cache=cache))
    chain = corpus_chains(3)[-1]
    first = await summarizer.summarize(CountingHandler(), chain)
    assert first.handler_calls > 0
    from cast import ChainAST

    for section in ChainAST.from_messages(first.messages).sections:
        for pair in section.body:
            if not is_summarized(pair):
                continue
            if pair.ai_message.parts and pair.ai_message.text.startswith(SUMMARIZED_CONTENT_PREFIX):
                text = pair.ai_message.text
            else:
                text = pair.tool_messages[0].tool_results[0].content
            summary, _, line = text.rpartition("\n")
            # The handler's summary (after the prefix for COMPLETION pairs), then the line.
            assert summary.removeprefix(SUMMARIZED_CONTENT_PREFIX).startswith("summary of ")
            assert archived_references(line)
            assert line == archive_line(*archived_references(line))
    again = await summarizer.summarize(CountingHandler(), first.messages)
    assert again.handler_calls == 0
    assert again.cache_hits == 0
    assert again.messages == first.messages


@pytest.mark.anyio
async def test_failing_archive_never_fails_the_compaction(tmp_path: Path) -> None:
    events: list[StoreEvent] = []
    archive = HistoryArchive(
        SQLiteArchiveStore(tmp_path), session="test", on_event=events.append
    )  # a folder
    chain = corpus_chains(2)[-1]
    config = SummarizerConfig(**CONFIG)
    result = await Summarizer(config, stores=Stores(archive=archive)).summarize(
        CountingHandler(), chain
    )
    plain = await Summarizer(config).summarize(CountingHandler(), chain)
    assert result.messages == plain.messages  # no references named: nothing was stored
    assert events == list(result.store_events)
    assert {e.kind for e in events} == {StoreEventKind.ARCHIVE_UNAVAILABLE}
    assert len(events) == 1 < result.handler_calls  # then the store is left alone


# -- recall, search, delete ------------------------------------------------------------------

TRICKY = [
    Message.ai("opening src/app/main_v2.py", ToolCall(id="c1", name="read", arguments="{}")),
    Message.tool("c1", "read", "Traceback\nKeyError: 'user_id'\nsay \"hi\" at 100%_done"),
    Message.ai("net::ERR_CONNECTION_RESET while fetching https://api.example.com/v1"),
]


@pytest.mark.anyio
async def test_recall_and_search(archive_store: ArchiveStore) -> None:
    archive = HistoryArchive(archive_store, session="s1")
    batch = await archive.add(TRICKY)
    assert await archive.recall(batch) == TRICKY
    assert await archive.recall(message_reference(TRICKY[1])) == [TRICKY[1]]
    assert await archive.recall("0000000000000000") == []
    cases = {
        "src/app/main_v2.py": [0],
        "MAIN_V2": [0],
        "KeyError: 'user_id'": [1],
        'say "hi"': [1],
        "100%_done": [1],
        "%": [1],
        "_": [0, 1, 2],
        "ERR_CONNECTION_RESET": [2],
        "api.example.com/v1": [2],
        "read": [0],  # a result is searched by its content, not its tool name
        "nowhere_to_be_found": [],
    }
    for query, expected in cases.items():
        hits = await archive.search(query)
        assert [h.message for h in hits] == [TRICKY[i] for i in expected], query
        for hit in hits:
            assert all(query.casefold() in line.casefold() for line in hit.lines)
    assert len(await archive.search("_", limit=1)) == 1
    with pytest.raises(ValueError, match="blank"):
        await archive.search("  ")


@pytest.mark.anyio
async def test_search_finds_real_identifiers(tmp_path: Path) -> None:
    chain = corpus_chains(5)[-1]
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test")
    await archive.add(chain)
    results = [m for m in chain if m.role is Role.TOOL]
    assert results
    import regex

    identifiers = [
        word
        for m in results
        for word in regex.findall(r"[A-Za-z_]*[0-9][A-Za-z0-9_]{4,}", m.tool_results[0].content)
    ][:20]
    assert identifiers
    for identifier in identifiers:
        hits = await archive.search(identifier, limit=100)
        expected = {m for m in chain if identifier.casefold() in message_search_text(m).casefold()}
        assert {h.message for h in hits} == expected


@pytest.mark.anyio
async def test_sessions_are_separate_and_deleted_in_one_call(
    archive_store: ArchiveStore, request: pytest.FixtureRequest
) -> None:
    one = HistoryArchive(archive_store, session="one")
    two = HistoryArchive(archive_store, session="two")
    batch = await one.add(TRICKY)
    await one.add(TRICKY)  # the same messages again: kept once
    await two.add(TRICKY[:1])
    assert await two.recall(batch) == []
    assert [h.message for h in await one.search("main_v2")] == [TRICKY[0]]  # index built
    assert await one.delete_session() == 3
    assert await one.recall(batch) == []
    assert await one.search("main_v2") == []
    assert [h.message for h in await two.search("main_v2")] == [TRICKY[0]]
    assert await two.delete_session() == 1
    # Nothing is left behind: the store holds no more than it was given.
    if isinstance(archive_store, SQLiteArchiveStore):
        path = str(archive_store.database.path)
        for table in ("csum_archive_messages", "csum_archive_batches"):
            assert count_rows(path, table) == 0
        if archive_store.full_text:
            connection = sqlite3.connect(path)
            try:  # the index matches its (now empty) content table
                connection.execute(
                    "INSERT INTO csum_archive_text (csum_archive_text) VALUES ('integrity-check')"
                )
                rows = connection.execute(
                    "SELECT count(*) FROM csum_archive_text WHERE csum_archive_text MATCH 'main'"
                ).fetchone()[0]
            finally:
                connection.close()
            assert rows == 0
    else:
        import redis

        client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
        try:
            assert client.keys("csum:archive:*") == []
        finally:
            client.close()


def test_two_processes_archive_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "archive.sqlite")
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=write_archive, args=(path, "shared", worker, 100))
        for worker in (0, 1)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0, 0]
    # 100 own messages per worker, 100 shared ones stored once.
    assert count_rows(path, "csum_archive_messages") == 300
    assert count_rows(path, "csum_archive_batches") == 200

    async def check() -> None:
        archive = HistoryArchive(path, session="shared")
        try:
            hits = await archive.search("shared step 7")  # a substring: 70-79 too
            expected = ["shared step 7", *(f"shared step {i}" for i in range(70, 80))]
            assert sorted(h.message.text for h in hits) == sorted(expected)
        finally:
            await archive.aclose()

    anyio.run(check)


@pytest.mark.parametrize("kind", ["archive", "cache"])
def test_processes_setting_up_a_new_file_at_once_all_succeed(tmp_path: Path, kind: str) -> None:
    # Switching a new file to WAL and creating tables from several processes at once
    # made SQLite answer "database is locked" without waiting (7 of 120 openers failed
    # in 15 rounds of 8 before set-up was retried).
    context = multiprocessing.get_context("spawn")
    with context.Pool(6) as pool:
        for trial in range(3):
            path = str(tmp_path / f"{kind}-{trial}.sqlite")
            start = time.time() + 1.0  # every worker imported and waiting by then
            results = pool.starmap(open_at, [(path, kind, start)] * 6)
            assert results == ["ok"] * 6


# -- the recall tool -------------------------------------------------------------------------


def test_tool_definitions_fit_the_sdks() -> None:
    reason = "the {0} extra is not installed: pip install '.[{0}]'"
    pytest.importorskip("anthropic", reason=reason.format("anthropic"))
    pytest.importorskip("openai", reason=reason.format("openai"))
    from anthropic.types import ToolParam
    from openai.types.chat import ChatCompletionToolParam

    openai_tool = recall_tool_definition("openai")
    TypeAdapter(ChatCompletionToolParam).validate_python(openai_tool)
    assert openai_tool["function"]["name"] == RECALL_TOOL_NAME
    anthropic_tool = recall_tool_definition("anthropic")
    TypeAdapter(ToolParam).validate_python(anthropic_tool)
    assert set(anthropic_tool["input_schema"]["properties"]) == {"reference", "query"}
    gemini = recall_tool_definition("gemini")
    (declaration,) = gemini["functionDeclarations"]
    assert declaration["name"] == RECALL_TOOL_NAME
    assert declaration["parameters"]["type"] == "OBJECT"
    assert {p["type"] for p in declaration["parameters"]["properties"].values()} == {"STRING"}
    with pytest.raises(ValueError, match="unknown provider"):
        recall_tool_definition("cohere")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_recall_tool_answers_an_agent(tmp_path: Path) -> None:
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test")
    chain = corpus_chains(3)[-1]
    result = await Summarizer(SummarizerConfig(**CONFIG), stores=Stores(archive=archive)).summarize(
        CountingHandler(), chain
    )
    tool = RecallTool(archive, max_bytes=4096)
    reference = archived_references(summary_texts(result.messages)[0])[0]
    first = (await archive.recall(reference))[0]
    answer = await tool(json.dumps({"reference": reference}))
    assert answer.startswith(f"[{message_reference(first)}]")
    assert len(answer.encode()) <= 4096
    snippet = message_search_text(first).splitlines()[0][:40]
    if len(message_search_text(first)) < 3000:
        assert snippet in answer
    by_query = await tool({"query": snippet})
    assert snippet in by_query
    assert "nothing archived" in await tool({"reference": "0000000000000000"})
    assert "no archived message" in await tool({"query": "zz-not-there-zz"})
    assert (await tool("{not json")).startswith("error: the arguments are not JSON")
    assert (await tool("[]")).startswith("error:")
    assert (await tool({"reference": 3})).startswith("error:")
    assert (await tool({})).startswith("error:")
    long = await RecallTool(archive, max_bytes=256)({"reference": reference})
    assert len(long.encode()) <= 256


# -- re-insertion ------------------------------------------------------------------------------


def test_question_identifiers() -> None:
    question = "Why did deploy_v2.sh fail on host db-03 with ERR42? See /var/log/app.log, FooBar."
    found = question_identifiers(question)
    for expected in ("deploy_v2.sh", "db-03", "ERR42", "var/log/app.log", "FooBar"):
        assert expected in found
    for word in ("Why", "did", "fail", "host", "with", "See"):
        assert word not in found


@pytest.mark.anyio
async def test_reinsertion_brings_back_lines_only_the_archive_has(tmp_path: Path) -> None:
    call = ToolCall(id="c1", name="bash", arguments='{"cmd": "cat build.log"}')
    old = [
        Message.human("build it"),
        Message.ai("", call),
        Message.tool("c1", "bash", "step 1 ok\nlinker error in libfoo_v3.so: undefined symbol\n"),
        Message.ai("the build failed"),
    ]
    chain = [*old, Message.human("fix it"), Message.ai("looking")]
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test", reinsert_bytes=300)
    off = HistoryArchive(tmp_path / "archive.sqlite", session="test")
    summarized = await Summarizer(stores=Stores(archive=off)).summarize(CountingHandler(), chain)
    assert "libfoo_v3.so" not in json.dumps(
        [m.model_dump(mode="json") for m in summarized.messages]
    )
    question = [*summarized.messages, Message.human("what about libfoo_v3.so?")]
    snapshot = list(question)
    back = await archive.reinsert(question)
    assert question == snapshot  # the input is untouched
    assert back is not question
    added = recalled_text(back)  # a synthetic recall pair after the question
    assert added.startswith(REINSERTED_HEADER)
    assert "linker error in libfoo_v3.so: undefined symbol" in added
    assert len(added.encode()) <= 300
    assert back[: len(question)] == question
    assert [m.role for m in back[len(question) :]] == [Role.AI, Role.TOOL]
    # Nothing to add: the same list back.
    assert await archive.reinsert(back) is back
    assert await off.reinsert(question) is question  # off by default
    assert await archive.reinsert(question, max_bytes=10) is question  # nothing fits
    # In the summarizer: only when turned on.
    asked = [*chain, Message.human("what about libfoo_v3.so?")]
    with_reinsert = await Summarizer(stores=Stores(archive=archive)).summarize(
        CountingHandler(), asked
    )
    assert "undefined symbol" in with_reinsert.messages[-1].text or any(
        "undefined symbol" in message_search_text(m) for m in with_reinsert.messages
    )
    plain = await Summarizer(stores=Stores(archive=off)).summarize(CountingHandler(), asked)
    assert plain.size_after < with_reinsert.size_after
    assert with_reinsert.size_after == sum(m.size for m in with_reinsert.messages)


@pytest.mark.anyio
async def test_index_of_another_version_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "archive.sqlite"
    archive = HistoryArchive(SQLiteArchiveStore(path, full_text=True), session="s")
    await archive.add(TRICKY)
    assert len(await archive.search("ERR_CONNECTION_RESET")) == 1
    connection = sqlite3.connect(path, isolation_level=None)
    try:  # as if an older chaincast had indexed this file
        connection.execute(
            "UPDATE csum_archive_meta SET value = '0' WHERE key = 'search_text_version'"
        )
    finally:
        connection.close()
    await archive.add([Message.ai("later: ERR_CONNECTION_RESET again")])
    assert len(await archive.search("ERR_CONNECTION_RESET")) == 2
    assert await archive.delete_session() == 4
    assert await archive.search("ERR_CONNECTION_RESET") == []
    await archive.aclose()


def test_the_archive_line_is_split_from_its_summary_or_alone() -> None:
    line = archive_line("0123456789abcdef", "fedcba9876543210")
    assert split_archive_line(f"Tests pass.\nNext: deploy.\n{line}") == (
        "Tests pass.\nNext: deploy.",
        line,
    )
    assert split_archive_line(line) == ("", line)  # a summary that is only its reference
    assert split_archive_line(f"{line}\nmore") == (f"{line}\nmore", "")  # not the last line
    assert split_archive_line(f"see {line}") == (f"see {line}", "")  # not a line of its own


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"session": ""}, ValueError, "session must be a non-empty string"),
        ({"reinsert_bytes": True}, TypeError, "reinsert_bytes must be an int"),
        ({"reinsert_bytes": -1}, ValueError, "reinsert_bytes must be 0 (off) or positive"),
        ({"breaker_seconds": "30"}, TypeError, "breaker_seconds must be a number"),
        ({"breaker_seconds": True}, TypeError, "breaker_seconds must be a number"),
        ({"breaker_seconds": 0}, ValueError, "breaker_seconds must be positive"),
        ({"breaker_seconds": float("nan")}, ValueError, "breaker_seconds must be positive"),
    ],
)
def test_bad_archive_settings_are_refused_before_the_store_opens(
    tmp_path: Path, options: dict[str, object], error: type[Exception], words: str
) -> None:
    path = tmp_path / "archive.sqlite"
    with pytest.raises(error, match=re.escape(words)):
        HistoryArchive(path, **{"session": "s", **options})  # type: ignore[arg-type]
    assert not path.exists()
