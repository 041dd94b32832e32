"""OpenAI Chat Completions as Anthropic Messages: a Chat client's request for an Anthropic
upstream, and its answer, whole or streamed, as the ``anthropic`` SDK reads it (what is
carried, reasoning included: docs/serve.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import cast.codecs.anthropic as anthropic_codec
from cast import Message, ProviderPart, Reasoning, Role, TextPart, ToolCall, port
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from cast.codecs.openai import REASONING_FIELDS
from csum.serve.apis import CHAT
from csum.serve.sse import anthropic_event
from csum.serve.translate import TranslatedStream, TranslationError, tools_of
from csum.serve.translate.anthropic_to_chat import REASONING_FORMAT

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "MessagesStream",
    "messages_request",
    "messages_response",
    "reasoning_of",
]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent to Anthropic when the Chat request sets no limit (it needs one)."""


_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
"""Chat Completions ``finish_reason`` -> Messages ``stop_reason``."""


_CARRIED = ("model", "temperature", "top_p", "stream", "thinking")
_FIELDS = ("openai", "message_fields")  # the codec's part of a message's other fields


def messages_request(payload: dict[str, Any], chain: list[Message] | None = None) -> dict[str, Any]:
    """The Messages request for a Chat Completions request (``chain``: decoded, or None)."""
    if not isinstance(payload.get("messages"), list):
        raise TranslationError("messages: expected an array of messages")
    if payload.get("n", 1) != 1:
        raise TranslationError("n: Anthropic answers with one choice only")
    fmt = payload.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        raise TranslationError(f"response_format: {fmt.get('type')!r} is not translated")
    if chain is None:
        chain = CHAT.decode(payload)
    signed = [_with_signed_thinking(m) for m in chain]
    found = any(a is not b for a, b in zip(signed, chain, strict=True))
    chain = port(signed, "anthropic", source="anthropic" if found else None)
    out: dict[str, Any] = {k: payload[k] for k in _CARRIED if k in payload}
    limit = payload.get("max_completion_tokens", payload.get("max_tokens"))
    out["max_tokens"] = DEFAULT_MAX_TOKENS if limit is None else limit
    out.update(anthropic_codec.encode(chain))
    stop = payload.get("stop")
    if stop is not None:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    if isinstance(payload.get("user"), str):
        out["metadata"] = {"user_id": payload["user"]}
    if payload.get("tools") is not None:
        out["tools"] = [_tool(tool, i) for i, tool in enumerate(tools_of(payload))]
    choice = _tool_choice(payload.get("tool_choice"))
    if payload.get("parallel_tool_calls") is False:
        choice = {**(choice or {"type": "auto"}), "disable_parallel_tool_use": True}
    if choice is not None:
        out["tool_choice"] = choice
    return out


def _signed_details(message: Message) -> list[Reasoning]:
    """The signed Anthropic thinking in an AI message's ``reasoning_details``, in order."""
    last = message.parts[-1] if message.parts else None
    if type(last) is not ProviderPart or (last.provider, last.kind) != _FIELDS:
        return []
    fields = json.loads(last.data)
    details = fields.get("reasoning_details") if isinstance(fields, dict) else None
    if not isinstance(details, list):
        return []
    found: list[tuple[int, Reasoning]] = []
    for position, detail in enumerate(details):
        if not isinstance(detail, dict) or detail.get("format") != REASONING_FORMAT:
            continue
        index = detail.get("index")
        order = index if isinstance(index, int) else position
        signature, data = detail.get("signature"), detail.get("data")
        if detail.get("type") == "reasoning.text" and isinstance(signature, str) and signature:
            text = detail.get("text")
            content = text if isinstance(text, str) else ""
            found.append((order, Reasoning(content=content, signature=signature.encode())))
        elif detail.get("type") == "reasoning.encrypted" and isinstance(data, str) and data:
            found.append((order, Reasoning(signature=REDACTED_THINKING_PREFIX + data.encode())))
    return [reasoning for _, reasoning in sorted(found, key=lambda pair: pair[0])]


def _with_signed_thinking(message: Message) -> Message:
    """An AI ``message`` with its signed thinking as reasoning (as the codec reads a turn)."""
    blocks = _signed_details(message) if message.role is Role.AI else []
    if not blocks:
        return message
    parts = list(message.parts)
    head = [TextPart(text="", reasoning=r) for r in blocks[:-1]]
    first = parts[0] if parts else None
    if isinstance(first, TextPart | ToolCall):
        parts[0] = first.model_copy(update={"reasoning": blocks[-1]})
    else:
        head.append(TextPart(text="", reasoning=blocks[-1]))
    return message.model_copy(update={"parts": (*head, *parts)})


def _tool(tool: object, i: int) -> dict[str, Any]:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        raise TranslationError(f"tools[{i}]: only function tools are translated")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise TranslationError(f"tools[{i}].function: expected a function with a name")
    out: dict[str, Any] = {
        "name": function["name"],
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if isinstance(function.get("description"), str):
        out["description"] = function["description"]
    return out


_TOOL_CHOICES = {"auto": "auto", "none": "none", "required": "any"}


def _tool_choice(choice: object) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str) and choice in _TOOL_CHOICES:
        return {"type": _TOOL_CHOICES[choice]}
    function = choice.get("function") if isinstance(choice, dict) else None
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return {"type": "tool", "name": function["name"]}
    raise TranslationError(f"tool_choice: unknown choice {choice!r}")


