"""Timing helper shared by the benchmarks."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def best_of(repeat: int, func: Callable[[], Any]) -> float:
    """The fastest of ``repeat`` timed calls, in seconds (GC paused while timing)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            func()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times)
