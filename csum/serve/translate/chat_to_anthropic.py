"""OpenAI Chat Completions as Anthropic Messages: a Chat client's request for an Anthropic
upstream, and its answer, whole or streamed, as the ``anthropic`` SDK reads it (what is
carried, reasoning included: docs/serve.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import cast.codecs.anthropic as anthropic_codec
import cast.codecs.openai as openai_codec
from cast import Message, ProviderPart, Reasoning, Role, TextPart, ToolCall, port
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from cast.codecs.openai import REASONING_FIELDS
from csum.serve.sse import anthropic_event, read_event
from csum.serve.translate import TranslationError
from csum.serve.translate.anthropic_to_chat import REASONING_FORMAT

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "STOP_REASONS",
    "MessagesStream",
    "messages_request",
    "messages_response",
    "messages_usage",
    "reasoning_of",
]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent to Anthropic when the Chat request sets no limit (it needs one)."""


STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
"""Chat Completions ``finish_reason`` -> Messages ``stop_reason``."""

_THINKING = {"type": "thinking", "thinking": "", "signature": ""}
"""A thinking block opened for streamed reasoning (Chat carries no signature)."""


_CARRIED = ("model", "temperature", "top_p", "stream", "thinking")
_FIELDS = ("openai", "message_fields")  # the codec's part of a message's other fields


def messages_request(payload: dict[str, Any], chain: list[Message] | None = None) -> dict[str, Any]:
    """The Messages request for a Chat Completions request ``payload`` (``chain``: its
    history decoded, compacted when it was; else decoded here)."""
    if not isinstance(payload.get("messages"), list):
        raise TranslationError("messages: expected an array of messages")
    if payload.get("n", 1) != 1:
        raise TranslationError("n: Anthropic answers with one choice only")
    fmt = payload.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        raise TranslationError(f"response_format: {fmt.get('type')!r} is not translated")
    try:
        if chain is None:
            chain = openai_codec.decode({"messages": payload["messages"]})
        chain, signed = _with_signed_thinking(chain)
        chain = port(chain, "anthropic", source="anthropic" if signed else None)
    except ValueError as exc:
        raise TranslationError(str(exc)) from exc
    out: dict[str, Any] = {k: payload[k] for k in _CARRIED if k in payload}
    limit = payload.get("max_completion_tokens", payload.get("max_tokens"))
    out["max_tokens"] = DEFAULT_MAX_TOKENS if limit is None else limit
    out.update(anthropic_codec.encode(chain))
    stop = payload.get("stop")
    if stop is not None:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    if isinstance(payload.get("user"), str):
        out["metadata"] = {"user_id": payload["user"]}
    tools = payload.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise TranslationError("tools: expected an array")
        out["tools"] = [_tool(tool, i) for i, tool in enumerate(tools)]
    choice = _tool_choice(payload.get("tool_choice"))
    if payload.get("parallel_tool_calls") is False:
        choice = {**(choice or {"type": "auto"}), "disable_parallel_tool_use": True}
    if choice is not None:
        out["tool_choice"] = choice
    return out


def _signed_details(message: Message) -> list[Reasoning]:
    """The Anthropic thinking an AI message's ``reasoning_details`` carried back (kept in
    its fields part), in order; details of other formats or unsigned left out."""
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


def _with_signed_thinking(chain: list[Message]) -> tuple[list[Message], bool]:
    """``chain`` with each AI message's reasoning replaced by the signed thinking it
    carried back (as the anthropic codec reads a turn); whether any was found."""
    turns = [i for i, m in enumerate(chain) if m.role is Role.AI]
    signed = [_signed_details(chain[i]) for i in turns]
    if not any(signed):
        return chain, False
    out = list(chain)
    for i, blocks in zip(turns, signed, strict=True):
        if not blocks:
            continue
        parts = list(out[i].parts)
        head = [TextPart(text="", reasoning=r) for r in blocks[:-1]]
        first = parts[0] if parts else None
        if isinstance(first, TextPart | ToolCall):
            parts[0] = first.model_copy(update={"reasoning": blocks[-1]})
        else:
            head.append(TextPart(text="", reasoning=blocks[-1]))
        out[i] = out[i].model_copy(update={"parts": (*head, *parts)})
    return out, True


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


def _tool_choice(choice: object) -> dict[str, Any] | None:
    if choice is None:
        return None
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
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


