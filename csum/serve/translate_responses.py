"""Translation of an OpenAI Responses client to a Chat Completions upstream: input
items become messages (decoded with the Responses codec, ported with ``cast.port``),
the answer (whole or streamed) becomes a Response object or the Responses event
sequence the ``openai`` SDK's ``responses.create(stream=True)`` and
``responses.stream`` read.

Carried: ``instructions`` and ``input`` (a string or items: messages, function calls
and their outputs; reasoning items are dropped, ``cast.port``'s rule for reasoning
from another provider), ``model``, ``max_output_tokens``, ``temperature``, ``top_p``,
``tools`` (function tools), ``tool_choice``, ``parallel_tool_calls``, ``user``,
``reasoning.effort`` (as ``reasoning_effort``), ``text.format`` (as
``response_format``), ``stream``. ``previous_response_id`` needs the upstream's stored
state and is refused (400). Back: text, function calls, the upstream's
``reasoning_content`` (or vLLM's ``reasoning``) as a reasoning item with
``reasoning_text`` content, usage with cached tokens, ``incomplete`` on ``length``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import cast.codecs.openai as openai_codec
import cast.codecs.openai_responses as responses_codec
from cast import port
from cast.codecs.openai import REASONING_FIELDS
from csum.serve.sse import SseReader, data_event
from csum.serve.translate import TranslationError

__all__ = ["ResponsesStream", "chat_request_for_responses", "responses_response"]

_CARRIED = ("model", "temperature", "top_p", "stream", "parallel_tool_calls", "user")
_REFUSED = ("previous_response_id", "conversation")


def chat_request_for_responses(payload: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions request for a Responses request ``payload``."""
    for key in _REFUSED:
        if payload.get(key) is not None:
            raise TranslationError(f"{key}: stored upstream state cannot be translated")
    history = {k: payload[k] for k in ("instructions", "input") if k in payload}
    try:
        chain = port(responses_codec.decode(history), "openai")
    except ValueError as exc:
        raise TranslationError(str(exc)) from exc
    out: dict[str, Any] = {k: payload[k] for k in _CARRIED if k in payload}
    out["messages"] = openai_codec.encode(chain, tool_names=False)["messages"]
    if payload.get("max_output_tokens") is not None:
        out["max_tokens"] = payload["max_output_tokens"]
    if payload.get("stream"):
        out["stream_options"] = {"include_usage": True}
    reasoning = payload.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        out["reasoning_effort"] = reasoning["effort"]
    fmt = (
        (payload.get("text") or {}).get("format") if isinstance(payload.get("text"), dict) else None
    )
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "description", "schema", "strict") if k in fmt}
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        out["response_format"] = {"type": "json_object"}
    tools = payload.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise TranslationError("tools: expected an array")
        out["tools"] = [_tool(tool, i) for i, tool in enumerate(tools)]
    if payload.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(payload["tool_choice"])
    return out


def _tool(tool: object, i: int) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else tool
        raise TranslationError(f"tools[{i}]: {kind!r} is not a function tool")
    if not isinstance(tool.get("name"), str):
        raise TranslationError(f"tools[{i}].name: expected a string")
    keys = ("name", "description", "parameters", "strict")
    function = {k: tool[k] for k in keys if tool.get(k) is not None}
    return {"type": "function", "function": function}


def _tool_choice(choice: object) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "function" and isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise TranslationError(f"tool_choice: unknown choice {choice!r}")


def responses_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions usage as Responses usage."""
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": int(cached),
            "cache_write_tokens": int(details.get("cache_write_tokens") or 0),
        },
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": int(reasoning)},
        "total_tokens": prompt + completion,
    }


def _reasoning_of(message: dict[str, Any]) -> str:
    for field in REASONING_FIELDS:
        value = message.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def _reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    content = [{"type": "reasoning_text", "text": text}]
    return {"type": "reasoning", "id": item_id, "summary": [], "content": content}


def _message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": status,
        "content": content,
    }


def _call_item(call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def _response(  # noqa: PLR0917 (one positional per field it fills)
    response_id: str,
    model: str,
    request: dict[str, Any],
    output: list[dict[str, Any]],
    status: str,
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": request.get("instructions"),
        "model": model,
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "metadata": request.get("metadata") or {},
        "usage": usage,
    }


def responses_response(
    completion: dict[str, Any], model: str, request: dict[str, Any]
) -> dict[str, Any]:
    """The Response object for a Chat Completions response (non-streaming);
    ``request`` is the client's Responses request (its settings are echoed)."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    base = str(completion.get("id") or "gateway")
    output: list[dict[str, Any]] = []
    thought = _reasoning_of(message)
    if thought:
        output.append(_reasoning_item(f"rs_{base}", thought))
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(_message_item(f"msg_{base}", text))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        name, arguments = function.get("name", ""), function.get("arguments") or ""
        output.append(_call_item(str(call.get("id", "")), name, arguments, "completed"))
    status = "incomplete" if choice.get("finish_reason") == "length" else "completed"
    usage = responses_usage(completion.get("usage") or {})
    return _response(
        f"resp_{base}", completion.get("model") or model, request, output, status, usage
    )


