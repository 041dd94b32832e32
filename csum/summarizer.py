"""The reference algorithm (:class:`Summarizer`): parse with repair, then its three phases
(section summaries, last-section rotation, QA folding), each from an immutable tree to a
new one; results placed by index, so the output never depends on which handler call
finished first."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    BodyPair,
    ChainAST,
    ChainError,
    ChainIssue,
    Header,
    IdTemplate,
    Message,
    ParseRule,
    ProviderProfile,
    Role,
    Section,
    TemplateLike,
    TextPart,
    parse_chain,
)
from cast.internals import utf8_len
from csum._checks import check_count, check_instance
from csum._sync import run_sync
from csum.archive import own_question, split_archive_line, without_recalled
from csum.assemble import (
    SummaryStyle,
    summary_floor,
    summary_pair,
    summary_style,
    unique_summary_ids,
)
from csum.compaction import pending_tail_calls, without_pending_fillers
from csum.config import Stores, SummarizerConfig
from csum.plan import human_of, is_summarized, messages_of, summary_text
from csum.request import SUMMARY_FLOOR_BYTES, Handler, HandlerCalls, gather
from csum.store_events import StoreEvent

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
        check_instance("config", config, SummarizerConfig)
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

        Parses with repair (``ChainError`` still for a chain opening with neither a system
        nor a human message), the newest AI message's unanswered calls left pending; runs
        section summaries and last-section rotation concurrently, then QA when enabled. A
        failing handler raises :class:`SummarizationError`, no partial result escaping.
        ``on_call(calls, input_bytes)`` is told after each handler call.

        ``target`` (a provider name or profile) shapes the summaries so that the output
        breaks no ``cast.lint`` rule of that provider that the input did not break
        already: ids from its template (unless ``id_template`` is given, which must then
        make ids it accepts), reasoning as it wants it, and role order. ``allow_growth``:
        ``False`` keeps the original wherever a summary would not be smaller than what it
        replaces, so the output is never larger than the (repaired) input; ``None`` (the
        default) means ``False`` with a target and ``True`` without one.
        """
        started = time.perf_counter()
        calls = HandlerCalls(  # refuses what is no handler (TypeError), before any work
            handler,
            None if self.max_concurrency is None else anyio.CapacityLimiter(self.max_concurrency),
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
            out = await archive.reinsert(out, target=style.target)
            size_after = sum(m.size for m in out)
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
                if _needs_summary(section.body, calls.stale_cap, config.max_body_pair_bytes):
                    jobs[index] = partial(_summarize_section, calls, section, index, style)
            elif config.preserve_last and len(section.body) > 1:
                jobs[index] = partial(_rotate_section, calls, section, index, config, style)
        if jobs:
            for index, new_section in zip(jobs, await gather(list(jobs.values())), strict=True):
                sections[index] = new_section
            ast = ChainAST(sections)
        if config.use_qa:
            ast = await _summarize_qa(calls, ast, config, style)
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


def _needs_summary(
    pairs: Sequence[BodyPair], max_summary_bytes: int | None = None, max_pair_bytes: int = 0
) -> bool:
    """Whether ``pairs`` still have to be summarized: any but one of csum's summaries, and
    that one only when over the pair budget with its text (less its archive line) over
    the summary cap, so not made under this cap (a summarized chain summarized again
    calls the handler zero times)."""
    if len(pairs) != 1 or not is_summarized(pairs[0]):
        return bool(pairs)
    if max_summary_bytes is None or pairs[0].size <= max_pair_bytes:
        return False
    return utf8_len(split_archive_line(summary_text(pairs[0]))[0]) > max_summary_bytes


# -- phase 1: sections -------------------------------------------------------------------


async def _summarize_section(
    calls: HandlerCalls, section: Section, index: int, style: SummaryStyle
) -> Section:
    """The section with its whole body replaced by one summary pair (a human message
    follows it). A style that refuses growth keeps a body its summary would not shrink."""
    pair = await _summary(calls, section, index, style, section.body)
    if pair is None or _grows_summary(section.body, pair):
        return section
    return section.evolve(body=(calls.adopt(pair),))


async def _summary(
    calls: HandlerCalls,
    section: Section,
    index: int,
    style: SummaryStyle,
    pairs: Sequence[BodyPair],
    *,
    rotation: bool = False,
) -> BodyPair | None:
    """The summary pair of ``pairs`` of ``section`` (in its phase: section summary or last
    section rotation); None where the style keeps them."""
    summarized = messages_of(pairs)
    replaced = sum(p.size for p in pairs)
    if style.keeps_original(summary_floor(style, summarized), replaced):
        return None
    system = section.header.system_message
    question = section.header.size - (0 if system is None else system.size)
    phase = "last section rotation" if rotation else "section summary"
    text = await calls.summarize(
        human_of(section), summarized, phase=phase, section=index, sizes=(question, replaced)
    )
    seed = f"{'rotation' if rotation else 'section'}\x1f{index}"
    pair = summary_pair(
        style, text, summarized, seed=seed, keep_reasoning=rotation, before_human=not rotation
    )
    return None if style.keeps_original(pair.size, replaced) else pair


def _grows_summary(replaced: Sequence[BodyPair], pair: BodyPair) -> bool:
    """Whether ``pair`` would replace a lone summary by a larger one (never taken)."""
    return len(replaced) == 1 and is_summarized(replaced[0]) and pair.size >= replaced[0].size


# -- phase 2: last-section rotation ------------------------------------------------------


def _split_last_section_pairs(
    section: Section, max_bytes: int, reserve_percent: int
) -> tuple[tuple[BodyPair, ...], tuple[BodyPair, ...]]:
    """(pairs to keep, pairs to summarize) of an oversized last section: the last pair,
    then newer to older while they fit with the header in ``max_bytes`` less the reserve;
    the first that does not and every older one are summarized (not a lone summary)."""
    body = section.body
    if not body:
        return (), ()
    room = max_bytes * (100 - reserve_percent) // 100 - section.header.size - body[-1].size
    border = len(body) - 1  # body[border:] is kept
    while border and body[border - 1].size <= room:
        border -= 1
        room -= body[border].size
    if border == 1 and is_summarized(body[0]):
        return body, ()
    return body[border:], body[:border]


async def _rotate_section(
    calls: HandlerCalls, section: Section, index: int, config: SummarizerConfig, style: SummaryStyle
) -> Section:
    """Bring one of the last sections within budget; its last pair is kept verbatim."""
    section = await _oversized_summarized(calls, section, index, config, style)
    if section.size <= config.last_section_bytes:
        return section
    keep, summarize = _split_last_section_pairs(
        section, config.last_section_bytes, config.reserve_percent
    )
    if not summarize:
        return section
    pair = await _summary(calls, section, index, style, summarize, rotation=True)
    return section if pair is None else section.evolve(body=(calls.adopt(pair), *keep))


async def _oversized_summarized(
    calls: HandlerCalls, section: Section, index: int, config: SummarizerConfig, style: SummaryStyle
) -> Section:
    """``section`` with each pair but the last over the pair budget (and no fresh summary)
    summarized alone, where that makes it smaller."""
    body = list(section.body)
    human = human_of(section)
    limit = config.max_body_pair_bytes
    oversized = [
        i
        for i, pair in enumerate(body[:-1])
        if pair.size > limit and _needs_summary((pair,), calls.stale_cap, limit)
    ]
    if not oversized:
        return section
    summarize = partial(calls.summarize, human, phase="oversized pair summary", section=index)
    texts = await gather([partial(summarize, body[i].messages()) for i in oversized])
    for i, text in zip(oversized, texts, strict=True):
        pair = body[i]
        seed = f"pair\x1f{index}\x1f{i}"
        new = summary_pair(style, text, pair.messages(), seed=seed, keep_reasoning=True)
        if not style.keeps_original(new.size, pair.size) and not _grows_summary((pair,), new):
            body[i] = calls.adopt(new)
    return section.evolve(body=body)


# -- phase 3: QA -------------------------------------------------------------------------


def _recent_sections_to_keep(ast: ChainAST, config: SummarizerConfig) -> int:
    """How many newest sections QA summarization keeps: the last ``keep_qa_sections``, then
    older ones while they fit ``max_qa_bytes`` less the reserve, up to
    ``max_qa_sections - 1`` (one slot is the summary section)."""
    sections = ast.sections
    keep = min(config.keep_qa_sections, len(sections))
    room = config.max_qa_bytes * (100 - config.reserve_percent) // 100
    room -= sum(s.size for s in sections[len(sections) - keep :])
    most = min(len(sections), config.max_qa_sections - 1)
    while keep < most and sections[-keep - 1].size <= room:
        keep += 1
        room -= sections[-keep].size
    return keep


async def _summarize_qa(
    calls: HandlerCalls, ast: ChainAST, config: SummarizerConfig, style: SummaryStyle
) -> ChainAST:
    """Fold the oldest sections into one summary section when over the QA limits; the
    folded questions lose the archived lines re-insertion put into them
    (:func:`csum.archive.own_question`: else they would pile up at every fold)."""
    if len(ast.sections) <= config.max_qa_sections and ast.size <= config.max_qa_bytes:
        return ast  # within the QA limits
    sections = ast.sections
    first = len(sections) - _recent_sections_to_keep(ast, config)  # the first section kept
    folded = sections[:first]
    if not folded:
        return ast
    if len(folded) == 1 and not _needs_summary(
        folded[0].body, calls.stale_cap, config.max_body_pair_bytes
    ):
        return ast
    human_messages = [
        own
        for s in folded
        if s.header.human_message is not None
        and (own := own_question(s.header.human_message)) is not None
    ]
    ai_messages = messages_of([pair for s in folded for pair in s.body])
    if not ai_messages:
        return ast
    summarize = partial(calls.summarize, human_messages, section=0)
    jobs = [partial(summarize, ai_messages, phase="QA summary")]
    if config.summarize_human_in_qa and human_messages:  # the questions summarized too
        jobs.append(partial(summarize, [], phase="QA human summary"))
    texts = await gather(jobs)
    human: Message | None = None
    if len(texts) == 2:
        human = Message.from_parts(Role.HUMAN, (TextPart(text=texts[1]),))
    elif human_messages:
        human = Message.from_parts(Role.HUMAN, [p for m in human_messages for p in m.parts])
    pair = summary_pair(
        style, texts[0], ai_messages, seed="qa", keep_reasoning=False, before_human=True
    )
    folded_section = Section(Header(folded[0].header.system_message, human), (pair,))
    if style.keeps_original(folded_section.size, sum(s.size for s in folded)):
        return ast
    calls.adopt(pair)
    # The kept sections follow, opened by the folded ones' mid-chain system messages
    # (verbatim, in order, after the summary: never ahead of the user's task), then their own.
    later = [s for x in sections[1 : first + 1] if (s := x.header.system_message) is not None]
    kept = Section.opened_by(later, sections[first].header.human_message, sections[first].body)
    return ChainAST((folded_section, *kept, *sections[first + 1 :]))
