"""The handler contract inside csum: handlers receive the structured request.

The engine builds one :class:`~csum.prompt.SummaryRequest` per summary
(:func:`~csum.prompt.summary_request`): the prompt text, the entries it was rendered
from (roles, kinds, tool names and call ids, earlier summaries, archive references, the
focus) and the conversation the summary was asked in. Every handler csum calls is a
:class:`RequestHandler`, called with that request: csum's own handlers (the offline
one, the model handlers, the robust and guarded wrappers) are request handlers, and a
model handler sends ``request.prompt``.

The public contract stays text: a :data:`SummarizeHandler` (``async (prompt) ->
summary``) is taken wherever a handler is, and :func:`as_request_handler` adapts it
once, where it is taken, into a request handler that passes it ``request.prompt``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from csum._handler_check import check_handler
from csum.prompt import SummaryRequest

__all__ = [
    "Handler",
    "RequestHandler",
    "SummarizeHandler",
    "SummaryRequest",
    "as_request_handler",
    "check_request",
    "request_handler",
]

SummarizeHandler: TypeAlias = Callable[[str], Awaitable[str]]
"""Takes the prompt text, returns the summary text (the public contract)."""


class RequestHandler(ABC):
    """A summarize handler that takes the structured request (``await
    handler(request)``) and returns the summary text."""

    @abstractmethod
    async def __call__(self, request: SummaryRequest, /) -> str:
        """The summary of ``request`` (``request.prompt`` is its text)."""


Handler: TypeAlias = SummarizeHandler | RequestHandler
"""What csum takes where it takes a handler: a text handler or a request handler."""


def check_request(request: object) -> None:
    """Raise ``TypeError`` unless ``request`` is a :class:`~csum.prompt.SummaryRequest`."""
    if not isinstance(request, SummaryRequest):
        raise TypeError(f"request must be a SummaryRequest, got {type(request).__name__}")


class _FunctionHandler(RequestHandler):
    """A coroutine function of the request, as a :class:`RequestHandler`."""

    __slots__ = ("_name", "_summarize")

    def __init__(self, summarize: Callable[[SummaryRequest], Awaitable[str]], name: str) -> None:
        self._summarize = summarize
        self._name = name

    def __repr__(self) -> str:
        return self._name

    async def __call__(self, request: SummaryRequest, /) -> str:
        return await self._summarize(request)


def request_handler(
    summarize: Callable[[SummaryRequest], Awaitable[str]], name: str | None = None
) -> RequestHandler:
    """``summarize`` (``async (request) -> summary``) as a request handler: csum then
    hands it the request instead of the text. ``name`` is its ``repr`` (default: the
    function's qualified name)."""
    if not callable(summarize):
        raise TypeError(f"summarize must be callable, not {type(summarize).__name__}")
    return _FunctionHandler(summarize, name or str(getattr(summarize, "__qualname__", "handler")))


def as_request_handler(handler: Handler, what: str = "handler") -> RequestHandler:
    """``handler`` as a request handler: itself when it is one, else (a text handler) a
    request handler that passes it ``request.prompt``. Raises ``TypeError`` for what is
    no handler (:func:`csum._handler_check.check_handler`)."""
    if isinstance(handler, RequestHandler):
        return handler
    check_handler(handler, what)
    text = handler

    async def by_text(request: SummaryRequest) -> str:
        check_request(request)
        return await text(request.prompt)

    return _FunctionHandler(by_text, str(getattr(text, "__qualname__", None) or repr(text)))
