"""JSON text read as the providers read it: RFC 8259, nothing more."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads_strict"]


def _reject_constant(name: str) -> object:
    # NaN and Infinity are not JSON (RFC 8259 section 6), though Python's parser takes them.
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """``json.loads`` that also rejects ``NaN`` and ``Infinity`` (``ValueError``)."""
    return json.loads(text, parse_constant=_reject_constant)
