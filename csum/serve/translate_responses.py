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

import cast.codecs.anthropic as anthropic_codec
import cast.codecs.openai as openai_codec
import cast.codecs.openai_responses as responses_codec
from cast import Message, Reasoning, TextPart, ToolCall, port
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from csum.serve.sse import SseReader, data_event, read_event
from csum.serve.translate import TranslationError, reasoning_of
from csum.serve.translate_chat import chat_usage, messages_request
from csum.serve.translate_tools import ChatTools, chat_tools, custom_input, function_items

__all__ = [
    "GATEWAY_REASONING_PREFIX",
    "REDACTED",
    "AnthropicResponsesStream",
    "ResponsesStream",
    "chat_request_for_responses",
    "dropped_tools",
    "messages_request_for_responses",
    "responses_from_messages",
    "responses_response",
    "responses_usage",
]

GATEWAY_REASONING_PREFIX = "rs_csum_"
"""Id prefix of the reasoning items the gateway makes from Anthropic thinking blocks:
their ``encrypted_content`` is the block's signature, so sent back they become signed
thinking blocks again (reasoning items of any other origin are dropped)."""
REDACTED = "redacted_thinking:"
"""``encrypted_content`` prefix of an item made from a ``redacted_thinking`` block."""

_CARRIED = ("model", "temperature", "top_p", "stream", "parallel_tool_calls", "user")
_REFUSED = ("previous_response_id", "conversation")


