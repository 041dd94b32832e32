"""OpenTelemetry spans of the gateway (a request span, its compaction a child) when the
``otel`` extra is installed; without ``opentelemetry-api`` every function does nothing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from csum.serve.compaction import Outcome

__all__ = ["annotate", "outcome_attributes", "span", "tracer"]

Attributes = Mapping[str, str | int | float | bool]


def tracer() -> Any:
    """The gateway's tracer, or None without ``opentelemetry-api``."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("csum.serve")


@contextmanager
def span(active: Any, name: str, attributes: Attributes) -> Iterator[None]:
    """A span named ``name`` from tracer ``active`` (nothing when it is None)."""
    if active is None:
        yield
        return
    with active.start_as_current_span(name, attributes=dict(attributes)):
        yield


def annotate(active: Any, attributes: Attributes) -> None:
    """Set ``attributes`` on the span in progress (nothing without a tracer ``active``)."""
    if active is not None:
        from opentelemetry import trace

        trace.get_current_span().set_attributes(dict(attributes))


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
