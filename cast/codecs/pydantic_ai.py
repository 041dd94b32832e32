"""pydantic-ai codec: ``ModelMessagesTypeAdapter`` JSON (or ``ModelMessage`` objects) ↔
chaincast messages; needs no pydantic-ai install for the JSON form (mapping in
docs/integrations.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast.codecs._common import (
    EVIDENCE,
    AiParts,
    as_messages,
    b64decode,
    b64encode,
    canonical_object,
    dumps_compact,
    ensure,
    fail,
    fail_part,
    get_str,
    get_typed,
    json_history,
    optional_str,
    pack_signature,
    reasoned,
    redacted,
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

_HUMAN, _AI, _TOOL, _SYSTEM = Role.HUMAN, Role.AI, Role.TOOL, Role.SYSTEM

INSTALL_HINT = install_hint("pydantic-ai")


# Parts that carry run bookkeeping, not conversation: skipped on decode.
_METADATA_PARTS = frozenset(
    {
        "instruction",
        "instruction-delta",
        "instruction-baseline",
        "tool-availability-delta",
        "capability-load-delta",
        "model-settings-delta",
    }
)
_REDACTED_ID = "redacted_thinking"


def _dump(items: list[Any]) -> list[Any]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    dumped: list[Any] = ModelMessagesTypeAdapter.dump_python(items, mode="json")
    return dumped


def decode(payload: object) -> list[Message]:
    """Messages of a pydantic-ai history (``ModelMessage`` objects or their JSON dicts)."""
    return decode_counted(payload)[0]


def decode_counted(payload: object) -> tuple[list[Message], list[int]]:
    """The messages, and how many of them each ``ModelMessage`` became (in order)."""
    out: list[Message] = []
    counts: list[int] = []
    history = json_history(payload, "messages", _dump, "pydantic-ai ModelMessage objects")
    for i, item in enumerate(history):
        where = f"[{i}]"
        ensure(item, dict, where, "a message object", i)
        parts = ensure(item.get("parts"), list, f"{where}.parts", "an array of parts", i)
        kind = item.get("kind")
        start = len(out)
        if kind == "request":
            _decode_request(parts, where, i, out)
        elif kind == "response":
            out.append(_decode_response(parts, where, i))
        else:
            fail(f"{where}.kind", f"expected 'request' or 'response', got {kind!r}", index=i)
        counts.append(len(out) - start)
    return out, counts


def _append(out: list[Message], start: int, role: Role, parts: list[Any]) -> None:
    """Add ``parts`` to the message of ``role`` this request just wrote, or open one."""
    if len(out) > start and out[-1].role is role:
        out[-1] = trusted_message(role, (*out[-1].parts, *parts))
    else:
        out.append(trusted_message(role, tuple(parts)))


_ERROR_OUTCOMES = ("failed", "retried")
"""Tool-return outcomes pydantic-ai sends to the model as errors (``ToolResult.is_error``)."""


def _decode_request(parts: list[Any], where: str, i: int, out: list[Message]) -> None:
    start = len(out)
    for j, part in enumerate(parts):
        part_where = f"{where}.parts[{j}]"
        ensure(part, dict, part_where, "a part object", i)
        kind = get_str(part, "part_kind", part_where, i)
        if kind == "system-prompt":
            _append(out, start, _SYSTEM, [TextPart(text=get_str(part, "content", part_where, i))])
        elif kind == "user-prompt":
            _append(out, start, _HUMAN, _user_content(part.get("content"), part_where, i))
        elif kind == "tool-return" or (kind == "retry-prompt" and part.get("tool_name")):
            outcome = get_str(part, "outcome", part_where, i, "success")
            result = ToolResult(
                tool_call_id=get_str(part, "tool_call_id", part_where, i),
                name=get_str(part, "tool_name", part_where, i),
                content=_result_text(part.get("content")),
                # pydantic-ai's error outcomes, and a retry prompt answering a call.
                is_error=kind == "retry-prompt" or outcome in _ERROR_OUTCOMES,
            )
            out.append(trusted_message(_TOOL, (result,)))
        elif kind in ("retry-feedback", "retry-prompt"):
            _append(out, start, _HUMAN, [TextPart(text=_result_text(part.get("content")))])
        elif kind not in _METADATA_PARTS:
            fail(f"{part_where}.part_kind", f"chaincast cannot hold a {kind!r} part", index=i)


def _result_text(content: object) -> str:
    """A tool return's content as text: a string as it is, else compact JSON."""
    return content if isinstance(content, str) else dumps_compact(content)


