"""The summarizer: parse with repair, run the phases, hand back a new chain."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    ChainAST,
    ChainError,
    ChainIssue,
    IdTemplate,
    Message,
    ParseRule,
    ProviderProfile,
    Section,
    TemplateLike,
    parse_chain,
)
from csum._checks import check_count, check_instance
from csum._sync import run_sync
from csum.archive import without_recalled
from csum.assemble import SummaryStyle, summary_style, unique_summary_ids
from csum.compaction import pending_tail_calls, without_pending_fillers
from csum.config import Stores, SummarizerConfig
from csum.request import SUMMARY_FLOOR_BYTES, Handler, HandlerCalls, gather
from csum.store_events import StoreEvent
from csum.strategies import (
    needs_section_summary,
    rotate_section,
    summarize_qa,
    summarize_section,
)

__all__ = ["Summarizer", "SummaryResult"]


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """A summarized chain and what it cost."""

    messages: list[Message]
    size_before: int
    size_after: int
    handler_calls: int
    handler_input_bytes: int
    handler_output_bytes: int
    repairs: tuple[ChainIssue, ...]
    """What parsing with repair changed in the input (empty for a valid chain)."""
    seconds: float
    cache_hits: int = 0
    """Summaries served by the cache instead of a handler call."""
    store_events: tuple[StoreEvent, ...] = ()
    """What the cache and the archive reported (hits, misses, failures), in order."""

    @property
    def changed(self) -> bool:
        """Whether summarization (or repair) changed the chain."""
        return self.handler_calls > 0 or self.cache_hits > 0 or bool(self.repairs)


_COMPACTOR_TAKES = frozenset({ParseRule.FIRST_MESSAGE, ParseRule.SYSTEM_POSITION})
"""Parse rules whose chains the Compactor takes (an AI message first, a later system message)."""


class Summarizer:
    """Keeps chains within byte budgets by summarizing their old parts.

    ``max_concurrency`` bounds the handler calls in flight within one call of
    :meth:`summarize_chain` (None: unbounded). ``max_summary_bytes`` caps each summary:
    a handler's longer answer is truncated to it (None: no cap). A blank answer is a
    :class:`SummarizationError` naming the section. ``stores`` (a
    :class:`~csum.config.Stores`, as the Compactor takes): its ``cache`` serves
    summaries already made for the same prompt; its ``archive`` keeps every message
    summarized away, and each summary then ends with a line naming what it covers.
    Neither can fail a summarization: store failures become events
    (:attr:`SummaryResult.store_events`).

    ``summary_floor_bytes`` bounds a runaway answer: a summary larger than both this
    (default :data:`~csum.request.SUMMARY_FLOOR_BYTES`, 1 KiB) and what it replaces is
    cut, so it adds at most that much; and a lone summary-shaped pair over the pair
    budget holding more than that was not made under this bound and is summarized as
    ordinary content. ``None`` lifts the bound (the reference behaviour).
    """

    def __init__(
        self,
        config: SummarizerConfig | None = None,
        *,
        max_concurrency: int | None = None,
        max_summary_bytes: int | None = None,
        stores: Stores | None = None,
        summary_floor_bytes: int | None = SUMMARY_FLOOR_BYTES,
    ) -> None:
        if not isinstance(config, SummarizerConfig | None):
            raise TypeError(f"config must be a SummarizerConfig, not {type(config).__name__}")
        check_instance("stores", stores, Stores)
        for name, value in (
            ("max_concurrency", max_concurrency),
            ("max_summary_bytes", max_summary_bytes),
            ("summary_floor_bytes", summary_floor_bytes),
        ):
            check_count(name, value, none=True, type_error=False)
        self.config = config or SummarizerConfig()
        self.max_concurrency = max_concurrency
        self.max_summary_bytes = max_summary_bytes
        self.summary_floor_bytes = summary_floor_bytes
        self.stores = stores or Stores()

    def __repr__(self) -> str:
        return f"Summarizer({self.config!r}, max_concurrency={self.max_concurrency!r})"

    async def summarize_chain(
        self,
        handler: Handler,
        messages: Iterable[Message | dict[str, Any]],
        *,
        id_template: TemplateLike = DEFAULT_TOOL_CALL_ID_TEMPLATE,
        target: str | ProviderProfile | None = None,
        allow_growth: bool | None = None,
    ) -> list[Message]:
        """The chain summarized to fit the config (see :meth:`summarize`)."""
        result = await self.summarize(
            handler, messages, id_template=id_template, target=target, allow_growth=allow_growth
        )
        return result.messages

    async def summarize(
        self,
        handler: Handler,
        messages: Iterable[Message | dict[str, Any]],
        *,
        id_template: TemplateLike = DEFAULT_TOOL_CALL_ID_TEMPLATE,
        on_call: Callable[[int, int], None] | None = None,
        target: str | ProviderProfile | None = None,
        allow_growth: bool | None = None,
    ) -> SummaryResult:
        """Summarize a chain and report what it cost.

        Parses with repair (a chain whose first message is not system/human still raises
        ``ChainError``, which says to use the Compactor), except that tool calls of the
        newest AI message that nothing answers yet are left pending, not given fallback
        results (``csum.compaction.without_pending_fillers``); then runs section
        summarization and last-section rotation
        concurrently, then QA summarization when enabled. Raises
        :class:`SummarizationError` when the handler fails; the input is never changed
        and no partial result escapes. ``on_call(calls, input_bytes)`` is told after each
        handler call (progress reporting).

        ``target`` (a provider name or profile) shapes the summaries so that the output
        breaks no ``cast.lint`` rule of that provider that the input did not break
        already: summary ids from the provider's template (unless ``id_template`` is
        given, which must then make ids the provider accepts), reasoning as the provider
        wants it, and role order. ``allow_growth=False`` keeps the original wherever a
        summary would not be smaller than what it replaces, so the output is never
        larger than the (repaired) input; ``None`` (the default) means ``False`` with a
        target and ``True`` without one, the reference behaviour.
        """
        started = time.perf_counter()
        limit = self.max_concurrency
        calls = HandlerCalls(  # refuses what is no handler (TypeError), before any work
            handler,
            None if limit is None else anyio.CapacityLimiter(limit),
            on_call=on_call,
            cache=self.stores.cache,
            archive=self.stores.archive,
            max_summary_bytes=self.max_summary_bytes,
            summary_floor=self.summary_floor_bytes,
        )
        given = not (isinstance(id_template, str) and id_template == DEFAULT_TOOL_CALL_ID_TEMPLATE)
        style = summary_style(IdTemplate(id_template), target, allow_growth, template_given=given)
        ast, pending, issues = self._parsed(messages)
        size_before = ast.size
        ast = await self._summarized(calls, ast, style)
        out, fillers = without_pending_fillers(ast.to_messages(), pending)
        filler_size = sum(m.size for m in fillers)
        size_after = ast.size - filler_size
        archive = self.stores.archive
        if archive is not None and archive.reinsert_bytes:
            reinserted = await archive.reinsert(out, target=style.target)
            if reinserted is not out:
                out, size_after = reinserted, sum(m.size for m in reinserted)
        return SummaryResult(
            messages=out,
            size_before=size_before - filler_size,
            size_after=size_after,
            handler_calls=calls.calls,
            handler_input_bytes=calls.input_bytes,
            handler_output_bytes=calls.output_bytes,
            repairs=tuple(issues),
            seconds=time.perf_counter() - started,
            cache_hits=calls.cache_hits,
            store_events=tuple(calls.events),
        )

    def _parsed(
        self, messages: Iterable[Message | dict[str, Any]]
    ) -> tuple[ChainAST, frozenset[str], list[ChainIssue]]:
        """(the chain parsed with repair, the newest turn's pending calls, the repairs)."""
        issues: list[ChainIssue] = []
        items = list(messages)
        archive = self.stores.archive
        if archive is not None and archive.reinsert_bytes:
            # Earlier re-inserted messages are copies for earlier questions: out, and
            # the current question gets a fresh choice at the end.
            items = without_recalled(items)
        pending = pending_tail_calls(items)  # the newest turn's calls: left pending
        try:
            ast = parse_chain(items, repair=True, issues=issues)
        except ChainError as error:
            if type(error) is not ChainError or error.rule not in _COMPACTOR_TAKES:
                raise
            raise ChainError(
                f"{error.detail}; Summarizer keeps to the contract's parse rules even with "
                "repair. csum.Compactor takes such chains (it opens a replay with a placeholder "
                "human message and keeps later system messages), or pass the chain through "
                "cast.open_with_human / cast.port(messages, target) first",
                index=error.index,
                rule=error.rule,
            ) from error
        return ast, pending, issues

    async def _summarized(
        self, calls: HandlerCalls, ast: ChainAST, style: SummaryStyle
    ) -> ChainAST:
        """The phases: sections and last sections concurrently, then QA; summary ids made unique."""
        config = self.config
        sections = list(ast.sections)
        keep_from = max(len(sections) - config.keep_qa_sections, 0)
        jobs: dict[int, Callable[[], Awaitable[Section]]] = {}  # by section index
        for index, section in enumerate(sections):
            if index < keep_from:
                if needs_section_summary(section, calls.stale_cap, config.max_body_pair_bytes):
                    jobs[index] = partial(summarize_section, calls, section, index, style)
            elif config.preserve_last and len(section.body) > 1:
                jobs[index] = partial(rotate_section, calls, section, index, config, style)
        if jobs:
            for index, new_section in zip(jobs, await gather(list(jobs.values())), strict=True):
                sections[index] = new_section
            ast = ChainAST(sections)
        if config.use_qa:
            ast = await summarize_qa(calls, ast, config, style)
        if calls.created:
            ast = unique_summary_ids(ast, calls.created, style.id_template)
        return ast

    def summarize_chain_sync(
        self,
        handler: Handler,
        messages: Iterable[Message | dict[str, Any]],
        *,
        id_template: TemplateLike = DEFAULT_TOOL_CALL_ID_TEMPLATE,
        backend: str = "asyncio",
    ) -> list[Message]:
        """:meth:`summarize_chain` for synchronous code: runs its own event loop
        (``backend``), in a worker thread when this thread runs one (a notebook)."""
        return run_sync(
            partial(self.summarize_chain, handler, messages, id_template=id_template), backend
        )
