"""Synchronous summarize functions run as handlers, in a worker thread.

A handler that blocks (a synchronous HTTP client, ``time.sleep``, a local model) stops
the event loop while it runs: no other handler call proceeds and the caller's deadline
(``anyio.fail_after``, a cancel scope) cannot fire until it returns. :func:`threaded`
runs such a function in a worker thread instead, so the event loop keeps running and a
deadline or cancellation ends the wait at once. The thread itself cannot be stopped:
it runs to its end in the background and its answer is dropped.
"""

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

    ``limiter`` bounds the threads in use (default: anyio's, 40 threads).
    """
    if not callable(summarize):
        raise TypeError(f"summarize must be callable, not {type(summarize).__name__}")

    async def handler(prompt: str) -> str:
        return await anyio.to_thread.run_sync(
            partial(summarize, prompt), abandon_on_cancel=True, limiter=limiter
        )

    handler.__qualname__ = f"threaded({getattr(summarize, '__qualname__', summarize)!s})"
    return handler