def messages_response(completion: dict[str, Any], model: str) -> dict[str, Any]:
    """The Messages response for a Chat Completions response (non-streaming)."""
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
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id", ""),
                "name": function.get("name", ""),
                "input": _arguments(function.get("arguments", "")),
            }
        )
    usage = completion.get("usage") or {}
    return {
        "id": _message_id(completion),
        "type": "message",
        "role": "assistant",
        "model": completion.get("model") or model,
        "content": content,
        "stop_reason": STOP_REASONS.get(choices[0].get("finish_reason") or "stop", "end_turn"),
        "stop_sequence": None,
        "usage": messages_usage(usage),
    }


def reasoning_of(message: dict[str, Any]) -> str:
    """The reasoning text of a Chat message or delta, under whichever field it uses."""
    for field in REASONING_FIELDS:
        value = message.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def messages_usage(usage: dict[str, Any]) -> dict[str, int]:
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


def _message_id(completion: dict[str, Any]) -> str:
    return f"msg_{completion.get('id') or 'gateway'}"


class MessagesStream:
    """Turns a Chat Completions SSE stream into a Messages SSE stream, as it comes."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._buffer = b""
        self._started = False
        self._block: tuple[str, int] | None = None  # ("text" | call index, block index)
        self._blocks = 0
        self._stop = "end_turn"
        self._usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
        self._done = False

    def feed(self, data: bytes) -> bytes:
        """The Messages events for the SSE bytes ``data`` (any split of the stream)."""
        self._buffer += data.replace(b"\r\n", b"\n")
        out: list[bytes] = []
        while b"\n\n" in self._buffer:
            frame, self._buffer = self._buffer.split(b"\n\n", 1)
            for line in frame.split(b"\n"):
                if line.startswith(b"data:"):
                    out.extend(self._data(line[5:].strip()))
        return b"".join(out)

    def close(self) -> bytes:
        """The closing events, when the upstream ended without ``[DONE]``."""
        return b"".join(self._finish()) if self._started and not self._done else b""

    def _data(self, data: bytes) -> Iterator[bytes]:
        if self._done:
            return  # nothing after the end or an error
        if data == b"[DONE]":
            yield from self._finish()
            return
        chunk, problem = read_event(data)
        if problem is not None:
            if not self._done:  # the anthropic SDK raises on an error event
                self._done = True
                yield anthropic_event("error", {"error": {"type": "api_error", "message": problem}})
            return
        if not self._started:
            self._started = True
            message: dict[str, Any] = {
                "id": _message_id(chunk),
                "type": "message",
                "role": "assistant",
                "model": chunk.get("model") or self.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
            yield anthropic_event("message_start", {"message": message})
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = messages_usage(usage)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            thought = reasoning_of(delta)
            if thought:
                if self._block != ("thinking", -1):
                    yield from self._open(("thinking", -1), dict(_THINKING))
                yield self._delta({"type": "thinking_delta", "thinking": thought})
            text = delta.get("content")
            if isinstance(text, str) and text:
                if self._block != ("text", -1):
                    yield from self._open(("text", -1), {"type": "text", "text": ""})
                yield self._delta({"type": "text_delta", "text": text})
            for call in delta.get("tool_calls") or []:
                index = int(call.get("index", 0))
                function = call.get("function") or {}
                if self._block != ("tool", index):
                    block: dict[str, Any] = {
                        "type": "tool_use",
                        "id": call.get("id", ""),
                        "name": function.get("name", ""),
                        "input": {},
                    }
                    yield from self._open(("tool", index), block)
                arguments = function.get("arguments")
                if isinstance(arguments, str) and arguments:
                    yield self._delta({"type": "input_json_delta", "partial_json": arguments})
            finish = choice.get("finish_reason")
            if finish:
                self._stop = STOP_REASONS.get(finish, "end_turn")

    def _open(self, key: tuple[str, int], block: dict[str, Any]) -> Iterator[bytes]:
        yield from self._close_block()
        self._block = key
        yield anthropic_event(
            "content_block_start", {"index": self._blocks, "content_block": block}
        )

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return anthropic_event("content_block_delta", {"index": self._blocks, "delta": delta})

    def _close_block(self) -> Iterator[bytes]:
        if self._block is not None:
            yield anthropic_event("content_block_stop", {"index": self._blocks})
            self._blocks += 1
            self._block = None

    def _finish(self) -> Iterator[bytes]:
        if self._done:
            return
        self._done = True
        yield from self._close_block()
        yield anthropic_event(
            "message_delta",
            {
                "delta": {"stop_reason": self._stop, "stop_sequence": None},
                "usage": dict(self._usage),
            },
        )
        yield anthropic_event("message_stop", {})
