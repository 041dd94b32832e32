"""The three summarization phases, each a function from an immutable tree to a new one.

1. Section summarization: every section but the last ``keep_qa_sections`` ends with one
   body pair holding the summary of its body.
2. Last-section rotation: in each of the last ``keep_qa_sections`` sections, oversized
   pairs are summarized on their own, then the oldest pairs are folded into one summary
   pair until the kept ones fit the section budget less its reserve. The last pair of a
   section is never summarized or altered: providers validate its reasoning signatures.
3. QA summarization: when the chain has too many sections or bytes, the oldest sections
   become one summary section followed by the newest sections that fit.

Handler calls go through :class:`HandlerCalls`; results are placed by index, so the
output never depends on which call finished first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.lowlevel

from cast.ast import BodyPair, BodyPairType, ChainAST, Header, Section
from cast.constants import SUMMARIZATION_TOOL_NAME
from cast.ids import IdTemplate
from cast.messages import (
    Message,
    Role,
    TextPart,
    ToolCall,
    replace_field,
    trusted_message,
    utf8_len,
)
from cast.transforms import contains_tool_call_reasoning, extract_reasoning_message
from csum.config import SummarizerConfig
from csum.errors import SummarizationError
from csum.prompt import messages_to_prompt

__all__ = [
    "SUMMARIZED_CONTENT_PREFIX",
    "HandlerCalls",
    "SummarizeHandler",
    "exceeds_qa_limits",
    "gather",
    "is_summarized",
    "needs_section_summary",
    "recent_sections_to_keep",
    "rotate_section",
    "split_last_section_pairs",
    "summarize_qa",
    "summarize_section",
    "summary_type",
    "unique_summary_ids",
]

SUMMARIZED_CONTENT_PREFIX = "**summarized content:**\n"
"""Prefix of the text of COMPLETION summary pairs; marks them as already summarized."""

SummarizeHandler = Callable[[str], Awaitable[str]]
"""Takes the prompt text, returns the summary text."""

T = TypeVar("T")


@dataclass
class HandlerCalls:
    """Calls the handler for one summarization run and keeps its books.

    ``limiter`` bounds the calls in flight. A handler exception or a non-``str`` result
    becomes a :class:`SummarizationError` whose ``__cause__`` is the handler's exception.
    """

    handler: SummarizeHandler
    limiter: anyio.CapacityLimiter | None = None
    calls: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    on_call: Callable[[int, int], None] | None = field(default=None, repr=False)
    created: list[BodyPair] = field(default_factory=list, repr=False)
    """The summary pairs made in this run (their ids are made unique at the end)."""

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
    ) -> str:
        prompt = messages_to_prompt(human_messages, ai_messages)
        self.calls += 1
        self.input_bytes += utf8_len(prompt)
        try:
            if self.limiter is None:
                result = await self.handler(prompt)
            else:
                async with self.limiter:
                    # The limiter may hand its slot over just as the caller is
                    # cancelled: do not start a handler call then.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    result = await self.handler(prompt)
        except Exception as exc:
            raise SummarizationError(
                f"the summarize handler raised {type(exc).__name__}: {exc}",
                section=section,
                phase=phase,
            ) from exc
        if not isinstance(result, str):
            raise SummarizationError(
                f"the summarize handler returned {type(result).__name__}, expected str",
                section=section,
                phase=phase,
            )
        self.output_bytes += utf8_len(result)
        if self.on_call is not None:
            self.on_call(self.calls, self.input_bytes)
        return result


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


# -- pair helpers ------------------------------------------------------------------------


def is_summarized(pair: BodyPair) -> bool:
    """Whether a pair already holds a summary (a SUMMARIZATION pair, or a COMPLETION whose
    first part is text starting with ``SUMMARIZED_CONTENT_PREFIX``)."""
    if pair.type is BodyPairType.SUMMARIZATION:
        return True
    if pair.type is BodyPairType.COMPLETION:
        parts = pair.ai_message.parts
        return (
            bool(parts)
            and type(parts[0]) is TextPart
            and parts[0].text.startswith(SUMMARIZED_CONTENT_PREFIX)
        )
    return False


def summary_type(pairs: Sequence[BodyPair]) -> BodyPairType:
    """COMPLETION when every pair is a COMPLETION, else SUMMARIZATION."""
    if all(p.type is BodyPairType.COMPLETION for p in pairs):
        return BodyPairType.COMPLETION
    return BodyPairType.SUMMARIZATION


def _messages_of(pairs: Sequence[BodyPair]) -> list[Message]:
    out: list[Message] = []
    for pair in pairs:
        out.append(pair.ai_message)
        out.extend(pair.tool_messages)
    return out


def _summary_pair(
    text: str,
    kind: BodyPairType,
    summarized: list[Message],
    *,
    id_template: IdTemplate,
    keep_reasoning: bool,
    seed: str,
) -> BodyPair:
    """The pair replacing ``summarized``: a prefixed COMPLETION or a SUMMARIZATION pair.

    With ``keep_reasoning`` (last sections only) a summary of pairs whose tool calls
    carried reasoning gets the fake Gemini signature and the first reasoning text part
    in front of its call.
    """
    if kind is BodyPairType.COMPLETION:
        return BodyPair.completion(SUMMARIZED_CONTENT_PREFIX + text)
    fake_signature = keep_reasoning and contains_tool_call_reasoning(summarized)
    return BodyPair.summarization(
        text,
        id_template=id_template,
        fake_signature=fake_signature,
        reasoning_message=extract_reasoning_message(summarized) if fake_signature else None,
        seed=f"{seed}\x1f{text}",
    )


def _human(section: Section) -> list[Message]:
    human = section.header.human_message
    return [] if human is None else [human]


def _section(header: Header, body: tuple[BodyPair, ...]) -> Section:
    return Section._trusted(header, body, header.size + sum(p.size for p in body))


# -- phase 1: sections -------------------------------------------------------------------


def needs_section_summary(section: Section) -> bool:
    """Whether a non-kept section still has to be reduced to one summary pair."""
    body = section.body
    return bool(body) and not (len(body) == 1 and is_summarized(body[0]))


async def summarize_section(
    calls: HandlerCalls, section: Section, index: int, id_template: IdTemplate
) -> Section:
    """The section with its whole body replaced by one summary pair."""
    summarized = _messages_of(section.body)
    text = await calls.summarize(
        _human(section), summarized, phase="section summary", section=index
    )
    pair = calls.adopt(
        _summary_pair(
            text,
            summary_type(section.body),
            summarized,
            id_template=id_template,
            keep_reasoning=False,
            seed=f"section\x1f{index}",
        )
    )
    return _section(section.header, (pair,))


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
    for index in range(len(body) - 2, -1, -1):
        size = body[index].size
        if current + size > threshold:
            break
        current += size
        border = index
    keep, summarize = body[border:], body[:border]
    if len(summarize) == 1 and is_summarized(summarize[0]):
        return body, ()
    return keep, summarize


async def rotate_section(
    calls: HandlerCalls,
    section: Section,
    index: int,
    config: SummarizerConfig,
    id_template: IdTemplate,
) -> Section:
    """Bring one of the last sections within budget; its last pair is kept verbatim."""
    body = list(section.body)
    human = _human(section)
    oversized = [
        i
        for i, pair in enumerate(body[:-1])
        if pair.size > config.max_body_pair_bytes and not is_summarized(pair)
    ]
    if oversized:

        def job(i: int) -> Callable[[], Awaitable[str]]:
            return lambda: calls.summarize(
                human, body[i].messages(), phase="oversized pair summary", section=index
            )

        texts = await gather([job(i) for i in oversized])
        for i, text in zip(oversized, texts, strict=True):
            pair = body[i]
            body[i] = calls.adopt(
                _summary_pair(
                    text,
                    summary_type((pair,)),
                    pair.messages(),
                    id_template=id_template,
                    keep_reasoning=True,
                    seed=f"pair\x1f{index}\x1f{i}",
                )
            )
        section = _section(section.header, tuple(body))

    if section.size <= config.last_section_bytes:
        return section
    keep, summarize = split_last_section_pairs(
        section, config.last_section_bytes, config.reserve_percent
    )
    if not summarize:
        return section
    summarized = _messages_of(summarize)
    text = await calls.summarize(human, summarized, phase="last section rotation", section=index)
    pair = calls.adopt(
        _summary_pair(
            text,
            summary_type(summarize),
            summarized,
            id_template=id_template,
            keep_reasoning=True,
            seed=f"rotation\x1f{index}",
        )
    )
    return _section(section.header, (pair, *keep))


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
    if size > budget:
        return keep
    for index in range(total - keep - 1, -1, -1):
        if keep >= config.max_qa_sections - 1:
            break
        section_size = sections[index].size
        if size + section_size > budget:
            break
        size += section_size
        keep += 1
    return keep


async def summarize_qa(
    calls: HandlerCalls, ast: ChainAST, config: SummarizerConfig, id_template: IdTemplate
) -> ChainAST:
    """Fold the oldest sections into one summary section when over the QA limits."""
    if not exceeds_qa_limits(ast, config):
        return ast
    sections = ast.sections
    keep = recent_sections_to_keep(ast, config)
    folded = sections[: len(sections) - keep]
    if not folded:
        return ast
    if len(folded) == 1 and len(folded[0].body) == 1 and is_summarized(folded[0].body[0]):
        return ast
    human_messages = [s.header.human_message for s in folded if s.header.human_message is not None]
    pairs = [pair for s in folded for pair in s.body]
    ai_messages = _messages_of(pairs)
    if not ai_messages:
        return ast

    jobs: list[Callable[[], Awaitable[str]]] = [
        lambda: calls.summarize(human_messages, ai_messages, phase="QA summary", section=0)
    ]
    if config.summarize_human_in_qa and human_messages:
        jobs.append(
            lambda: calls.summarize(human_messages, [], phase="QA human summary", section=0)
        )
    texts = await gather(jobs)

    human: Message | None = None
    if len(texts) == 2:
        human = trusted_message(Role.HUMAN, (TextPart(text=texts[1]),))
    elif human_messages:
        human = trusted_message(Role.HUMAN, tuple(p for m in human_messages for p in m.parts))
    pair = calls.adopt(
        _summary_pair(
            texts[0],
            summary_type(pairs),
            ai_messages,
            id_template=id_template,
            keep_reasoning=False,
            seed="qa",
        )
    )
    system = sections[0].header.system_message
    header = Header._trusted(
        system, human, (system.size if system else 0) + (human.size if human else 0)
    )
    # Folded sections always include section 0, so kept ones carry no system message.
    kept = sections[len(sections) - keep :]
    return ChainAST._trusted((_section(header, (pair,)), *kept))


# -- ids ---------------------------------------------------------------------------------


def unique_summary_ids(
    ast: ChainAST, created: Sequence[BodyPair], template: IdTemplate
) -> ChainAST:
    """The chain with the summary pairs made in this run renamed where their call id
    repeats another id of the chain; ids that were already there never change.

    Summary ids are seeded by position and summary text, so two runs (or a handler that
    always answers the same) can produce one id twice; providers reject repeated ids.
    """
    new = {id(pair) for pair in created}
    fixed: set[str] = set()
    for section in ast.sections:
        for pair in section.body:
            if id(pair) not in new:
                fixed.update(call.id for call in pair.tool_calls)
    seen = set(fixed)
    sections = list(ast.sections)
    changed = False
    for s_index, section in enumerate(sections):
        body = list(section.body)
        renamed = False
        for p_index, pair in enumerate(body):
            if id(pair) not in new or pair.type is not BodyPairType.SUMMARIZATION:
                continue
            call_id = pair.tool_calls[0].id
            if call_id not in seen:
                seen.add(call_id)
                continue
            attempt = 0
            while call_id in seen:
                attempt += 1
                call_id = template.generate(
                    SUMMARIZATION_TOOL_NAME, seed=f"{pair.tool_calls[0].id}\x1f{attempt}"
                )
            seen.add(call_id)
            body[p_index] = _renamed_summary(pair, call_id)
            renamed = changed = True
        if renamed:
            sections[s_index] = _section(section.header, tuple(body))
    return ChainAST._trusted(tuple(sections)) if changed else ast


def _renamed_summary(pair: BodyPair, call_id: str) -> BodyPair:
    """A SUMMARIZATION pair with its call (and result) given a new id."""
    ai_parts = tuple(
        replace_field(p, "id", call_id) if type(p) is ToolCall else p for p in pair.ai_message.parts
    )
    result = pair.tool_messages[0].parts[0]
    ai = trusted_message(Role.AI, ai_parts)
    tool = trusted_message(Role.TOOL, (replace_field(result, "tool_call_id", call_id),))
    return BodyPair._trusted(pair.type, ai, (tool,), ai.size + tool.size)
