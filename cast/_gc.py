"""The cyclic garbage collector paused while a bulk of acyclic objects is built."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk build (parsing JSON, validating
    messages): it makes millions of containers, none in a cycle, and each collection
    they trigger scans all the older ones. The previous state is restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
