"""The gateway's telemetry: its Prometheus metrics, in a registry of its own
(``/metrics``), and OpenTelemetry spans (a request span, its compaction a child) when the
``otel`` extra is installed (without ``opentelemetry-api`` the span functions do nothing)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from csum.serve.compaction import Outcome, OutcomeKind

__all__ = ["LATENCY_BUCKETS", "Metrics", "annotate", "outcome_attributes", "span", "tracer"]

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Seconds: fine at the low end, where the gateway's own time should be."""


class Metrics:
    """Counters and histograms of one gateway process."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(f"csum_serve_{name}", doc, labels, registry=registry)

        def seconds(name: str, doc: str) -> Histogram:
            return Histogram(
                f"csum_serve_{name}", doc, ["endpoint"], buckets=LATENCY_BUCKETS, registry=registry
            )

        self.requests = counter(
            "requests", "Requests answered, by endpoint and status", "endpoint", "status"
        )
        self.outcomes = counter(
            "outcomes", "What the gateway did with each request's history", "endpoint", "outcome"
        )
        self.compactions = counter("compactions", "Compactions made", "endpoint")
        self.bytes_saved = counter("bytes_saved", "History bytes not sent upstream")
        self.tokens_saved = counter("tokens_saved", "History tokens (estimated) not sent")
        self.handler_calls = counter("handler_calls", "Summarization handler calls")
        self.cache_hits = counter("cache_hits", "Summaries served from the summary cache")
        self.store_failures = counter(
            "store_failures", "Store operations that failed (the request went on without them)"
        )
        self.archived = counter("archive_events", "Archive writes made by compactions (--archive)")
        self.upstream_errors = counter(
            "upstream_errors", "Requests the upstream could not be reached for, by kind", "kind"
        )
        self.upstream_seconds = seconds("upstream_seconds", "Upstream time to response headers")
        self.added_seconds = seconds(
            "added_seconds",
            "Time the gateway adds before forwarding (reading, compaction, encoding)",
        )

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)

    def count(self, endpoint: str, outcome: Outcome) -> None:
        """Count what the gateway did with a request's history."""
        self.outcomes.labels(endpoint, str(outcome.kind)).inc()
        if outcome.compacted:
            self.compactions.labels(endpoint).inc()
        if outcome.kind in (OutcomeKind.COMPACTED, OutcomeKind.REUSED, OutcomeKind.OVER_FLOOR):
            self.bytes_saved.inc(max(0, outcome.bytes_before - outcome.bytes_after))
            self.tokens_saved.inc(outcome.tokens_saved)
        self.handler_calls.inc(outcome.handler_calls)
        self.cache_hits.inc(outcome.cache_hits)
        self.store_failures.inc(outcome.store_failures)
        self.archived.inc(outcome.archived)


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
