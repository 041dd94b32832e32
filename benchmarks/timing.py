"""Timing helpers shared by the benchmarks.

Timings run with the garbage collector on, as users run: a collection that an
operation's allocations trigger is part of its cost. ``gc_paused=True`` pauses it, to
show how much of a figure the collector is. Each timed call starts after a full
collection, so one call does not pay for the garbage of the one before.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def timed(func: Callable[[], Any], *, gc_paused: bool = False) -> float:
    """Seconds one call of ``func`` takes."""
    gc.collect()
    if gc_paused:
        gc.disable()
    try:
        start = time.perf_counter()
        func()
        return time.perf_counter() - start
    finally:
        if gc_paused:
            gc.enable()


def best_of(repeat: int, func: Callable[[], Any], *, gc_paused: bool = False) -> float:
    """The fastest of ``repeat`` timed calls, in seconds."""
    return min(timed(func, gc_paused=gc_paused) for _ in range(repeat))


@dataclass(frozen=True, slots=True)
class Ratio:
    """Ours against a baseline over several rounds, each round timing both in turn."""

    ratios: tuple[float, ...]
    """ours / baseline, one per round."""
    ours: float
    """The fastest time of ours, in seconds."""
    baseline: float
    """The fastest time of the baseline, in seconds."""

    @property
    def min(self) -> float:
        return min(self.ratios)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.ratios)

    def __add__(self, other: Ratio) -> Ratio:
        """The rounds of both (several seeds of one measure)."""
        return Ratio(
            self.ratios + other.ratios,
            min(self.ours, other.ours),
            min(self.baseline, other.baseline),
        )


def paired_ratio(
    repeat: int,
    ours: Callable[[], Any],
    baseline: Callable[[], Any],
    *,
    gc_paused: bool = False,
) -> Ratio:
    """``repeat`` rounds of baseline then ours: rounds pair up timings taken close
    together, so a burst of load on a shared machine hits both sides of a ratio."""
    ratios: list[float] = []
    ours_times: list[float] = []
    base_times: list[float] = []
    for _ in range(repeat):
        base = timed(baseline, gc_paused=gc_paused)
        mine = timed(ours, gc_paused=gc_paused)
        ratios.append(mine / base)
        ours_times.append(mine)
        base_times.append(base)
    return Ratio(tuple(ratios), min(ours_times), min(base_times))
