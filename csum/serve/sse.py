"""Server-sent events for the translations: reading an upstream's stream in any split
of its bytes, and writing the events each API's SDK reads (WHATWG HTML, 9.2)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["anthropic_event", "data_event", "read_event", "split_events"]


def split_events(buffer: bytes, data: bytes) -> tuple[list[bytes], bytes]:
    """The data of each SSE event that ``data`` completes after ``buffer`` (bytes of an
    event begun, arriving in any split), and the bytes left for the next call."""
    buffer += data.replace(b"\r\n", b"\n")
    events: list[bytes] = []
    while b"\n\n" in buffer:
        frame, buffer = buffer.split(b"\n\n", 1)
        lines = [line[5:].strip() for line in frame.split(b"\n") if line.startswith(b"data:")]
        if lines:
            events.append(b"\n".join(lines))
    return events, buffer


def anthropic_event(kind: str, data: dict[str, Any]) -> bytes:
    """A Messages stream event: named, its ``type`` repeated in the data."""
    return data_event({"type": kind, **data}, kind)


def data_event(data: dict[str, Any], name: str | None = None) -> bytes:
    """An OpenAI stream event (Chat chunks are unnamed, Responses events named)."""
    head = f"event: {name}\n" if name else ""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{head}data: {text}\n\n".encode()


def read_event(raw: bytes) -> tuple[dict[str, Any], str | None]:
    """An upstream event's JSON object, and the error it reports or its data is (or None)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, f"the upstream sent an event that is not JSON: {raw[:200]!r}"
    if not isinstance(value, dict):
        return {}, "the upstream sent an event that is not a JSON object"
    error = value.get("error")
    if error is None:
        return value, None
    message = error.get("message") if isinstance(error, dict) else error
    return value, f"upstream error: {message}"
