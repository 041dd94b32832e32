"""The scripted upstream's answers, in each API's own format (tests/support/serve_upstream.py
serves them): request ``n`` calls the tool ``read_file`` unless ``n`` is a multiple of
4, when it answers in text. No serve extra needed."""

from __future__ import annotations

import json
from typing import Any

SUMMARIZER = "summarizer"
"""A model that always answers in text (a summarization handler's calls)."""
REASONER = "reasoner"
"""A model whose answers start with reasoning (Chat: ``reasoning_content``; Messages: a
signed ``thinking`` block) and report cached prompt tokens."""
ERROR_BODY = b'{"type":"error","error":{"type":"scripted_error","message":"scripted status"}}'


def _args(n: int) -> str:
    return json.dumps({"path": f"src/module_{n}.py", "lines": [1, 400]})


def _text(n: int) -> str:
    return f"Step {n} done: the module loads and its tests pass."


def _uses_tool(n: int) -> bool:
    return n % 4 != 0


def thought(n: int) -> str:
    """The reasoner's reasoning in answer ``n``."""
    return f"Thinking {n}: the module needs reading first."


def signature(n: int) -> str:
    """The signature of the reasoner's thinking block in answer ``n``."""
    return f"c2lnbmF0dXJl{n:04d}"


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
    usage: dict[str, Any] = {
        "prompt_tokens": 100 + n,
        "completion_tokens": 7,
        "total_tokens": 107 + n,
    }
    if model == REASONER:
        message = {"role": "assistant", "reasoning_content": thought(n), **message}
        usage["prompt_tokens_details"] = {"cached_tokens": 64}
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
    }


def chat_events(n: int, model: str) -> list[bytes]:
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

    events = [chunk({"role": "assistant", "content": None})]
    if model == REASONER:
        text = thought(n)
        events.extend(chunk({"reasoning_content": p}) for p in (text[:8], text[8:]))
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
    if model == REASONER:  # the usage chunk (stream_options.include_usage)
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 7, "total_tokens": 107 + n}
        usage["prompt_tokens_details"] = {"cached_tokens": 64}
        events.append(b"data: " + json.dumps({**base, "choices": [], "usage": usage}).encode())
        events[-1] += b"\n\n"
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
    usage: dict[str, Any] = {"input_tokens": 100 + n, "output_tokens": 7}
    if model == REASONER:
        block = {"type": "thinking", "thinking": thought(n), "signature": signature(n)}
        content.insert(0, block)
        usage["cache_read_input_tokens"] = 64
    return {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def messages_events(n: int, model: str) -> list[bytes]:
    whole = messages_body(n, model)

    def event(kind: str, data: dict[str, Any]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {**whole["usage"], "output_tokens": 1}
    events = [event("message_start", {"message": start})]
    for index, block in enumerate(whole["content"]):
        events.extend(_block_events(index, block, event))
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


def _block_events(index: int, block: dict[str, Any], event: Any) -> list[bytes]:
    """The events of one content block: start, two deltas (a signature last), stop."""

    def delta(value: dict[str, Any]) -> bytes:
        return event("content_block_delta", {"index": index, "delta": value})

    kind = block["type"]
    empty = {"tool_use": {**block, "input": {}}, "text": {"type": "text", "text": ""}}.get(
        kind, {"type": "thinking", "thinking": "", "signature": ""}
    )
    out = [event("content_block_start", {"index": index, "content_block": empty})]
    if kind == "tool_use":
        args = json.dumps(block["input"])
        half = len(args) // 2
        out.extend(
            delta({"type": "input_json_delta", "partial_json": p})
            for p in (args[:half], args[half:])
        )
    elif kind == "text":
        text = block["text"]
        out.extend(delta({"type": "text_delta", "text": p}) for p in (text[:10], text[10:]))
    else:
        text = block["thinking"]
        out.extend(delta({"type": "thinking_delta", "thinking": p}) for p in (text[:8], text[8:]))
        out.append(delta({"type": "signature_delta", "signature": block["signature"]}))
    out.append(event("content_block_stop", {"index": index}))
    return out
