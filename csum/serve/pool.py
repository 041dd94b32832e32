"""The compaction workers: a bounded pool of threads of their own (anyio's default pool
is left to store I/O, which compactions wait for: one pool would deadlock), waited for
at most until a request's deadline; a pool busy past twice the deadline is stuck. The
stores as a worker sees them: every call runs on the gateway's event loop, where the
stores' connections live (``anyio.from_thread.run``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.lowlevel import EventLoopToken

from csum.stores import SummaryStore
from csum.stores._protocol import ArchiveStore

__all__ = ["OnLoop", "WorkerPool"]

T = TypeVar("T")


class WorkerPool:
    """At most ``size`` threads doing work at once, each caller waiting until its deadline."""

    def __init__(self, size: int, deadline: float) -> None:
        self.size = size
        self.deadline = deadline
        self._slots: anyio.Semaphore | None = None
        self._running: dict[Future[Any], float] = {}  # when each started
        self._lock = threading.Lock()

    def state(self) -> tuple[dict[str, float], bool]:
        """What ``/healthz`` reports of the pool now (``oldest_seconds``: how long the
        longest-running work has run, 0 when none runs), and whether it is stuck."""
        now = time.monotonic()
        with self._lock:
            starts = list(self._running.values())
        waiting = 0 if self._slots is None else self._slots.statistics().tasks_waiting
        oldest = now - min(starts) if starts else 0.0
        busy, stuck = len(starts), len(starts) >= self.size and oldest > 2 * self.deadline
        workers = {"size": self.size, "busy": busy, "waiting": waiting}
        return {**workers, "oldest_seconds": round(oldest, 3)}, stuck

    async def run(self, work: Callable[[], T], until: float) -> T | None:
        """``work()`` in a (plain) worker thread; None when ``until`` passed first."""
        if self._slots is None:  # made on the loop of first use
            self._slots = anyio.Semaphore(self.size)
        slots = self._slots
        with anyio.move_on_after(until - time.monotonic()) as waited:
            await slots.acquire()
        if waited.cancelled_caught:  # not acquired
            return None
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        future: Future[T] = Future()
        with self._lock:
            self._running[future] = time.monotonic()

        def finish() -> None:
            with self._lock:
                self._running.pop(future, None)
            slots.release()
            done.set()

        def in_thread() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller
                future.set_exception(exc)
            finally:
                # the loop is gone (the gateway stopped): nothing left to release
                with contextlib.suppress(Exception):
                    anyio.from_thread.run_sync(finish, token=token)

        threading.Thread(target=in_thread, name="csum-compaction", daemon=True).start()
        with anyio.move_on_after(until - time.monotonic()):
            await done.wait()
        return future.result() if future.done() else None


class OnLoop:
    """A store (summary or archive) whose calls run on the loop of ``token``, where its
    connections live: each method of ``inner`` is called there; closing it is the gateway's."""

    def __init__(self, inner: SummaryStore | ArchiveStore, token: EventLoopToken) -> None:
        self.inner = inner
        self.token = token
        self.name: str = inner.name

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        call = getattr(self.inner, method)

        async def on_loop(*args: Any) -> Any:
            return anyio.from_thread.run(call, *args, token=self.token)

        return on_loop

    async def aclose(self) -> None:
        """Nothing: the gateway closes the store it owns."""
