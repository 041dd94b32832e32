"""Anthropic Messages as OpenAI Chat Completions: a Messages client's request for a Chat
upstream (``cast.port``'s rules; docs/serve.md lists what is carried), and an Anthropic
answer, whole or streamed, as the Chat objects and chunks the ``openai`` SDK reads
(thinking as ``reasoning_content`` and, signed, as OpenRouter's ``reasoning_details``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import cast.codecs.openai as openai_codec
from cast import Message, port
from cast.internals import map_tool_call_arguments
from csum.serve.apis import MESSAGES
from csum.serve.sse import data_event
from csum.serve.translate import TranslatedStream, TranslationError, tools_of

__all__ = ["REASONING_FORMAT", "ChatStream", "chat_request", "chat_response", "chat_usage"]

_REASONING_FIELD = "reasoning_content"
"""The Chat Completions field thinking goes to (DeepSeek's; vLLM's DeepSeek parser too)."""
REASONING_FORMAT = "anthropic-claude-v1"
"""The ``format`` of the ``reasoning_details`` entries carrying Anthropic's signed thinking."""
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
"""Messages ``stop_reason`` -> Chat Completions ``finish_reason``."""


_CARRIED = ("model", "max_tokens", "temperature", "top_p", "stream")


def chat_request(payload: dict[str, Any], chain: list[Message] | None = None) -> dict[str, Any]:
    """The Chat Completions request for a Messages request (``chain``: decoded, or None)."""
    if not isinstance(payload.get("messages"), list):
        raise TranslationError("messages: expected an array of messages")
    if chain is None:
        chain = MESSAGES.decode(payload)
    else:  # as the codec writes and reads a call: arguments as compact JSON text
        chain = [map_tool_call_arguments(m, _compact) or m for m in chain]
    messages = port(chain, "openai", source="anthropic")
    out: dict[str, Any] = {k: payload[k] for k in _CARRIED if k in payload}
    out["messages"] = openai_codec.encode(messages, tool_names=False)["messages"]
    if "stop_sequences" in payload:
        out["stop"] = payload["stop_sequences"]
    if payload.get("stream"):
        out["stream_options"] = {"include_usage": True}
    if payload.get("tools") is not None:
        out["tools"] = [_tool(tool, i) for i, tool in enumerate(tools_of(payload))]
    choice = payload.get("tool_choice")
    if choice is not None:
        out["tool_choice"] = _tool_choice(choice)
        if isinstance(choice, dict) and choice.get("disable_parallel_tool_use"):
            out["parallel_tool_calls"] = False
    return out


def _compact(arguments: str) -> str:
    value = json.loads(arguments) if arguments else {}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tool(tool: object, i: int) -> dict[str, Any]:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise TranslationError(f"tools[{i}]: expected a tool with a name")
    if "input_schema" not in tool:  # a server tool (web search, ...): no Chat equivalent
        raise TranslationError(f"tools[{i}]: {tool.get('type', 'tool')!r} has no input_schema")
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool["input_schema"]}
    if "description" in tool:
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def _tool_choice(choice: object) -> Any:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if isinstance(kind, str) and kind in _TOOL_CHOICES:
        return _TOOL_CHOICES[kind]
    if kind == "tool" and isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise TranslationError(f"tool_choice: unknown choice {choice!r}")


def chat_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Messages usage as Chat usage (the prompt counts cache reads and writes too)."""
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + read + written
    completion = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    }


def _detail(block: dict[str, Any], index: int) -> dict[str, Any]:
    """The ``reasoning_details`` entry of a thinking or redacted thinking block."""
    if block.get("type") == "redacted_thinking":
        detail = {"type": "reasoning.encrypted", "data": str(block.get("data", ""))}
    else:
        text, signature = str(block.get("thinking", "")), str(block.get("signature", ""))
        detail = {"type": "reasoning.text", "text": text, "signature": signature}
    return {**detail, "format": REASONING_FORMAT, "index": index}


def _head(message: dict[str, Any], model: str, kind: str) -> dict[str, Any]:
    """The fields a Chat completion (or chunk, ``kind``) answering ``message`` starts with."""
    id_ = f"chatcmpl-{message.get('id') or 'gateway'}"
    return {"id": id_, "object": kind, "created": 0, "model": message.get("model") or model}


def chat_response(message: dict[str, Any], model: str, request: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions response for a Messages response (non-streaming; ``request``,
    the client's, adds nothing to a whole answer)."""
    texts: list[str] = []
    details: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind in ("thinking", "redacted_thinking"):
            details.append(_detail(block, len(details)))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            function = {"name": block.get("name", ""), "arguments": arguments}
            calls.append({"id": block.get("id", ""), "type": "function", "function": function})
    thoughts = [detail["text"] for detail in details if detail["type"] == "reasoning.text"]
    answer: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if thoughts:
        answer[_REASONING_FIELD] = "\n\n".join(thoughts)
    if details:
        answer["reasoning_details"] = details
    if calls:
        answer["tool_calls"] = calls
    finish = _FINISH_REASONS.get(message.get("stop_reason") or "end_turn", "stop")
    choice = {"index": 0, "message": answer, "finish_reason": finish, "logprobs": None}
    usage = chat_usage(message.get("usage") or {})
    return {**_head(message, model, "chat.completion"), "choices": [choice], "usage": usage}


