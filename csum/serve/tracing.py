"""OpenTelemetry spans of the gateway (a request span, its compaction a child) when the
``otel`` extra is installed; without ``opentelemetry-api`` every function does nothing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from csum.serve.compaction import Outcome

__all__ = ["annotate", "current_span", "outcome_attributes", "span", "tracer"]

Attributes = Mapping[str, str | int | float | bool]


def tracer() -> Any:
    """The gateway's tracer, or None without ``opentelemetry-api``."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("csum.serve")


@contextmanager
def span(active: Any, name: str, attributes: Attributes) -> Iterator[Any]:
    """A span named ``name`` from tracer ``active`` (nothing when it is None)."""
    if active is None:
        yield None
        return
    with active.start_as_current_span(name, attributes=dict(attributes)) as current:
        yield current


def current_span(active: Any) -> Any:
    """The span in progress (None without a tracer)."""
    if active is None:
        return None
    from opentelemetry import trace

    return trace.get_current_span()


def annotate(current: Any, attributes: Attributes) -> None:
    """Set ``attributes`` on span ``current`` (nothing when it is None)."""
    if current is not None:
        current.set_attributes(dict(attributes))


def outcome_attributes(outcome: Outcome) -> dict[str, str | int]:
    """What a compaction span says about ``outcome``."""
    return {
        "csum.outcome": str(outcome.kind),
        "csum.bytes_before": outcome.bytes_before,
        "csum.bytes_after": outcome.bytes_after,
        "csum.handler_calls": outcome.handler_calls,
        "csum.cache_hits": outcome.cache_hits,
        "csum.summary_depth": outcome.depth,
    }
