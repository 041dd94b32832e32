"""Run handler jobs concurrently, results by index, failures reported as one error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio
import anyio.lowlevel

from csum.errors import SummarizationError

__all__ = ["gather"]

T = TypeVar("T")


async def gather(jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run ``jobs`` concurrently; results by index. The first failure cancels the rest
    and is raised (several simultaneous failures: one error chaining them all).

    Workers pull jobs from a shared counter and a new worker starts only after the
    previous ones had a chance to run: jobs that complete without waiting (an instant
    handler) share one task instead of paying for a task each, while jobs that wait
    (a real model call) each get their own, so they all run at once.
    """
    count = len(jobs)
    if count == 1:
        return [await jobs[0]()]
    results: list[T | None] = [None] * count
    failures: list[SummarizationError] = []
    next_job = 0

    async with anyio.create_task_group() as group:

        async def worker() -> None:
            nonlocal next_job
            while next_job < count:
                index = next_job
                next_job += 1
                try:
                    results[index] = await jobs[index]()
                except SummarizationError as exc:
                    failures.append(exc)
                    group.cancel_scope.cancel()
                    return

        while next_job < count:
            group.start_soon(worker)
            await anyio.lowlevel.checkpoint()

    if failures:
        if len(failures) == 1:
            raise failures[0]
        causes = [f.__cause__ if isinstance(f.__cause__, Exception) else f for f in failures]
        raise SummarizationError(
            f"{len(failures)} concurrent handler calls failed: " + "; ".join(map(str, failures))
        ) from ExceptionGroup("summarize handler failures", causes)
    return results  # type: ignore[return-value]
