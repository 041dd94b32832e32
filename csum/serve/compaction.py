"""One request's compaction: decode its history, find the conversation's state, keep the
chain within the budget with the Compactor, encode it back.

Every failure here (a body that is not a request the codec reads, a store that does not
answer, a summarization that fails) ends in an :class:`Outcome` that says to forward
the client's bytes unchanged: the gateway never fails a request for its own sake.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cast import Message
from csum._calls import SummarizeHandler
from csum.budget import Budget
from csum.cache import SummaryCache
from csum.compactor import Compactor, summary_bytes
from csum.handlers import resolve_handler
from csum.serve.apis import Api
from csum.serve.config import ServeConfig
from csum.serve.conversation import ConversationState, conversation_key
from csum.settings import Robustness, Stores
from csum.store_events import StoreEventKind
from csum.stores import SummaryStore

__all__ = ["MODEL_PROMPT_BYTES", "Outcome", "OutcomeKind", "Rewriter", "fits_by_size"]

_log = logging.getLogger("csum.serve")

MODEL_PROMPT_BYTES = 1 << 20
"""Largest prompt sent to a model handler (as ``csum summarize``'s default): an evicted
part beyond it is summarized in pieces, then merged."""


class OutcomeKind(StrEnum):
    """What the gateway did with a request's history."""

    WITHIN_BUDGET = "within_budget"
    """Forwarded byte for byte: the chain fits and the conversation was never compacted."""
    REUSED = "reused"
    """The conversation's earlier compacted prefix was sent again, plus the new turns."""
    COMPACTED = "compacted"
    """Compacted now (its state stored for the next request)."""
    NOT_COMPACTABLE = "not_compactable"
    """No history the codec reads (no list of turns, an unknown model without
    ``--budget``): forwarded byte for byte."""
    FAILED = "failed"
    """Decoding or compaction failed: forwarded byte for byte (logged, counted)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """``body`` is what to send upstream; None means the client's bytes as they came."""

    kind: OutcomeKind
    body: bytes | None = None
    bytes_before: int = 0
    bytes_after: int = 0
    tokens_saved: int = 0
    handler_calls: int = 0
    cache_hits: int = 0
    store_failures: int = 0
    detail: str = ""


class Rewriter:
    """Compacts requests for one gateway; ``store`` holds the conversations' state and
    the summary cache (shared by replicas when it is Redis)."""

    def __init__(self, config: ServeConfig, store: SummaryStore) -> None:
        self.config = config
        self.store = store
        spec = config.handler.strip()
        # None: the Compactor's own extractive handler, its summaries sized to the budget
        self.handler: SummarizeHandler | None = (
            None if spec.lower() == "extractive" else resolve_handler(spec)
        )
        self.offline = spec.lower().startswith("extractive")

    async def rewrite(self, api: Api, body: bytes, conversation: str | None) -> Outcome:
        """What to send upstream for ``body`` on ``api``; never raises for bad input or
        a failing store (``conversation`` is the optional header's value)."""
        if self.config.budget is not None and fits_by_size(body, self.config.budget):
            return Outcome(OutcomeKind.WITHIN_BUDGET, bytes_before=len(body))
        try:
            payload = json.loads(body)
        except ValueError as exc:  # not JSON: the upstream will say so
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail=f"body is not JSON: {exc}")
        if not isinstance(payload, dict):
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail="body is not a JSON object")
        history = api.history(payload)
        if history is None:
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail=f"no {api.list_key} list")
        budget = self.config.budget_for(payload.get("model"))
        if budget is None:
            return Outcome(OutcomeKind.NOT_COMPACTABLE, detail="no budget for this model")
        if fits_by_size(body, budget):
            return Outcome(OutcomeKind.WITHIN_BUDGET, bytes_before=len(body))
        try:
            return await self._rewrite(api, payload, history, budget, conversation)
        except Exception as exc:  # noqa: BLE001 -- a gateway failure never fails the request
            _log.warning(
                "compaction failed, forwarding uncompacted",
                extra={"endpoint": api.name, "error": type(exc).__name__},
            )
            return Outcome(OutcomeKind.FAILED, detail=f"{type(exc).__name__}: {exc}")

    async def _rewrite(
        self,
        api: Api,
        payload: dict[str, Any],
        history: dict[str, Any],
        budget: Budget,
        conversation: str | None,
    ) -> Outcome:
        messages = api.decode(history)
        key = conversation_key(api.name, messages, conversation)
        store_failures = 0
        state: ConversationState | None = None
        try:
            stored = await self.store.get(key)
            state = None if stored is None else ConversationState.from_bytes(stored)
        except Exception as exc:  # noqa: BLE001 -- store down or record damaged: compact afresh
            store_failures += 1
            _log.warning(
                "conversation state unavailable",
                extra={"endpoint": api.name, "error": type(exc).__name__},
            )
        rebuilt = None if state is None else state.rebuilt(messages)
        chain = messages if rebuilt is None else rebuilt
        compactor = self._compactor(api, budget)
        result = await compactor.run(chain)
        hits = sum(1 for e in result.store_events if e.kind is StoreEventKind.CACHE_HIT)
        store_failures += sum(
            1 for e in result.store_events if e.kind is StoreEventKind.CACHE_UNAVAILABLE
        )
        if not result.compacted and rebuilt is None:
            return Outcome(
                OutcomeKind.WITHIN_BUDGET,
                bytes_before=result.bytes_before,
                bytes_after=result.bytes_before,
                store_failures=store_failures,
            )
        sent = result.messages
        if result.compacted:
            new_state = ConversationState.after(messages, sent)
            try:
                await self.store.set(key, new_state.to_bytes(), self.config.state_ttl)
            except Exception as exc:  # noqa: BLE001 -- the request still goes, compacted
                store_failures += 1
                _log.warning(
                    "conversation state not stored",
                    extra={"endpoint": api.name, "error": type(exc).__name__},
                )
        body = _dumps(api.merged(payload, api.encode(sent)))
        before = sum(m.size for m in messages)
        return Outcome(
            OutcomeKind.COMPACTED if result.compacted else OutcomeKind.REUSED,
            body=body,
            bytes_before=before,
            bytes_after=result.bytes_after,
            tokens_saved=_tokens_saved(compactor, messages, sent),
            handler_calls=result.handler_calls,
            cache_hits=hits,
            store_failures=store_failures,
        )

    def _compactor(self, api: Api, budget: Budget) -> Compactor:
        """A fresh keeper per request: everything it must remember between requests is
        in the conversation state, so any replica sends the same chain."""
        size = summary_bytes(budget)
        handler_id = f"extractive:{size}" if self.handler is None else self.config.handler
        cache = SummaryCache(self.store, handler_id=handler_id, summary_budget=size)
        return Compactor(
            self.handler,
            budget=budget,
            target=api.provider,
            keep_ratio=self.config.keep_ratio,
            stores=Stores(cache=cache),
            # a model's input is bounded: what is evicted beyond it goes in pieces
            robustness=Robustness(max_prompt_bytes=None if self.offline else MODEL_PROMPT_BYTES),
        )


_MEDIA_MARKERS = (b"data:", b'"image', b'"input_image', b'"document"', b'"input_file"', b"audio")
"""Byte strings whose presence in a body turns the token bound off (media are counted
by their pixels, not their bytes)."""


def fits_by_size(body: bytes, budget: Budget) -> bool:
    """Whether ``body``'s history fits ``budget`` for sure, from its length alone, so the
    request goes without being decoded. A message's size (the UTF-8 bytes of its parts)
    never exceeds its JSON text, which quotes and punctuates each part; and the default
    :class:`~csum.budget.EstimatedTokens` counts at most one token per 3 bytes of text,
    and fewer for the per-message and per-call overheads than their JSON takes. Media
    are counted by pixel size, so a body that may hold one is always decoded."""
    size = len(body)
    if budget.unit == "bytes":
        return size <= budget.limit
    if size // 3 + 1 > budget.limit:
        return False
    return not any(marker in body for marker in _MEDIA_MARKERS)


def _tokens_saved(compactor: Compactor, before: list[Message], after: list[Message]) -> int:
    count = compactor.counter.count
    return max(0, sum(map(count, before)) - sum(map(count, after)))


def _dumps(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
