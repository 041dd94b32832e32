"""Claude Code session logs (one line per content block) ↔ chaincast messages, through
the Messages API conversation they record (docs/codecs.md)."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable
from typing import Any

from cast.codecs._common import EVIDENCE, MISSING, array_of, as_messages, ensure, error, fail
from cast.codecs.anthropic import decode as decode_anthropic
from cast.codecs.anthropic import encode as encode_anthropic
from cast.constants import SUMMARIZATION_TOOL_ARGS, SUMMARIZATION_TOOL_NAME
from cast.errors import CodecError
from cast.ids import IdTemplate
from cast.messages import Message, Role

__all__ = ["decode", "detect_messages", "encode", "to_api_messages"]

_MESSAGE_ID = IdTemplate("msg_{r:24:b}")
_SUMMARY_CALL_ID = IdTemplate("toolu_{r:24:b}")
_BLOCK_PATH = re.compile(r"^messages\[(\d+)\]\.content\[(\d+)\]")


def _entry_message(entry: object, k: int) -> dict[str, Any] | None:
    """The message object of entry ``k``; ``None`` for log lines that hold none."""
    entry = ensure(entry, dict, f"entries[{k}]", "a message object or a log line", k)
    if "role" in entry:
        return entry
    message = entry.get("message", MISSING)
    if message is MISSING:
        if entry.get("type") in ("user", "assistant"):
            fail(f"entries[{k}].message", "a user or assistant log line without a message", index=k)
        return None  # summary, system and other non-message lines
    return ensure(message, dict, f"entries[{k}].message", "a message object", k)


def _blocks(content: object, where: str, k: int) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    raise error(where, "a string or an array of content blocks", content, k)


def _is_result(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def to_api_messages(entries: Iterable[object]) -> list[dict[str, Any]]:
    """The Messages API conversation a Claude Code log records (the merging rules are in
    docs/codecs.md); the input is not modified, content blocks are shared."""
    return _merge(entries, [])


def _is_results(content: object) -> bool:
    return isinstance(content, list) and bool(content) and all(map(_is_result, content))


def _merge(entries: Iterable[object], origin: list[list[tuple[int, int]]]) -> list[dict[str, Any]]:
    """``to_api_messages``; ``origin`` gets each block's (entry, block) position."""
    out: list[dict[str, Any]] = []
    group_id: object = None
    group: list[Any] | None = None  # content blocks of the open assistant message
    group_from: list[tuple[int, int]] = []
    users: list[tuple[int, Any]] = []  # user entries (index, content) logged since then
    only_results = True  # whether all of them hold tool results only

    def emit(content: Any, where: list[tuple[int, int]], role: str = "user") -> None:
        out.append({"role": role, "content": content})
        origin.append(where)

    def flush() -> None:
        nonlocal group, group_from, users, only_results
        if group is not None:
            emit(group, group_from, "assistant")
        results: list[Any] | None = None  # the open results message, while it can grow
        results_from: list[tuple[int, int]] = []
        for k, content in users:
            blocks = _blocks(content, f"entries[{k}].content", k)
            joins = _is_results(content)  # else other blocks: they end the results message
            if joins and results is None:
                results, results_from = [], []
                emit(results, results_from)
            if results is not None and blocks:
                results.extend(blocks)
                results_from.extend((k, b) for b in range(len(blocks)))
            else:
                emit(content, [(k, b) for b in range(len(blocks))])
            if not joins:
                results = None
        group, group_from, users, only_results = None, [], [], True

    for k, entry in enumerate(entries):
        message = _entry_message(entry, k)
        if message is None:
            continue
        role = message.get("role")
        content = message.get("content", MISSING)
        if content is MISSING:
            fail(f"entries[{k}].content", "the message has no content", index=k)
        if role == "user" and isinstance(entry, dict) and entry.get("isCompactSummary") is True:
            flush()
            call, result = _summary_pair(content, k)
            emit([call], [(k, 0)], "assistant")
            emit([result], [(k, 0)])
            continue
        if role == "assistant":
            message_id = message.get("id")
            if group is None or message_id is None or message_id != group_id or not only_results:
                flush()
                group, group_id = [], message_id
            blocks = _blocks(content, f"entries[{k}].content", k)
            group.extend(blocks)
            group_from.extend((k, b) for b in range(len(blocks)))
        elif role == "user":
            users.append((k, content))
            only_results = only_results and _is_results(content)
        else:
            fail(f"entries[{k}].role", f"expected user or assistant, got {role!r}", index=k)
    flush()
    return out