class ResponsesStream:
    """Turns a Chat Completions SSE stream into the Responses event sequence as it
    comes: ``response.created``, ``response.in_progress``, per output item
    ``output_item.added``, its parts and deltas (``reasoning_text``, ``output_text``,
    ``function_call_arguments``), ``output_item.done``, then ``response.completed``
    (``response.incomplete`` on ``length``)."""

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        self.model = model
        self.request = request
        self._reader = SseReader()
        self._sequence = 0
        self._id = ""
        self._base = "gateway"
        self._output: list[dict[str, Any]] = []  # items done
        self._open: dict[str, Any] | None = None  # the item being streamed
        self._key: tuple[str, int] | None = None  # ("reasoning"|"text"|"call", call index)
        self._usage: dict[str, Any] | None = None
        self._status = "completed"
        self._done = False

    def feed(self, data: bytes) -> bytes:
        """The events for the SSE bytes ``data`` (any split of the stream)."""
        out: list[bytes] = []
        for _, raw in self._reader.feed(data):
            if raw == b"[DONE]":
                out.extend(self._finish())
            else:
                out.extend(self._chunk(json.loads(raw)))
        return b"".join(out)

    def close(self) -> bytes:
        """The closing events, when the upstream ended without ``[DONE]``."""
        return b"".join(self._finish()) if self._id and not self._done else b""

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        self._sequence += 1
        return data_event({"type": kind, **data, "sequence_number": self._sequence - 1}, kind)

    def _snapshot(self, status: str) -> dict[str, Any]:
        usage = responses_usage(self._usage) if self._usage is not None else None
        return _response(self._id, self.model, self.request, list(self._output), status, usage)

    def _chunk(self, chunk: dict[str, Any]) -> Iterator[bytes]:
        if not self._id:
            self._base = str(chunk.get("id") or "gateway")
            self._id = f"resp_{self._base}"
            self.model = chunk.get("model") or self.model
            yield self._event("response.created", {"response": self._snapshot("in_progress")})
            yield self._event("response.in_progress", {"response": self._snapshot("in_progress")})
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            thought = _reasoning_of(delta)
            if thought:
                yield from self._reasoning(thought)
            text = delta.get("content")
            if isinstance(text, str) and text:
                yield from self._text(text)
            for call in delta.get("tool_calls") or []:
                yield from self._call(call)
            if choice.get("finish_reason") == "length":
                self._status = "incomplete"

    def _index(self) -> int:
        return len(self._output)

    def _part_ids(self) -> dict[str, Any]:
        item = self._open or {}
        return {"item_id": item.get("id", ""), "output_index": self._index(), "content_index": 0}

    def _reasoning(self, text: str) -> Iterator[bytes]:
        if self._key != ("reasoning", -1):
            yield from self._close_item()
            item = {**_reasoning_item(f"rs_{self._base}_{self._index()}", ""), "content": []}
            yield from self._add(("reasoning", -1), item)
            part = {"type": "reasoning_text", "text": ""}
            yield self._event("response.content_part.added", {**self._part_ids(), "part": part})
        assert self._open is not None
        self._open["text"] = self._open.get("text", "") + text
        yield self._event("response.reasoning_text.delta", {**self._part_ids(), "delta": text})

    def _text(self, text: str) -> Iterator[bytes]:
        if self._key != ("text", -1):
            yield from self._close_item()
            item = {**_message_item(f"msg_{self._base}_{self._index()}", ""), "content": []}
            item["status"] = "in_progress"
            yield from self._add(("text", -1), item)
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield self._event("response.content_part.added", {**self._part_ids(), "part": part})
        assert self._open is not None
        self._open["text"] = self._open.get("text", "") + text
        data = {**self._part_ids(), "delta": text, "logprobs": []}
        yield self._event("response.output_text.delta", data)

    def _call(self, call: dict[str, Any]) -> Iterator[bytes]:
        index = int(call.get("index", 0))
        function = call.get("function") or {}
        if self._key != ("call", index):
            yield from self._close_item()
            item = _call_item(str(call.get("id") or ""), function.get("name") or "", "", "")
            item["status"] = "in_progress"
            yield from self._add(("call", index), item)
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            assert self._open is not None
            self._open["arguments"] += arguments
            data = {"item_id": self._open["id"], "output_index": self._index(), "delta": arguments}
            yield self._event("response.function_call_arguments.delta", data)

    def _add(self, key: tuple[str, int], item: dict[str, Any]) -> Iterator[bytes]:
        self._key, self._open = key, item
        shown = {k: v for k, v in item.items() if k != "text"}
        yield self._event(
            "response.output_item.added", {"output_index": self._index(), "item": shown}
        )

    def _close_item(self) -> Iterator[bytes]:
        item, key = self._open, self._key
        if item is None or key is None:
            return
        ids = self._part_ids()
        if key[0] == "call":
            item["status"] = "completed"
            data = {k: ids[k] for k in ("item_id", "output_index")}
            done = {**data, "arguments": item["arguments"], "name": item["name"]}
            yield self._event("response.function_call_arguments.done", done)
        else:
            text = item.pop("text", "")
            if key[0] == "reasoning":
                final = _reasoning_item(item["id"], text)
                part = final["content"][0]
                yield self._event("response.reasoning_text.done", {**ids, "text": text})
            else:
                final = _message_item(item["id"], text)
                part = final["content"][0]
                done = {**ids, "text": text, "logprobs": []}
                yield self._event("response.output_text.done", done)
            yield self._event("response.content_part.done", {**ids, "part": part})
            item = final
        data = {"output_index": self._index(), "item": item}
        yield self._event("response.output_item.done", data)
        self._output.append(item)
        self._open, self._key = None, None

    def _finish(self) -> Iterator[bytes]:
        if self._done or not self._id:
            return
        self._done = True
        yield from self._close_item()
        kind = "response.incomplete" if self._status == "incomplete" else "response.completed"
        yield self._event(kind, {"response": self._snapshot(self._status)})
