"""Translation between the providers' APIs (``--upstream-api``): one module per direction,
``SOURCE_to_TARGET``, the request one way, the answer back; :mod:`~csum.serve.translate.pairs`
says which serve which client and upstream."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from csum.serve.sse import read_event, split_events

__all__ = ["TranslatedStream", "TranslationError", "tools_of"]


class TranslationError(ValueError):
    """A request the translation cannot carry (the message names the field); a history
    the codec cannot read raises its own ``ValueError``, also naming the field."""


def tools_of(request: dict[str, Any]) -> list[Any]:
    """A request's ``tools`` array (empty when it has none)."""
    tools = request.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise TranslationError("tools: expected an array")
    return tools or []


class TranslatedStream(ABC):
    """A streamed answer being translated: the upstream's SSE bytes in (any split), the
    client's events out; nothing after the end or an error (``request``: the client's)."""

    ends_with_done = False  # whether the upstream ends with ``data: [DONE]`` (Chat's)

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        self.model = model
        self.request = request
        self._buffer = b""  # an event begun
        self._started = False  # whether the answer's first event was written
        self._done = False

    def feed(self, data: bytes) -> bytes:
        """The client's events for the SSE bytes ``data``."""
        out: list[bytes] = []
        events, self._buffer = split_events(self._buffer, data)
        for raw in events:
            if self._done:
                continue
            if raw == b"[DONE]" and self.ends_with_done:
                out.extend(self._end())
                continue
            event, problem = read_event(raw)
            if problem is None:
                out.extend(self._read(event))
            else:  # the client's error event (its SDK raises on it), and nothing after
                self._done = True
                out.append(self._error(problem))
        return b"".join(out)

    def close(self) -> bytes:
        """The closing events, when the upstream ended without its last event."""
        return b"".join(self._end()) if self._started else b""

    def _end(self) -> Iterator[bytes]:
        """The closing events, once."""
        if not self._done:
            self._done = True
            yield from self._finish()

    @abstractmethod
    def _read(self, event: dict[str, Any]) -> Iterator[bytes]:
        """The client's events for one upstream event."""

    @abstractmethod
    def _error(self, problem: str) -> bytes:
        """The client's error event saying ``problem``."""

    @abstractmethod
    def _finish(self) -> Iterator[bytes]:
        """The closing events."""
