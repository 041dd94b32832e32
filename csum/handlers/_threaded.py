"""Synchronous summarize functions run as handlers, in a worker thread.

A handler that blocks (a synchronous HTTP client, ``time.sleep``, a local model) stops
the event loop while it runs: no other handler call proceeds and the caller's deadline
(``anyio.fail_after``, a cancel scope) cannot fire until it returns. :func:`threaded`
runs such a function in a worker thread instead, so the event loop keeps running and a
deadline or cancellation ends the wait at once. The thread itself cannot be stopped:
it runs to its end in the background and its answer is dropped. A function with a
synchronous ``summarize_request(request)`` makes a structured handler
(:mod:`csum.request`): requests go to it, in the worker thread too.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import anyio
import anyio.to_thread

from csum._calls import SummarizeHandler
from csum.prompt import SummaryRequest
from csum.request import with_request

__all__ = ["threaded"]


def threaded(
    summarize: Callable[[str], str], *, limiter: anyio.CapacityLimiter | None = None
) -> SummarizeHandler:
    """An async handler that calls the synchronous ``summarize(prompt)`` in a worker
    thread; cancellation (a deadline) is honoured while it runs. When ``summarize`` has
    a synchronous ``summarize_request(request)``, the handler takes requests too and
    runs that one on them.

    ``limiter`` bounds the threads in use (default: anyio's, 40 threads).
    """
    if not callable(summarize):
        raise TypeError(f"summarize must be callable, not {type(summarize).__name__}")

    async def handler(prompt: str) -> str:
        return await anyio.to_thread.run_sync(
            partial(summarize, prompt), abandon_on_cancel=True, limiter=limiter
        )

    handler.__qualname__ = f"threaded({getattr(summarize, '__qualname__', summarize)!s})"
    by_request = getattr(summarize, "summarize_request", None)
    if not callable(by_request):
        return handler
    sync_request: Callable[[SummaryRequest], str] = by_request

    async def summarize_request(request: SummaryRequest) -> str:
        return await anyio.to_thread.run_sync(
            partial(sync_request, request), abandon_on_cancel=True, limiter=limiter
        )

    return with_request(handler, summarize_request)
