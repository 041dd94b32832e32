"""Shared test configuration: Hypothesis profiles and the corpus location."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

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

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real agent chains (skips when it is not beside the repo)."""
    if not CORPUS.is_dir():
        pytest.skip("shared corpus not found next to the repository")
    return CORPUS
