"""Issue 28: the stores and the archive tried as a hostile user and as an operator of
many workers: tenants stay apart, nothing a model sends breaks a tool, deletion
deletes, credentials stay out of every location shown, on SQLite files and a real
redis-server, on asyncio and trio."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cast import Message
from csum import HistoryArchive, RecallTool, Summarizer, SummarizerConfig
from csum.archive import ArchiveStore, RedisArchiveStore, SQLiteArchiveStore
from csum.stores import RedisStore
from store_workers import archive_cycle
from test_cache import CountingHandler, _Buffer


@pytest.fixture(params=["sqlite-fts5", "sqlite-like", "redis"])
async def archive_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[ArchiveStore]:
    made: ArchiveStore
    if request.param == "sqlite-fts5":
        made = SQLiteArchiveStore(tmp_path / "archive.sqlite", full_text=True)
    elif request.param == "sqlite-like":
        made = SQLiteArchiveStore(tmp_path / "archive.sqlite", full_text=False)
    else:
        made = RedisArchiveStore(request.getfixturevalue("redis_url"))
    try:
        yield made
    finally:
        await made.aclose()


# -- item 1: a session is required --------------------------------------------------------------


def test_an_archive_without_a_session_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="session"):
        HistoryArchive(tmp_path / "archive.sqlite")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="session"):
        HistoryArchive(tmp_path / "archive.sqlite", session="")


def test_cli_archive_needs_a_session(tmp_path: Path) -> None:
    from csum.cli import main

    out, err = _Buffer(), _Buffer()
    archive = str(tmp_path / "archive.sqlite")
    args = ["summarize", "--example", "--last-section-budget", "8KiB", "--archive", archive]
    assert main([*args, "-o", str(tmp_path / "a.json")], stdout=out, stderr=err) == 2
    assert "--session" in err.getvalue()
    assert not (tmp_path / "a.json").exists()
    err = _Buffer()
    given = [*args, "--session", "tenant-a", "-o", str(tmp_path / "b.json")]
    assert main(given, stdout=out, stderr=err) == 0, err.getvalue()
    assert "batches archived" in err.getvalue()


# -- item 2: deletion deletes, the index stays consistent through reuse ------------------------


@pytest.mark.anyio
async def test_delete_then_write_again_then_search_and_delete(
    archive_store: ArchiveStore,
) -> None:
    first = HistoryArchive(archive_store, session="tenant-a")
    await first.add([Message.ai(f"alpha_{i} card 4111") for i in range(3)])
    assert len(await first.search("alpha_")) == 3  # indexed
    assert await first.delete_session() == 3
    second = HistoryArchive(archive_store, session="tenant-b")
    await second.add([Message.ai(f"bravo_{i} order") for i in range(3)])
    assert len(await second.search("bravo_")) == 3
    assert await first.search("alpha_") == []
    assert await second.delete_session() == 3
    assert await second.search("bravo_") == []
    if isinstance(archive_store, SQLiteArchiveStore):
        _check_empty_and_consistent(archive_store)


def _check_empty_and_consistent(store: SQLiteArchiveStore) -> None:
    connection = sqlite3.connect(store.database.path)
    try:
        for table in ("csum_archive_messages", "csum_archive_batches"):
            assert connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        if store.full_text:
            connection.execute(
                "INSERT INTO csum_archive_text (csum_archive_text) VALUES ('integrity-check')"
            )
    finally:
        connection.close()


@pytest.mark.parametrize("full_text", [True, False], ids=["fts5", "like"])
def test_delete_and_reuse_from_two_processes(tmp_path: Path, full_text: bool) -> None:
    path = str(tmp_path / "archive.sqlite")
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        # One process writes, searches and deletes its tenant; then the other does the
        # same with another tenant on the row ids the first one freed, twice.
        for round_ in range(2):
            for worker, session in enumerate(("tenant-a", "tenant-b")):
                found, deleted, left = pool.apply(
                    archive_cycle, (path, f"{session}-{round_}", worker, full_text)
                )
                assert (found, deleted, left) == (3, 3, 0), (round_, session)
    _check_empty_and_consistent(SQLiteArchiveStore(path, full_text=full_text))


# -- item 3: one substring meaning on every store -----------------------------------------------

IDENTIFIERS = [
    Message.ai("cc: error: libfoo_v3.so: undefined symbol bar"),
    Message.ai("deploying build-7f3a9 to eu-west-1"),
    Message.tool("c9", "fetch", "GET http://svc.local:8080/api/v2/items?id=ab.cd"),
    Message.ai("Ärger mit der Größe"),
]


@pytest.mark.anyio
async def test_substring_search_means_the_same_on_every_store(
    archive_store: ArchiveStore,
) -> None:
    archive = HistoryArchive(archive_store, session="s")
    await archive.add(IDENTIFIERS)
    cases = {
        "foo_v3": [0],
        "o_v3.s": [0],
        "build-7f3": [1],
        "7f3a": [1],
        "d-7": [1],
        "local:8080/api": [2],
        "/v2/it": [2],
        "ab.cd": [2],
        "8080": [2],
        "ärger": [3],
        "größe": [3],
        "zz_not_here": [],
    }
    for query, expected in cases.items():
        hits = await archive.search(query)
        assert [h.message for h in hits] == [IDENTIFIERS[i] for i in expected], query


# -- item 4: whatever a model sends, the recall tool answers ------------------------------------


@pytest.mark.anyio
async def test_recall_tool_answers_every_argument_a_model_may_send(
    archive_store: ArchiveStore,
) -> None:
    archive = HistoryArchive(archive_store, session="s")
    await archive.add([Message.ai(f"line {i}: token_{i} " + "x" * 300) for i in range(200)])
    tool = RecallTool(archive, max_bytes=4096)
    bad = [
        {"query": "a\x00b"},
        {"query": "\ud800abc"},
        {"reference": "\udfff"},
        {"reference": "abc\x00"},
        {"query": "q" * 60_000},
        {"reference": "r" * 60_000},
        {"query": "%" * 20_000 + "_"},
    ]
    for arguments in bad:
        answer = await tool(arguments)
        assert answer.startswith("error:"), (repr(arguments)[:60], answer[:200])
        assert len(answer.encode("utf-8", "surrogatepass")) <= 4096
    many = await tool({"query": "token_"})
    assert len(many.encode()) <= 4096
    assert "cut" in many
    with pytest.raises(ValueError, match="query"):
        await archive.search("a\x00b")


# -- item 6: credentials never shown ------------------------------------------------------------


@pytest.mark.anyio
async def test_redis_credentials_are_redacted_everywhere() -> None:
    from csum import SummaryCache

    url = "redis://user:s3cret-pw@127.0.0.1:9/0"
    cache_store = RedisStore(url, socket_timeout=0.2)
    archive_store = RedisArchiveStore(url, socket_timeout=0.2)
    archive = HistoryArchive(archive_store, session="s")
    shown = [cache_store.name, repr(cache_store), archive_store.name, repr(archive_store)]
    shown.append(repr(archive))
    shown.append(repr(SummaryCache(cache_store)))
    chain = [Message.human("a"), Message.ai("b" * 3000), Message.human("c"), Message.ai("d")]
    summarizer = Summarizer(
        SummarizerConfig(last_section_bytes=1024, max_body_pair_bytes=1024),
        cache=SummaryCache(cache_store),
        archive=archive,
    )
    try:
        result = await summarizer.summarize(CountingHandler(), chain)
    finally:
        await cache_store.aclose()
        await archive_store.aclose()
    assert result.store_events
    shown += [f"{e.store} {e.detail}" for e in result.store_events]
    for text in shown:
        assert "s3cret-pw" not in text, text
    assert any("redis://user:***@127.0.0.1:9/0" in text for text in shown)


def test_cli_warnings_redact_credentials(tmp_path: Path) -> None:
    from csum.cli import main

    out, err = _Buffer(), _Buffer()
    args = ["summarize", "--example", "--last-section-budget", "8KiB"]
    args += ["--cache", "redis://:hunter2@127.0.0.1:9/0", "-o", str(tmp_path / "a.json")]
    assert main(args, stdout=out, stderr=err) == 0
    assert "warning: cache_unavailable" in err.getvalue()
    assert "hunter2" not in err.getvalue()


# -- item 13: the command line's sizes and output path ------------------------------------------


@pytest.mark.parametrize(
    "option",
    ["--budget", "--last-section-budget", "--pair-budget", "--qa-budget", "--max-prompt-bytes"],
)
@pytest.mark.parametrize("value", ["", " ", "12 parsecs"])
def test_cli_empty_or_malformed_size_is_a_usage_error(
    tmp_path: Path, option: str, value: str
) -> None:
    from csum.cli import main

    out, err = _Buffer(), _Buffer()
    args = ["summarize", "--example", option, value, "-o", str(tmp_path / "a.json")]
    if option in ("--pair-budget", "--qa-budget"):
        args += ["--last-section-budget", "8KiB"]
    assert main(args, stdout=out, stderr=err) == 2, err.getvalue()
    assert option in err.getvalue() or "size" in err.getvalue()
    assert not (tmp_path / "a.json").exists()


def test_cli_output_through_a_symlink_needs_force(tmp_path: Path) -> None:
    from csum.cli import main

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    out, err = _Buffer(), _Buffer()
    args = ["summarize", "--example", "-q", "-o", str(link)]
    assert main(args, stdout=out, stderr=err) == 2
    assert "symbolic link" in err.getvalue()
    assert "--force" in err.getvalue()
    assert target.read_text() == "keep me"
    assert main([*args, "--force"], stdout=out, stderr=_Buffer()) == 0
    assert target.read_text().startswith("{")  # written through the link, as asked
