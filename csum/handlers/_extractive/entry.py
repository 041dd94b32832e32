"""An offline, deterministic summarizer: the default handler, no model and no network.

It reads the entries of the structured request the engine builds beside the prompt
(:class:`csum.prompt.SummaryRequest`: roles, kinds, tool names, earlier summaries and
their archive lines), so it never parses the prompt it is given with one; a prompt
given as text alone is read back with :func:`csum.prompt.parse_prompt`. It keeps whole lines
(or the part of a long line around what matters), never bare tokens, so a value stays
with its subject: a version with its package, a line number with its path, an error
with its cause, a constraint ("never X", "X must not") as the sentence it is. Each
line is scored by what it holds (strict error signals, test counts, constraints and
decisions, identifiers such as paths with lines, versions, codes like ``AB1234`` or
``K9QX2Z``, hashes, URLs, numbers with units), by where it sits (first and last lines
of an output say most) and by how much it repeats; lines are then packed by score per
byte. A message with its place on the next line (a compiler error and its ``-->
src/a.rs:4:5``) is one unit, written place first. JSON results are flattened to
``key=value`` lines, one per record. A tool
result's lines always come after the call that produced them (``name(arguments)``).
Summaries already in the prompt (an earlier summary being summarized again) come
first and keep their place. A long line is cut to a window around what matters, a
long path in it written by its last directories and file (``…/core/frame.py:12``).

The output lists, in the prompt's order: ``User:`` requests, earlier summaries, each
call with its kept result lines indented below it (not indented when the call is all
there is), and the kept lines of the agent's answers, sentence by sentence. Room goes
to what a result says: the call line names what ran in as few bytes as it can (a lone
identifier argument without its key, no ``| head -20`` stage, a multi-line command by
its first line, ``~/`` for a home directory, cut between words and a long path by its
leading directories: ``…/jobs/a_test.exs``), a name said again counts less, the
records of a JSON list share one line, and no word is cut in half to fill the room.
Every line names its paths whole (or by their last directories when too long, as
above): a line never leans on the line above for its directories, since it may be
packed without it when the summary is summarized again. When the prompt is
over twice the budget, an answer's long line is written by its clauses that carry
something (:mod:`csum.handlers._extractive.prose`), back whole if room is left; its
code fences are left out and its links written as their urls. It uses the budget,
and never more than ``max_bytes`` UTF-8 bytes.

Every regular expression here runs on bounded pieces (tokens of at most
:data:`_TOKEN_CAP` characters, lines of at most :data:`_LINE_SCAN` characters) with no
nested unbounded repetition, so the time is linear in the prompt's length; long runs
call a checkpoint between lines so cancellation is honoured.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import partial

import anyio
import anyio.lowlevel
import anyio.to_thread

from csum.handlers._base import SummarizeHandler
from csum.handlers._extractive.collect import _collect
from csum.handlers._extractive.packing import _pack_to_fill
from csum.handlers._extractive.text import _clean, _clip_bytes
from csum.handlers._extractive.weights import _THREAD_THRESHOLD
from csum.prompt import (
    MESSAGES_TAG,
    PromptEntry,
    PromptFormatError,
    SummaryRequest,
    parse_prompt,
    prompt_entry,
)
from csum.request import SummaryJob, with_request

__all__ = ["extractive", "summarize_extractive", "summarize_extractive_request"]


_PLAIN_TEXT_ROLE = "text"  # the role given to a prompt that is not ours


class _StoppedError(Exception):
    """The caller gave up (cancelled): stop working."""


def _text_entries(prompt: str) -> tuple[PromptEntry, ...]:
    """The entries of a prompt given as text: read back when it is ours, else one text."""
    prompt = _clean(prompt)
    try:
        return parse_prompt(prompt).entries
    except PromptFormatError:
        return (PromptEntry(MESSAGES_TAG, 0, _PLAIN_TEXT_ROLE, "text", content=prompt),)


def _cleaned(entry: PromptEntry) -> PromptEntry:
    """``entry`` with its lone surrogates replaced (the output must be valid UTF-8), as
    a prompt given as text is cleaned before it is read."""
    fields = (entry.content, entry.name, entry.call_id, entry.args)
    content, name, call_id, args = (_clean(field) for field in fields)
    if (content, name, call_id, args) == fields:
        return entry
    return prompt_entry(
        entry.section,
        entry.message_index,
        entry.role,
        entry.kind,
        content=content,
        name=name,
        call_id=call_id,
        args=args,
    )


def _job_entries(job: SummaryJob) -> tuple[PromptEntry, ...]:
    if isinstance(job, str):
        return _text_entries(job)
    return tuple(_cleaned(entry) for entry in job.entries)


def _summarize(job: SummaryJob, max_bytes: int, check: Callable[[], None]) -> str:
    return _summarize_entries(_job_entries(job), max_bytes, check)


def _summarize_entries(
    entries: Sequence[PromptEntry], max_bytes: int, check: Callable[[], None]
) -> str:
    entries = tuple(entries)
    blocks = _collect(entries, max_bytes, check)
    if not any(block.lines for block in blocks):
        return _clip_bytes("(nothing to summarize)", max_bytes)
    return _pack_to_fill(blocks, max_bytes, check)


def _never() -> None:
    return None


def summarize_extractive(prompt: str, max_bytes: int = 4096) -> str:
    """The extractive summary of ``prompt``, synchronously (see :func:`extractive`).

    Raises ``ValueError`` when ``max_bytes`` is not a positive int and ``TypeError``
    when ``prompt`` is not a str."""
    _check_max_bytes(max_bytes)
    _check_prompt(prompt)
    return _summarize(prompt, max_bytes, _never)


def summarize_extractive_request(request: SummaryRequest, max_bytes: int = 4096) -> str:
    """The extractive summary of a structured request, synchronously: the same summary
    as :func:`summarize_extractive` of ``request.prompt``, read from its entries.

    Raises ``ValueError`` when ``max_bytes`` is not a positive int and ``TypeError``
    when ``request`` is not a :class:`~csum.prompt.SummaryRequest`."""
    _check_max_bytes(max_bytes)
    _check_request(request)
    return _summarize(request, max_bytes, _never)


def _check_request(request: object) -> None:
    if not isinstance(request, SummaryRequest):
        raise TypeError(f"request must be a SummaryRequest, got {type(request).__name__}")


def _check_max_bytes(max_bytes: object) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")


def _check_prompt(prompt: object) -> None:
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")


DEFAULT_EXTRACTIVE_BYTES = 4096
"""Summary size of ``extractive()`` used on its own (the Summarizer, a fallback)."""


def extractive(max_bytes: int | None = None) -> SummarizeHandler:
    """The offline handler: summaries of at most ``max_bytes`` UTF-8 bytes.

    Without ``max_bytes``, a :class:`~csum.Compactor` given this handler sizes its
    summaries itself, exactly as the Compactor's own default handler (its
    ``summary_ratio`` of the budget: one default whether the handler is named or not);
    used elsewhere, summaries are at most :data:`DEFAULT_EXTRACTIVE_BYTES`.

    Deterministic: the same prompt always gives the same summary. A structured handler
    (:mod:`csum.request`): the engine hands it the request's entries, which it reads
    without parsing the prompt; called with text, it reads prompts made by
    :func:`csum.prompt.messages_to_prompt` back, and any other text as plain text. Long
    prompts are summarized in a worker thread that stops at its next checkpoint when
    the caller is cancelled. Raises ``ValueError`` when ``max_bytes`` is not a positive
    int; the handler raises ``TypeError`` for a prompt that is not a str.
    """
    sized_by_caller = max_bytes is None
    size = DEFAULT_EXTRACTIVE_BYTES if max_bytes is None else max_bytes
    _check_max_bytes(size)

    async def summarize(prompt: str) -> str:
        _check_prompt(prompt)
        return await run(prompt)

    async def summarize_request(request: SummaryRequest) -> str:
        _check_request(request)
        return await run(request)

    async def run(job: SummaryJob) -> str:
        await anyio.lowlevel.checkpoint()
        if len(job if isinstance(job, str) else job.prompt) < _THREAD_THRESHOLD:
            return _summarize(job, size, _never)
        stop = threading.Event()

        def check() -> None:
            if stop.is_set():
                raise _StoppedError

        try:
            return await anyio.to_thread.run_sync(
                partial(_summarize, job, size, check), abandon_on_cancel=True
            )
        finally:
            stop.set()  # a cancelled call's thread stops at its next checkpoint

    summarize.__qualname__ = f"extractive({size})"
    with_request(summarize, summarize_request)
    if sized_by_caller:
        summarize.sized_by_compactor = True  # type: ignore[attr-defined]
    return summarize
