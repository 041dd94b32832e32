"""A Chat Completions answer as a Responses one: the Response object, or the event
sequence the ``openai`` SDK's streaming reads (reasoning as ``reasoning_text``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from csum.serve.translate.chat_to_anthropic import reasoning_of
from csum.serve.translate.responses_output import ResponsesWriter

__all__ = ["ResponsesStream", "responses_response"]


def responses_response(
    completion: dict[str, Any], model: str, request: dict[str, Any]
) -> dict[str, Any]:
    """The Response object for a Chat response (``request``: the client's, echoed): the
    one its stream, a single chunk of the whole message, ends with."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    calls = [{**call, "index": i} for i, call in enumerate(message.get("tool_calls") or [])]
    delta = {**message, "tool_calls": calls}
    chunk = {**completion, "usage": completion.get("usage") or {}}
    chunk["choices"] = [{"delta": delta, "finish_reason": choice.get("finish_reason")}]
    return ResponsesStream(model, request).whole([chunk])


class ResponsesStream(ResponsesWriter):
    """Turns a Chat Completions SSE stream into the Responses events as it comes."""

    ends_with_done = True

    def _read(self, chunk: dict[str, Any]) -> Iterator[bytes]:
        if not self._started:
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
                call_id, name = str(call.get("id") or ""), str(function.get("name") or "")
                arguments = function.get("arguments")
                arguments = arguments if isinstance(arguments, str) else ""
                yield from self._call(key, call_id, name, arguments)
            if choice.get("finish_reason") == "length":
                self._status = "incomplete"
