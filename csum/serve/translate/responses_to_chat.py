"""OpenAI Responses requests as Chat Completions requests (docs/serve.md lists what is
carried; tools: csum.serve.translate.responses_tools); provider-held state is refused."""

from __future__ import annotations

from typing import Any

import cast.codecs.openai as openai_codec
from cast import Message, port
from csum.serve.apis import RESPONSES
from csum.serve.translate import TranslationError
from csum.serve.translate.responses_tools import ChatTools, chat_tools, function_messages

__all__ = ["chat_request_for_responses"]

_CARRIED = ("model", "temperature", "top_p", "stream", "parallel_tool_calls", "user")
_REFUSED = ("previous_response_id", "conversation")


def chat_request_for_responses(
    payload: dict[str, Any], chain: list[Message] | None = None
) -> dict[str, Any]:
    """The Chat Completions request for a Responses request (``chain``: decoded, or None)."""
    for key in _REFUSED:
        if payload.get(key) is not None:
            raise TranslationError(f"{key}: stored upstream state cannot be translated")
    tools = chat_tools(payload)
    history = RESPONSES.decode(payload) if chain is None else chain
    messages = port(function_messages(history, tools), "openai")
    out: dict[str, Any] = {k: payload[k] for k in _CARRIED if k in payload}
    out["messages"] = openai_codec.encode(messages, tool_names=False)["messages"]
    if payload.get("max_output_tokens") is not None:
        out["max_tokens"] = payload["max_output_tokens"]
    if payload.get("stream"):
        out["stream_options"] = {"include_usage": True}
    reasoning = payload.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        out["reasoning_effort"] = reasoning["effort"]
    text = payload.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
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


def _tool_choice(choice: object, tools: ChatTools) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("function", "custom") and isinstance(choice, dict):
        name = choice.get("name")
        if isinstance(name, str):
            return {"type": "function", "function": {"name": tools.chat_name(name)}}
    raise TranslationError(f"tool_choice: unknown choice {choice!r}")
