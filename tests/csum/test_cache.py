"""The summary cache: keys, checksummed values, single flight, and every store
(memory, a SQLite file, a real redis-server) failing or not, on asyncio and trio."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import Message
from csum import (
    StoreEvent,
    StoreEventKind,
    Stores,
    Summarizer,
    SummarizerConfig,
    SummaryCache,
    messages_to_prompt,
)
from csum.cache import KEY_VERSION, cache_key, decode_summary, encode_summary
from csum.stores import MemoryStore, RedisStore, SQLiteStore, SummaryStore, open_store
from redis_server import RedisServer, needs_redis_client
from store_workers import fake_summary, prompt_id, summarize_with_cache, write_cache_entries
from tests.conftest import TAUBENCH, missing


def corpus_chains(limit: int) -> list[list[Message]]:
    """Real tau-bench chains (smallest first); skip when the corpus is not here."""
    from corpus_openai import load_openai_chain

    if not TAUBENCH.is_dir():
        pytest.skip(missing(TAUBENCH))
    files = sorted(TAUBENCH.glob("*.json"), key=lambda p: p.stat().st_size)
    return [load_openai_chain(path) for path in files[:limit]]


def fifty_section_chain() -> list[Message]:
    """50 sections of real tau-bench turns: the chains' turns after their system
    messages, one after another, cut before the 51st human message."""
    out: list[Message] = []
    humans = 0
    for chain in corpus_chains(26):
        for message in chain:
            if message.role == "system" and out:
                continue
            if message.role == "human":
                humans += 1
                if humans > 50:
                    return out
            out.append(message)
    pytest.skip("the corpus holds fewer than 50 sections")


class CountingHandler:
    """A deterministic fake model that counts its calls per prompt."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls: Counter[str] = Counter()

    async def __call__(self, prompt: str) -> str:
        self.calls[prompt] += 1
        await anyio.sleep(self.delay)
        return fake_summary(prompt)

    @property
    def total(self) -> int:
        return sum(self.calls.values())


class BrokenStore:
    """A store whose every call fails, as a dead server or a locked file does."""

    name = "broken"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def get(self, key: str) -> bytes | None:
        raise self.error

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        raise self.error

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        raise self.error

    async def release(self, key: str, token: str) -> None:
        raise self.error

    async def aclose(self) -> None:
        return None


@pytest.fixture
def store(cache_store: SummaryStore) -> SummaryStore:
    """Each store in turn: the same contract tests run against all three."""
    return cache_store


# -- keys and values -----------------------------------------------------------------------


def test_key_covers_prompt_handler_and_budget() -> None:
    base = cache_key("prompt", handler_id="model-a", summary_budget=4096)
    assert base == cache_key("prompt", handler_id="model-a", summary_budget=4096)
    variants = {
        cache_key("prompt!", handler_id="model-a", summary_budget=4096),
        cache_key("prompt", handler_id="model-b", summary_budget=4096),
        cache_key("prompt", handler_id="model-a", summary_budget=2048),
        cache_key("prompt", handler_id="model-a", summary_budget=None),
        base,
    }
    assert len(variants) == 5
    assert base.startswith("s1:")
    assert len(base) == 3 + 32
    # Fields are length-prefixed: moving bytes between them changes the key.
    assert cache_key("bc", handler_id="a") != cache_key("c", handler_id="ab")
    assert KEY_VERSION.endswith("/1")


@given(st.text())
def test_values_round_trip(text: str) -> None:
    assert decode_summary(encode_summary(text)) == text


@given(st.text(min_size=1), st.data())
def test_truncated_values_are_detected(text: str, data: st.DataObject) -> None:
    value = encode_summary(text)
    cut = data.draw(st.integers(min_value=0, max_value=len(value) - 1))
    assert decode_summary(value[:cut]) is None


@given(st.text(min_size=1), st.data())
def test_corrupted_values_are_detected(text: str, data: st.DataObject) -> None:
    value = bytearray(encode_summary(text))
    header = value.index(b"\n") + 1
    index = data.draw(st.integers(min_value=header, max_value=len(value) - 1))
    value[index] ^= data.draw(st.integers(min_value=1, max_value=255))
    assert decode_summary(bytes(value)) is None


