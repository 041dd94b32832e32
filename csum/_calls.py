"""Handler calls for one summarization run, and the books kept on them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from cast import BodyPair, Message
from cast.internals import utf8_len
from csum._fit import fit_summary
from csum.errors import SummarizationError
from csum.prompt import SummaryRequest, summary_request
from csum.request import Handler, RequestHandler, as_request_handler
from csum.store_events import StoreEvent

if TYPE_CHECKING:
    from csum.archive import HistoryArchive
    from csum.cache import SummaryCache

__all__ = ["SUMMARY_FLOOR_BYTES", "HandlerCalls"]

_SIZE: Callable[[Message], int] = attrgetter("size")

SUMMARY_FLOOR_BYTES = 1024
"""What a summary may always take, in UTF-8 bytes, whatever it replaces: the bare
:class:`~csum.Summarizer` cuts an answer larger than both this and what it replaces,
so a runaway answer adds at most this much per summary (enough for the summary of a
tiny section); ``Summarizer(summary_floor_bytes=None)`` lifts the bound."""


@dataclass
class HandlerCalls:
    """Calls the handler for one summarization run and keeps its books.

    ``handler`` is taken as :func:`~csum.request.as_request_handler` makes it (a text
    handler gets ``request.prompt``). ``limiter`` bounds the calls in flight. A handler
    exception or a non-``str`` result becomes a :class:`SummarizationError` whose
    ``__cause__`` is the handler's exception.
    """

    handler: Handler
    limiter: anyio.CapacityLimiter | None = None
    calls: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    on_call: Callable[[int, int], None] | None = field(default=None, repr=False)
    max_summary_bytes: int | None = None
    """Cap of a summary's size in UTF-8 bytes (None: no cap); longer answers are cut."""
    summary_floor: int | None = None
    """With it, a summary of messages is also cut to the larger of this and their size
    (None: no such bound; see :data:`SUMMARY_FLOOR_BYTES`)."""
    created: list[BodyPair] = field(default_factory=list, repr=False)
    """The summary pairs made in this run (their ids are made unique at the end)."""
    cache: SummaryCache | None = field(default=None, repr=False)
    archive: HistoryArchive | None = field(default=None, repr=False)
    cache_hits: int = 0
    events: list[StoreEvent] = field(default_factory=list, repr=False)
    """What the cache and the archive reported in this run."""

    def __post_init__(self) -> None:
        self.requests: RequestHandler = as_request_handler(self.handler)

    def adopt(self, pair: BodyPair) -> BodyPair:
        """Record a summary pair made in this run."""
        self.created.append(pair)
        return pair

    async def summarize(
        self,
        human_messages: Sequence[Message],
        ai_messages: Sequence[Message],
        *,
        phase: str,
        section: int,
        replaced: Sequence[Message] | None = None,
        focus: str | None = None,
        conversation: tuple[Message, ...] = (),
        kept: int = 0,
    ) -> str:
        """The summary of the messages; with an archive, it ends naming their batch.

        ``replaced`` is what the summary takes the place of in the chain, archived in
        that order (default: the AI and tool messages, or the human messages when only
        they are summarized). ``focus``: what the next step needs (in the prompt).
        ``conversation`` and ``kept``: the chain the summary is asked in and how many of
        its last messages stay (:attr:`~csum.prompt.SummaryRequest.conversation`).
        """
        request = summary_request(
            human_messages, ai_messages, focus=focus, conversation=conversation, kept=kept
        )
        if replaced is None:
            replaced = ai_messages if ai_messages else human_messages
        cap = self.cap_for(replaced)
        summary = await self.summarize_prompt(request, phase=phase, section=section, cap=cap)
        return await self.archived(summary, replaced)

    @property
    def stale_cap(self) -> int | None:
        """The size over which a lone summary pair found in a chain was not made under
        this run's bounds (:func:`csum.strategies.is_stale_summary`)."""
        return self.max_summary_bytes if self.max_summary_bytes is not None else self.summary_floor

    def cap_for(self, replaced: Sequence[Message]) -> int | None:
        """The size a summary of ``replaced`` is cut to: ``max_summary_bytes``, and with
        a floor, at most the larger of the floor and what it replaces."""
        if self.summary_floor is None:
            return self.max_summary_bytes
        bound = max(self.summary_floor, sum(map(_SIZE, replaced)))
        return bound if self.max_summary_bytes is None else min(bound, self.max_summary_bytes)

    async def summarize_prompt(
        self, prompt: SummaryRequest, *, phase: str, section: int, cap: int | None = None
    ) -> str:
        """The summary of one request: from the cache when it has it (keyed by its
        prompt text), else the handler's; at most ``cap`` bytes (default:
        ``max_summary_bytes``)."""
        cap = self.max_summary_bytes if cap is None else cap
        if self.cache is None:
            return await self.call_handler(prompt, phase=phase, section=section, cap=cap)
        return await self._cached(prompt, phase=phase, section=section, cap=cap)

    async def _cached(
        self, prompt: SummaryRequest, *, phase: str, section: int, cap: int | None
    ) -> str:
        """The summary from the cache, or from the handler (then stored). A stored
        summary passes the checks a fresh answer gets (not blank, within ``cap``);
        one that does not is a miss, reported and replaced."""
        assert self.cache is not None
        call = partial(self.call_handler, prompt, phase=phase, section=section, cap=cap)

        def accept(summary: str) -> str | None:
            if not summary.strip():
                return "blank"
            size = utf8_len(summary)
            if cap is not None and size > cap:
                return f"{size} bytes, over the {cap} a fresh answer is cut to"
            return None

        summary, hit = await self.cache.summarize(
            prompt.prompt, call, emit=self.events.append, accept=accept
        )
        self.cache_hits += hit
        return summary

    async def archived(self, summary: str, replaced: Sequence[Message]) -> str:
        """With an archive: archive the messages the summary replaces, and return the
        summary naming their batch. Without one: the summary as it is."""
        if self.archive is None:
            return summary
        line = await self.archive.add_summarized(replaced, self.events.append)
        return summary if line is None else f"{summary}\n{line}"

    async def call_handler(
        self, prompt: SummaryRequest, *, phase: str, section: int, cap: int | None = None
    ) -> str:
        """One handler call on ``prompt``, counted; failures become SummarizationError.
        The answer is cut to ``cap`` bytes (default: ``max_summary_bytes``)."""
        self.calls += 1
        self.input_bytes += utf8_len(prompt.prompt)
        try:
            if self.limiter is None:
                result = await self.requests(prompt)
            else:
                async with self.limiter:
                    # The limiter may hand its slot over just as the caller is
                    # cancelled: do not start a handler call then.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    result = await self.requests(prompt)
        except anyio.get_cancelled_exc_class() as exc:
            await _reraise_if_cancelled()  # a real cancellation propagates as such
            raise SummarizationError(
                f"the summarize handler raised {type(exc).__name__} although the "
                "summarizer was not cancelled",
                section=section,
                phase=phase,
            ) from exc
        except Exception as exc:
            raise SummarizationError(
                f"the summarize handler raised {type(exc).__name__}: {exc}",
                section=section,
                phase=phase,
            ) from exc
        cap = self.max_summary_bytes if cap is None else cap
        result = checked_summary(result, cap, section, phase)
        self.output_bytes += utf8_len(result)
        if self.on_call is not None:
            self.on_call(self.calls, self.input_bytes)
        return result


