"""Run handler jobs concurrently, results by index, failures reported as one error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio
import anyio.lowlevel

from csum.errors import SummarizationError

__all__ = ["gather", "unwrapped"]

T = TypeVar("T")


async def gather(jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run ``jobs`` concurrently; results by index. The first failure cancels the rest;
    the :class:`SummarizationError` of the earliest job that failed is raised (the
    others are listed in a note), ``KeyboardInterrupt`` and ``SystemExit`` unwrapped.

    Workers pull jobs from a shared counter and a new worker starts only after the
    previous ones had a chance to run: jobs that complete without waiting (an instant
    handler) share one task instead of paying for a task each, while jobs that wait
    (a real model call) each get their own, so they all run at once.
    """
    count = len(jobs)
    if count == 1:
        return [await jobs[0]()]
    results: list[T | None] = [None] * count
    failures: dict[int, SummarizationError] = {}
    next_job = 0

    try:
        async with anyio.create_task_group() as group:

            async def worker() -> None:
                nonlocal next_job
                while next_job < count:
                    index = next_job
                    next_job += 1
                    try:
                        results[index] = await jobs[index]()
                    except SummarizationError as exc:
                        failures[index] = exc
                        group.cancel_scope.cancel()
                        return

            while next_job < count:
                group.start_soon(worker)
                await anyio.lowlevel.checkpoint()
    except BaseExceptionGroup as group_error:
        raise unwrapped(group_error) from None

    if failures:
        # The same report on every backend: how many calls fail before the first
        # failure cancels the others depends on the event loop, so the error is the
        # failure of the earliest job, its cause the handler's own exception.
        first = min(failures)
        error = failures[first]
        others = [str(failures[i]) for i in sorted(failures) if i != first]
        if others:
            error.add_note("other handler calls failed too: " + "; ".join(others))
        raise error
    return results  # type: ignore[return-value]


def unwrapped(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """What a task group's failure is raised as: ``KeyboardInterrupt`` or
    ``SystemExit`` bare (both backends alike), a lone exception bare, else the group."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(reversed(exc.exceptions))
        else:
            leaves.append(exc)
    for leaf in leaves:
        if isinstance(leaf, KeyboardInterrupt | SystemExit):
            return leaf
    return leaves[0] if len(leaves) == 1 else group
