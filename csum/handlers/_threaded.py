"""Synchronous summarize functions run as handlers, in a worker thread."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import anyio
import anyio.to_thread

from csum.request import SummarizeHandler

__all__ = ["threaded"]


def threaded(
    summarize: Callable[[str], str], *, limiter: anyio.CapacityLimiter | None = None
) -> SummarizeHandler:
    """An async handler that calls the synchronous ``summarize(prompt)`` in a worker
    thread (a text handler); cancellation (a deadline) is honoured while it runs.

    A function that blocks (a synchronous HTTP client, a local model) would stop the
    event loop, and the caller's deadline could not fire until it returned; in a thread
    the loop keeps running. The thread itself cannot be stopped: on cancellation it runs
    to its end in the background and its answer is dropped. ``limiter`` bounds the
    threads in use (default: anyio's, 40 threads).
    """
    if not callable(summarize):
        raise TypeError(f"summarize must be callable, not {type(summarize).__name__}")

    async def handler(prompt: str) -> str:
        return await anyio.to_thread.run_sync(
            partial(summarize, prompt), abandon_on_cancel=True, limiter=limiter
        )

    handler.__qualname__ = f"threaded({getattr(summarize, '__qualname__', summarize)!s})"
    return handler
