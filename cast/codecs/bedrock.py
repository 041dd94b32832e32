"""Amazon Bedrock Converse codec: ``{"system": [...], "messages": [...]}`` (mapping and
sources in docs/codecs.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast.codecs._common import (
    CALL,
    CONVERSE_KINDS,
    EVIDENCE,
    RESULT,
    TEXT,
    THINK,
    AiParts,
    BlockShapes,
    as_messages,
    b64decode,
    b64encode,
    body_format,
    converse_messages,
    dumps_compact,
    ensure,
    error,
    fail,
    get_str,
    get_typed,
    parse_data_url,
    provider_block,
    provider_part,
    read_call,
    read_signed,
    redacted,
    redacted_data,
    result_parts,
    signature_text,
    system_blocks,
    think_before,
    tool_parts,
)
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Reasoning,
    Role,
    TextPart,
    ToolResult,
    trusted_message,
)
from cast.providers import BEDROCK_DOCUMENT_FORMATS, BEDROCK_IMAGE_FORMATS, BEDROCK_VIDEO_FORMATS

__all__ = ["decode", "detect", "detect_messages", "encode"]

_TOOL, _SYSTEM = Role.TOOL, Role.SYSTEM

_PROVIDER = "bedrock"

_FORMATS = {
    "document": BEDROCK_DOCUMENT_FORMATS,
    "image": {f: f"image/{f}" for f in BEDROCK_IMAGE_FORMATS},
    "video": BEDROCK_VIDEO_FORMATS,
}
_MIME_TO_BLOCK = {
    mime: (kind, fmt) for kind, table in _FORMATS.items() for fmt, mime in table.items()
}
DEFAULT_DOCUMENT_NAME = "document"
"""``name`` sent for a document that has no file name (Converse requires one)."""


def decode(payload: object) -> list[Message]:
    """Messages of a Converse request body (or of its bare message list)."""
    return _BLOCKS.read(payload, dict)  # toolUseId -> name of its latest call


def _decode_system(system: object) -> Message:
    system = ensure(system, list, "system", "an array of system content blocks")
    parts: list[Any] = []
    for j, block in enumerate(system):
        ensure(block, dict, f"system[{j}]", "a text block")
        if len(block) == 1 and ("cachePoint" in block or "guardContent" in block):
            ((kind, value),) = block.items()
            parts.append(provider_part(_PROVIDER, str(kind), value))
            continue
        parts.append(TextPart(text=get_str(block, "text", f"system[{j}]", None)))
    return trusted_message(_SYSTEM, tuple(parts))


_ROLES = {"text": TEXT, "toolUse": CALL, "reasoningContent": THINK, "toolResult": RESULT}


def _classify(block: object, where: str, i: int) -> tuple[str | None, str, Any]:
    """The block's one member: what it is, its name and value."""
    block = ensure(block, dict, where, "a content block object", i)
    for kind in CONVERSE_KINDS:
        if kind in block:
            value = block[kind]
            # a toolUse with a ``type`` is a system tool the service runs in the turn
            if kind == "toolUse" and isinstance(value, dict) and "type" in value:
                return None, kind, value
            if kind == "text":
                return TEXT, kind, ensure(value, str, f"{where}.text", "a string", i)
            return _ROLES.get(kind), kind, value
    if len(block) == 1:  # cachePoint, guardContent, citationsContent, ...: kept whole
        ((kind, value),) = block.items()
        return None, str(kind), value
    keys = ", ".join(sorted(str(k) for k in block)) or "none"
    raise error(where, f"unsupported content block (keys: {keys})", index=i)


def _decode_media(kind: str, value: object, where: str, i: int) -> Any:
    """An ``image``/``document``/``video`` with inline bytes; other sources kept whole."""
    block_where = f"{where}.{kind}"
    value = ensure(value, dict, block_where, f"a {kind} object", i)
    mime = _FORMATS[kind].get(get_str(value, "format", block_where, i))
    source = get_typed(value, "source", dict, "a source object", block_where, i)
    modeled = {"format", "source", "name"} if kind == "document" else {"format", "source"}
    data = source.get("bytes")
    if mime is None or not isinstance(data, str) or len(source) != 1 or set(value) - modeled:
        return provider_part(_PROVIDER, kind, value)
    name = get_str(value, "name", block_where, i, "")
    raw = b64decode(data, f"{block_where}.source.bytes", i)
    return BinaryPart(mime_type=mime, data=raw, filename=name)


def _decode_call(value: object, where: str, i: int, names: dict[str, str], parts: AiParts) -> None:
    where = f"{where}.toolUse"
    value = ensure(value, dict, where, "a toolUse object", i)
    read_call(value, where, i, names, parts, id_key="toolUseId")


def _decode_reasoning(_kind: str, value: object, where: str, i: int) -> Reasoning:
    where = f"{where}.reasoningContent"
    value = ensure(value, dict, where, "a reasoningContent object", i)
    if "redactedContent" in value:
        data = get_typed(value, "redactedContent", str, "base64 text", where, i)
        b64decode(data, f"{where}.redactedContent", i)
        return redacted(data)
    block = get_typed(value, "reasoningText", dict, "an object with text and signature", where, i)
    return read_signed(block, "text", f"{where}.reasoningText", i)


def _decode_other(value: object, kind: str, where: str, i: int, parts: list[Any]) -> None:
    """Media; kept whole: other blocks, a system tool's toolUse and toolResult (Nova's)."""
    if kind in _FORMATS:
        parts.append(_decode_media(kind, value, where, i))
    else:
        parts.append(provider_part(_PROVIDER, kind, value))