def test_other_versions_are_misses() -> None:
    value = encode_summary("old summary")
    assert decode_summary(value.replace(b"csum-summary/1", b"csum-summary/0", 1)) is None
    assert decode_summary(b"") is None
    assert decode_summary(b"garbage") is None


# -- the store contract, on every store ------------------------------------------------------


@pytest.mark.anyio
async def test_store_get_set(store: SummaryStore) -> None:
    assert await store.get("k") is None
    await store.set("k", b"v1")
    assert await store.get("k") == b"v1"
    await store.set("k", b"v2")
    assert await store.get("k") == b"v2"


@pytest.mark.anyio
async def test_store_ttl_expires(store: SummaryStore) -> None:
    started = time.monotonic()
    await store.set("short", b"v", ttl=0.5)
    await store.set("long", b"v", ttl=600)
    value = await store.get("short")
    if time.monotonic() - started < 0.5:  # a loaded machine may take longer than the ttl
        assert value == b"v"
    deadline = time.monotonic() + 30
    while await store.get("short") is not None:
        assert time.monotonic() < deadline, "the entry never expired"
        await anyio.sleep(0.1)
    assert await store.get("long") == b"v"


@pytest.mark.anyio
async def test_store_lock(store: SummaryStore) -> None:
    assert await store.acquire("k", "me", 60)
    if isinstance(store, MemoryStore):
        return  # one process: the cache's own single flight does the work
    assert not await store.acquire("k", "other", 60)
    await store.release("k", "other")  # not the holder: no effect
    assert not await store.acquire("k", "other", 60)
    await store.release("k", "me")
    assert await store.acquire("k", "other", 60)
    # A crashed holder's lock expires (polled: a loaded machine is slow, never fast).
    assert await store.acquire("crashed", "holder", 0.3)
    deadline = time.monotonic() + 30
    while not await store.acquire("crashed", "third", 0.3):
        assert time.monotonic() < deadline, "the lock never expired"
        await anyio.sleep(0.1)


# -- the cache in the summarizer ----------------------------------------------------------------


async def summarize(
    messages: list[Message], handler: CountingHandler, cache: SummaryCache | None, **config: Any
) -> Any:
    return await Summarizer(SummarizerConfig(**config), stores=Stores(cache=cache)).summarize(
        handler, messages
    )


@pytest.mark.anyio
async def test_second_run_calls_no_handler(store: SummaryStore) -> None:
    chain = corpus_chains(3)[-1]
    handler = CountingHandler()
    cache = SummaryCache(store, handler_id="fake")
    config = {"last_section_bytes": 4096, "max_body_pair_bytes": 2048}
    first = await summarize(chain, handler, cache, **config)
    assert first.handler_calls > 0
    assert first.cache_hits == 0
    assert Counter(e.kind for e in first.store_events) == {
        StoreEventKind.CACHE_MISS: first.handler_calls
    }
    second = await summarize(chain, handler, cache, **config)
    assert second.handler_calls == 0
    assert second.cache_hits == first.handler_calls
    assert second.messages == first.messages
    assert second.changed
    uncached = await summarize(chain, CountingHandler(), None, **config)
    assert uncached.messages == first.messages


@pytest.mark.anyio
async def test_handler_identity_and_budget_separate_entries() -> None:
    chain = corpus_chains(1)[0]
    store = MemoryStore()
    handler = CountingHandler()
    config = {"last_section_bytes": 2048, "max_body_pair_bytes": 1024}
    first = await summarize(chain, handler, SummaryCache(store, handler_id="a"), **config)
    for cache in (
        SummaryCache(store, handler_id="b"),
        SummaryCache(store, handler_id="a", summary_budget=512),
    ):
        again = await summarize(chain, handler, cache, **config)
        assert again.handler_calls == first.handler_calls
        assert again.cache_hits == 0


@pytest.mark.anyio
async def test_single_flight_within_a_process() -> None:
    handler = CountingHandler(delay=0.05)
    cache = SummaryCache(handler_id="fake")
    results: list[tuple[str, bool]] = []

    async def ask() -> None:
        results.append(await cache.summarize("the prompt", lambda: handler("the prompt")))

    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(ask)
    assert handler.total == 1
    assert sorted(hit for _, hit in results) == [False] + [True] * 9
    assert {text for text, _ in results} == {fake_summary("the prompt")}


