"""langchaingo codec: the JSON of Go's ``[]llms.MessageContent`` (how PentAGI stores
chains); field names from langchaingo's ``llms/marshaling.go`` (docs/codecs.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast.codecs._common import (
    EVIDENCE,
    MISSING,
    as_messages,
    b64decode,
    b64encode,
    ensure,
    fail,
    fail_part,
    get_str,
    get_typed,
    image_url_block,
    optional_str,
    typed_parts_style,
)
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    trusted_message,
)

__all__ = ["decode", "detect_messages", "encode"]

# langchaingo's ChatMessageType names are chaincast's role values; its legacy "generic"
# and "function" messages read as human and tool.
_ROLES = {**{role.value: role for role in Role}, "generic": Role.HUMAN, "function": Role.TOOL}


def decode(payload: object) -> list[Message]:
    """Messages of a marshaled ``[]llms.MessageContent``."""
    payload = ensure(payload, list, "", "an array of MessageContent objects")
    out: list[Message] = []
    for i, item in enumerate(payload):
        where = f"[{i}]"
        ensure(item, dict, where, "a MessageContent object", i)
        wire_role = item.get("role")
        role = _ROLES.get(wire_role) if isinstance(wire_role, str) else None
        if role is None:
            expected = f"expected human, ai, system, tool or generic, got {wire_role!r}"
            fail(f"{where}.role", expected, index=i)
        parts: tuple[Any, ...] = ()
        raw_parts = item.get("parts")
        if raw_parts is not None:
            raw_parts = ensure(raw_parts, list, f"{where}.parts", "an array of parts", i)
            parts = tuple(_decode_part(p, i, j) for j, p in enumerate(raw_parts))
        # UnmarshalJSON: a top-level "text" is the single text part when parts are empty.
        if not parts:
            text = optional_str(item, "text", where, i)
            parts = () if text is None else (TextPart(text=text),)
        out.append(trusted_message(role, parts))
    return out


def _decode_reasoning(value: object, where: str, i: int) -> Reasoning | None:
    """``ContentReasoning``; an empty one is none at all (``IsEmpty`` in the source)."""
    if value is None:
        return None
    value = ensure(value, dict, where, "a reasoning object", i)
    content = get_str(value, "content", where, i, "")
    signature = optional_str(value, "signature", where, i, "base64 text")
    data = b"" if signature is None else b64decode(signature, f"{where}.signature", i)
    if not content and not data:
        return None
    return Reasoning(content=content, signature=data)


def _decode_part(part: object, i: int, j: int) -> Any:
    where = f"[{i}].parts[{j}]"
    part = ensure(part, dict, where, "a content part object", i)
    kind = part.get("type", "")
    if kind in ("text", ""):  # UnmarshalJSON reads a missing type as text
        return TextPart(
            text=get_str(part, "text", where, i, ""),
            reasoning=_decode_reasoning(part.get("reasoning"), f"{where}.reasoning", i),
        )
    if kind not in ("image_url", "binary", "tool_call", "tool_response"):
        fail(f"{where}.type", f"unknown content type {kind!r}", index=i)
    body = get_typed(part, kind, dict, "an object", where, i)  # the fields, under the type
    where = f"{where}.{kind}"
    if kind == "image_url":
        return ImagePart(
            url=get_str(body, "url", where, i, MISSING),
            detail=get_str(body, "detail", where, i, ""),
        )
    if kind == "binary":
        data = b64decode(get_str(body, "data", where, i, MISSING), f"{where}.data", i)
        return BinaryPart(mime_type=get_str(body, "mime_type", where, i, ""), data=data)
    if kind == "tool_call":
        function = get_typed(body, "function", dict, "an object", where, i)
        return ToolCall(
            id=get_str(body, "id", where, i, MISSING),
            name=get_str(function, "name", f"{where}.function", i, MISSING),
            arguments=get_str(function, "arguments", f"{where}.function", i, MISSING),
            reasoning=_decode_reasoning(body.get("reasoning"), f"{where}.reasoning", i),
        )
    return ToolResult(
        tool_call_id=get_str(body, "tool_call_id", where, i, MISSING),
        name=get_str(body, "name", where, i, MISSING),
        content=get_str(body, "content", where, i, MISSING),
    )


def encode(messages: Iterable[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON ``json.Marshal`` gives for the equivalent ``[]llms.MessageContent``."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(as_messages(messages)):
        role = message.role.value
        parts = [_encode_part(p, i, j) for j, p in enumerate(message.parts)]
        if len(parts) == 1 and parts[0].keys() == {"type", "text"}:  # a lone plain text
            out.append({"role": role, "text": parts[0]["text"]})
        else:
            out.append({"role": role, "parts": parts})
    return out


def _with_reasoning(out: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
    """``out`` with its ``ContentReasoning``, unless that is empty."""
    fields: dict[str, str] = {}
    if reasoning is not None and reasoning.content:
        fields["content"] = reasoning.content
    if reasoning is not None and reasoning.signature:
        fields["signature"] = b64encode(reasoning.signature)
    if fields:
        out["reasoning"] = fields
    return out


def _encode_part(part: Any, i: int, j: int) -> dict[str, Any]:
    if isinstance(part, ProviderPart):  # langchaingo has no opaque block to carry it
        held = f"{part.provider}'s {part.kind!r} block cannot be sent to langchaingo"
        fail_part(i, j, f"{held} (port the chain to turn it into text)")
    if isinstance(part, TextPart):
        return _with_reasoning({"type": "text", "text": part.text}, part.reasoning)
    if isinstance(part, ToolCall):
        function = {"name": part.name, "arguments": part.arguments}
        call = {"id": part.id, "type": "function", "function": function}
        return {"type": "tool_call", "tool_call": _with_reasoning(call, part.reasoning)}
    if isinstance(part, ToolResult):
        response = {"tool_call_id": part.tool_call_id, "name": part.name, "content": part.content}
        return {"type": "tool_response", "tool_response": response}
    if isinstance(part, ImagePart):
        return image_url_block(part)
    return {"type": "binary", "binary": {"mime_type": part.mime_type, "data": b64encode(part.data)}}


# -- detection (see cast.codecs._registry) -----------------------------------------------


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """Typed parts (or chaincast's roles), nested the langchaingo way."""
    return EVIDENCE if typed_parts_style(dicts) == "langchaingo" else 0
