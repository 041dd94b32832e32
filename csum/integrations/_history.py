"""What the three framework hooks share: the keeper protocol, the compaction event,
the error policy, and putting the framework's own messages back around a compacted chain.

A hook decodes the framework's history through its codec, hands the chaincast messages
to a keeper, and encodes only what the keeper changed: every run of output messages
that equals what one original framework message decoded to is that original object,
untouched (ids, timestamps, statuses and usage kept); the rest (summaries, merged
turns) is encoded anew. When the keeper changes nothing the input list itself comes
back. A failure anywhere hands back the input and reports an event, unless the user
asked for errors.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import anyio

from cast import Message
from csum.budget import Budget
from csum.compactor import Compactor
from csum.summarizer import Summarizer

__all__ = [
    "DEFAULT_BUDGET",
    "HistoryHook",
    "HookEvent",
    "Keeper",
    "OnError",
    "SummarizerKeeper",
    "default_keeper",
    "rebuild",
]

T = TypeVar("T")
OnError = Literal["continue", "raise"]

DEFAULT_BUDGET = 65536
"""Byte budget of the default keeper when a hook is given neither keeper nor budget."""

logger = logging.getLogger("csum.integrations")


@runtime_checkable
class Keeper(Protocol):
    """What a hook needs from a keeper: a chain in, a chain within its budget out."""

    async def compact(self, messages: list[Message], /) -> list[Message]: ...


class SummarizerKeeper:
    """A :class:`~csum.Summarizer` and its handler behind the :class:`Keeper` protocol."""

    def __init__(self, summarizer: Summarizer, handler: Callable[[str], Awaitable[str]]) -> None:
        self.summarizer = summarizer
        self.handler = handler

    async def compact(self, messages: list[Message], /) -> list[Message]:
        return await self.summarizer.summarize_chain(self.handler, messages)


def default_keeper(budget: int | Budget | None = None) -> Keeper:
    """The keeper hooks use when given none: a :class:`~csum.Compactor` with the offline
    extractive handler and ``budget`` (bytes when an int; :data:`DEFAULT_BUDGET` when
    ``None``)."""
    return Compactor(budget=DEFAULT_BUDGET if budget is None else budget)


@dataclass(frozen=True, slots=True)
class HookEvent:
    """What one hook call did: ``compacted`` (the framework got a new history),
    ``unchanged`` (the keeper left it as it was) or ``failed`` (the framework got its
    own history back; ``error`` says why)."""

    framework: str
    outcome: Literal["compacted", "unchanged", "failed"]
    messages_before: int
    messages_after: int
    size_before: int
    """UTF-8 bytes of the history as chaincast messages (0 when decoding failed)."""
    size_after: int
    error: Exception | None = None


class HistoryHook:
    """The part of every framework hook that is not about the framework: run the keeper,
    apply the error policy, report events. Subclasses add the framework's own entry
    points."""

    framework = "chaincast"

    def __init__(
        self,
        keeper: Keeper | None = None,
        *,
        budget: int | Budget | None = None,
        on_error: OnError = "continue",
        on_event: Callable[[HookEvent], None] | None = None,
    ) -> None:
        if on_error not in ("continue", "raise"):
            raise ValueError(f"on_error must be 'continue' or 'raise', not {on_error!r}")
        if keeper is not None and budget is not None:
            raise ValueError("give a keeper or a budget for the default keeper, not both")
        self.keeper = default_keeper(budget) if keeper is None else keeper
        self.on_error = on_error
        self.on_event = on_event
        self.events: list[HookEvent] = []
        """Every event so far, oldest first (also passed to ``on_event``)."""

    def _report(self, event: HookEvent) -> None:
        self.events.append(event)
        if event.outcome == "failed":
            logger.warning(
                "%s history kept uncompacted: %s", event.framework, event.error, exc_info=None
            )
        if self.on_event is not None:
            self.on_event(event)

    async def compact_history(
        self,
        originals: Sequence[T],
        decode: Callable[[Sequence[T]], tuple[list[Message], list[int]]],
        encode: Callable[[list[Message]], list[T]],
    ) -> list[T]:
        """``originals`` kept under budget through the keeper (see the module docstring)."""
        size_before = 0
        try:
            messages, counts = decode(originals)
            size_before = sum(m.size for m in messages)
            out = await self.keeper.compact(messages)
            unchanged = out == messages
            if not unchanged:
                rebuilt = rebuild(originals, counts, messages, out, encode)
                size_after = sum(m.size for m in out)
        except Exception as exc:  # the policy decides; the run must go on
            if self.on_error == "raise":
                raise
            self._report(self._event("failed", originals, originals, size_before, exc))
            return list(originals)
        if unchanged:  # reported outside the try: a failing on_event is not a failed call
            self._report(self._event("unchanged", originals, originals, size_before, None))
            return list(originals)
        self._report(
            HookEvent(
                self.framework, "compacted", len(originals), len(rebuilt), size_before, size_after
            )
        )
        return rebuilt

    def compact_history_sync(
        self,
        originals: Sequence[T],
        decode: Callable[[Sequence[T]], tuple[list[Message], list[int]]],
        encode: Callable[[list[Message]], list[T]],
    ) -> list[T]:
        """:meth:`compact_history` for a framework's synchronous hook: runs its own event
        loop, in a worker thread when this thread already runs one (a notebook)."""
        job = partial(anyio.run, partial(self.compact_history, originals, decode, encode))
        if not _in_event_loop():
            return job()
        with ThreadPoolExecutor(1, thread_name_prefix="chaincast-hook") as pool:
            return pool.submit(job).result()

    def _event(
        self,
        outcome: Literal["unchanged", "failed"],
        before: Sequence[Any],
        after: Sequence[Any],
        size: int,
        error: Exception | None,
    ) -> HookEvent:
        return HookEvent(self.framework, outcome, len(before), len(after), size, size, error)


def _in_event_loop() -> bool:
    """Whether this thread runs an asyncio or trio event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return True
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True


def rebuild(
    originals: Sequence[T],
    counts: Sequence[int],
    decoded: list[Message],
    output: list[Message],
    encode: Callable[[list[Message]], list[T]],
) -> list[T]:
    """The framework messages for ``output``: originals where ``output`` holds exactly
    what they decoded to (in order), ``encode`` for the runs in between."""
    groups: list[list[Message]] = []
    start = 0
    for count in counts:
        groups.append(decoded[start : start + count])
        start += count
    result: list[T] = []
    fresh: list[Message] = []
    i = j = 0
    while i < len(output):
        found = _next_group(groups, j, output, i)
        if found is None:
            fresh.append(output[i])
            i += 1
            continue
        if fresh:
            result.extend(encode(fresh))
            fresh = []
        result.append(originals[found])
        i += len(groups[found])
        j = found + 1
    if fresh:
        result.extend(encode(fresh))
    return result


def _next_group(groups: list[list[Message]], j: int, output: list[Message], i: int) -> int | None:
    """The first group from ``j`` on that ``output`` holds at ``i``, if any."""
    for k in range(j, len(groups)):
        group = groups[k]
        if group and output[i : i + len(group)] == group:
            return k
    return None