@pytest.mark.anyio
async def test_repeated_sections_call_once_per_distinct_prompt() -> None:
    turn = [Message.human("check the disk"), Message.ai("df -h: /dev/sda1 91% used")]
    chain = turn * 6 + [Message.human("and now?"), Message.ai("still 91%")]
    handler = CountingHandler(delay=0.01)
    result = await summarize(chain, handler, SummaryCache())
    assert handler.total == 1 == result.handler_calls
    assert result.cache_hits == 5


@pytest.mark.anyio
async def test_handler_failure_is_not_cached() -> None:
    chain = [Message.human("a"), Message.ai("b"), Message.human("c"), Message.ai("d")]
    cache = SummaryCache()

    async def failing(prompt: str) -> str:
        raise ConnectionError("model down")

    from csum import SummarizationError

    with pytest.raises(SummarizationError):
        await Summarizer(stores=Stores(cache=cache)).summarize(failing, chain)
    handler = CountingHandler()
    result = await summarize(chain, handler, cache)
    assert result.handler_calls == 1
    assert result.cache_hits == 0


# -- failures degrade to calling the handler --------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ConnectionError("connection refused"), id="server-down"),
        pytest.param(sqlite3.OperationalError("database is locked"), id="file-locked"),
        pytest.param(TimeoutError("timed out"), id="timeout"),
    ],
)
async def test_failing_store_degrades(error: Exception) -> None:
    chain = corpus_chains(2)[-1]
    events: list[StoreEvent] = []
    cache = SummaryCache(BrokenStore(error), on_event=events.append)
    config = {"last_section_bytes": 4096, "max_body_pair_bytes": 2048}
    result = await summarize(chain, CountingHandler(), cache, **config)
    plain = await summarize(chain, CountingHandler(), None, **config)
    assert result.messages == plain.messages
    assert result.handler_calls == plain.handler_calls > 0
    assert events == list(result.store_events)
    assert events
    assert all(e.kind is StoreEventKind.CACHE_UNAVAILABLE for e in events)
    assert all(type(error).__name__ in e.detail and e.failed for e in events)


