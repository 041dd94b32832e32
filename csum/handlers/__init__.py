"""Summarize handlers: what turns a summary request into a summary.

``extractive`` runs offline and is the default; ``openai_compatible`` and
``anthropic`` call a model through the provider's official SDK (an optional extra).
All three are request handlers (:mod:`csum.request`). ``threaded`` wraps a synchronous
text function so it runs in a worker thread.
:func:`resolve_handler` builds one from a command-line string.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import anyio
import anyio.to_thread

from csum.config import RetryPolicy
from csum.errors import HandlerError
from csum.handlers._extractive import ExtractiveHandler, extractive, summarize_extractive
from csum.handlers._sdk import anthropic, openai_compatible
from csum.request import RequestHandler, SummarizeHandler

__all__ = [
    "HANDLER_SPECS",
    "ExtractiveHandler",
    "HandlerError",
    "RequestHandler",
    "RetryPolicy",
    "SummarizeHandler",
    "anthropic",
    "extractive",
    "openai_compatible",
    "resolve_handler",
    "summarize_extractive",
    "threaded",
]

HANDLER_SPECS = ("extractive", "extractive:MAX_BYTES", "openai:MODEL", "anthropic:MODEL")
"""The forms :func:`resolve_handler` accepts."""


def resolve_handler(spec: str) -> RequestHandler:
    """The handler named by ``spec``: ``extractive`` (optionally ``extractive:MAX_BYTES``),
    ``openai:MODEL`` or ``anthropic:MODEL``.

    The model name is everything after the first colon (``openai:llama3:8b`` works).
    SDK handlers take their key and base URL from the SDK's environment variables.
    Raises :class:`ValueError` for anything else, and :class:`ImportError` with the
    install command when the provider's SDK is missing.
    """
    kind, sep, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "extractive":
        if not sep:
            return extractive()
        if rest.isdigit() and int(rest) > 0:
            return extractive(int(rest))
        raise ValueError(f"bad handler {spec!r}: extractive:MAX_BYTES needs a positive integer")
    if kind in ("openai", "anthropic"):
        if not rest.strip():
            raise ValueError(f"bad handler {spec!r}: name the model, as in {kind}:MODEL")
        return (openai_compatible if kind == "openai" else anthropic)(rest.strip())
    raise ValueError(f"unknown handler {spec!r}: expected one of " + ", ".join(HANDLER_SPECS))


def threaded(summarize: Callable[[str], str]) -> SummarizeHandler:
    """An async handler that calls the synchronous ``summarize(prompt)`` in a worker
    thread (a text handler); cancellation (a deadline) is honoured while it runs.

    A function that blocks (a synchronous HTTP client, a local model) would stop the
    event loop, and the caller's deadline could not fire until it returned; in a thread
    the loop keeps running. The thread itself cannot be stopped: on cancellation it runs
    to its end in the background and its answer is dropped (anyio's thread limit applies:
    40 threads).
    """
    if not callable(summarize):
        raise TypeError(f"summarize must be callable, not {type(summarize).__name__}")

    async def handler(prompt: str) -> str:
        return await anyio.to_thread.run_sync(partial(summarize, prompt), abandon_on_cancel=True)

    handler.__qualname__ = f"threaded({getattr(summarize, '__qualname__', summarize)!s})"
    return handler
