"""The compaction workers: a bounded pool of threads of their own (anyio's default pool
is left to store I/O, which compactions wait for: one pool would deadlock), waited for
at most until a request's deadline; a pool busy past twice the deadline is stuck."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["PoolState", "WorkerPool"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PoolState:
    """What ``/healthz`` reports of the pool."""

    size: int
    busy: int
    waiting: int
    oldest_seconds: float
    """How long the longest-running work has run (0 when none runs)."""
    stuck: bool


class WorkerPool:
    """At most ``size`` threads doing work at once, each caller waiting until its deadline."""

    def __init__(self, size: int, deadline: float) -> None:
        if size < 1:
            raise ValueError(f"the pool needs at least one worker, got {size}")
        self.size = size
        self.deadline = deadline
        self._slots: anyio.Semaphore | None = None
        self._running: dict[int, float] = {}
        self._waiting = 0
        self._lock = threading.Lock()

    def _slots_now(self) -> anyio.Semaphore:
        """The pool's semaphore, made on the loop of first use."""
        if self._slots is None:
            self._slots = anyio.Semaphore(self.size)
        return self._slots

    def state(self) -> PoolState:
        """The pool now."""
        now = time.monotonic()
        with self._lock:
            starts = list(self._running.values())
            waiting = self._waiting
        oldest = now - min(starts) if starts else 0.0
        stuck = len(starts) >= self.size and oldest > 2 * self.deadline
        return PoolState(self.size, len(starts), waiting, round(oldest, 3), stuck)

    async def run(self, work: Callable[[], T], until: float) -> T | None:
        """``work()`` in a (plain) worker thread; None when ``until`` passed first."""
        slots = self._slots_now()
        with self._lock:
            self._waiting += 1
        acquired = False
        try:
            with anyio.move_on_after(until - time.monotonic()):
                await slots.acquire()
                acquired = True
        finally:
            with self._lock:
                self._waiting -= 1
        if not acquired:
            return None
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        box: list[T] = []
        failure: list[BaseException] = []
        key = object()
        with self._lock:
            self._running[id(key)] = time.monotonic()

        def finish() -> None:
            with self._lock:
                self._running.pop(id(key), None)
            slots.release()
            done.set()

        def in_thread() -> None:
            try:
                box.append(work())
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller
                failure.append(exc)
            finally:
                # the loop is gone (the gateway stopped): nothing left to release
                with contextlib.suppress(Exception):
                    anyio.from_thread.run_sync(finish, token=token)

        threading.Thread(target=in_thread, name="csum-compaction", daemon=True).start()
        with anyio.move_on_after(until - time.monotonic()):
            await done.wait()
        if failure:
            raise failure[0]
        return box[0] if box else None
