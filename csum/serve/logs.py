"""Structured logs of ``csum serve``: one JSON object a line on standard error (no
header, body or key is ever a field)."""

from __future__ import annotations

import copy
import json
import logging
import re
import sys
import time
from typing import Any, TextIO

__all__ = [
    "FIELDS",
    "SECRET_PARAMS",
    "JsonLines",
    "RedactQuery",
    "configure",
    "redact_query",
    "uvicorn_log_config",
]

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
        extra = {name: record.__dict__.get(name) for name in FIELDS}
        line.update((name, value) for name, value in extra.items() if value is not None)
        return json.dumps(line, ensure_ascii=False)


def configure(level: str, stream: TextIO | None = None) -> logging.Handler:
    """Send ``csum.serve``'s records at ``level`` and above to ``stream`` as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("csum.serve")
    logger.setLevel(level.upper())
    logger.addHandler(handler)
    logger.propagate = False
    return handler


SECRET_PARAMS = re.compile(
    r"(?i)(key|token|secret|password|passwd|auth|signature|sig|credential|session)"
)
"""Query parameters whose values are never logged (Gemini's ``?key=``, tokens...)."""
_PARAM = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")


def redact_query(target: str) -> str:
    """``target`` with the values of :data:`SECRET_PARAMS` replaced by ``REDACTED``."""
    if "?" not in target:
        return target

    def hide(match: re.Match[str]) -> str:
        sep, name, value = match.groups()
        return f"{sep}{name}={'REDACTED' if SECRET_PARAMS.search(name) else value}"

    path, _, query = target.partition("?")
    return path + _PARAM.sub(hide, "?" + query)


class RedactQuery(logging.Filter):
    """Hides secrets in the query of the path uvicorn's access log writes."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], redact_query(args[2]), args[3], args[4])
        return True


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging config with :class:`RedactQuery` on its access log."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_query"] = {"()": RedactQuery}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_query")
    return config
