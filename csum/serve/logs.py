"""Structured logs of ``csum serve``: one JSON object a line on standard error.

The gateway logs on the ``csum.serve`` logger with its fields as ``extra`` (endpoint,
status, outcome, added_ms, error: a type name; floor, budget and unit of a request over
its floor). No header, body or key is ever a field.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

__all__ = ["FIELDS", "JsonLines", "configure"]

FIELDS = ("endpoint", "status", "outcome", "added_ms", "error", "floor", "budget", "unit")
"""The ``extra`` fields a log line carries when the record has them."""


class JsonLines(logging.Formatter):
    """A record as one JSON line: time, level, logger, message and :data:`FIELDS`."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = value
        return json.dumps(line, ensure_ascii=False)


def configure(level: str, stream: TextIO | None = None) -> logging.Handler:
    """Send the ``csum.serve`` logger's records at ``level`` and above to ``stream``
    (standard error) as JSON lines; returns the handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("csum.serve")
    logger.setLevel(level.upper())
    logger.addHandler(handler)
    logger.propagate = False
    return handler
