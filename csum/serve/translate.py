"""Translation of an Anthropic Messages client to an OpenAI-compatible (Chat
Completions) upstream: the request is ported with ``cast.port``, the response (whole or
streamed) turned back into a Messages response the client's SDK accepts.

What is carried (docs/serve.md lists what is not): the history (text, images, tool
calls and results, with ``cast.port``'s rules: reasoning from Anthropic is dropped, ids
kept unless the upstream rejects them), ``system``, ``max_tokens``, ``temperature``,
``top_p``, ``stop_sequences``, ``tools`` and ``tool_choice``, ``stream``; back: text,
tool calls (streamed as ``input_json_delta``), the upstream's reasoning
(``reasoning_content``, DeepSeek's field, or ``reasoning``, vLLM's) as a ``thinking``
block with an empty signature (streamed as ``thinking_delta``), stop reason and usage
(cached prompt tokens as ``cache_read_input_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import cast.codecs.anthropic as anthropic_codec
import cast.codecs.openai as openai_codec
from cast import port
from cast.codecs.openai import REASONING_FIELDS
from csum.serve.sse import read_event
from csum.tokens import EstimatedTokens

__all__ = [
    "STOP_REASONS",
    "MessagesStream",
    "TranslationError",
    "chat_request",
    "count_tokens",
    "messages_response",
    "messages_usage",
    "reasoning_of",
]

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
"""Chat Completions ``finish_reason`` -> Messages ``stop_reason``."""

_THINKING = {"type": "thinking", "thinking": "", "signature": ""}
"""A thinking block opened for streamed reasoning (Chat Completions carries no
signature, so it stays empty)."""

_CARRIED = ("model", "max_tokens", "temperature", "top_p", "stream")


class TranslationError(ValueError):
    """A Messages request the translation cannot carry (the message names the field)."""


def chat_request(payload: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions request for a Messages request ``payload``."""
    if not isinstance(payload.get("messages"), list):
        raise TranslationError("messages: expected an array of messages")
    history = {key: payload[key] for key in ("system", "messages") if key in payload}
    try:
        messages = port(anthropic_codec.decode(history), "openai", source="anthropic")
    except ValueError as exc:
        raise TranslationError(str(exc)) from exc
    out: dict[str, Any] = {k: payload[k] for k in _CARRIED if k in payload}
    out["messages"] = openai_codec.encode(messages, tool_names=False)["messages"]
    if "stop_sequences" in payload:
        out["stop"] = payload["stop_sequences"]
    if payload.get("stream"):
        out["stream_options"] = {"include_usage": True}
    tools = payload.get("tools")
    if tools is not None:
        out["tools"] = [_tool(tool, i) for i, tool in enumerate(_array(tools, "tools"))]
    choice = payload.get("tool_choice")
    if choice is not None:
        out["tool_choice"] = _tool_choice(choice)
        if isinstance(choice, dict) and choice.get("disable_parallel_tool_use"):
            out["parallel_tool_calls"] = False
    return out


def _array(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TranslationError(f"{where}: expected an array")
    return value


def _tool(tool: object, i: int) -> dict[str, Any]:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise TranslationError(f"tools[{i}]: expected a tool with a name")
    if "input_schema" not in tool:  # a server tool (web search, ...): no Chat equivalent
        raise TranslationError(f"tools[{i}]: {tool.get('type', 'tool')!r} has no input_schema")
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool["input_schema"]}
    if "description" in tool:
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: object) -> Any:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "auto":
        return "auto"
    if kind == "any":
        return "required"
    if kind == "none":
        return "none"
    if kind == "tool" and isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise TranslationError(f"tool_choice: unknown choice {choice!r}")


def count_tokens(payload: dict[str, Any]) -> dict[str, int]:
    """``count_tokens``'s answer, estimated (an OpenAI-compatible upstream has no such
    endpoint): the :class:`~csum.tokens.EstimatedTokens` count of the history."""
    history = {key: payload[key] for key in ("system", "messages") if key in payload}
    counter = EstimatedTokens("anthropic")
    return {"input_tokens": sum(counter.count(m) for m in anthropic_codec.decode(history))}


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
    """The reasoning text of a Chat message or delta, under whichever field the
    OpenAI-compatible server uses ("" when it has none)."""
    for field in REASONING_FIELDS:
        value = message.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def messages_usage(usage: dict[str, Any]) -> dict[str, int]:
    """Chat Completions usage as Messages usage: ``prompt_tokens_details``'s
    ``cached_tokens`` as cache reads, ``cache_write_tokens`` as cache writes, the rest
    of the prompt as input (Anthropic counts the three apart)."""
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


def _event(kind: str, data: dict[str, Any]) -> bytes:
    body = json.dumps({"type": kind, **data}, ensure_ascii=False, separators=(",", ":"))
    return f"event: {kind}\ndata: {body}\n\n".encode()


class MessagesStream:
    """Turns a Chat Completions SSE stream into a Messages SSE stream, as it comes:
    :meth:`feed` takes the upstream's bytes and returns the events to send so far."""

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
                yield _event("error", {"error": {"type": "api_error", "message": problem}})
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
            yield _event("message_start", {"message": message})
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
        yield _event("content_block_start", {"index": self._blocks, "content_block": block})

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _event("content_block_delta", {"index": self._blocks, "delta": delta})

    def _close_block(self) -> Iterator[bytes]:
        if self._block is not None:
            yield _event("content_block_stop", {"index": self._blocks})
            self._blocks += 1
            self._block = None

    def _finish(self) -> Iterator[bytes]:
        if self._done:
            return
        self._done = True
        yield from self._close_block()
        yield _event(
            "message_delta",
            {
                "delta": {"stop_reason": self._stop, "stop_sequence": None},
                "usage": dict(self._usage),
            },
        )
        yield _event("message_stop", {})
