"""What a Responses client receives, whichever upstream answered: a streamed answer's
events and, for a whole one, the Response object they end with (:class:`ResponsesWriter`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from csum.serve.sse import data_event
from csum.serve.translate import TranslatedStream
from csum.serve.translate.responses_tools import chat_tools, custom_input

__all__ = ["GATEWAY_REASONING_PREFIX", "ResponsesWriter"]

GATEWAY_REASONING_PREFIX = "rs_csum_"
"""Id prefix of the reasoning items made from Anthropic thinking (signed, sent back)."""


def _responses_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions usage as Responses usage."""
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached, written = (int(details.get(k) or 0) for k in ("cached_tokens", "cache_write_tokens"))
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": int(reasoning)},
        "total_tokens": prompt + completion,
    }


def _message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """An assistant message output item of one ``output_text`` part."""
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    head = {"type": "message", "id": item_id, "role": "assistant", "status": status}
    return {**head, "content": content}


_REASONING_NAMES = {  # summary or not: (index field, part type, part events, text events)
    True: ("summary_index", "summary_text", "reasoning_summary_part", "reasoning_summary_text"),
    False: ("content_index", "reasoning_text", "content_part", "reasoning_text"),
}


class ResponsesWriter(TranslatedStream):
    """The Responses event sequence, written as the answer's pieces arrive."""

    def __init__(self, model: str, request: dict[str, Any]) -> None:
        super().__init__(model, request)
        self._tools = chat_tools(request)
        self._sequence = 0
        self._base = "gateway"
        self._output: list[dict[str, Any]] = []  # items done
        self._open: dict[str, Any] | None = None  # the item being streamed
        self._key: tuple[str, int] | None = None  # (kind, which) of the open item
        self._usage: dict[str, Any] | None = None  # Chat Completions-shaped
        self._status = "completed"

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        self._sequence += 1
        return data_event({"type": kind, **data, "sequence_number": self._sequence - 1}, kind)

    def _snapshot(self, status: str) -> dict[str, Any]:
        """The Response object of the items done so far, echoing the client's request."""
        request, incomplete = self.request, status == "incomplete"
        return {
            "id": f"resp_{self._base}",
            "object": "response",
            "created_at": 0,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": request.get("instructions"),
            "model": self.model,
            "output": list(self._output),
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "tool_choice": request.get("tool_choice", "auto"),
            "tools": request.get("tools") or [],
            "temperature": request.get("temperature"),
            "top_p": request.get("top_p"),
            "max_output_tokens": request.get("max_output_tokens"),
            "metadata": request.get("metadata") or {},
            "usage": None if self._usage is None else _responses_usage(self._usage),
        }

    def _begin(self, base: str, model: object) -> Iterator[bytes]:
        self._base, self._started = base, True
        self.model = model if isinstance(model, str) and model else self.model
        yield self._event("response.created", {"response": self._snapshot("in_progress")})
        yield self._event("response.in_progress", {"response": self._snapshot("in_progress")})

    def _part_ids(self, index: str) -> dict[str, Any]:
        item = self._open or {}
        return {"item_id": item.get("id", ""), "output_index": len(self._output), index: 0}

    def _reasoning(self, key: tuple[str, int], text: str, *, summary: bool) -> Iterator[bytes]:
        """Reasoning text: raw (an open model's) or a summary (a signed item's)."""
        where, kind, parts, texts = _REASONING_NAMES[summary]
        if self._key != key:
            yield from self._close_item()
            prefix = GATEWAY_REASONING_PREFIX if summary else "rs_"
            lists: dict[str, Any] = {"summary": []} if summary else {"summary": [], "content": []}
            item = {"type": "reasoning", "id": f"{prefix}{self._base}_{len(self._output)}", **lists}
            yield from self._add(key, item, (parts, where, {"type": kind, "text": ""}))
        yield from self._append(texts, where, text)

    def _signature(self, signature: str) -> None:
        if self._open is not None and self._open.get("type") == "reasoning":
            self._open["encrypted_content"] = self._open.get("encrypted_content", "") + signature

    def _text(self, key: tuple[str, int], text: str) -> Iterator[bytes]:
        if self._key != key:
            yield from self._close_item()
            item = _message_item(f"msg_{self._base}_{len(self._output)}", "", "in_progress")
            part = ("content_part", "content_index", item["content"][0])
            yield from self._add(key, {**item, "content": []}, part)
        yield from self._append("output_text", "content_index", text, logprobs=[])

    def _append(self, kind: str, where: str, text: str, **extra: Any) -> Iterator[bytes]:
        """``text`` added to the open item's part, in a ``.delta`` event (none for no text)."""
        if text:
            assert self._open is not None
            self._open["text"] = self._open.get("text", "") + text
            data = {**self._part_ids(where), "delta": text, **extra}
            yield self._event(f"response.{kind}.delta", data)

    def _call(
        self, key: tuple[str, int], call_id: str, name: str, arguments: str
    ) -> Iterator[bytes]:
        if self._key != key:
            yield from self._close_item()
            yield from self._add(key, self._tools.client_item(call_id, name, "", "in_progress"))
        assert self._open is not None
        if arguments and self._open["type"] == "custom_tool_call":
            self._open["input"] += arguments  # JSON of the one argument: read at the end
        elif arguments:
            self._open["arguments"] += arguments
            ids = {"item_id": self._open["id"], "output_index": len(self._output)}
            yield self._event("response.function_call_arguments.delta", {**ids, "delta": arguments})

    def _add(
        self,
        key: tuple[str, int],
        item: dict[str, Any],
        part: tuple[str, str, dict[str, Any]] | None = None,
    ) -> Iterator[bytes]:
        """``item`` opened, with its first ``part`` (event name, index field, part)."""
        self._key, self._open = key, item
        data = {"output_index": len(self._output), "item": dict(item)}
        yield self._event("response.output_item.added", data)
        if part is not None:
            added, where, first = part
            yield self._event(f"response.{added}.added", {**self._part_ids(where), "part": first})

    def _close_item(self) -> Iterator[bytes]:
        item = self._open
        if item is None:
            return
        ids = {"item_id": item["id"], "output_index": len(self._output)}
        if item["type"] in ("function_call", "custom_tool_call"):
            item["status"] = "completed"
        if item["type"] == "function_call":
            done = {**ids, "arguments": item["arguments"], "name": item["name"]}
            yield self._event("response.function_call_arguments.done", done)
        elif item["type"] == "custom_tool_call":
            item["input"] = custom_input(item["input"])
            custom = "response.custom_tool_call_input"
            yield self._event(f"{custom}.delta", {**ids, "delta": item["input"]})
            yield self._event(f"{custom}.done", {**ids, "input": item["input"]})
        elif item["type"] == "message":
            text = item.pop("text", "")
            item, in_part = _message_item(item["id"], text), {**ids, "content_index": 0}
            yield self._event(
                "response.output_text.done", {**in_part, "text": text, "logprobs": []}
            )
            yield self._event("response.content_part.done", {**in_part, "part": item["content"][0]})
        else:
            yield from self._close_reasoning(item)
        done = {"output_index": len(self._output), "item": item}
        yield self._event("response.output_item.done", done)
        self._output.append(item)
        self._open, self._key = None, None

    def _close_reasoning(self, item: dict[str, Any]) -> Iterator[bytes]:
        text = item.pop("text", "")
        summary = "content" not in item
        where, kind, parts, texts = _REASONING_NAMES[summary]
        ids = self._part_ids(where)
        part = {"type": kind, "text": text}
        item["summary" if summary else "content"] = [part] if text or not summary else []
        yield self._event(f"response.{texts}.done", {**ids, "text": text})
        yield self._event(f"response.{parts}.done", {**ids, "part": part})

    def whole(self, events: Iterable[dict[str, Any]]) -> dict[str, Any]:
        """The Response object a whole answer, given as the upstream's events, makes."""
        for event in events:
            b"".join(self._read(event))
        b"".join(self._end())
        return self._snapshot(self._status)

    def _error(self, problem: str) -> bytes:
        error = {"type": "upstream_error", "message": problem}
        data = {"code": "upstream_error", "message": problem, "param": None, "error": error}
        return self._event("error", data)

    def _finish(self) -> Iterator[bytes]:
        if not self._started:
            return
        yield from self._close_item()
        kind = "response.incomplete" if self._status == "incomplete" else "response.completed"
        yield self._event(kind, {"response": self._snapshot(self._status)})
