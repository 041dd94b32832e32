"""LangChain codec: ``messages_to_dict`` JSON (or ``BaseMessage`` objects) ↔ chaincast
messages; needs no LangChain install for the JSON form (mapping in docs/integrations.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from cast.codecs._common import (
    EVIDENCE,
    AiParts,
    as_messages,
    b64decode,
    b64encode,
    dumps_compact,
    ensure,
    error,
    fail,
    fail_part,
    get_str,
    image_url_block,
    json_history,
    pack_signature,
    reasoned,
    redacted,
    result_parts,
    tool_parts,
    unpack_signature,
)
from cast.errors import install_hint
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    trusted_message,
)

__all__ = ["decode", "decode_counted", "detect_messages", "encode", "to_framework"]

INSTALL_HINT = install_hint("langchain")

_HUMAN, _AI, _TOOL = Role.HUMAN, Role.AI, Role.TOOL
_ROLES = {"system": Role.SYSTEM, "human": _HUMAN, "ai": _AI, "tool": _TOOL}
_THINKING_BLOCKS = ("reasoning", "thinking", "redacted_thinking")
_CALL_BLOCKS = ("tool_use", "tool_call", "function_call")
_MEDIA_BLOCKS = ("image_url", "image", "file", "audio", "video")


def _dump(items: list[Any]) -> list[Any]:
    from langchain_core.messages import messages_to_dict

    return messages_to_dict(items)


def decode(payload: object) -> list[Message]:
    """Messages of a LangChain history (``BaseMessage`` objects or their dicts)."""
    return decode_counted(payload)[0]


def decode_counted(payload: object) -> tuple[list[Message], list[int]]:
    """The messages, and how many each LangChain message became (always one)."""
    out: list[Message] = []
    names: dict[str, str] = {}  # tool call id -> name, for tool messages without one
    history = json_history(payload, "messages", _dump, "LangChain BaseMessage objects")
    for i, item in enumerate(history):
        where = f"[{i}]"
        ensure(item, dict, where, "a message object", i)
        kind = item.get("type")
        role = _ROLES.get(kind) if isinstance(kind, str) else None
        if role is None:
            fail(f"{where}.type", f"expected system, human, ai or tool, got {kind!r}", index=i)
        data = ensure(item.get("data"), dict, f"{where}.data", "an object", i)
        where = f"{where}.data"
        if role is _TOOL:
            out.append(_decode_tool(data, where, i, names))
            continue
        if role is not _AI and type(data.get("content")) is str:  # a lone text, read at once
            out.append(trusted_message(role, (TextPart(text=data["content"]),)))
            continue
        calls = _calls(data, where, i, names) if role is _AI else {}
        blocks = [] if data.get("content") == "" and calls else _blocks(data, where, i)
        parts = _decode_blocks(blocks, where, i, role, calls)
        for call in calls.values():  # the calls no block placed
            parts.append(_with_reasoning(call, parts.take()))
        out.append(parts.message(role))
    return out, [1] * len(out)


def _blocks(data: dict[str, Any], where: str, i: int) -> list[Any]:
    content = data.get("content")
    if isinstance(content, str):
        return [content]
    return ensure(content, list, f"{where}.content", "a string or an array of content blocks", i)


def _decode_blocks(
    blocks: list[Any], where: str, i: int, role: Role, calls: dict[str, ToolCall]
) -> AiParts:
    """A message's content blocks as parts (an AI's call blocks place its ``calls``)."""
    parts = AiParts()
    for k, block in enumerate(blocks):
        block_where = f"{where}.content[{k}]"
        if isinstance(block, str):
            parts.append(TextPart(text=block, reasoning=parts.take()))
            continue
        kind = block.get("type") if isinstance(block, dict) else None
        if role is _TOOL and kind != "text":
            fail(block_where, "a text block (chaincast holds text output)", index=i)
        ensure(block, dict, block_where, "a string or a content block", i)
        if kind == "text":
            text = get_str(block, "text", block_where, i)
            parts.append(TextPart(text=text, reasoning=parts.take()))
        elif role is _AI and kind in _THINKING_BLOCKS:
            parts.think(_reasoning(block, block_where, i))
        elif role is _AI and kind in _CALL_BLOCKS:
            placed = calls.pop(str(block.get("id") or block.get("call_id") or ""), None)
            if placed is not None:
                parts.append(_with_reasoning(placed, parts.take()))
        elif role is _HUMAN and kind in _MEDIA_BLOCKS:
            parts.append(_media(block, block_where, i))
        else:
            held = "" if role is _AI else f" in a {role.value} message"
            fail(f"{block_where}.type", f"chaincast cannot hold a {kind!r} block{held}", index=i)
    return parts


def _media(block: dict[str, Any], where: str, i: int) -> ImagePart | BinaryPart:
    """An image by URL, or a base64 image/file/audio/video block."""
    kind = block["type"]
    if kind == "image_url":
        image = block.get("image_url")
        if isinstance(image, str):
            return ImagePart(url=image)
        image = ensure(image, dict, f"{where}.image_url", "a URL or an object with one", i)
        detail = image.get("detail") or ""
        return ImagePart(url=get_str(image, "url", f"{where}.image_url", i), detail=str(detail))
    source = block.get("source")
    if isinstance(source, dict):  # Anthropic's own block
        block = {"base64": source.get("data"), "mime_type": source.get("media_type"), **source}
    data = block.get("base64", block.get("data"))
    if isinstance(data, str) and block.get("source_type", "base64") == "base64":
        mime = get_str(block, "mime_type", where, i)
        return BinaryPart(mime_type=mime, data=b64decode(data, f"{where}.base64", i))
    url = block.get("url")
    if kind == "image" and isinstance(url, str):
        return ImagePart(url=url)
    raise error(where, f"a {kind} block by base64 data (or an image by URL)", index=i)


def _reasoning(block: dict[str, Any], where: str, i: int) -> Reasoning:
    kind = block["type"]
    if kind == "redacted_thinking":
        return redacted(get_str(block, "data", where, i))
    if kind == "thinking":
        signature = block.get("signature") or ""
        content = get_str(block, "thinking", where, i)
        return Reasoning(content=content, signature=str(signature).encode())
    summary = block.get("summary")
    if isinstance(summary, list):
        texts = [s.get("text", "") for s in summary if isinstance(s, dict)]
        content = "\n\n".join(t for t in texts if isinstance(t, str))
    else:
        content = ensure(block.get("reasoning") or "", str, f"{where}.reasoning", "a string", i)
    extras = block.get("extras")
    signature = (
        (extras.get("signature") if isinstance(extras, dict) else None)
        or block.get("signature")
        or block.get("encrypted_content")
        or ""
    )
    item_id = block.get("id")
    if not isinstance(item_id, str) or "\n" in item_id:
        item_id = None
    return Reasoning(content=content, signature=pack_signature(item_id, str(signature)))


def _calls(data: dict[str, Any], where: str, i: int, names: dict[str, str]) -> dict[str, ToolCall]:
    """The message's tool calls (valid and invalid) by id, in order; ``names`` learns them."""
    calls: dict[str, ToolCall] = {}
    for key in ("tool_calls", "invalid_tool_calls"):
        entries = ensure(data.get(key) or [], list, f"{where}.{key}", "an array", i)
        for k, entry in enumerate(entries):
            entry_where = f"{where}.{key}[{k}]"
            ensure(entry, dict, entry_where, "a tool call object", i)
            args = entry.get("args")
            if key == "tool_calls":
                args = ensure(args, dict, f"{entry_where}.args", "an object", i)
                arguments = dumps_compact(args)
            else:
                arguments = args if isinstance(args, str) else ""
            call_id = entry.get("id") or ""
            name = entry.get("name") or ""
            if not isinstance(call_id, str) or not isinstance(name, str):
                fail(entry_where, "string id and name", index=i)
            names[call_id] = name
            calls[call_id or f"#{len(calls)}"] = ToolCall(
                id=call_id, name=name, arguments=arguments
            )
    return calls


