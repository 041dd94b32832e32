"""An Anthropic Messages answer as a Responses one, whole or streamed: a thinking block
becomes a reasoning item whose ``encrypted_content`` is its signature as cast holds it (a
redacted block's data prefixed); sent back, it is that thinking block again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from csum.serve.translate.anthropic_to_chat import chat_usage
from csum.serve.translate.responses_output import ResponsesWriter

__all__ = ["AnthropicResponsesStream", "responses_from_messages"]


class AnthropicResponsesStream(ResponsesWriter):
    """Turns an Anthropic Messages SSE stream into the Responses events as it comes."""

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        super().__init__(model, request)
        self._anthropic_usage: dict[str, Any] = {}

    def _read(self, event: dict[str, Any]) -> Iterator[bytes]:
        kind = event.get("type")
        index = int(event.get("index", 0))
        if kind == "message_start":
            message = event.get("message") or {}
            self._usage = chat_usage(message.get("usage") or {})
            self._anthropic_usage.update(message.get("usage") or {})
            yield from self._begin(str(message.get("id") or "gateway"), message.get("model"))
        elif kind == "content_block_start":
            yield from self._block(index, event.get("content_block") or {})
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                yield from self._text(("text", index), str(delta.get("text", "")))
            elif delta.get("type") == "thinking_delta":
                thinking = str(delta.get("thinking", ""))
                yield from self._reasoning(("reasoning", index), thinking, summary=True)
            elif delta.get("type") == "signature_delta":
                self._signature(str(delta.get("signature", "")))
            elif delta.get("type") == "input_json_delta" and self._key == ("call", index):
                # the call is open: only its arguments are read
                yield from self._call(("call", index), "", "", str(delta.get("partial_json", "")))
        elif kind == "message_delta":
            if (event.get("delta") or {}).get("stop_reason") == "max_tokens":
                self._status = "incomplete"
            self._anthropic_usage.update({k: v for k, v in (event.get("usage") or {}).items() if v})
            self._usage = chat_usage(self._anthropic_usage)
        elif kind == "message_stop":
            yield from self._end()

    def _block(self, index: int, block: dict[str, Any]) -> Iterator[bytes]:
        kind = block.get("type")
        if kind == "text":
            yield from self._text(("text", index), str(block.get("text", "")))
        elif kind == "thinking":
            thinking = str(block.get("thinking", ""))
            yield from self._reasoning(("reasoning", index), thinking, summary=True)
            self._signature(str(block.get("signature", "")))
        elif kind == "redacted_thinking":
            yield from self._reasoning(("reasoning", index), "", summary=True)
            self._signature(REDACTED_THINKING_PREFIX.decode() + str(block.get("data", "")))
        elif kind == "tool_use":
            call_id = str(block.get("id", ""))
            yield from self._call(("call", index), call_id, str(block.get("name", "")), "")


def responses_from_messages(
    message: dict[str, Any], model: str, request: dict[str, Any]
) -> dict[str, Any]:
    """The Response object for an Anthropic Messages response (non-streaming): the one
    its stream ends with."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(message.get("content") or []):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        if block.get("type") == "tool_use":
            partial = json.dumps(block.get("input") or {}, ensure_ascii=False)
            delta = {"type": "input_json_delta", "partial_json": partial}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
    events.append({"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason")}})
    return AnthropicResponsesStream(model, request).whole(events)
