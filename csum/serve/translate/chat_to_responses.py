"""A Chat Completions answer as a Responses one: the Response object, or the event
sequence the ``openai`` SDK's streaming reads (reasoning as ``reasoning_text``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from csum.serve.translate.chat_to_anthropic import reasoning_of
from csum.serve.translate.responses_output import (
    ResponsesWriter,
    message_item,
    response_object,
    responses_usage,
)
from csum.serve.translate.responses_tools import chat_tools

__all__ = ["ResponsesStream", "responses_response"]


def responses_response(
    completion: dict[str, Any], model: str, request: dict[str, Any]
) -> dict[str, Any]:
    """The Response object for a Chat response (``request``: the client's, echoed)."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    base = str(completion.get("id") or "gateway")
    output: list[dict[str, Any]] = []
    thought = reasoning_of(message)
    if thought:  # an open model's raw reasoning
        content = [{"type": "reasoning_text", "text": thought}]
        output.append({"type": "reasoning", "id": f"rs_{base}", "summary": [], "content": content})
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(message_item(f"msg_{base}", text))
    tools = chat_tools(request)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        name, arguments = function.get("name", ""), function.get("arguments") or ""
        output.append(tools.client_item(str(call.get("id", "")), name, arguments, "completed"))
    status = "incomplete" if choice.get("finish_reason") == "length" else "completed"
    usage = responses_usage(completion.get("usage") or {})
    return response_object(
        f"resp_{base}", completion.get("model") or model, request, output, status, usage
    )


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