def chat_request_for_responses(payload: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions request for a Responses request ``payload``."""
    for key in _REFUSED:
        if payload.get(key) is not None:
            raise TranslationError(f"{key}: stored upstream state cannot be translated")
    tools = chat_tools(payload.get("tools"))
    history = _history(payload, tools)
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
    if tools.functions:  # (Chat refuses an empty array: built-ins alone leave none)
        out["tools"] = tools.functions
    if payload.get("tool_choice") is not None and (tools.functions or payload.get("tools") is None):
        out["tool_choice"] = _tool_choice(payload["tool_choice"], tools)
    return out


def dropped_tools(payload: dict[str, Any]) -> list[str]:
    """The built-in tools of a Responses request a Chat upstream cannot run (left out of
    the translated request): ``type`` or ``type:name`` each."""
    try:
        return chat_tools(payload.get("tools")).dropped
    except TranslationError:
        return []


def _history(payload: dict[str, Any], tools: ChatTools) -> dict[str, Any]:
    """``instructions`` and ``input``, custom and namespaced calls as Chat functions."""
    history: dict[str, Any] = {k: payload[k] for k in ("instructions", "input") if k in payload}
    if isinstance(history.get("input"), list):
        history["input"] = function_items(history["input"], tools)
    return history


def _tool_choice(choice: object, tools: ChatTools) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("function", "custom") and isinstance(choice, dict):
        name = choice.get("name")
        if isinstance(name, str):
            return {"type": "function", "function": {"name": tools.chat_name(name)}}
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
    thought = reasoning_of(message)
    if thought:
        output.append(_reasoning_item(f"rs_{base}", thought))
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(_message_item(f"msg_{base}", text))
    tools = chat_tools(request.get("tools"))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        name, arguments = function.get("name", ""), function.get("arguments") or ""
        output.append(tools.client_item(str(call.get("id", "")), name, arguments, "completed"))
    status = "incomplete" if choice.get("finish_reason") == "length" else "completed"
    usage = responses_usage(completion.get("usage") or {})
    return _response(
        f"resp_{base}", completion.get("model") or model, request, output, status, usage
    )


class _ResponsesWriter:
    """The Responses event sequence, written as the answer's pieces arrive:
    ``response.created``, ``response.in_progress``, per output item
    ``output_item.added``, its parts and deltas, ``output_item.done``, then
    ``response.completed`` (``response.incomplete`` when the answer was cut)."""

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        self.model = model
        self.request = request
        self._tools = chat_tools(request.get("tools"))
        self._reader = SseReader()
        self._sequence = 0
        self._id = ""
        self._base = "gateway"
        self._output: list[dict[str, Any]] = []  # items done
        self._open: dict[str, Any] | None = None  # the item being streamed
        self._key: tuple[str, int] | None = None  # (kind, which) of the open item
        self._usage: dict[str, Any] | None = None  # Chat Completions-shaped
        self._custom_arguments = ""  # of the open custom tool call
        self._status = "completed"
        self._done = False

    def close(self) -> bytes:
        """The closing events, when the upstream ended without its last event."""
        return b"".join(self._finish()) if self._id and not self._done else b""

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        self._sequence += 1
        return data_event({"type": kind, **data, "sequence_number": self._sequence - 1}, kind)

    def _snapshot(self, status: str) -> dict[str, Any]:
        usage = responses_usage(self._usage) if self._usage is not None else None
        return _response(self._id, self.model, self.request, list(self._output), status, usage)

    def _begin(self, base: str, model: object) -> Iterator[bytes]:
        self._base = base
        self._id = f"resp_{base}"
        self.model = model if isinstance(model, str) and model else self.model
        yield self._event("response.created", {"response": self._snapshot("in_progress")})
        yield self._event("response.in_progress", {"response": self._snapshot("in_progress")})

    def _index(self) -> int:
        return len(self._output)

    def _part_ids(self, index: str = "content_index") -> dict[str, Any]:
        item = self._open or {}
        return {"item_id": item.get("id", ""), "output_index": self._index(), index: 0}

    def _reasoning(self, key: tuple[str, int], text: str, *, summary: bool) -> Iterator[bytes]:
        """Reasoning text: raw (``reasoning_text`` content, as an open model's) or, for
        an item whose signature rides in ``encrypted_content``, a summary."""
        where = "summary_index" if summary else "content_index"
        if self._key != key:
            yield from self._close_item()
            prefix = GATEWAY_REASONING_PREFIX if summary else "rs_"
            item: dict[str, Any] = {
                "type": "reasoning",
                "id": f"{prefix}{self._base}_{self._index()}",
            }
            item.update({"summary": [], "content": []} if not summary else {"summary": []})
            yield from self._add(key, item)
            kind = "summary_text" if summary else "reasoning_text"
            added = "reasoning_summary_part" if summary else "content_part"
            data = {**self._part_ids(where), "part": {"type": kind, "text": ""}}
            yield self._event(f"response.{added}.added", data)
        if not text:
            return
        assert self._open is not None
        self._open["text"] = self._open.get("text", "") + text
        kind = "reasoning_summary_text" if summary else "reasoning_text"
        yield self._event(f"response.{kind}.delta", {**self._part_ids(where), "delta": text})

    def _signature(self, signature: str) -> None:
        if self._open is not None and self._open.get("type") == "reasoning":
            self._open["encrypted_content"] = self._open.get("encrypted_content", "") + signature

    def _text(self, key: tuple[str, int], text: str) -> Iterator[bytes]:
        if self._key != key:
            yield from self._close_item()
            item = _message_item(f"msg_{self._base}_{self._index()}", "", "in_progress")
            yield from self._add(key, {**item, "content": []})
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield self._event("response.content_part.added", {**self._part_ids(), "part": part})
        if not text:
            return
        assert self._open is not None
        self._open["text"] = self._open.get("text", "") + text
        data = {**self._part_ids(), "delta": text, "logprobs": []}
        yield self._event("response.output_text.delta", data)

    def _call(
        self, key: tuple[str, int], call_id: str, name: str, arguments: str
    ) -> Iterator[bytes]:
        if self._key != key:
            yield from self._close_item()
            yield from self._add(key, self._tools.client_item(call_id, name, "", "in_progress"))
        if arguments and self._open is not None and self._open["type"] == "custom_tool_call":
            self._custom_arguments += arguments  # JSON of the one argument: read at the end
        elif arguments:
            assert self._open is not None
            self._open["arguments"] += arguments
            data = {"item_id": self._open["id"], "output_index": self._index(), "delta": arguments}
            yield self._event("response.function_call_arguments.delta", data)

    def _add(self, key: tuple[str, int], item: dict[str, Any]) -> Iterator[bytes]:
        self._key, self._open = key, item
        data = {"output_index": self._index(), "item": dict(item)}
        yield self._event("response.output_item.added", data)

    def _close_item(self) -> Iterator[bytes]:
        item, key = self._open, self._key
        if item is None or key is None:
            return
        if item["type"] == "function_call":
            item["status"] = "completed"
            done = {"item_id": item["id"], "output_index": self._index()}
            done.update(arguments=item["arguments"], name=item["name"])
            yield self._event("response.function_call_arguments.done", done)
        elif item["type"] == "custom_tool_call":
            item["status"] = "completed"
            item["input"] = custom_input(self._custom_arguments)
            self._custom_arguments = ""
            ids = {"item_id": item["id"], "output_index": self._index()}
            yield self._event(
                "response.custom_tool_call_input.delta", {**ids, "delta": item["input"]}
            )
            yield self._event(
                "response.custom_tool_call_input.done", {**ids, "input": item["input"]}
            )
        elif item["type"] == "message":
            text = item.pop("text", "")
            item = _message_item(item["id"], text)
            part = item["content"][0]
            yield self._event(
                "response.output_text.done", {**self._part_ids(), "text": text, "logprobs": []}
            )
            yield self._event("response.content_part.done", {**self._part_ids(), "part": part})
        else:
            yield from self._close_reasoning(item)
        yield self._event(
            "response.output_item.done", {"output_index": self._index(), "item": item}
        )
        self._output.append(item)
        self._open, self._key = None, None

    def _close_reasoning(self, item: dict[str, Any]) -> Iterator[bytes]:
        text = item.pop("text", "")
        summary = "content" not in item
        where = "summary_index" if summary else "content_index"
        kind = "summary_text" if summary else "reasoning_text"
        part = {"type": kind, "text": text}
        if summary:
            item["summary"] = [part] if text else []
            yield self._event(
                "response.reasoning_summary_text.done", {**self._part_ids(where), "text": text}
            )
            yield self._event(
                "response.reasoning_summary_part.done", {**self._part_ids(where), "part": part}
            )
        else:
            item["content"] = [part]
            yield self._event(
                "response.reasoning_text.done", {**self._part_ids(where), "text": text}
            )
            yield self._event("response.content_part.done", {**self._part_ids(where), "part": part})

    def _failed(self, problem: str) -> Iterator[bytes]:
        """An ``error`` event (the openai SDK raises on it), once; nothing after it."""
        if self._done:
            return
        self._done = True
        error = {"type": "upstream_error", "message": problem}
        data = {"code": "upstream_error", "message": problem, "param": None, "error": error}
        yield self._event("error", data)

    def _finish(self) -> Iterator[bytes]:
        if self._done or not self._id:
            return
        self._done = True
        yield from self._close_item()
        kind = "response.incomplete" if self._status == "incomplete" else "response.completed"
        yield self._event(kind, {"response": self._snapshot(self._status)})


class ResponsesStream(_ResponsesWriter):
    """Turns a Chat Completions SSE stream into the Responses event sequence as it
    comes (:meth:`feed` takes the upstream's bytes, returns the events so far)."""

    def feed(self, data: bytes) -> bytes:
        """The events for the SSE bytes ``data`` (any split of the stream)."""
        out: list[bytes] = []
        for _, raw in self._reader.feed(data):
            if self._done:
                continue  # nothing after the end or an error
            if raw == b"[DONE]":
                out.extend(self._finish())
                continue
            chunk, problem = read_event(raw)
            out.extend(self._chunk(chunk) if problem is None else self._failed(problem))
        return b"".join(out)

    def _chunk(self, chunk: dict[str, Any]) -> Iterator[bytes]:
        if not self._id:
            yield from self._begin(str(chunk.get("id") or "gateway"), chunk.get("model"))
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            thought = reasoning_of(delta)
            if thought:
                yield from self._reasoning(("reasoning", -1), thought, summary=False)
            text = delta.get("content")
            if isinstance(text, str) and text:
                yield from self._text(("text", -1), text)
            for call in delta.get("tool_calls") or []:
                function = call.get("function") or {}
                key = ("call", int(call.get("index", 0)))
                arguments = function.get("arguments")
                yield from self._call(
                    key,
                    str(call.get("id") or ""),
                    str(function.get("name") or ""),
                    arguments if isinstance(arguments, str) else "",
                )
            if choice.get("finish_reason") == "length":
                self._status = "incomplete"


class AnthropicResponsesStream(_ResponsesWriter):
    """Turns an Anthropic Messages SSE stream into the Responses event sequence as it
    comes; a thinking block becomes a reasoning item whose ``encrypted_content`` is
    its signature (sent back, it is a signed thinking block again)."""

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        super().__init__(model, request)
        self._anthropic_usage: dict[str, Any] = {}

    def feed(self, data: bytes) -> bytes:
        """The events for the SSE bytes ``data`` (any split of the stream)."""
        out: list[bytes] = []
        for _, raw in self._reader.feed(data):
            if self._done:
                continue  # nothing after the end or an error
            event, problem = read_event(raw)
            out.extend(self._message_event(event) if problem is None else self._failed(problem))
        return b"".join(out)

    def _message_event(self, event: dict[str, Any]) -> Iterator[bytes]:
        kind = event.get("type")
        index = int(event.get("index", 0))
        if kind == "message_start":
            message = event.get("message") or {}
            self._usage = chat_usage(message.get("usage") or {})
            self._anthropic_usage.update(message.get("usage") or {})
            yield from self._begin(_base_of(message), message.get("model"))
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
                assert self._open is not None
                call = self._open
                yield from self._call(
                    ("call", index),
                    call["call_id"],
                    call["name"],
                    str(delta.get("partial_json", "")),
                )
        elif kind == "message_delta":
            if (event.get("delta") or {}).get("stop_reason") == "max_tokens":
                self._status = "incomplete"
            self._anthropic_usage.update({k: v for k, v in (event.get("usage") or {}).items() if v})
            self._usage = chat_usage(self._anthropic_usage)
        elif kind == "message_stop":
            yield from self._finish()

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
            self._signature(REDACTED + str(block.get("data", "")))
        elif kind == "tool_use":
            call_id = str(block.get("id", ""))
            yield from self._call(("call", index), call_id, str(block.get("name", "")), "")


def _base_of(message: dict[str, Any]) -> str:
    return str(message.get("id") or "gateway")


def responses_from_messages(
    message: dict[str, Any], model: str, request: dict[str, Any]
) -> dict[str, Any]:
    """The Response object for an Anthropic Messages response (non-streaming): thinking
    blocks become reasoning items carrying their signature in ``encrypted_content``."""
    base = _base_of(message)
    output: list[dict[str, Any]] = []
    tools = chat_tools(request.get("tools"))
    for block in message.get("content") or []:
        kind = block.get("type")
        item_id = f"{GATEWAY_REASONING_PREFIX}{base}_{len(output)}"
        if kind == "thinking":
            text = str(block.get("thinking", ""))
            summary = [{"type": "summary_text", "text": text}] if text else []
            output.append(
                {
                    "type": "reasoning",
                    "id": item_id,
                    "summary": summary,
                    "encrypted_content": str(block.get("signature", "")),
                }
            )
        elif kind == "redacted_thinking":
            encrypted = REDACTED + str(block.get("data", ""))
            output.append(
                {"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": encrypted}
            )
        elif kind == "text":
            output.append(_message_item(f"msg_{base}_{len(output)}", str(block.get("text", ""))))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            call_id, name = str(block.get("id", "")), str(block.get("name", ""))
            output.append(tools.client_item(call_id, name, arguments, "completed"))
    status = "incomplete" if message.get("stop_reason") == "max_tokens" else "completed"
    usage = responses_usage(chat_usage(message.get("usage") or {}))
    return _response(f"resp_{base}", message.get("model") or model, request, output, status, usage)


def messages_request_for_responses(payload: dict[str, Any]) -> dict[str, Any]:
    """The Messages request for a Responses request ``payload``: the settings as for a
    Chat Completions upstream, the history ported with the signed thinking of this
    gateway's reasoning items kept (Anthropic's own, so ``source="anthropic"``)."""
    out = messages_request(chat_request_for_responses(payload))
    history = _history(payload, chat_tools(payload.get("tools")))
    try:
        chain = [_signed(m) for m in responses_codec.decode(history)]
        chain = port(chain, "anthropic", source="anthropic")
    except ValueError as exc:
        raise TranslationError(str(exc)) from exc
    out.pop("system", None)
    out.pop("messages", None)
    out.update(anthropic_codec.encode(chain))
    if payload.get("thinking") is not None:
        out["thinking"] = payload["thinking"]
    return out


def _signed(message: Message) -> Message:
    """``message`` with the gateway's reasoning items as Anthropic signed thinking, and
    every other reasoning dropped (only Anthropic's own signatures go back to it)."""
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
    if encrypted.startswith(REDACTED):
        data = encrypted[len(REDACTED) :].encode()
        return Reasoning(signature=REDACTED_THINKING_PREFIX + data)
    return Reasoning(content=reasoning.content, signature=encrypted.encode())
