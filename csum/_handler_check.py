"""Refusing, where a handler is taken, what a newcomer passes by mistake (a keeper, a
hook, the uncalled ``extractive`` factory), with a ``TypeError`` showing the line to write."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["check_handler"]


def check_handler(handler: Any, what: str = "handler") -> None:
    """Raise ``TypeError`` when ``handler`` is not an async ``prompt -> summary`` callable:
    a keeper (``compact``), a framework hook, the ``extractive`` factory uncalled, or
    anything not callable. The handlers package is not imported for it (a tenth of a
    second on a first call): a caller holding the factory has imported it already."""
    handlers = sys.modules.get("csum.handlers")
    if handlers is not None and handler is getattr(handlers, "extractive", None):
        raise TypeError(
            f"{what} is the extractive factory itself: call it, "
            f"Compactor(extractive(), budget=...) (or leave the handler out: it is the default)"
        )
    kind = type(handler).__name__
    if hasattr(handler, "compact") or hasattr(handler, "compact_history"):
        raise TypeError(
            f"{what} must be a summarize handler (async prompt -> summary text), not the "
            f"keeper or hook {kind}: pass the keeper where a keeper goes, e.g. "
            f"HistoryProcessor(keeper), or its handler here, e.g. "
            f"Compactor(extractive(), budget=...)"
        )
    if not callable(handler):
        raise TypeError(
            f"{what} must be an async callable prompt -> summary text, not {kind}: e.g. "
            f"Compactor(extractive(), budget=...) or Compactor(openai_compatible(...), budget=...)"
        )