def _user_content(content: object, where: str, i: int) -> list[Any]:
    if isinstance(content, str):
        return [TextPart(text=content)]
    content = ensure(content, list, f"{where}.content", "a string or an array of user content", i)
    parts: list[Any] = []
    for k, item in enumerate(content):
        item_where = f"{where}.content[{k}]"
        if isinstance(item, str):
            parts.append(TextPart(text=item))
            continue
        ensure(item, dict, item_where, "a string or a content object", i)
        kind = item.get("kind")
        if kind == "text-content":
            parts.append(TextPart(text=get_str(item, "content", item_where, i)))
        elif kind == "image-url":
            vendor = item.get("vendor_metadata")
            detail = vendor.get("detail", "") if isinstance(vendor, dict) else ""
            url = get_str(item, "url", item_where, i)
            parts.append(ImagePart(url=url, detail=detail if isinstance(detail, str) else ""))
        elif kind == "binary":
            data = b64decode(get_str(item, "data", item_where, i), f"{item_where}.data", i)
            mime = get_str(item, "media_type", item_where, i)
            parts.append(BinaryPart(mime_type=mime, data=data))
        elif kind != "cache-point":
            fail(f"{item_where}.kind", f"chaincast cannot hold {kind!r} user content", index=i)
    return parts


def _reasoning(part: dict[str, Any], where: str, i: int) -> Reasoning:
    content = get_str(part, "content", where, i)
    item_id = part.get("id")
    signature = optional_str(part, "signature", where, i, "a string or null")
    if item_id is not None and (not isinstance(item_id, str) or "\n" in item_id):
        fail(f"{where}.id", "a string without newlines, or null", item_id, i)
    if item_id == _REDACTED_ID:
        return Reasoning(content=content, signature=redacted(signature or "").signature)
    return Reasoning(content=content, signature=pack_signature(item_id, signature))


def _decode_response(parts: list[Any], where: str, i: int) -> Message:
    out = AiParts()
    for j, part in enumerate(parts):
        part_where = f"{where}.parts[{j}]"
        ensure(part, dict, part_where, "a part object", i)
        kind = part.get("part_kind")
        if kind == "thinking":
            out.think(_reasoning(part, part_where, i))
        elif kind == "text":
            text = get_str(part, "content", part_where, i)
            out.append(TextPart(text=text, reasoning=out.take()))
        elif kind == "tool-call":
            args = part.get("args")
            if args is None:
                arguments = "{}"
            elif isinstance(args, str):
                arguments = args
            elif isinstance(args, dict):
                arguments = dumps_compact(args)
            else:
                fail(f"{part_where}.args", "a JSON object, its text, or null", args, i)
            call_id = get_str(part, "tool_call_id", part_where, i)
            name = get_str(part, "tool_name", part_where, i)
            out.append(ToolCall(id=call_id, name=name, arguments=arguments, reasoning=out.take()))
        elif kind == "file":
            content = get_typed(part, "content", dict, "a binary content object", part_where, i)
            at = f"{part_where}.content"
            data = b64decode(get_str(content, "data", at, i), f"{at}.data", i)
            mime = get_str(content, "media_type", at, i)
            out.append(BinaryPart(mime_type=mime, data=data))
        else:
            fail(f"{part_where}.part_kind", f"chaincast cannot hold a {kind!r} part", index=i)
    return out.message()