def _with_reasoning(call: ToolCall, reasoning: Reasoning | None) -> ToolCall:
    return call.model_copy(update={"reasoning": reasoning}) if reasoning else call


def _decode_tool(data: dict[str, Any], where: str, i: int, names: dict[str, str]) -> Message:
    call_id = get_str(data, "tool_call_id", where, i)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        name = names.get(call_id, "")
    texts = list(_decode_blocks(_blocks(data, where, i), where, i, _TOOL, {}))
    status = data.get("status", "success")
    if status not in ("success", "error"):
        fail(f"{where}.status", '"success" or "error"', index=i)
    return trusted_message(Role.TOOL, result_parts(call_id, name, texts, status == "error"))


def encode(messages: Iterable[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``messages_to_dict`` JSON form of ``messages``."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(as_messages(messages)):
        if message.role is _TOOL:
            out.extend({"type": "tool", "data": data} for data in _encode_tool(message, i))
        else:
            out.append({"type": message.role.value, "data": _encode_data(message, i)})
    return out


def _reasoning_block(reasoning: Reasoning) -> dict[str, Any]:
    item_id, signature, hidden = unpack_signature(reasoning.signature)
    if hidden:
        return {"type": "redacted_thinking", "data": signature or ""}
    block: dict[str, Any] = {"type": "reasoning", "reasoning": reasoning.content}
    if item_id is not None:
        block["id"] = item_id
    if signature:
        block["extras"] = {"signature": signature}
    return block


def _encode_data(message: Message, i: int) -> dict[str, Any]:
    """The ``data`` of a system, human or AI message (an AI's calls beside its content)."""
    role = message.role
    one = message.parts[0] if len(message.parts) == 1 and role is not _AI else None
    if type(one) is TextPart and one.reasoning is None:  # a lone plain text, as a string
        return {"content": one.text}
    blocks: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for j, part in reasoned(message, blocks, _reasoning_block):
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall) and role is _AI:
            try:
                args = json.loads(part.arguments)
            except ValueError:
                args = None
            if not isinstance(args, dict):
                invalid.append(
                    {"name": part.name, "args": part.arguments, "id": part.id, "error": None}
                )
            else:
                tool_calls.append({"name": part.name, "args": args, "id": part.id})
        elif isinstance(part, ImagePart) and role is _HUMAN:
            blocks.append(image_url_block(part))
        elif isinstance(part, BinaryPart) and role is _HUMAN:
            kind = part.mime_type.partition("/")[0]
            blocks.append(
                {
                    "type": kind if kind in ("image", "audio", "video") else "file",
                    "base64": b64encode(part.data),
                    "mime_type": part.mime_type,
                }
            )
        else:
            held = "an AI" if role is _AI else f"a {role.value}"
            fail_part(i, j, f"{held} message cannot hold a {part.type} part in LangChain")
    if role is not _AI:
        return {"content": blocks}
    plain = len(blocks) <= 1 and all(block["type"] == "text" for block in blocks)
    content = (blocks[0]["text"] if blocks else "") if plain else blocks
    data: dict[str, Any] = {"content": content, "tool_calls": tool_calls}
    if invalid:
        data["invalid_tool_calls"] = invalid
    return data


def _encode_tool(message: Message, i: int) -> list[dict[str, Any]]:
    """One LangChain tool message per result; text parts after a result join it."""
    out: list[dict[str, Any]] = []
    for _, part in tool_parts(message.parts, i, "a tool message holds results and text", TextPart):
        if isinstance(part, ToolResult):
            data = {"content": part.content, "tool_call_id": part.tool_call_id, "name": part.name}
            if part.is_error:
                data["status"] = "error"
            out.append(data)
            continue
        content = out[-1]["content"]
        if isinstance(content, str):
            content = out[-1]["content"] = [{"type": "text", "text": content}]
        content.append({"type": "text", "text": part.text})
    return out


def to_framework(payload: list[dict[str, Any]]) -> list[Any]:
    """``encode``'s output as LangChain ``BaseMessage`` objects (needs langchain-core)."""
    try:
        from langchain_core.messages import messages_from_dict
    except ImportError as exc:
        raise ImportError(f"langchain-core is not installed: {INSTALL_HINT}") from exc
    return messages_from_dict(payload)


# -- detection (see cast.codecs._registry) -----------------------------------------------

_LANGCHAIN_TYPES = ("system", "human", "ai", "tool", "chat", "function")


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """LangChain's ``messages_to_dict`` items are ``{"type": ..., "data": {...}}``."""
    first = dicts[0]
    fits = first.get("type") in _LANGCHAIN_TYPES and isinstance(first.get("data"), dict)
    return EVIDENCE if fits and "role" not in first else 0
