"""The async API run from synchronous code: its own event loop, in a worker thread when
this thread already runs one (a notebook, a framework's sync hook inside an async app),
where starting a second loop on the thread would fail."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

import anyio

__all__ = ["in_event_loop", "run_sync"]

T = TypeVar("T")


def in_event_loop() -> bool:
    """Whether this thread runs an asyncio or trio event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        trio = sys.modules.get("trio")
        try:
            return trio is not None and trio.lowlevel.current_trio_token() is not None
        except RuntimeError:
            return False
    return True


def run_sync(job: Callable[[], Awaitable[T]], backend: str = "asyncio") -> T:
    """``job()`` awaited on an event loop of ``backend``, in a worker thread when this
    thread runs a loop already."""
    run = partial(anyio.run, job, backend=backend)
    if not in_event_loop():
        return run()
    with ThreadPoolExecutor(1, thread_name_prefix="chaincast-sync") as pool:
        return pool.submit(run).result()
