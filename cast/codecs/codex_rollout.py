"""Codex CLI rollouts: the session files Codex writes and resumes from (``codex resume``;
facts in docs/handoff.md, mapping in docs/codecs.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from cast.codecs import openai_responses
from cast.codecs._common import array_of, ensure
from cast.codecs.claude_code_session import _line_time, session_uuid
from cast.messages import Message

__all__ = [
    "CLI_VERSION",
    "ORIGINATOR",
    "decode",
    "encode",
    "full_item",
    "response_items",
    "session_meta",
]

CLI_VERSION = "0.171.0"
"""The Codex version whose rollouts this codec's output was checked with."""
ORIGINATOR = "chaincast"
"""What ``session_meta.originator`` says wrote the rollout."""


def session_meta(payload: object) -> dict[str, Any] | None:
    """The ``session_meta`` line's payload (None when the rollout has none)."""
    for k, line in enumerate(array_of(payload, "rollout lines")):
        if isinstance(line, dict) and line.get("type") == "session_meta":
            meta = line.get("payload")
            return ensure(meta, dict, f"lines[{k}].payload", "a session_meta object", k)
    return None


def _as_function_item(item: dict[str, Any]) -> dict[str, Any]:
    """A free-form tool's call or output as a function call or output item."""
    kind = item.get("type")
    if kind == "custom_tool_call":
        call = {key: value for key, value in item.items() if key != "input"}
        call["type"] = "function_call"
        call["arguments"] = json.dumps({"input": item.get("input", "")}, ensure_ascii=False)
        return call
    if kind == "custom_tool_call_output":
        return {**item, "type": "function_call_output"}
    return item


def response_items(payload: object) -> list[Any]:
    """The Responses input items a rollout records, in the order Codex replays them."""
    items: list[Any] = []
    for k, line in enumerate(array_of(payload, "rollout lines")):
        ensure(line, dict, f"lines[{k}]", "a rollout line object", k)
        kind = line.get("type")
        if kind == "response_item":
            item = line.get("payload")
            item = ensure(item, dict, f"lines[{k}].payload", "a response item object", k)
            items.append(_as_function_item(item))
        elif kind == "compacted":
            compacted = line.get("payload")
            history = compacted.get("replacement_history") if isinstance(compacted, dict) else None
            if isinstance(history, list):
                items = [_as_function_item(i) if isinstance(i, dict) else i for i in history]
    return items


def decode(payload: object) -> list[Message]:
    """Messages of a rollout's lines; errors name the response item (``input[4].arguments``)."""
    return openai_responses.decode(response_items(payload))


_PART_TYPES = {"user": "input_text", "system": "input_text", "assistant": "output_text"}


def full_item(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as Codex keeps it: a message item with ``"type": "message"`` and a list
    of content parts (the short form, with a string for content, is made whole; a
    system message becomes Codex's ``developer`` role)."""
    if item.get("type", "message") != "message":
        return item
    role = item.get("role")
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": _PART_TYPES.get(str(role), "input_text"), "text": content}]
    whole = {"type": "message", **{k: v for k, v in item.items() if k != "type"}}
    whole["content"] = content
    if role == "system":
        whole["role"] = "developer"
    return whole


def _shown(item: dict[str, Any]) -> dict[str, Any] | None:
    """The ``event_msg`` payload showing a user or assistant message item (else None)."""
    role = item.get("role")
    if item.get("type") != "message" or role not in ("user", "assistant"):
        return None
    parts = item["content"] if isinstance(item.get("content"), list) else []
    text = "\n".join(p["text"] for p in parts if isinstance(p, dict) and "text" in p)
    if role == "user":
        return {"type": "user_message", "message": text, "images": [], "kind": "plain"}
    return {"type": "agent_message", "message": text}


def encode(
    messages: Iterable[Message | dict[str, Any]],
    *,
    session_id: str | None = None,
    cwd: str = "",
    model_provider: str | None = None,
    start: datetime | None = None,
) -> list[dict[str, Any]]:
    """The lines of a new Codex rollout holding ``messages`` (``session_id`` the
    ``session_meta`` id, default a UUID that is a function of the items; ``model_provider``
    left out when None; ``start`` default the Unix epoch; lines one millisecond apart)."""
    items = [full_item(item) for item in openai_responses.encode(messages)["input"]]
    session = session_id or session_uuid(items)
    meta = {
        "id": session,
        "timestamp": _line_time(start, 0),
        "cwd": cwd,
        "originator": ORIGINATOR,
        "cli_version": CLI_VERSION,
        "source": "exec",
    }
    if model_provider is not None:
        meta["model_provider"] = model_provider
    out: list[dict[str, Any]] = [
        {"timestamp": _line_time(start, 0), "type": "session_meta", "payload": meta}
    ]
    for whole in items:
        stamp = _line_time(start, len(out))
        out.append({"timestamp": stamp, "type": "response_item", "payload": whole})
        shown = _shown(whole)
        if shown is not None:
            out.append({"timestamp": stamp, "type": "event_msg", "payload": shown})
    return out