def _arguments(text: str) -> Any:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def messages_response(
    completion: dict[str, Any], model: str, request: dict[str, Any]
) -> dict[str, Any]:
    """The Messages response for a Chat Completions response (non-streaming; ``request``,
    the client's, adds nothing to a whole answer)."""
    choices = completion.get("choices") or [{}]
    message = choices[0].get("message") or {}
    content: list[dict[str, Any]] = []
    thought = reasoning_of(message)
    if thought:
        content.append({"type": "thinking", "thinking": thought, "signature": ""})
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        block = {"type": "tool_use", "id": call.get("id", ""), "name": function.get("name", "")}
        content.append({**block, "input": _arguments(function.get("arguments", ""))})
    stop = _STOP_REASONS.get(choices[0].get("finish_reason") or "stop", "end_turn")
    usage = _messages_usage(completion.get("usage") or {})
    return _message(completion, model, content, stop, usage)


def reasoning_of(message: dict[str, Any]) -> str:
    """The reasoning text of a Chat message or delta, under whichever field it uses."""
    for field in REASONING_FIELDS:
        value = message.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def _messages_usage(usage: dict[str, Any]) -> dict[str, int]:
    """Chat usage as Messages usage (cache reads and writes apart from the input)."""
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached = int(details.get("cached_tokens") or 0)
    written = int(details.get("cache_write_tokens") or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    out = {
        "input_tokens": max(0, prompt - cached - written),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }
    if cached:
        out["cache_read_input_tokens"] = cached
    if written:
        out["cache_creation_input_tokens"] = written
    return out


def _message(
    completion: dict[str, Any],
    model: str,
    content: list[dict[str, Any]],
    stop: str | None,
    usage: dict[str, int],
) -> dict[str, Any]:
    """The Message object answering the Chat ``completion`` (or its first chunk)."""
    return {
        "id": f"msg_{completion.get('id') or 'gateway'}",
        "type": "message",
        "role": "assistant",
        "model": completion.get("model") or model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


class MessagesStream(TranslatedStream):
    """Turns a Chat Completions SSE stream into a Messages SSE stream, as it comes."""

    ends_with_done = True

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        super().__init__(model, request)
        self._block: tuple[str, int] | None = None  # ("text" | call index, block index)
        self._blocks = 0
        self._stop = "end_turn"
        self._usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}

    def _error(self, problem: str) -> bytes:
        return anthropic_event("error", {"error": {"type": "api_error", "message": problem}})

    def _read(self, chunk: dict[str, Any]) -> Iterator[bytes]:
        if not self._started:
            self._started = True
            message = _message(chunk, self.model, [], None, {"input_tokens": 0, "output_tokens": 0})
            yield anthropic_event("message_start", {"message": message})
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _messages_usage(usage)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            thought = reasoning_of(delta)
            if thought:
                empty = {"type": "thinking", "thinking": "", "signature": ""}  # Chat signs none
                piece = {"type": "thinking_delta", "thinking": thought}
                yield from self._piece(("thinking", -1), empty, piece)
            text = delta.get("content")
            if isinstance(text, str) and text:
                piece = {"type": "text_delta", "text": text}
                yield from self._piece(("text", -1), {"type": "text", "text": ""}, piece)
            for call in delta.get("tool_calls") or []:
                function = call.get("function") or {}
                name, arguments = function.get("name", ""), function.get("arguments")
                block = {"type": "tool_use", "id": call.get("id", ""), "name": name, "input": {}}
                partial = {"type": "input_json_delta", "partial_json": arguments}
                key = ("tool", int(call.get("index", 0)))
                has_json = isinstance(arguments, str) and arguments
                yield from self._piece(key, block, partial if has_json else None)
            finish = choice.get("finish_reason")
            if finish:
                self._stop = _STOP_REASONS.get(finish, "end_turn")

    def _piece(
        self, key: tuple[str, int], block: dict[str, Any], delta: dict[str, Any] | None
    ) -> Iterator[bytes]:
        """``delta`` in the block ``key`` (opened as ``block`` when another is open)."""
        if self._block != key:
            yield from self._close_block()
            self._block = key
            start = {"index": self._blocks, "content_block": block}
            yield anthropic_event("content_block_start", start)
        if delta is not None:
            yield anthropic_event("content_block_delta", {"index": self._blocks, "delta": delta})

    def _close_block(self) -> Iterator[bytes]:
        if self._block is not None:
            yield anthropic_event("content_block_stop", {"index": self._blocks})
            self._blocks += 1
            self._block = None

    def _finish(self) -> Iterator[bytes]:
        yield from self._close_block()
        delta = {"stop_reason": self._stop, "stop_sequence": None}
        yield anthropic_event("message_delta", {"delta": delta, "usage": dict(self._usage)})
        yield anthropic_event("message_stop", {})
