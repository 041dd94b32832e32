"""Every count argument goes through one check (csum._checks.check_count): each
keeps the exception its API documents for a wrong type and for a value out of range."""

from __future__ import annotations

from typing import Any

import pytest

from csum import Budget, Robustness, Summarizer
from csum.guard import FactGuard
from csum.handlers import extractive
from csum.integrations import HistoryHook
from csum.stores import MemoryStore

# (what is made, its argument (None: the first positional one), the bad values, the
# exception, the words of its message)
REFUSED: list[tuple[Any, str | None, list[object], type[Exception], str]] = [
    (Budget.bytes, None, [0, -1, True, 1.5, "10"], ValueError, "a budget must be a positive int"),
    (MemoryStore, None, [0, True, 2.0], ValueError, "max_entries must be a positive int"),
    (MemoryStore, "max_bytes", [0, False], ValueError, "max_bytes must be a positive int or None"),
    (Summarizer, "max_concurrency", [0, "4"], ValueError, "max_concurrency must be a positive"),
    (extractive, None, [0, True, "10"], ValueError, "max_bytes must be a positive int"),
    (FactGuard, None, [1, 0, 3.0], ValueError, "max_bytes must be an int of at least 2"),
    (HistoryHook, "max_events", [-1, True], ValueError, "max_events must be an int >= 0 or None"),
    (Robustness, "max_concurrency", [2.0, None], TypeError, "max_concurrency must be an int"),
    (Robustness, "max_concurrency", [0], ValueError, "max_concurrency must be at least 1"),
]


@pytest.mark.parametrize(
    ("make", "name", "bad", "error", "needle"),
    [
        pytest.param(make, name, value, error, needle, id=f"{make.__name__}-{name}={value!r}")
        for make, name, values, error, needle in REFUSED
        for value in values
    ],
)
def test_a_bad_count_is_refused_as_its_api_says(
    make: Any, name: str | None, bad: object, error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle):
        make(bad) if name is None else make(**{name: bad})


def test_good_counts_pass() -> None:
    assert MemoryStore(1, max_bytes=None).max_entries == 1
    assert FactGuard(2).max_bytes == 2
    assert HistoryHook(max_events=0).events.maxlen == 0
    assert Robustness(max_concurrency=1).max_concurrency == 1
