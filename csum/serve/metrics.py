"""The gateway's Prometheus metrics, in a registry of its own (``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

__all__ = ["LATENCY_BUCKETS", "Metrics"]

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
