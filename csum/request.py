"""Structured requests for handlers that want them: the entries beside the prompt text.

The engine builds one :class:`~csum.prompt.SummaryRequest` per summary
(:func:`~csum.prompt.summary_request`): the prompt text and the entries it was rendered
from (roles, kinds, tool names and call ids, earlier summaries, archive references,
the focus). A handler opts in by having a ``summarize_request(request)`` coroutine
method or attribute (:class:`StructuredHandler`); it is then called with the request,
and its plain ``handler(prompt)`` call stays for callers that only have text. A
handler without it (a plain ``async def handler(prompt)``, a model handler) is called
with the text, as ever. Every wrapper csum offers (the robust handler, the fact guard,
the threaded handler, the summary cache) passes the request on to an opted-in handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from csum.prompt import SummaryRequest

__all__ = [
    "RequestHandler",
    "StructuredHandler",
    "SummaryJob",
    "SummaryRequest",
    "job_prompt",
    "request_method",
    "summarize_job",
    "with_request",
]

TextHandler = Callable[[str], Awaitable[str]]
"""A summarize handler as the contract has it (``csum.SummarizeHandler``)."""

RequestHandler = Callable[[SummaryRequest], Awaitable[str]]
"""Takes the structured request, returns the summary text."""

SummaryJob = str | SummaryRequest
"""What a wrapper passes on: the prompt text, or the request when the engine built one."""


@runtime_checkable
class StructuredHandler(Protocol):
    """A summarize handler that also reads the structured request."""

    def __call__(self, prompt: str) -> Awaitable[str]:
        """The summary of a prompt given as text alone."""
        ...

    def summarize_request(self, request: SummaryRequest) -> Awaitable[str]:
        """The summary of ``request`` (its entries; ``request.prompt`` is its text)."""
        ...


def request_method(handler: object) -> RequestHandler | None:
    """The handler's ``summarize_request``, or None when it takes text only."""
    method = getattr(handler, "summarize_request", None)
    return method if callable(method) else None


def job_prompt(job: SummaryJob) -> str:
    """The prompt text of a job."""
    return job if isinstance(job, str) else job.prompt


async def summarize_job(handler: TextHandler, job: SummaryJob) -> str:
    """``handler``'s summary of ``job``: the request to an opted-in handler, the text to
    any other (and to every handler when the job is text)."""
    if isinstance(job, str):
        return await handler(job)
    method = request_method(handler)
    if method is None:
        return await handler(job.prompt)
    return await method(job)


def with_request(handler: TextHandler, by_request: RequestHandler) -> TextHandler:
    """``handler`` (a function) opted in: ``by_request`` becomes its ``summarize_request``."""
    handler.summarize_request = by_request  # type: ignore[attr-defined]
    return handler
