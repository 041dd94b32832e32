"""The reference algorithm's three phases (section summaries, last-section rotation, QA
folding), each from an immutable tree to a new one; results placed by index, so the
output never depends on which handler call finished first."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from cast import (
    BodyPair,
    ChainAST,
    Header,
    Message,
    Role,
    Section,
    TextPart,
)
from cast.internals import utf8_len
from csum.archive import own_question, split_archive_line
from csum.assemble import SummaryStyle, summary_floor, summary_pair
from csum.config import SummarizerConfig
from csum.plan import human_of, is_summarized, messages_of, summary_text
from csum.request import HandlerCalls, gather

__all__ = [
    "exceeds_qa_limits",
    "is_stale_summary",
    "needs_section_summary",
    "recent_sections_to_keep",
    "rotate_section",
    "split_last_section_pairs",
    "summarize_qa",
    "summarize_section",
]


def is_stale_summary(pair: BodyPair, max_summary_bytes: int | None, max_pair_bytes: int) -> bool:
    """Whether one of csum's summaries is summarized again: only when it is over the pair
    budget and its text (less its archive line) over the summary cap, so it was not made
    under this cap; a summarized chain summarized again calls the handler zero times."""
    if max_summary_bytes is None or pair.size <= max_pair_bytes:
        return False
    text = summary_text(pair)
    return text is not None and utf8_len(split_archive_line(text)[0]) > max_summary_bytes


# -- phase 1: sections -------------------------------------------------------------------


def needs_section_summary(
    section: Section, max_summary_bytes: int | None = None, max_pair_bytes: int = 0
) -> bool:
    """Whether a non-kept section still has to be reduced to one summary pair (not when
    its body already is one summary, unless that one :func:`is_stale_summary`)."""
    body = section.body
    if len(body) == 1 and is_summarized(body[0]):
        return is_stale_summary(body[0], max_summary_bytes, max_pair_bytes)
    return bool(body)


async def summarize_section(
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


def split_last_section_pairs(
    section: Section, max_bytes: int, reserve_percent: int
) -> tuple[tuple[BodyPair, ...], tuple[BodyPair, ...]]:
    """(pairs to keep, pairs to summarize) of an oversized last section.

    The last pair is always kept. Going from newest to oldest, pairs are kept while the
    header and the kept pairs fit ``max_bytes * (100 - reserve_percent) / 100``; the first
    pair that does not fit and every older one are summarized. A lone summary pair is
    not summarized again.
    """
    body = section.body
    if not body:
        return (), ()
    threshold = max_bytes * (100 - reserve_percent) // 100
    current = section.header.size + body[-1].size
    border = len(body) - 1  # body[border:] is kept
    for pair in reversed(body[:-1]):
        if current + pair.size > threshold:
            break
        current += pair.size
        border -= 1
    keep, summarize = body[border:], body[:border]
    if len(summarize) == 1 and is_summarized(summarize[0]):
        return body, ()
    return keep, summarize


async def rotate_section(
    calls: HandlerCalls, section: Section, index: int, config: SummarizerConfig, style: SummaryStyle
) -> Section:
    """Bring one of the last sections within budget; its last pair is kept verbatim."""
    section = await _oversized_summarized(calls, section, index, config, style)
    if section.size <= config.last_section_bytes:
        return section
    keep, summarize = split_last_section_pairs(
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
        if pair.size > limit
        and (not is_summarized(pair) or is_stale_summary(pair, calls.stale_cap, limit))
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


def exceeds_qa_limits(ast: ChainAST, config: SummarizerConfig) -> bool:
    """Whether the chain has more sections or bytes than the QA limits allow."""
    return len(ast.sections) > config.max_qa_sections or ast.size > config.max_qa_bytes


def recent_sections_to_keep(ast: ChainAST, config: SummarizerConfig) -> int:
    """How many newest sections QA summarization keeps.

    Always the last ``keep_qa_sections``; then older ones while the kept sections stay
    under ``max_qa_sections - 1`` (one slot is the summary section) and within
    ``max_qa_bytes`` less ``reserve_percent``.
    """
    sections = ast.sections
    total = len(sections)
    keep = min(config.keep_qa_sections, total)
    size = sum(s.size for s in sections[total - keep :])
    budget = config.max_qa_bytes * (100 - config.reserve_percent) // 100
    for section in reversed(sections[: total - keep]):
        if keep >= config.max_qa_sections - 1 or size + section.size > budget:
            break
        size += section.size
        keep += 1
    return keep


async def summarize_qa(
    calls: HandlerCalls, ast: ChainAST, config: SummarizerConfig, style: SummaryStyle
) -> ChainAST:
    """Fold the oldest sections into one summary section when over the QA limits; the
    folded questions lose the archived lines re-insertion put into them
    (:func:`csum.archive.own_question`: else they would pile up at every fold)."""
    if not exceeds_qa_limits(ast, config):
        return ast
    sections = ast.sections
    keep = recent_sections_to_keep(ast, config)
    folded = sections[: len(sections) - keep]
    if not folded:
        return ast
    if len(folded) == 1 and not needs_section_summary(
        folded[0], calls.stale_cap, config.max_body_pair_bytes
    ):
        return ast
    human_messages = [
        own
        for s in folded
        if s.header.human_message is not None
        and (own := own_question(s.header.human_message)) is not None
    ]
    pairs = [pair for s in folded for pair in s.body]
    ai_messages = messages_of(pairs)
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
    system = folded[0].header.system_message
    folded_section = Section(Header(system, human), (pair,))
    if style.keeps_original(folded_section.size, sum(s.size for s in folded)):
        return ast
    calls.adopt(pair)
    # A kept section keeps its own system message (repair opens a section with a late one).
    kept = sections[len(sections) - keep :]
    return ChainAST((folded_section, *_after_folded(folded, kept)))


def _after_folded(folded: Sequence[Section], kept: Sequence[Section]) -> tuple[Section, ...]:
    """The kept sections (one at least), opened by the folded ones' mid-chain system messages
    (verbatim, in order, after the summary: never moved ahead of the user's task)."""
    later = [s for x in folded[1:] if (s := x.header.system_message) is not None]
    if not later:
        return tuple(kept)
    first = kept[0].header
    systems = later if first.system_message is None else [*later, first.system_message]
    return (*Section.opened_by(systems, first.human_message, kept[0].body), *kept[1:])
