"""Shared test configuration: Hypothesis profiles, the anyio backends and the corpus
location."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from benchmarks.shared_corpus import (
    CLAUDE_CODE,
    CORPUS,
    FIDELITY,
    PAYLOADS,
    TAUBENCH,
    missing,
)
from csum.stores import (
    ArchiveStore,
    MemoryStore,
    RedisArchiveStore,
    RedisStore,
    SQLiteArchiveStore,
    SQLiteStore,
    SummaryStore,
)

pytest_plugins = ["redis_server"]  # a real redis-server for the store tests

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",  # HYPOTHESIS_PROFILE=thorough: a long hunt before a release
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


__all__ = [
    "CLAUDE_CODE",
    "CORPUS",
    "FIDELITY",
    "PAYLOADS",
    "TAUBENCH",
    "corpus_files",
    "missing",
    "needs",
    "real_cases",
]


def needs(path: Path) -> pytest.MarkDecorator:
    """Skip the test, saying why, when the real data at ``path`` (a part of the shared
    corpus) is missing: a fresh clone holds none of it."""
    return pytest.mark.skipif(not path.exists(), reason=missing(path))


def real_cases(cases: Sequence[Any], path: Path, arity: int = 1) -> list[Any]:
    """``cases`` for ``pytest.mark.parametrize``; when they are none because the real data
    at ``path`` is missing, one case that skips saying so (pytest would skip an empty
    list with no word about the data)."""
    if cases or path.exists():
        return list(cases)
    return [pytest.param(*[None] * arity, marks=needs(path), id="no-real-data")]


def corpus_files(folder: Path, pattern: str = "*.json") -> list[Path]:
    """The corpus files of ``folder`` in name order; none when the corpus is missing."""
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real agent chains (skips when it is not beside the repo)."""
    if not CORPUS.is_dir():
        pytest.skip(missing(CORPUS))
    return CORPUS


ANYIO_BACKENDS = ("asyncio", "trio")


@pytest.fixture(scope="session", params=ANYIO_BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on asyncio and on trio: anyio's pytest plugin reads this for
    ``@pytest.mark.anyio`` tests, and synchronous tests that start an event loop (under
    Hypothesis, say) pass it to ``anyio.run``. Session-scoped, so Hypothesis accepts it."""
    return str(request.param)


STORE_KINDS = ["memory", "sqlite", "redis"]


@pytest.fixture(params=STORE_KINDS)
async def cache_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SummaryStore]:
    """Each summary store in turn (a real redis-server for Redis), closed afterwards."""
    made: SummaryStore
    if request.param == "memory":
        made = MemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "cache.sqlite")
    else:
        made = RedisStore(request.getfixturevalue("redis_url"))
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture(params=["sqlite-fts5", "sqlite-like", "redis"])
async def archive_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[ArchiveStore]:
    """Each archive store in turn (SQLite with and without FTS5, Redis), closed afterwards."""
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
