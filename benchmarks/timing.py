"""Timing helpers shared by the benchmarks.

Timings run with the garbage collector on, as users run: a collection that an
operation's allocations trigger is part of its cost. ``gc_paused=True`` pauses it, to
show how much of a figure the collector is. Each timed call starts after a full
collection, so one call does not pay for the garbage of the one before.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
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


# -- layouts -------------------------------------------------------------------------------
# CPython 3.11 caches type attribute lookups in a table indexed by the type's version tag
# and the name's address. A pydantic model defines __getattr__, so every attribute read on
# a message looks up three names on its type: where two hot lookups share a slot, each
# read walks the MRO instead (measured: 33 against 147 instructions a lookup over the
# 840,000 lookups of two summarize_chain calls). Which slots collide depends on the order
# in which types got their tags, i.e. on everything imported before: one tree can run a
# path 10 % slower than the next for no change on the path. A layout seed creates that
# many throwaway classes first, shifting the tags; a figure taken over several seeds is
# not one layout's luck.


def shift_layout(seed: int) -> list[type]:
    """``seed`` throwaway classes, each given its version tag now (keep the list)."""
    classes = [type(f"_Layout{index}", (), {}) for index in range(seed)]
    for klass in classes:
        getattr(klass, "absent", None)  # a cached lookup assigns the tag
    return classes


def ratio_in_layouts(expression: str, seeds: int) -> tuple[Ratio, list[float]]:
    """The :class:`Ratio` ``expression`` (Python code, run after ``from benchmarks
    import ...`` as the caller writes it, giving a Ratio) measures in ``seeds`` fresh
    interpreters, each with its layout shifted by its seed: every round of every layout,
    and each layout's mean ratio."""
    total: Ratio | None = None
    means = []
    for seed in range(seeds):
        code = (
            "import dataclasses, json\n"
            "from benchmarks.timing import shift_layout\n"
            f"_kept = shift_layout({seed})\n"
            f"{expression}\n"
            "print(json.dumps(dataclasses.asdict(RATIO)))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        if done.returncode:
            raise RuntimeError(f"layout seed {seed} failed:\n{done.stderr}")
        fields = json.loads(done.stdout.splitlines()[-1])
        ratio = Ratio(tuple(fields["ratios"]), fields["ours"], fields["baseline"])
        means.append(ratio.mean)
        total = ratio if total is None else total + ratio
    if total is None:
        raise ValueError("seeds must be at least 1")
    return total, means