@pytest.mark.anyio
async def test_corrupt_entry_is_ignored_and_replaced(store: SummaryStore) -> None:
    prompt = messages_to_prompt([Message.human("q")], [Message.ai("a")])
    cache = SummaryCache(store, handler_id="fake")
    key = cache.key(prompt)
    good = encode_summary(fake_summary(prompt))
    for bad in (good[: len(good) // 2], good.replace(b"summary of", b"summary 0f"), b"\x00junk"):
        await store.set(key, bad)
        events: list[StoreEvent] = []
        handler = CountingHandler()
        text, hit = await cache.summarize(prompt, lambda h=handler: h(prompt), emit=events.append)
        assert (text, hit, handler.total) == (fake_summary(prompt), False, 1)
        kinds = [e.kind for e in events]
        assert kinds == [StoreEventKind.CACHE_CORRUPT, StoreEventKind.CACHE_MISS]
        assert await store.get(key) == good


@pytest.mark.anyio
async def test_sqlite_locked_file_degrades(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    store = SQLiteStore(path, busy_timeout=0.05)
    await store.set("warm", encode_summary("x"))  # create the file and tables
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process writing: WAL readers go on
    try:
        chain = [Message.human("a"), Message.ai("b"), Message.human("c"), Message.ai("d")]
        result = await summarize(chain, CountingHandler(), SummaryCache(store))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        await store.aclose()
    assert result.handler_calls == 1
    assert [e.kind for e in result.store_events] == [StoreEventKind.CACHE_UNAVAILABLE]
    assert "locked" in result.store_events[0].detail


@pytest.mark.anyio
async def test_unopenable_sqlite_path_degrades(tmp_path: Path) -> None:
    chain = [Message.human("a"), Message.ai("b"), Message.human("c"), Message.ai("d")]
    store = open_store(str(tmp_path))  # a directory, not a file
    result = await summarize(chain, CountingHandler(), SummaryCache(store))
    assert result.handler_calls == 1
    assert [e.kind for e in result.store_events] == [StoreEventKind.CACHE_UNAVAILABLE]


@pytest.mark.anyio
async def test_redis_down_degrades(redis_own_server: RedisServer) -> None:
    url = redis_own_server.url
    redis_own_server.kill()
    chain = corpus_chains(2)[-1]
    store = RedisStore(url, socket_timeout=0.5)
    config = {"last_section_bytes": 4096, "max_body_pair_bytes": 2048}
    try:
        result = await summarize(chain, CountingHandler(), SummaryCache(store), **config)
    finally:
        await store.aclose()
    assert result.handler_calls > 0
    assert {e.kind for e in result.store_events} == {StoreEventKind.CACHE_UNAVAILABLE}


@pytest.mark.anyio
async def test_redis_killed_mid_run(redis_own_server: RedisServer) -> None:
    """The server dies after a few summaries: the rest degrade, the compaction completes."""
    chain = fifty_section_chain()
    handler = CountingHandler()
    killed_after = 10
    stored = 0

    class CountingStore(RedisStore):
        async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
            nonlocal stored
            await super().set(key, value, ttl)
            stored += 1

    async def killing_handler(prompt: str) -> str:
        # Killed once some summaries are stored (under load the stores of the first
        # calls may still be queued when the tenth call starts).
        if handler.total >= killed_after and stored >= 3:
            redis_own_server.kill()
        return await handler(prompt)

    store = CountingStore(redis_own_server.url, socket_timeout=5.0)
    try:
        await store.set("ready", b"1")  # the server answers before the run starts
        result = await Summarizer(
            max_concurrency=1, stores=Stores(cache=SummaryCache(store))
        ).summarize(killing_handler, chain)
    finally:
        await store.aclose()
    plain = await summarize(chain, CountingHandler(), None)
    assert result.messages == plain.messages
    kinds = Counter(e.kind for e in result.store_events)
    assert kinds[StoreEventKind.CACHE_MISS] > 0  # stored while the server lived
    assert kinds[StoreEventKind.CACHE_UNAVAILABLE] > 0
    assert result.handler_calls == plain.handler_calls


@needs_redis_client
def test_cli_cache_sqlite_then_redis_down(tmp_path: Path) -> None:
    from csum.cli import main

    out, err = _Buffer(), _Buffer()
    cache = str(tmp_path / "cache.sqlite")
    args = ["summarize", "--example", "--last-section-budget", "2KiB", "--cache", cache, "-o"]
    assert main([*args, str(tmp_path / "a.json")], stdout=out, stderr=err) == 0
    assert "cache: 0 hits" in err.getvalue()
    err = _Buffer()
    assert main([*args, str(tmp_path / "b.json")], stdout=out, stderr=err) == 0
    assert "0 handler calls" in err.getvalue()
    assert "cache: 7 hits" in err.getvalue()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    err = _Buffer()
    down = ["--cache", "redis://127.0.0.1:9/0", "-o", str(tmp_path / "c.json")]
    assert main([*args[:-3], *down], stdout=out, stderr=err) == 0
    assert "warning: cache_unavailable" in err.getvalue()
    assert (tmp_path / "c.json").read_bytes() == (tmp_path / "a.json").read_bytes()


class _Buffer:
    def __init__(self) -> None:
        import io

        self._io = io.StringIO()

    def write(self, text: str) -> int:
        return self._io.write(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return self._io.getvalue()


# -- several processes --------------------------------------------------------------------


def _run_processes(target: Callable[..., None], arguments: list[tuple[Any, ...]]) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=target, args=args) for args in arguments]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * len(processes)


def test_sqlite_two_processes_write_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.sqlite")
    _run_processes(write_cache_entries, [(path, 0, 150), (path, 1, 150)])

    async def check() -> None:
        store = SQLiteStore(path)
        try:
            for worker in (0, 1):
                for i in range(150):
                    value = await store.get(f"own:{worker}:{i}")
                    assert value is not None
                    assert decode_summary(value) == f"worker {worker} entry {i}"
            for i in range(150):
                value = await store.get(f"shared:{i}")
                assert value is not None
                assert decode_summary(value) == f"shared entry {i}"
        finally:
            await store.aclose()

    anyio.run(check)


def _distinct_prompts(chain: list[Message]) -> set[str]:
    handler = CountingHandler()
    anyio.run(lambda: Summarizer().summarize(handler, chain))
    return {prompt_id(p) for p in handler.calls}


def _check_workers(tmp_path: Path, chain: list[Message], workers: int) -> list[dict[str, Any]]:
    outputs = [json.loads((tmp_path / f"out{w}.json").read_text()) for w in range(workers)]
    expected = anyio.run(lambda: summarize(chain, CountingHandler(), None))
    for output in outputs:
        assert output["messages"] == [m.model_dump(mode="json") for m in expected.messages]
    assert sum(o["handler_calls"] + o["cache_hits"] for o in outputs) == workers * (
        expected.handler_calls
    )
    return outputs


def test_sqlite_processes_share_one_cache(tmp_path: Path) -> None:
    chain = fifty_section_chain()
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps([m.model_dump(mode="json") for m in chain]))
    calls = tmp_path / "calls"
    calls.mkdir()
    cache = str(tmp_path / "cache.sqlite")
    _run_processes(
        summarize_with_cache,
        [(cache, str(chain_path), str(calls), str(tmp_path / f"out{w}.json")) for w in range(2)],
    )
    _check_workers(tmp_path, chain, 2)
    logged = Counter(line for path in calls.glob("*.calls") for line in path.read_text().split())
    assert set(logged) == _distinct_prompts(chain)
    assert set(logged.values()) == {1}


def test_redis_four_workers_one_call_per_prompt(tmp_path: Path, redis_url: str) -> None:
    """4 processes summarize the same 50-section chain through one Redis cache: the
    handler runs once per distinct prompt, counted in Redis."""
    import redis

    chain = fifty_section_chain()
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps([m.model_dump(mode="json") for m in chain]))
    _run_processes(
        summarize_with_cache,
        [(redis_url, str(chain_path), redis_url, str(tmp_path / f"out{w}.json")) for w in range(4)],
    )
    outputs = _check_workers(tmp_path, chain, 4)
    client = redis.Redis.from_url(redis_url)
    try:
        counts = {k.decode(): int(v) for k, v in client.hgetall("test:calls").items()}
    finally:
        client.close()
    distinct = _distinct_prompts(chain)
    assert len(distinct) >= 40  # a few real sections repeat word for word
    assert set(counts) == distinct
    assert set(counts.values()) == {1}
    assert sum(o["handler_calls"] for o in outputs) == len(distinct)
    assert all("cache_unavailable" not in o["events"] for o in outputs)