def _decode_user_other(value: object, kind: str, where: str, i: int, parts: list[Any]) -> None:
    if kind in ("toolUse", "reasoningContent"):
        fail(where, f"a {kind} block belongs in an assistant message", index=i)
    _decode_other(value, kind, where, i, parts)


def _decode_result(value: object, where: str, i: int, _j: int, names: dict[str, str]) -> Message:
    """A TOOL message: a first ``text`` block is the result, ``json`` blocks compact text."""
    where = f"{where}.toolResult"
    value = ensure(value, dict, where, "a toolResult object", i)
    call_id = get_str(value, "toolUseId", where, i)
    status = value.get("status", "success")
    if status not in ("success", "error"):
        fail(f"{where}.status", f"expected success or error, got {status!r}", index=i)
    content = get_typed(value, "content", list, "an array of tool result blocks", where, i)
    parts: list[Any] = []
    for k, inner in enumerate(content):
        inner_where = f"{where}.content[{k}]"
        ensure(inner, dict, inner_where, "a tool result block object", i)
        if "text" in inner:
            text = ensure(inner["text"], str, f"{inner_where}.text", "a string", i)
            parts.append(TextPart(text=text))
        elif "json" in inner:
            parts.append(TextPart(text=dumps_compact(inner["json"])))
        elif len(inner) == 1:
            ((kind, inner_value),) = inner.items()
            _decode_other(inner_value, str(kind), inner_where, i, parts)
        else:
            fail(inner_where, "a text, json, image, document or video block", index=i)
    name = names.get(call_id, "")
    return trusted_message(_TOOL, result_parts(call_id, name, parts, status == "error"))


def encode(messages: Iterable[Message | dict[str, Any]]) -> dict[str, Any]:
    """A Converse request body ``{"system"?: [...], "messages": [...]}``."""
    return _BLOCKS.stream(as_messages(messages)).whole()


def _provider_block(part: ProviderPart, where: str, i: int) -> dict[str, Any]:
    return {part.kind: provider_block(part, _PROVIDER, where, i)}


def _reasoning_block(reasoning: Reasoning) -> dict[str, Any]:
    data = redacted_data(reasoning)
    if data is not None:
        return {"reasoningContent": {"redactedContent": data}}
    text: dict[str, str] = {"text": reasoning.content}
    if reasoning.signature:
        text["signature"] = signature_text(reasoning.signature)
    return {"reasoningContent": {"reasoningText": text}}


def _encode_media(part: ImagePart | BinaryPart, where: str, i: int) -> dict[str, Any]:
    """An ``image``, ``document`` or ``video`` block with inline bytes."""
    filename = ""
    if isinstance(part, ImagePart):
        inline = parse_data_url(part.url)
        if inline is None:
            fail(where, "Converse takes media as bytes only, not by URL", index=i)
        mime, data = inline
    else:
        mime, data, filename = part.mime_type, part.data, part.filename
    found = _MIME_TO_BLOCK.get(mime)
    if found is None:
        fail(where, f"Converse cannot carry a {mime!r} binary part", index=i)
    kind, fmt = found
    block: dict[str, Any] = {"format": fmt}
    if kind == "document":
        block["name"] = filename or DEFAULT_DOCUMENT_NAME
    block["source"] = {"bytes": b64encode(data)}
    return {kind: block}


def _encode_results(message: Message, i: int, blocks: list[dict[str, Any]]) -> None:
    """``toolResult`` blocks: the result text, then the parts after it (no ``status``)."""
    content: list[dict[str, Any]] = []
    for j, part in tool_parts(message.parts, i, _RESULT_EXPECTED):
        where = f"messages[{i}].parts[{j}]"
        if isinstance(part, ToolResult):
            content = [{"text": part.content}]
            result: dict[str, Any] = {"toolUseId": part.tool_call_id, "content": content}
            if part.is_error:
                result["status"] = "error"
            blocks.append({"toolResult": result})
        elif isinstance(part, TextPart):
            content.append({"text": part.text})
        elif isinstance(part, ProviderPart):
            content.append(_provider_block(part, where, i))
        else:
            content.append(_encode_media(part, where, i))


_RESULT_EXPECTED = (
    "a tool message holds tool results, each optionally followed by text or image parts"
)


_BLOCKS = BlockShapes(
    system=_decode_system,
    write_system=lambda message: system_blocks(message, _provider_block, "the system prompt"),
    late_error="Converse takes a system prompt only before the first message",
    results=_encode_results,
    classify=_classify,
    call=_decode_call,
    think=_decode_reasoning,
    result=_decode_result,
    other=_decode_other,
    user_other=_decode_user_other,
    write_call=lambda part, args: {
        "toolUse": {"toolUseId": part.id, "name": part.name, "input": args}
    },
    write_media=_encode_media,
    write_kept=lambda blocks, part, where, i: blocks.append(_provider_block(part, where, i)),
    write_think=think_before(_reasoning_block),
)


# -- detection (see cast.codecs._registry) -----------------------------------------------


def detect(payload: object) -> int:
    """Converse: ``messages`` or ``system`` holding untyped Converse blocks."""
    return EVIDENCE if body_format(payload) == "bedrock" else 0


def detect_messages(items: list[Any]) -> int:
    """Converse messages: content blocks keyed by kind (``{"toolUse": ...}``), no ``type``."""
    return EVIDENCE if converse_messages(items) else 0
