"""A fact guard for any summarize handler: the identifiers, paths, numbers, error lines
and URLs a summary lost of the content it replaces (:func:`lost_facts`, found by the
shape of a token or a line, never a tool's name) are appended, within the budget."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Final

import anyio
import anyio.to_thread
import regex

from cast import Message, Role, ToolCall
from cast.internals import utf8_len
from csum._checks import check_count
from csum._fit import fit_joined
from csum.archive import archived_references, split_archive_line
from csum.clearing import ERROR_LINE, WEIGHTS, excerpt
from csum.handlers import summarize_extractive
from csum.prompt import MESSAGES_TAG, SummaryRequest, line_facts, summary_request, text_request
from csum.request import Handler, RequestHandler, as_request_handler, check_request, request_handler

__all__ = ["DEFAULT_RESERVE", "FactGuard", "LostFact", "lost_facts", "residual_request"]

DEFAULT_RESERVE: Final = 0.3
"""Share of the budget the guard keeps for what the summary lost."""
_MIN_RESERVE_BYTES: Final = 24
_THREAD_THRESHOLD: Final = 65_536  # characters of prompt above which it runs in a thread
_CHOOSE_MARGIN: Final = 0.3
"""Share of the whole summary's lost weight the guarded one must save to be chosen
(chosen on parts A, B and D of the fidelity set: 0, 0.1, 0.2, 0.3 and 0.5 tried)."""
_MIN_APPENDIX: Final = 12  # bytes of room below which nothing is appended

_EMPTY_CALL = regex.compile(r"[\w.-]{1,80}\(\)")
_LINE_NUMBER = regex.compile(r":\d{1,6}(?::\d{1,6})?$")
_EDGE_LINES: Final = 3  # lines at the start and end of an entry say most ...
_EDGE_BONUS: Final = 1.3  # ... so their facts weigh this much more


@dataclass(frozen=True, slots=True)
class LostFact:
    """One fact of the replaced content that a summary does not contain."""

    token: str
    """The fact as written in its source (a path, an identifier, an error line...)."""
    kind: str
    """``error``, ``path``, ``url``, ``id`` or ``number``."""
    excerpt: str
    """The token with the words around it on its source line, at most a few dozen bytes."""
    weight: float
    references: tuple[str, ...] = ()
    """Archive references of its source entry, when that entry names them."""


def _entries(request: SummaryRequest) -> list[tuple[str, tuple[str, ...]]]:
    """(text, archive references) of each replaced entry (a text request: its prompt)."""
    if request.case is None:
        return [(request.prompt, ())]
    entries = []
    for entry in request.summarized:
        text = f"{entry.name}({entry.args})" if entry.kind == "tool_call" else entry.content
        body, line = split_archive_line(text)
        entries.append((body, tuple(archived_references(line)) if line else ()))
    return entries


def lost_facts(request: SummaryRequest, summary: str) -> list[LostFact]:
    """The facts of ``request``'s replaced entries that ``summary`` does not contain,
    heaviest first: error lines, paths, URLs, identifiers, versions, hashes and numbers
    with the word naming them (a token said more than once weighs a little more)."""
    seen: dict[str, LostFact] = {}
    counts: dict[str, int] = {}
    for text, references in _entries(request):
        lines = text.splitlines()
        for number, line, candidates in zip(*line_facts(lines, marked=True), strict=True):
            error = ERROR_LINE.search(line)
            if error is not None:
                candidates.insert(0, (excerpt(line, error.group()), "error"))
            edge = number < _EDGE_LINES or number >= len(lines) - _EDGE_LINES
            for token, kind in candidates:
                counts[token] = counts.get(token, 0) + 1
                if token in seen or token in summary:
                    continue
                shown = token if kind == "error" else excerpt(line, token)
                weight = WEIGHTS[kind] + (kind == "path" and bool(_LINE_NUMBER.search(token)))
                weight *= _EDGE_BONUS if edge else 1.0
                seen[token] = LostFact(token, kind, shown, weight, references)
    facts = [
        replace(f, weight=f.weight * (1 + 0.25 * min(3, counts[f.token] - 1)))
        for f in seen.values()
    ]
    return sorted(facts, key=lambda f: -f.weight)


def residual_request(request: SummaryRequest, summary: str) -> SummaryRequest:
    """``request`` with each replaced entry's lines that ``summary`` already holds left
    out (tool calls kept whole, so each result keeps its call), for a second summary of
    what the first lost; a text request's leftover lines as a text request. Its prompt
    is "" when nothing is left."""
    if request.case is None:
        return text_request("\n".join(_missing_lines(request.prompt, summary)))
    built: list[Message] = []  # in chain order; a message's own entries go where it began
    for message in request.messages:
        if message.section != MESSAGES_TAG:
            continue
        at: int | None = None
        texts: list[str] = []
        calls: list[ToolCall] = []  # a kept call's result reads without it
        for entry in message.entries:
            if entry.kind == "tool_result":
                content = "\n".join(_missing_lines(entry.content, summary))
                built.append(Message.tool(entry.call_id, entry.name, content))
                continue
            at = len(built) if at is None else at
            if entry.kind == "tool_call" and not _call_kept(entry.name, entry.args, summary):
                calls.append(ToolCall(id=entry.call_id, name=entry.name, arguments=entry.args))
            elif entry.kind in ("text", "reasoning"):
                texts.append("\n".join(_missing_lines(entry.content, summary)))
        text = "\n".join(t for t in texts if t)
        if at is not None and message.role == "ai" and (text or calls):
            built.insert(at, Message.ai(text, *calls))
        elif at is not None and message.role == "human" and text:
            built.insert(at, Message.human(text))
    if all(m.role == Role.HUMAN for m in built):
        return summary_request(built, [])
    return summary_request([], [m for m in built if m.role != Role.HUMAN])


def _call_kept(name: str, args: str, summary: str) -> bool:
    """Whether ``summary`` names the call: ``name(`` with the start of its arguments, as
    written or of their first string value (a handler may drop the key)."""
    if f"{name}(" not in summary:
        return False
    if len(args) < 3 or args[:12] in summary:
        return True
    try:
        values = json.loads(args)
    except ValueError:
        return False
    strings = [v for v in values.values() if isinstance(v, str)] if isinstance(values, dict) else []
    return bool(strings) and strings[0][:12] in summary


def _missing_lines(text: str, summary: str) -> list[str]:
    """The lines of ``text`` that ``summary`` does not hold (blank lines left out)."""
    return [line for line in text.splitlines() if line.strip() and line.strip() not in summary]


class FactGuard:
    """Appends what a summary lost, within ``max_bytes`` UTF-8 bytes in all.

    The wrapped handler should write at most :attr:`inner_bytes` (``max_bytes`` less
    the ``reserve`` share, at least 24 bytes), as in
    ``guard.wrap(extractive(guard.inner_bytes))``; a longer summary is fitted to it.
    With ``ask_again``, a summary that lost facts is asked for once more, with the list.
    Raises ``ValueError`` for a ``max_bytes`` that is not an int above 1 or a ``reserve``
    outside [0, 1), ``TypeError`` for a ``reserve`` that is not a number.
    """

    def __init__(
        self, max_bytes: int, *, reserve: float = DEFAULT_RESERVE, ask_again: bool = False
    ) -> None:
        check_count("max_bytes", max_bytes, least=2, type_error=False)
        if isinstance(reserve, bool) or not isinstance(reserve, int | float):
            raise TypeError(f"reserve must be a share of the budget, got {reserve!r}")
        if not 0 <= reserve < 1:
            raise ValueError(f"reserve must be within [0, 1), got {reserve!r}")
        self.max_bytes = max_bytes
        self.reserve = reserve
        self.ask_again = ask_again
        reserved = min(max_bytes - 1, max(_MIN_RESERVE_BYTES, round(max_bytes * reserve)))
        self.inner_bytes = max_bytes - (reserved if reserve else 0)
        """The size the wrapped handler's summary is held to."""

    def __repr__(self) -> str:
        return f"FactGuard({self.max_bytes}, reserve={self.reserve}, ask_again={self.ask_again})"

    def complete(self, request: SummaryRequest, summary: str) -> str:
        """``summary`` (fitted to :attr:`inner_bytes`) with the offline handler's pick of
        the lines it lost (:func:`residual_request`) appended, within :attr:`max_bytes`,
        with their archive references when they fit."""
        summary = fit_joined([summary], self.inner_bytes)
        room = self.max_bytes - utf8_len(summary) - (1 if summary else 0)
        if room < _MIN_APPENDIX or not lost_facts(request, summary):
            return summary
        residual = residual_request(request, summary)
        if not residual.prompt:
            return summary
        appendix = summarize_extractive(residual, room)
        # a result whose call the summary names is written under an empty call line
        appendix = "\n".join(
            line for line in appendix.split("\n") if not _EMPTY_CALL.fullmatch(line.strip())
        )
        appendix = _cite(appendix, _entries(request), room)
        if not appendix:
            return summary
        body, archive = split_archive_line(summary)
        return "\n".join(p for p in (body, appendix, archive) if p)

    def choose(self, request: SummaryRequest, whole: str, guarded: str) -> str:
        """Of a summary made at the whole budget and a guarded one, the guarded one only
        when it lost clearly less of ``request`` (a near tie keeps the handler's own
        lines, denser than an appendix)."""
        lost_whole = sum(f.weight for f in lost_facts(request, whole))
        lost_guarded = sum(f.weight for f in lost_facts(request, guarded))
        return guarded if lost_guarded < lost_whole * (1 - _CHOOSE_MARGIN) else whole

    def wrap(self, handler: Handler) -> RequestHandler:
        """``handler`` (built for :attr:`inner_bytes`) with the guard around it, as a
        request handler (a text handler is taken as
        :func:`~csum.request.as_request_handler` takes it)."""
        inner = as_request_handler(handler)

        async def summarize(request: SummaryRequest) -> str:
            check_request(request)
            summary = await inner(request)
            if self.ask_again:
                lost = lost_facts(request, fit_joined([summary], self.inner_bytes))
                if lost:
                    facts = "\n".join(f"- {f.excerpt}" for f in lost[:20])
                    asked = replace(request, prompt=request.prompt + _ASK_AGAIN + facts)
                    summary = await inner(asked)
            if len(request.prompt) < _THREAD_THRESHOLD:
                return self.complete(request, summary)
            return await anyio.to_thread.run_sync(
                partial(self.complete, request, summary), abandon_on_cancel=True
            )

        return request_handler(summarize, f"guarded({inner!r})")

    def wrap_sized(self, handler_for: Callable[[int], Handler]) -> RequestHandler:
        """A handler summarizing with ``handler_for(size)`` (as :func:`csum.handlers.extractive`)
        at the whole budget and, guarded, at :attr:`inner_bytes`, keeping the guarded one
        only when it lost clearly less (:meth:`choose`): two calls, for offline handlers."""
        whole_handler = as_request_handler(handler_for(self.max_bytes))
        inner_handler = self.wrap(handler_for(self.inner_bytes))

        async def summarize(request: SummaryRequest) -> str:
            whole = await whole_handler(request)
            return self.choose(
                request, fit_joined([whole], self.max_bytes), await inner_handler(request)
            )

        name = getattr(handler_for, "__qualname__", "handler")
        return request_handler(summarize, f"guarded_sized({name})")


def _cite(appendix: str, entries: Sequence[tuple[str, tuple[str, ...]]], room: int) -> str:
    """``appendix`` with its lines' archive references, while they fit ``room`` bytes."""
    cited = [(text, refs) for text, refs in entries if refs]
    if not cited:
        return appendix
    lines = appendix.split("\n")
    used = utf8_len(appendix)
    for number, line in enumerate(lines):
        refs = next((r for text, r in cited if line.strip() and line.strip() in text), ())
        suffix = f" [archived: {' '.join(refs)}]" if refs else ""
        if suffix and used + utf8_len(suffix) <= room:
            lines[number] = line + suffix
            used += utf8_len(suffix)
    return "\n".join(lines)


_ASK_AGAIN = (
    "\n\nA first summary of the messages above lost these facts. Write the summary "
    "again, keeping them exactly as written where they matter:\n"
)
"""Appended to a prompt, then the first 20 lost facts, one a line, for the second ask."""
