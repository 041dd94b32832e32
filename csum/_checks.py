"""Refusing bad arguments where they are taken: a count that is not an int within its
bound, and what a newcomer passes by mistake for a handler (a keeper, a hook, the uncalled
``extractive`` factory), with a ``TypeError`` showing the line to write."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["check_count", "check_handler", "check_instance"]


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


def check_count(
    owner: str, value: object, *, least: int = 1, none: bool = False, type_error: bool = True
) -> None:
    """Refuse a count that is not an int of at least ``least`` (None passes with ``none``):
    a wrong type is a ``TypeError`` and a small int a ``ValueError``, or both a
    ``ValueError`` without ``type_error`` (where the API documents that)."""
    if value is None and none:
        return
    or_none = " or None" if none else ""
    if isinstance(value, int) and not isinstance(value, bool) and value >= least:
        return
    if not type_error:
        bound = {0: "an int >= 0", 1: "a positive int"}.get(least, f"an int of at least {least}")
        raise ValueError(f"{owner} must be {bound}{or_none}, not {value!r}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner} must be an int{or_none}, not {value!r}")
    bound = ">= 0" if least == 0 else f"at least {least}"
    raise ValueError(f"{owner} must be {bound}, got {value}")


def check_instance(owner: str, value: object, kind: type, *, none: bool = True) -> None:
    """Refuse a settings object that is not a ``kind`` (None passes with ``none``): a
    ``TypeError`` naming ``owner`` and the type passed instead."""
    if not isinstance(value, kind) and not (none and value is None):
        or_none = " or None" if none else ""
        raise TypeError(
            f"{owner} must be a csum.{kind.__name__}{or_none}, not {type(value).__name__}"
        )
