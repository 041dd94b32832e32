"""Amazon Bedrock Converse codec: ``{"system": [...], "messages": [...]}`` (mapping and
sources in docs/codecs.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast.codecs._common import (
    EVIDENCE,
    MISSING,
    AiParts,
    args_object,
    as_messages,
    b64decode,
    b64encode,
    body_items,
    converse_body,
    converse_messages,
    dumps_compact,
    encode_user_turns,
    ensure,
    error,
    fail,
    get_str,
    get_typed,
    parse_data_url,
    provider_block,
    provider_part,
    reasoned,
    redacted,
    redacted_data,
    result_parts,
    signature_text,
    split_user_turn,
    system_blocks,
    tool_parts,
)
from cast.codecs._streaming import PayloadStream
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
from cast.providers import BEDROCK_DOCUMENT_FORMATS, BEDROCK_IMAGE_FORMATS, BEDROCK_VIDEO_FORMATS

__all__ = ["decode", "detect", "detect_messages", "encode"]

_HUMAN, _AI, _TOOL, _SYSTEM = Role.HUMAN, Role.AI, Role.TOOL, Role.SYSTEM

_PROVIDER = "bedrock"
_KINDS = ("text", "image", "document", "video", "toolUse", "toolResult", "reasoningContent")
_MEDIA = ("image", "document", "video")

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
    items, body = body_items(payload)
    system = body.get("system")
    out: list[Message] = []
    if system is not None:
        out.append(_decode_system(system))
    names: dict[str, str] = {}  # toolUseId -> name of the latest call with that id
    for i, item in enumerate(items):
        ensure(item, dict, f"messages[{i}]", "a message object", i)
        role = item.get("role")
        content = item.get("content", MISSING)
        if content is MISSING:
            fail(f"messages[{i}].content", "the message has no content", index=i)
        content = ensure(content, list, f"messages[{i}].content", "an array of content blocks", i)
        if role == "assistant":
            out.append(_decode_assistant(content, i, names))
        elif role == "user":
            _decode_user(content, i, names, out)
        else:
            fail(f"messages[{i}].role", f"expected user or assistant, got {role!r}", index=i)
    return out


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


def _kind(block: object, where: str, i: int) -> tuple[str, Any]:
    """The block's one member: its name and value."""
    block = ensure(block, dict, where, "a content block object", i)
    for kind in _KINDS:
        if kind in block:
            return kind, block[kind]
    if len(block) == 1:  # cachePoint, guardContent, citationsContent, ...: kept whole
        ((kind, value),) = block.items()
        return str(kind), value
    keys = ", ".join(sorted(str(k) for k in block)) or "none"
    raise error(where, f"unsupported content block (keys: {keys})", index=i)


def _text(value: object, where: str, i: int) -> str:
    return ensure(value, str, f"{where}.text", "a string", i)


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


def _decode_assistant(content: list[Any], i: int, names: dict[str, str]) -> Message:
    parts = AiParts()
    for j, block in enumerate(content):
        where = f"messages[{i}].content[{j}]"
        kind, value = _kind(block, where, i)
        if kind == "text":
            parts.text(_text(value, where, i))
        # a toolUse with a ``type`` is a system tool the service runs in the turn
        elif kind == "toolUse" and not (isinstance(value, dict) and "type" in value):
            parts.append(_decode_call(value, where, i, names, parts.take()))
        elif kind == "reasoningContent":
            parts.think(_decode_reasoning(value, f"{where}.reasoningContent", i))
        else:
            # Media, kept blocks, and a system tool's toolUse and its toolResult (Nova's
            # code interpreter: the service ran it inside this turn), each kept whole.
            parts.other(_decode_other(kind, value, where, i))
    return parts.message()


def _decode_call(
    value: object, where: str, i: int, names: dict[str, str], reasoning: Reasoning | None
) -> ToolCall:
    where = f"{where}.toolUse"
    value = ensure(value, dict, where, "a toolUse object", i)
    call_id = get_str(value, "toolUseId", where, i)
    name = get_str(value, "name", where, i)
    arguments = get_typed(value, "input", dict, "an object", where, i)
    names[call_id] = name
    return ToolCall(id=call_id, name=name, arguments=dumps_compact(arguments), reasoning=reasoning)