def _summary_pair(content: object, k: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The summary call and result for entry ``k`` (its id derives from the text)."""
    blocks = _blocks(content, f"entries[{k}].content", k)
    texts = []
    for b, block in enumerate(blocks):
        text = block.get("text") if isinstance(block, dict) else None
        if not isinstance(text, str):
            fail(f"entries[{k}].content[{b}]", "a text block of the compact summary", block, k)
        texts.append(text)
    text = "\n\n".join(texts)
    call_id = _SUMMARY_CALL_ID.generate(SUMMARIZATION_TOOL_NAME, seed=f"compact\x1f{text}")
    call = {
        "type": "tool_use",
        "id": call_id,
        "name": SUMMARIZATION_TOOL_NAME,
        "input": json.loads(SUMMARIZATION_TOOL_ARGS),
    }
    return call, {"type": "tool_result", "tool_use_id": call_id, "content": text}


def decode(entries: Iterable[object]) -> list[Message]:
    """Messages of a Claude Code log; errors name the entry (``entries[12].content[0]``)."""
    entries = array_of(entries, "log entries")
    origin: list[list[tuple[int, int]]] = []
    merged = _merge(entries, origin)
    try:
        return decode_anthropic(merged)
    except CodecError as exc:
        raise _relocate(exc, origin) from exc


def _relocate(exc: CodecError, origin: list[list[tuple[int, int]]]) -> CodecError:
    """The error with its path moved from the merged messages to the log entries."""
    match = _BLOCK_PATH.match(exc.path)
    if match is None:
        return exc
    message, block = int(match[1]), int(match[2])
    try:
        k, b = origin[message][block]
    except IndexError:
        return exc
    path = f"entries[{k}].content[{b}]{exc.path[match.end() :]}"
    return CodecError(exc.detail, path=path, index=k)


def encode(messages: Iterable[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """A Claude Code style log: one entry per assistant content block (sharing a generated
    ``id``), each tool result right after its call; a SYSTEM message is an error."""
    messages = as_messages(messages)
    api = encode_anthropic(messages)["messages"]
    k = next((k for k, message in enumerate(messages) if message.role is Role.SYSTEM), None)
    if k is not None:  # the first hoisted, a later one as a "system" turn: neither is logged
        fail(f"messages[{k}]", "a Claude Code log has no system prompt", index=k)
    out: list[dict[str, Any]] = []
    position = 0
    while position < len(api):
        message = api[position]
        position += 1
        if message["role"] == "user":
            out.append({"role": "user", "content": message["content"]})
            continue
        message_id = _MESSAGE_ID.generate(seed=f"claude_code:{position}")
        entry = {"id": message_id, "type": "message", "role": "assistant"}
        following = api[position] if position < len(api) else {"role": None}
        blocks = following["content"] if following["role"] == "user" else None
        results: deque[dict[str, Any]] = deque()
        rest: list[Any] = []
        if isinstance(blocks, list) and any(map(_is_result, blocks)):
            position += 1
            for block in blocks:
                (results if _is_result(block) else rest).append(block)
        if not message["content"]:
            out.append({**entry, "content": []})
        # Results keep their order; each is logged as soon as its call has been.
        called: set[object] = set()
        for block in message["content"]:
            out.append({**entry, "content": [block]})
            if block.get("type") == "tool_use":
                called.add(block["id"])
            while results and results[0]["tool_use_id"] in called:
                out.append({"role": "user", "content": [results.popleft()]})
        out.extend({"role": "user", "content": [b]} for b in results)
        if rest:
            out.append({"role": "user", "content": rest})
    return out


# -- detection (see cast.codecs._registry) -----------------------------------------------


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """Whole log lines, or assistant entries with their message id."""
    fits = any(
        ("message" in item and "role" not in item)
        or (item.get("role") == "assistant" and item.get("type") == "message" and "id" in item)
        for item in dicts
    )
    return EVIDENCE if fits else 0