class ChatStream(TranslatedStream):
    """Turns a Messages SSE stream into Chat chunks as it comes (ending with a usage
    chunk when the client's ``request`` asks for one)."""

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        super().__init__(model, request)
        options = request.get("stream_options")
        self._want_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        self._base: dict[str, Any] = {}
        self._slots: dict[int, int] = {}  # block index -> its call or reasoning_details index
        self._calls = 0
        self._details = 0  # reasoning_details entries so far
        self._usage: dict[str, Any] = {}
        self._finish_reason = "stop"

    def _error(self, problem: str) -> bytes:
        return data_event({"error": {"message": problem, "type": "upstream_error"}})

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return data_event({**self._base, "choices": [choice]})

    def _read(self, event: dict[str, Any]) -> Iterator[bytes]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self._usage = dict(message.get("usage") or {})
            self._base = _head(message, self.model, "chat.completion.chunk")
            self._started = True
            yield self._chunk({"role": "assistant", "content": ""})
        elif kind == "content_block_start":
            yield from self._start(int(event.get("index", 0)), event.get("content_block") or {})
        elif kind == "content_block_delta":
            yield from self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "message_delta":
            stop = (event.get("delta") or {}).get("stop_reason")
            if stop:
                self._finish_reason = _FINISH_REASONS.get(stop, "stop")
            self._usage.update({k: v for k, v in (event.get("usage") or {}).items() if v})
        elif kind == "message_stop":
            yield from self._end()

    def _start(self, index: int, block: dict[str, Any]) -> Iterator[bytes]:
        kind = str(block.get("type", ""))
        if kind == "tool_use":
            self._slots[index], self._calls = self._calls, self._calls + 1
            function = {"name": block.get("name", ""), "arguments": ""}
            first = {"index": self._slots[index], "id": block.get("id", ""), "type": "function"}
            yield self._chunk({"tool_calls": [{**first, "function": function}]})
        elif kind in ("thinking", "redacted_thinking"):
            # the detail's first piece: its type, format and index (the openai SDK
            # merges the pieces of reasoning_details by index, strings concatenated)
            detail = _detail(block, self._details)
            self._slots[index], self._details = self._details, self._details + 1
            if not detail.get("signature"):
                detail.pop("signature", None)
            delta: dict[str, Any] = {"reasoning_details": [detail]}
            if detail.get("text"):
                delta = {_REASONING_FIELD: detail["text"], **delta}
            yield self._chunk(delta)
        else:
            self._slots[index] = -1
            if kind == "text" and block.get("text"):
                yield self._chunk({"content": block["text"]})

    def _delta(self, index: int, delta: dict[str, Any]) -> Iterator[bytes]:
        kind = delta.get("type")
        slot = self._slots.get(index, 0)
        if kind == "text_delta" and delta.get("text"):
            yield self._chunk({"content": delta["text"]})
        elif kind == "thinking_delta" and delta.get("thinking"):
            text = delta["thinking"]
            piece = {"type": "reasoning.text", "text": text, "index": slot}
            yield self._chunk({_REASONING_FIELD: text, "reasoning_details": [piece]})
        elif kind == "signature_delta" and delta.get("signature"):
            piece = {"type": "reasoning.text", "signature": delta["signature"], "index": slot}
            yield self._chunk({"reasoning_details": [piece]})
        elif kind == "input_json_delta" and delta.get("partial_json"):
            function = {"arguments": delta["partial_json"]}
            yield self._chunk({"tool_calls": [{"index": slot, "function": function}]})

    def _finish(self) -> Iterator[bytes]:
        yield self._chunk({}, self._finish_reason)
        if self._want_usage:
            usage = chat_usage(self._usage)
            yield data_event({**self._base, "choices": [], "usage": usage})
        yield b"data: [DONE]\n\n"
