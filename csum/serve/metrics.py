"""The gateway's Prometheus metrics, in a registry of its own (``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

__all__ = ["LATENCY_BUCKETS", "Metrics"]

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Seconds: fine at the low end, where the gateway's own time should be."""


class Metrics:
    """Counters and histograms of one gateway process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "csum_serve_requests",
            "Requests answered, by endpoint and status",
            ["endpoint", "status"],
            registry=registry,
        )
        self.outcomes = Counter(
            "csum_serve_outcomes",
            "What the gateway did with each request's history",
            ["endpoint", "outcome"],
            registry=registry,
        )
        self.compactions = Counter(
            "csum_serve_compactions", "Compactions made", ["endpoint"], registry=registry
        )
        self.bytes_saved = Counter(
            "csum_serve_bytes_saved", "History bytes not sent upstream", registry=registry
        )
        self.tokens_saved = Counter(
            "csum_serve_tokens_saved", "History tokens (estimated) not sent", registry=registry
        )
        self.handler_calls = Counter(
            "csum_serve_handler_calls", "Summarization handler calls", registry=registry
        )
        self.cache_hits = Counter(
            "csum_serve_cache_hits", "Summaries served from the summary cache", registry=registry
        )
        self.store_failures = Counter(
            "csum_serve_store_failures",
            "Store operations that failed (the request went on without them)",
            registry=registry,
        )
        self.archived = Counter(
            "csum_serve_archive_events",
            "Archive writes made by compactions (--archive)",
            registry=registry,
        )
        self.upstream_errors = Counter(
            "csum_serve_upstream_errors",
            "Requests the upstream could not be reached for, by kind",
            ["kind"],
            registry=registry,
        )
        self.upstream_seconds = Histogram(
            "csum_serve_upstream_seconds",
            "Upstream time to response headers",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.added_seconds = Histogram(
            "csum_serve_added_seconds",
            "Time the gateway adds before forwarding (reading, compaction, encoding)",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