@pytest.mark.anyio
async def test_waiters_of_a_failed_flight_share_the_next_one() -> None:
    """When the first request of a key fails, its waiters make one more call, not one
    each (the single flight holds after a failure too)."""
    cache = SummaryCache(handler_id="fake")
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        await anyio.sleep(0.02)
        if calls == 1:
            raise ConnectionError("model down")
        return "the summary"

    outcomes: list[object] = []

    async def ask() -> None:
        try:
            outcomes.append(await cache.summarize("the prompt", call))
        except ConnectionError as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(ask)
    assert calls == 2
    assert sum(isinstance(o, ConnectionError) for o in outcomes) == 1
    assert sorted(o for o in outcomes if isinstance(o, tuple)) == [
        ("the summary", False),
        *[("the summary", True)] * 3,
    ]


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"ttl": 0}, ValueError, "ttl must be a positive number of seconds"),
        ({"lock_ttl": True}, ValueError, "lock_ttl must be a positive number of seconds"),
        ({"breaker_seconds": True}, TypeError, "breaker_seconds must be a number"),
        ({"breaker_seconds": 0}, ValueError, "breaker_seconds must be positive"),
    ],
)
def test_bad_cache_settings_are_refused_as_the_archive_refuses_them(
    options: dict[str, object], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        SummaryCache(**options)  # type: ignore[arg-type]