async def _reraise_if_cancelled() -> None:
    """Raise the cancellation again when the caller's scope really is cancelled (anyio
    delivers it at every checkpoint); return when a handler raised it on its own."""
    await anyio.lowlevel.checkpoint_if_cancelled()


def checked_summary(result: object, max_bytes: int | None, section: int, phase: str) -> str:
    """The handler's answer, checked: a ``str`` that is not blank, fitted to at most
    ``max_bytes`` UTF-8 bytes when a cap is set (:func:`csum._fit.fit_summary`: each
    headed part keeps its first lines, so a long answer does not lose its last parts).

    Fitting, not rejection, for oversized answers: a chatty model still yields a
    bounded chain. (A summary that would make the chain larger than what it replaces
    is a separate rule of the summarizer: the original is kept.) Blank answers are a
    :class:`SummarizationError`: an empty summary would silently lose the section.
    """
    if not isinstance(result, str):
        raise SummarizationError(
            f"the summarize handler returned {type(result).__name__}, expected str",
            section=section,
            phase=phase,
        )
    if not result.strip():
        raise SummarizationError(
            f"the summarize handler returned an empty summary ({result[:20]!r})",
            section=section,
            phase=phase,
        )
    if max_bytes is None or utf8_len(result) <= max_bytes:
        return result
    return fit_summary(result, max_bytes)
