"""OpenAI Responses requests as Anthropic Messages requests: the settings as for a Chat
upstream, the history with the signed thinking of this gateway's reasoning items kept
(every other reasoning dropped)."""

from __future__ import annotations

from typing import Any

import cast.codecs.anthropic as anthropic_codec
import cast.codecs.openai_responses as responses_codec
from cast import Message, Reasoning, TextPart, ToolCall, port
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from csum.serve.apis import RESPONSES
from csum.serve.translate.chat_to_anthropic import messages_request
from csum.serve.translate.responses_output import GATEWAY_REASONING_PREFIX
from csum.serve.translate.responses_to_chat import chat_request_for_responses
from csum.serve.translate.responses_tools import chat_tools, function_messages

__all__ = ["messages_request_for_responses"]


def messages_request_for_responses(
    payload: dict[str, Any], chain: list[Message] | None = None
) -> dict[str, Any]:
    """The Messages request for a Responses request (``chain``: decoded, or None)."""
    out = messages_request(chat_request_for_responses(payload, []), [])
    history = RESPONSES.decode(payload) if chain is None else chain
    chain = [_signed(m) for m in function_messages(history, chat_tools(payload))]
    chain = port(chain, "anthropic", source="anthropic")
    out.pop("system", None)
    out.pop("messages", None)
    out.update(anthropic_codec.encode(chain))
    if payload.get("thinking") is not None:
        out["thinking"] = payload["thinking"]
    return out


def _signed(message: Message) -> Message:
    """``message`` with the gateway's reasoning as signed thinking, any other dropped."""
    parts: list[Any] = []
    changed = False
    for part in message.parts:
        reasoning = part.reasoning if isinstance(part, TextPart | ToolCall) else None
        if reasoning is None:
            parts.append(part)
            continue
        changed = True
        signed = _anthropic_reasoning(reasoning)
        if signed is None and isinstance(part, TextPart) and not part.text:
            continue  # a part that only carried the reasoning
        parts.append(part.model_copy(update={"reasoning": signed}))
    return message.model_copy(update={"parts": tuple(parts)}) if changed else message


def _anthropic_reasoning(reasoning: Reasoning) -> Reasoning | None:
    item_id, encrypted = responses_codec.decode_signature(reasoning.signature)
    if not item_id.startswith(GATEWAY_REASONING_PREFIX) or not encrypted:
        return None
    signature = encrypted.encode()  # the thinking's own signature, or a redacted block's data
    redacted = signature.startswith(REDACTED_THINKING_PREFIX)  # (which holds no text)
    return Reasoning(content="" if redacted else reasoning.content, signature=signature)
