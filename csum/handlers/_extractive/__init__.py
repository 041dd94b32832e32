"""The offline extractive handler: a deterministic summarizer, no model and no network.

It keeps a prompt's most telling lines whole, scored by what they hold and where they
sit, packed by score per byte into the budget (docs/handlers.md says how).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import anyio
import anyio.lowlevel
import anyio.to_thread

from cast.internals import clip_utf8
from csum._checks import check_count
from csum.handlers._extractive.collect import _Collector
from csum.handlers._extractive.packing import _pack_to_fill
from csum.prompt import TEXT_ROLE, PromptEntry, SummaryRequest, prompt_entry
from csum.request import RequestHandler, check_request

_THREAD_THRESHOLD = 64 * 1024  # characters of prompt from which a worker thread is used

DEFAULT_EXTRACTIVE_BYTES = 4096
"""Summary size of ``extractive()`` used on its own (the Summarizer, a fallback)."""


class _StoppedError(Exception):
    """The caller gave up (cancelled): stop working."""


def _cleaned(entry: PromptEntry) -> PromptEntry:
    """``entry`` with its lone surrogates replaced (the output must be valid UTF-8)."""
    fields = {key: getattr(entry, key) for key in ("content", "name", "call_id", "args")}
    cleaned = {
        key: text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")
        for key, text in fields.items()
    }
    if cleaned == fields:
        return entry
    if entry.role == TEXT_ROLE:
        return replace(entry, content=cleaned["content"])
    return prompt_entry(entry.section, entry.message_index, entry.role, entry.kind, **cleaned)


def _summarize(request: SummaryRequest, max_bytes: int, check: Callable[[], None]) -> str:
    entries = tuple(_cleaned(entry) for entry in request.entries)
    blocks = _Collector(entries, max_bytes, check).collect()
    if not any(block.lines for block in blocks):
        return clip_utf8("(nothing to summarize)", max_bytes)
    return _pack_to_fill(blocks, max_bytes, check)


def summarize_extractive(request: SummaryRequest, max_bytes: int = DEFAULT_EXTRACTIVE_BYTES) -> str:
    """The extractive summary of ``request``, synchronously (see :func:`extractive`);
    ``csum.prompt.text_request(text)`` summarizes a plain text.

    Raises ``ValueError`` when ``max_bytes`` is not a positive int and ``TypeError``
    when ``request`` is not a :class:`~csum.prompt.SummaryRequest`."""
    check_count("max_bytes", max_bytes, type_error=False)
    check_request(request)
    return _summarize(request, max_bytes, lambda: None)


class ExtractiveHandler(RequestHandler):
    """The offline handler (:func:`extractive`): a request handler."""

    __slots__ = ("max_bytes", "sized_by_compactor")

    def __init__(self, max_bytes: int, *, sized_by_compactor: bool = False) -> None:
        check_count("max_bytes", max_bytes, type_error=False)
        self.max_bytes = max_bytes
        self.sized_by_compactor = sized_by_compactor
        """Made without a size: a Compactor sizes its summaries itself."""

    def __repr__(self) -> str:
        return f"extractive({self.max_bytes})"

    async def __call__(self, request: SummaryRequest, /) -> str:
        check_request(request)
        await anyio.lowlevel.checkpoint()
        if len(request.prompt) < _THREAD_THRESHOLD:
            return _summarize(request, self.max_bytes, lambda: None)
        stop = threading.Event()

        def check() -> None:
            if stop.is_set():
                raise _StoppedError

        try:
            return await anyio.to_thread.run_sync(
                partial(_summarize, request, self.max_bytes, check), abandon_on_cancel=True
            )
        finally:
            stop.set()  # a cancelled call's thread stops at its next checkpoint


def extractive(max_bytes: int | None = None) -> ExtractiveHandler:
    """The offline handler: summaries of at most ``max_bytes`` UTF-8 bytes.

    Without ``max_bytes``, a :class:`~csum.Compactor` given this handler sizes its
    summaries itself, exactly as the Compactor's own default handler (its
    ``summary_ratio`` of the budget: one default whether the handler is named or not);
    used elsewhere, summaries are at most :data:`DEFAULT_EXTRACTIVE_BYTES`.

    Deterministic: the same request always gives the same summary. A request handler
    (:mod:`csum.request`): called with a :class:`~csum.prompt.SummaryRequest`, it reads
    its entries, never the prompt text. Long prompts are summarized in a worker thread
    that stops at its next checkpoint when the caller is cancelled. Raises
    ``ValueError`` when ``max_bytes`` is not a positive int; the handler raises
    ``TypeError`` for what is not a request.
    """
    if max_bytes is None:
        return ExtractiveHandler(DEFAULT_EXTRACTIVE_BYTES, sized_by_compactor=True)
    return ExtractiveHandler(max_bytes)