def encode(
    messages: Iterable[Message | dict[str, Any]], *, provider_name: str | None = None
) -> list[dict[str, Any]]:
    """The ``ModelMessagesTypeAdapter`` JSON form of ``messages``.

    ``provider_name`` is written on every thinking part that carries a signature:
    pydantic-ai sends a signature back only to the provider named there, so pass the
    provider the reasoning came from (``None``: the signatures go nowhere).
    """
    out: list[dict[str, Any]] = []
    request: list[dict[str, Any]] | None = None
    for i, message in enumerate(as_messages(messages)):
        if message.role is _AI:
            request = None
            out.append({"kind": "response", "parts": _encode_response(message, i, provider_name)})
            continue
        if request is None:
            request = []
            out.append({"kind": "request", "parts": request})
        if message.role is _SYSTEM:
            for j, part in enumerate(message.parts):
                if not isinstance(part, TextPart):
                    fail_part(i, j, "a system message holds text")
                request.append({"part_kind": "system-prompt", "content": part.text})
        elif message.role is _HUMAN:
            request.append({"part_kind": "user-prompt", "content": _encode_user(message, i)})
        else:
            _encode_tool(message, i, request)
    return out


def _encode_user(message: Message, i: int) -> str | list[Any]:
    parts = message.parts
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    content: list[Any] = []
    for j, part in enumerate(parts):
        if isinstance(part, TextPart):
            content.append(part.text)
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"kind": "image-url", "url": part.url}
            if part.detail:
                image["vendor_metadata"] = {"detail": part.detail}
            content.append(image)
        elif isinstance(part, BinaryPart):
            content.append(
                {"kind": "binary", "data": b64encode(part.data), "media_type": part.mime_type}
            )
        else:
            fail_part(i, j, f"a user prompt cannot hold a {part.type}")
    return content


def _encode_tool(message: Message, i: int, request: list[dict[str, Any]]) -> None:
    for j, part in enumerate(message.parts):
        if isinstance(part, ToolResult):
            tool_return = {
                "part_kind": "tool-return",
                "tool_name": part.name,
                "tool_call_id": part.tool_call_id,
                "content": part.content,
            }
            if part.is_error:
                tool_return["outcome"] = "failed"
            request.append(tool_return)
        elif isinstance(part, TextPart):
            request.append({"part_kind": "user-prompt", "content": part.text})
        else:
            fail_part(i, j, "a tool message holds results and text")


def _thinking(reasoning: Reasoning, provider_name: str | None) -> dict[str, Any]:
    item_id, signature, hidden = unpack_signature(reasoning.signature)
    if hidden:
        item_id = _REDACTED_ID
    part: dict[str, Any] = {"part_kind": "thinking", "content": reasoning.content}
    if item_id is not None:
        part["id"] = item_id
    if signature is not None:
        part["signature"] = signature
        if provider_name is not None:
            part["provider_name"] = provider_name
    return part


def _encode_response(message: Message, i: int, provider_name: str | None) -> list[Any]:
    parts: list[dict[str, Any]] = []
    for j, part in reasoned(message, parts, lambda reasoning: _thinking(reasoning, provider_name)):
        if isinstance(part, TextPart):
            parts.append({"part_kind": "text", "content": part.text})
        elif isinstance(part, ToolCall):
            args = canonical_object(part.arguments)
            parts.append(
                {
                    "part_kind": "tool-call",
                    "tool_name": part.name,
                    "tool_call_id": part.id,
                    "args": part.arguments if args is None else args,
                }
            )
        elif isinstance(part, BinaryPart):
            binary = {"kind": "binary", "data": b64encode(part.data), "media_type": part.mime_type}
            parts.append({"part_kind": "file", "content": binary})
        else:
            fail_part(i, j, f"a response cannot hold a {part.type}")
    return parts


def to_framework(payload: list[dict[str, Any]]) -> list[Any]:
    """``encode``'s output as pydantic-ai ``ModelMessage`` objects (needs pydantic-ai)."""
    try:
        from pydantic_ai.messages import ModelMessagesTypeAdapter
    except ImportError as exc:
        raise ImportError(f"pydantic-ai is not installed: {INSTALL_HINT}") from exc
    return list(ModelMessagesTypeAdapter.validate_python(payload))


# -- detection (see cast.codecs._registry) -----------------------------------------------


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """pydantic-ai messages carry ``kind`` and ``parts`` (whose items have ``part_kind``):
    evidence only this format has."""
    first = dicts[0]
    fits = first.get("kind") in ("request", "response") and isinstance(first.get("parts"), list)
    return EVIDENCE if fits else 0
