"""``count_tokens`` (Anthropic's ``/v1/messages/count_tokens``) answered by the gateway
for an OpenAI-compatible upstream, which has no such endpoint: estimated."""

from __future__ import annotations

from typing import Any

import cast.codecs.anthropic as anthropic_codec
from csum.tokens import EstimatedTokens

__all__ = ["count_tokens"]


def count_tokens(payload: dict[str, Any]) -> dict[str, int]:
    """``count_tokens``'s answer, estimated (an OpenAI-compatible upstream has no such
    endpoint): the :class:`~csum.tokens.EstimatedTokens` count of the history."""
    history = {key: payload[key] for key in ("system", "messages") if key in payload}
    counter = EstimatedTokens("anthropic")
    return {"input_tokens": sum(counter.count(m) for m in anthropic_codec.decode(history))}