def _decode_reasoning(value: object, where: str, i: int) -> Reasoning:
    value = ensure(value, dict, where, "a reasoningContent object", i)
    if "redactedContent" in value:
        data = get_typed(value, "redactedContent", str, "base64 text", where, i)
        b64decode(data, f"{where}.redactedContent", i)
        return redacted(data)
    block = get_typed(value, "reasoningText", dict, "an object with text and signature", where, i)
    text = get_str(block, "text", f"{where}.reasoningText", i)
    signature = get_str(block, "signature", f"{where}.reasoningText", i, "")
    return Reasoning(content=text, signature=signature.encode("utf-8"))


def _decode_other(kind: str, value: object, where: str, i: int) -> Any:
    if kind in _MEDIA:
        return _decode_media(kind, value, where, i)
    return provider_part(_PROVIDER, kind, value)


def _decode_user(content: list[Any], i: int, names: dict[str, str], out: list[Message]) -> None:
    """Each ``toolResult`` a TOOL message, each run of other blocks a HUMAN message."""

    def read(j: int, block: object, human: list[Any]) -> Message | None:
        where = f"messages[{i}].content[{j}]"
        kind, value = _kind(block, where, i)
        if kind == "toolResult":
            return _decode_result(value, f"{where}.toolResult", i, names)
        if kind == "text":
            human.append(TextPart(text=_text(value, where, i)))
        elif kind in ("toolUse", "reasoningContent"):
            fail(where, f"a {kind} block belongs in an assistant message", index=i)
        else:
            human.append(_decode_other(kind, value, where, i))
        return None

    split_user_turn(content, out, read)


def _decode_result(value: object, where: str, i: int, names: dict[str, str]) -> Message:
    """A TOOL message: a first ``text`` block is the result, ``json`` blocks compact text."""
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
            parts.append(TextPart(text=_text(inner["text"], inner_where, i)))
        elif "json" in inner:
            parts.append(TextPart(text=dumps_compact(inner["json"])))
        elif len(inner) == 1:
            ((kind, inner_value),) = inner.items()
            parts.append(_decode_other(str(kind), inner_value, inner_where, i))
        else:
            fail(inner_where, "a text, json, image, document or video block", index=i)
    name = names.get(call_id, "")
    return trusted_message(_TOOL, result_parts(call_id, name, parts, status == "error"))


def encode(messages: Iterable[Message | dict[str, Any]]) -> dict[str, Any]:
    """A Converse request body ``{"system"?: [...], "messages": [...]}``."""
    return _encode_stream(as_messages(messages)).whole()


def _encode_stream(messages: Iterable[Message]) -> PayloadStream:
    """:func:`encode`, one turn at a time (the command lines write it as it comes)."""
    return encode_user_turns(
        messages,
        late_error="Converse takes a system prompt only before the first message",
        results=_encode_results,
        human=_encode_blocks,
        human_blocks=_encode_blocks,
        assistant=_encode_blocks,
        system=lambda message: system_blocks(message, _provider_block, "the system prompt"),
    )


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


def _encode_blocks(message: Message, i: int) -> list[dict[str, Any]]:
    """Content blocks of a message; a part's reasoning is a reasoningContent block before it."""
    blocks: list[dict[str, Any]] = []
    for j, part in reasoned(message, blocks, _reasoning_block):
        where = f"messages[{i}].parts[{j}]"
        if isinstance(part, TextPart):
            blocks.append({"text": part.text})
        elif isinstance(part, ToolCall) and message.role is _AI:
            arguments = args_object(part.arguments, f"{where}.arguments", i)
            blocks.append(
                {"toolUse": {"toolUseId": part.id, "name": part.name, "input": arguments}}
            )
        elif isinstance(part, ImagePart | BinaryPart):
            blocks.append(_encode_media(part, where, i))
        elif isinstance(part, ProviderPart):
            blocks.append(_provider_block(part, where, i))
        else:
            fail(where, f"a {message.role.value} message cannot carry a {part.type} part", index=i)
    return blocks


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


# -- detection (see cast.codecs._registry) -----------------------------------------------


def detect(payload: object) -> int:
    """Converse: ``messages`` or ``system`` holding untyped Converse blocks."""
    return EVIDENCE if converse_body(payload) else 0


def detect_messages(items: list[Any]) -> int:
    """Converse messages: content blocks keyed by kind (``{"toolUse": ...}``), no ``type``."""
    return EVIDENCE if converse_messages(items) else 0
