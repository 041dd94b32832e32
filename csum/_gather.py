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
    others in a note). Workers pull jobs from a shared counter, a new one started only
    after the others could run: instant jobs share one task, waiting ones get one each.
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

    if failures:  # the earliest job's, whichever failed first on this event loop
        first = min(failures)
        error = failures[first]
        others = [str(failures[i]) for i in sorted(failures) if i != first]
        if others:
            error.add_note("other handler calls failed too: " + "; ".join(others))
        raise error
    return results  # type: ignore[return-value]


def unwrapped(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """A task group's failure as raised: ``KeyboardInterrupt``, ``SystemExit`` or a lone
    exception bare, else the group."""
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
