"""Cost of the summary cache and of the history archive, as ratios measured in one run.

1. Cache lookup overhead per summary, on each store (memory, a SQLite file, a local
   redis-server), as a ratio to the handler's modelled latency (the policy benchmark's
   :class:`LatencyModel`: first token + prompt tokens / prefill rate + summary tokens /
   decode rate). A miss costs key hashing, a read, the workers' lock, a write and the
   unlock on top of the handler call; a hit costs hashing, a read and the checksum
   check instead of the call. Goal: the miss overhead <= 1% of the modelled latency for
   SQLite and Redis.
2. Archive write throughput in MB/s (bytes of message JSON archived) through
   ``HistoryArchive.add``, against writing the same messages as the same JSON with
   ``sqlite3`` directly (serializing timed on both sides, one table, one transaction per
   batch, the same WAL settings), the two run in turns (A B B A within each run, each
   run's ratio from its two writes per side). Goal: >= 0.5x on the min and the mean
   over the runs.

Prompts and summaries are real: every prompt the summarizer sends for the corpus chains
(tau-bench and Claude Code sessions, at a 16 KiB budget) with the extractive handler's
summary, next to synthetic prompts of 1-256 KiB. Min and mean over ``--runs`` runs, the
garbage collector on, asyncio backend.

Not measured: trio (the Redis store then runs redis-py's sync client in worker threads),
a remote Redis (network latency adds to every lookup: the ratio scales with it), lock
contention between workers, and the archive's search.

Run: python -m benchmarks.bench_stores [--runs 5] [--corpus PATH] [--only cache|archive]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, OPENAI_FOLDER, load_folder
from benchmarks.policies.policy import LatencyModel
from benchmarks.shared_corpus import CORPUS, require
from cast import Message
from cast.messages import utf8_len
from csum import HistoryArchive, Summarizer, SummarizerConfig, SummaryCache
from csum.archive import message_json
from csum.prompt import SummaryRequest
from csum.request import request_handler
from csum.stores import MemoryStore, RedisStore, SQLiteStore, SummaryStore

HERE = Path(__file__).resolve()
BATCH_MESSAGES = 20
"""Messages per archived batch (a summary covers a section's body: tens of messages)."""


def find_corpus(given: Path | None) -> Path:
    """The corpus folder holding the tau-bench chains; stops saying so when missing."""
    return require((given or CORPUS) / OPENAI_FOLDER).parent


def corpus_chains(corpus: Path) -> list[list[Message]]:
    return [c.messages for f in (OPENAI_FOLDER, CLAUDE_CODE_FOLDER) for c in load_folder(corpus, f)]


async def corpus_prompts(chains: list[list[Message]]) -> list[tuple[str, str]]:
    """(prompt, summary) of every summary the summarizer asks for on ``chains``."""
    from csum.handlers import extractive

    summarize = extractive(4096)
    pairs: list[tuple[str, str]] = []

    async def capture(request: SummaryRequest) -> str:
        summary = await summarize(request)
        pairs.append((request.prompt, summary))
        return summary

    config = SummarizerConfig(last_section_bytes=16384, max_body_pair_bytes=8192)
    for chain in chains:
        await Summarizer(config, max_concurrency=1).summarize(request_handler(capture), chain)
    return pairs


def synthetic_prompts(seed: int, count: int = 200) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = ["the", "disk", "build", "error", "path", "file", "token", "retry", "cache", "id"]
    pairs = []
    for index in range(count):
        size = int(1024 * 2 ** rng.uniform(0, 8))  # 1 KiB .. 256 KiB
        text = " ".join(rng.choice(words) for _ in range(size // 6))
        pairs.append((f"{index}\n{text}", " ".join(rng.choice(words) for _ in range(300))))
    return pairs


@dataclass
class LookupRun:
    miss_s: float
    hit_s: float
    modelled_s: float


async def measure_lookups(store: SummaryStore, pairs: list[tuple[str, str]]) -> LookupRun:
    """Total seconds of cache work on misses, then on hits, and the modelled latency."""
    latency = LatencyModel()
    cache = SummaryCache(store, handler_id="bench")
    modelled = sum(latency.seconds(utf8_len(p), utf8_len(s)) for p, s in pairs)

    def instant(summary: str) -> Callable[[], Awaitable[str]]:
        async def call() -> str:
            return summary

        return call

    started = time.perf_counter()
    for prompt, summary in pairs:
        _, hit = await cache.summarize(prompt, instant(summary))
        assert not hit
    miss = time.perf_counter() - started
    started = time.perf_counter()
    for prompt, summary in pairs:
        _, hit = await cache.summarize(prompt, instant(summary))
        assert hit
    hit_s = time.perf_counter() - started
    return LookupRun(miss, hit_s, modelled)


def start_redis() -> tuple[object, str] | None:
    import shutil
    import socket
    import subprocess

    binary = shutil.which("redis-server")
    if binary is None:
        return None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            time.sleep(0.02)
        else:
            return process, f"redis://127.0.0.1:{port}/0"
    process.kill()
    return None


def make_store(kind: str, folder: Path, redis_url: str | None, run: int) -> SummaryStore:
    if kind == "memory":
        return MemoryStore(max_entries=100_000)
    if kind == "sqlite":
        return SQLiteStore(folder / f"cache{run}.sqlite")
    assert redis_url is not None
    return RedisStore(redis_url, prefix=f"bench{run}:")


def fmt_stats(values: list[float], unit: str = "", digits: int = 3) -> tuple[str, str]:
    return f"{min(values):.{digits}f}{unit}", f"{statistics.fmean(values):.{digits}f}{unit}"


async def bench_cache(
    runs: int, corpus_pairs: list[tuple[str, str]], folder: Path, redis_url: str | None
) -> None:
    kinds = ["memory", "sqlite"] + (["redis"] if redis_url else [])
    print("\n## 1. cache lookup overhead per summary (ratio to the modelled handler latency)")
    print(
        "| store | prompts | summaries | miss overhead: min | mean | per summary (mean) "
        "| hit cost per summary (mean) | goal (miss) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for data_name in ("corpus", "synthetic"):
        for kind in kinds:
            ratios: list[float] = []
            per_miss: list[float] = []
            per_hit: list[float] = []
            count = 0
            for run in range(runs):
                pairs = corpus_pairs if data_name == "corpus" else synthetic_prompts(run)
                store = make_store(kind, folder, redis_url, run * 2 + (data_name == "synthetic"))
                try:
                    result = await measure_lookups(store, pairs)
                finally:
                    await store.aclose()
                count = len(pairs)
                ratios.append(result.miss_s / result.modelled_s)
                per_miss.append(result.miss_s / count)
                per_hit.append(result.hit_s / count)
            low, mean = fmt_stats([100 * r for r in ratios], "%", 4)
            goal = "" if kind == "memory" else ("<= 1% ✓" if max(ratios) <= 0.01 else "<= 1% ✗")
            print(
                f"| {kind} | {data_name} | {count} | {low} | {mean} | "
                f"{1e3 * statistics.fmean(per_miss):.3f} ms | "
                f"{1e3 * statistics.fmean(per_hit):.3f} ms | {goal} |"
            )


def direct_sqlite_write(path: Path, batches: list[list[Message]]) -> None:
    """The baseline: the same messages, serialized to the same JSON, into one table, one
    transaction per batch, the same WAL and synchronous settings, in the calling thread.

    Serializing is timed here as in ``HistoryArchive.add``: a program archiving
    messages with ``sqlite3`` directly has messages, not JSON, to write (the baseline
    used to be given the JSON made beforehand, which left that cost on one side only).
    """
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, session TEXT, body BLOB)")
    for batch in batches:
        rows = [("bench", message_json(message)) for message in batch]
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany("INSERT INTO t (session, body) VALUES (?, ?)", rows)
        connection.execute("COMMIT")
    connection.close()


async def bench_archive(
    runs: int, chains: list[list[Message]], folder: Path, redis_url: str | None
) -> None:
    messages = [m for chain in chains for m in chain]
    batches = [messages[i : i + BATCH_MESSAGES] for i in range(0, len(messages), BATCH_MESSAGES)]
    total = sum(len(message_json(m)) for m in messages)
    megabytes = total / 1e6
    print(
        f"\n## 2. archive write throughput ({len(messages)} corpus messages, "
        f"{megabytes:.1f} MB of JSON, batches of {BATCH_MESSAGES})"
    )
    print(
        "| archive | MB/s: min | mean | direct sqlite3 MB/s (mean) | ratio: min | mean "
        "| store only, JSON prepared (mean) | goal |"
    )
    print("|---|---|---|---|---|---|---|---|")
    variants = ["sqlite (FTS5)", "sqlite (no FTS)"] + (["redis"] if redis_url else [])
    for variant in variants:
        ours: list[float] = []
        base: list[float] = []
        ratios: list[float] = []
        prepared: list[float] = []
        for run in range(runs):
            index = variants.index(variant)
            # Interleaved: each run writes twice on each side, in the order A B B A (the
            # baseline first on even runs, the archive first on odd ones), so a drift in
            # the machine's load during a run does not favour either side.
            base_s = ours_s = 0.0
            order = ("base", "ours", "ours", "base")
            for turn, side in enumerate(order if run % 2 == 0 else order[::-1]):
                if side == "base":
                    base_s += _timed_direct(folder / f"direct-{index}-{run}-{turn}.sqlite", batches)
                else:
                    tag = f"{run}-{turn}"
                    ours_s += await _timed_archive(folder, variant, index, tag, batches, redis_url)
            base_s, ours_s = base_s / 2, ours_s / 2
            if variant != "redis":
                prepared.append(
                    _timed_direct_prepared(
                        folder / f"prepared-direct-{index}-{run}.sqlite", batches
                    )
                    / await store_only(folder, variant, run, batches)
                )
            ours.append(megabytes / ours_s)
            base.append(megabytes / base_s)
            ratios.append(base_s / ours_s)
        low, mean = fmt_stats(ours, "", 1)
        r_low, r_mean = fmt_stats(ratios, "x", 2)
        met = min(ratios) >= 0.5 and statistics.fmean(ratios) >= 0.5
        goal = "" if variant == "redis" else ("≥ 0.5x ✓" if met else "≥ 0.5x ✗")
        store_only_ratio = f"{statistics.fmean(prepared):.2f}x" if prepared else "-"
        print(
            f"| {variant} | {low} | {mean} | {statistics.fmean(base):.1f} | {r_low} | "
            f"{r_mean} | {store_only_ratio} | {goal} |"
        )
        print(f"<!-- {variant} per-run ratios: {' '.join(f'{r:.2f}' for r in ratios)} -->")


def _timed_direct(path: Path, batches: list[list[Message]]) -> float:
    started = time.perf_counter()
    direct_sqlite_write(path, batches)
    return time.perf_counter() - started


def _timed_direct_prepared(path: Path, batches: list[list[Message]]) -> float:
    """Seconds of the baseline's writes alone (JSON made beforehand, not timed)."""
    bodies = [[message_json(message) for message in batch] for batch in batches]
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, session TEXT, body BLOB)")
    started = time.perf_counter()
    for batch in bodies:
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(
            "INSERT INTO t (session, body) VALUES (?, ?)", [("bench", body) for body in batch]
        )
        connection.execute("COMMIT")
    seconds = time.perf_counter() - started
    connection.close()
    return seconds


async def _timed_archive(
    folder: Path,
    variant: str,
    index: int,
    run: str,
    batches: list[list[Message]],
    redis_url: str | None,
) -> float:
    """Seconds ``HistoryArchive.add`` takes for ``batches`` on a fresh store."""
    if variant == "redis":
        archive = HistoryArchive(redis_url or "", session=f"bench{run}")
    else:
        from csum.stores import SQLiteArchiveStore

        store = SQLiteArchiveStore(
            folder / f"archive-{index}-{run}.sqlite", full_text=variant == "sqlite (FTS5)"
        )
        archive = HistoryArchive(store, session="bench")
    started = time.perf_counter()
    for batch in batches:
        await archive.add(batch)
    seconds = time.perf_counter() - started
    if variant == "redis":
        await archive.delete_session()
    await archive.aclose()
    return seconds


async def store_only(folder: Path, variant: str, run: int, batches: list[list[Message]]) -> float:
    """Seconds the SQLite archive store takes once the records are made (the part of
    ``HistoryArchive.add`` that is not serializing and hashing messages)."""
    from csum.archive import batch_reference, message_json, message_reference
    from csum.stores import SQLiteArchiveStore
    from csum.stores._protocol import ArchiveRecord

    store = SQLiteArchiveStore(
        folder / f"prepared-{variant[8:11]}-{run}.sqlite", full_text=variant == "sqlite (FTS5)"
    )
    records = [
        [ArchiveRecord(message_reference(m), message_json(m)) for m in batch] for batch in batches
    ]
    started = time.perf_counter()
    for batch in records:
        await store.put("bench", batch_reference([r.reference for r in batch]), batch)
    seconds = time.perf_counter() - started
    await store.aclose()
    return seconds


async def main_async(runs: int, corpus: Path, only: str | None = None) -> None:
    chains = corpus_chains(corpus)
    corpus_pairs = await corpus_prompts(chains)
    print(
        f"corpus: {len(chains)} chains, {len(corpus_pairs)} summaries, "
        f"{sum(utf8_len(p) for p, _ in corpus_pairs) / 1e6:.1f} MB of prompts; {runs} runs; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    redis = start_redis()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            redis_url = None if redis is None else redis[1]
            if redis is None:
                print("note: redis-server not found: the Redis rows are left out")
            if only != "archive":
                await bench_cache(runs, corpus_pairs, folder, redis_url)
            if only != "cache":
                await bench_archive(runs, chains, folder, redis_url)
            print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        if redis is not None:
            process = redis[0]
            process.terminate()  # type: ignore[attr-defined]
            process.wait()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--only", choices=["cache", "archive"], help="run one part only")
    args = parser.parse_args()
    anyio.run(main_async, args.runs, find_corpus(args.corpus), args.only)


if __name__ == "__main__":
    main()
