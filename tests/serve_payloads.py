"""The scripted upstream's answers, in each API's own format (tests/serve_upstream.py
serves them): request ``n`` calls the tool ``read_file`` unless ``n`` is a multiple of
4, when it answers in text. No serve extra needed."""

from __future__ import annotations

import json
from typing import Any

SUMMARIZER = "summarizer"
"""A model that always answers in text (a summarization handler's calls)."""
ERROR_BODY = b'{"type":"error","error":{"type":"scripted_error","message":"scripted status"}}'


def _args(n: int) -> str:
    return json.dumps({"path": f"src/module_{n}.py", "lines": [1, 400]})


def _text(n: int) -> str:
    return f"Step {n} done: the module loads and its tests pass."


def _uses_tool(n: int) -> bool:
    return n % 4 != 0


def chat_body(n: int, model: str) -> dict[str, Any]:
    if _uses_tool(n) and model != SUMMARIZER:
        call = {
            "id": f"call_{n:04d}",
            "type": "function",
            "function": {"name": "read_file", "arguments": _args(n)},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        text = f"Summary {n}: the agent read the modules." if model == SUMMARIZER else _text(n)
        message = {"role": "assistant", "content": text}
        finish = "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 100 + n, "completion_tokens": 7, "total_tokens": 107 + n},
    }


def chat_events(n: int, model: str) -> list[bytes]:
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

    events = [chunk({"role": "assistant", "content": None})]
    if _uses_tool(n):
        args = _args(n)
        half = len(args) // 2
        first = {"index": 0, "id": f"call_{n:04d}", "type": "function"}
        events.append(
            chunk({"tool_calls": [{**first, "function": {"name": "read_file", "arguments": ""}}]})
        )
        events.extend(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in (args[:half], args[half:])
        )
        events.append(chunk({}, "tool_calls"))
    else:
        text = _text(n)
        events.extend(chunk({"content": piece}) for piece in (text[:10], text[10:]))
        events.append(chunk({}, "stop"))
    return [*events, b"data: [DONE]\n\n"]


def responses_body(n: int, model: str) -> dict[str, Any]:
    if _uses_tool(n):
        output: list[dict[str, Any]] = [
            {
                "type": "function_call",
                "id": f"fc_{n:04d}",
                "call_id": f"call_{n:04d}",
                "name": "read_file",
                "arguments": _args(n),
                "status": "completed",
            }
        ]
    else:
        output = [
            {
                "type": "message",
                "id": f"msg_{n:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": _text(n), "annotations": []}],
            }
        ]
    return {
        "id": f"resp_{n:04d}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 100 + n,
            "output_tokens": 7,
            "total_tokens": 107 + n,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def messages_body(n: int, model: str) -> dict[str, Any]:
    if _uses_tool(n) and model != SUMMARIZER:
        content: list[dict[str, Any]] = [
            {
                "type": "tool_use",
                "id": f"toolu_{n:04d}",
                "name": "read_file",
                "input": json.loads(_args(n)),
            }
        ]
        stop = "tool_use"
    else:
        text = f"Summary {n}: the agent read the modules." if model == SUMMARIZER else _text(n)
        content = [{"type": "text", "text": text}]
        stop = "end_turn"
    return {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 100 + n, "output_tokens": 7},
    }


def messages_events(n: int, model: str) -> list[bytes]:
    whole = messages_body(n, model)

    def event(kind: str, data: dict[str, Any]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 100 + n, "output_tokens": 1}
    events = [event("message_start", {"message": start})]
    block = whole["content"][0]
    if block["type"] == "tool_use":
        events.append(
            event("content_block_start", {"index": 0, "content_block": {**block, "input": {}}})
        )
        args = json.dumps(block["input"])
        half = len(args) // 2
        events.extend(
            event(
                "content_block_delta",
                {"index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
            for piece in (args[:half], args[half:])
        )
    else:
        events.append(
            event(
                "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
            )
        )
        text = block["text"]
        events.extend(
            event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": p}})
            for p in (text[:10], text[10:])
        )
    events.append(event("content_block_stop", {"index": 0}))
    events.append(
        event(
            "message_delta",
            {
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 7},
            },
        )
    )
    events.append(event("message_stop", {}))
    return events
