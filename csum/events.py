"""What a compaction reports (:class:`CompactionEvent`, to the Compactor's ``on_event``),
and :func:`otel_listener`, which records events as OpenTelemetry spans (extra ``otel``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from cast.chainio import install_hint
from csum.store_events import StoreEvent

__all__ = ["CompactionEvent", "CompactionReason", "otel_listener"]


class CompactionReason(StrEnum):
    """Why a compaction ran (or why the chain was left over budget)."""

    OVER_BUDGET = "over-budget"
    """The chain exceeded the budget: compaction runs even during the cooldown."""
    TRIGGER = "trigger"
    """The chain passed the trigger (below the budget) after the cooldown."""
    FORCED = "forced"
    """``compact(force=True)``."""
    UNFITTABLE = "unfittable"
    """System prompt, current question and newest pair alone exceed the budget: the
    chain is returned over budget (``over_budget`` is set)."""


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """One compaction, measured. Sizes are given in bytes and in tokens (as the
    Compactor's counter counts them); ``budget``/``keep_units`` are in ``unit``."""

    reason: CompactionReason
    unit: str
    budget: int
    keep_units: int
    """What the compaction brings the chain down to (``Compactor.keep_units``)."""
    over_budget: bool
    """The returned chain exceeds the budget (only when it cannot fit)."""
    bytes_before: int
    bytes_after: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    summarized_messages: int
    """Messages folded into the summary."""
    handler_calls: int
    """Calls of the handler (and of the fallback), retries included."""
    retries: int
    timeouts: int
    fallback_calls: int
    chunks: int
    """Prompts split because they exceeded the handler's input limit, in pieces."""
    cache_hits: int
    prompt_bytes: int
    summary_bytes: int
    depth: int
    """How many compactions the new summary's content has gone through (1: first)."""
    summary_truncated: bool
    """The summary was cut to fit the budget."""
    dropped_summaries: int
    """Summaries at the depth limit left out because they no longer fit."""
    duration_s: float
    turn: int
    """The Compactor's call count when this happened (1 for the first call)."""
    archived_messages: int = 0
    """Messages stored in the history archive (0 without one, or when it failed)."""
    reinserted_bytes: int = 0
    """UTF-8 bytes of archived lines put back into the last question (re-insertion)."""
    store_events: tuple[StoreEvent, ...] = ()
    """What the cache and the archive reported in this compaction (failures included)."""
    cleared_results: int = 0
    """Tool results the clearing stage replaced with placeholders (:mod:`csum.clearing`)."""
    cleared_inputs: int = 0
    """Tool calls whose arguments clearing replaced (``Clearing.clear_tool_inputs``)."""
    cleared_reasoning: int = 0
    """Reasoning blocks clearing dropped (``Clearing.clear_reasoning``)."""
    cleared_units: int = 0
    """What clearing freed, in ``unit``."""
    summary_needed: bool = False
    """Clearing alone could not bring the chain to ``keep_units`` (or the compaction was
    forced), so the summarize stage ran."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the event (store events as dicts)."""
        out = asdict(self)
        out["reason"] = str(self.reason)
        out["store_events"] = [
            {**asdict(event), "kind": str(event.kind)} for event in self.store_events
        ]
        return out


def otel_listener(
    tracer: Any = None, name: str = "csum.compaction"
) -> Callable[[CompactionEvent], None]:
    """An ``on_event`` callback that records each event as an OpenTelemetry span.

    ``tracer`` defaults to ``opentelemetry.trace.get_tracer("csum")``. The span covers
    the compaction (its start is the event's time less ``duration_s``) and carries every
    field as a ``csum.*`` attribute; an over-budget result sets the span status to
    error. Raises ``ImportError`` naming the extra when ``opentelemetry-api`` is missing.
    """
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ImportError(f"otel_listener needs opentelemetry-api: {install_hint('otel')}") from exc
    active = tracer if tracer is not None else trace.get_tracer("csum")

    def record(event: CompactionEvent) -> None:
        end = time.time_ns()
        start = end - int(event.duration_s * 1e9)
        fields = event.as_dict()
        fields["store_events"] = [str(e.kind) for e in event.store_events]  # OTel: scalars
        attributes = {f"csum.{key}": value for key, value in fields.items()}
        span = active.start_span(name, start_time=start, attributes=attributes)
        if event.over_budget:
            span.set_status(trace.Status(trace.StatusCode.ERROR, "chain over budget"))
        span.end(end_time=end)

    return record
