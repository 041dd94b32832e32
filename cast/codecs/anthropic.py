"""Anthropic Messages API codec: ``{"system": ..., "messages": [...]}`` (mapping and
sources in docs/codecs.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast.codecs._common import (
    CALL,
    EVIDENCE,
    FITS,
    MISSING,
    REDACTED_THINKING_PREFIX,
    RESULT,
    TEXT,
    THINK,
    BlockShapes,
    as_messages,
    b64decode,
    b64encode,
    body_format,
    ensure,
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
    signature_text,
    think_before,
    write_content,
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
from cast.providers import IMAGE_TYPES

__all__ = ["REDACTED_THINKING_PREFIX", "decode", "detect", "detect_messages", "encode"]

_TOOL, _SYSTEM = Role.TOOL, Role.SYSTEM

_PROVIDER = "anthropic"
# ProviderPart kinds that are a key of the block before them (the table in docs/codecs.md):
# its prompt-cache breakpoint, and what made the tool_use before it (the API checks it).
CACHE_CONTROL = "cache_control"
CALLER = "caller"
ATTACHED_KINDS = frozenset({CACHE_CONTROL, CALLER})

# The keys chaincast models for each block type; a block with any other key is kept
# whole as a ProviderPart.
_MODELED = {
    kind: frozenset({"type", CACHE_CONTROL, *keys})
    for kind, keys in (("text", ["text"]), ("image", ["source"]), ("document", ["source", "title"]))
}
# Blocks of a pair (a call and its result, reasoning and what it led to), read in their turns.
_ROLES = {"tool_use": CALL, "thinking": THINK, "redacted_thinking": THINK, "tool_result": RESULT}


def decode(payload: object) -> list[Message]:
    """Messages of a Messages API request body (or of its bare message list)."""
    return _BLOCKS.read(payload, dict)  # tool_use id -> name of its latest call


def _decode_system(system: object, where: str, i: int | None) -> Message:
    if isinstance(system, str):
        return trusted_message(_SYSTEM, (TextPart(text=system),))
    system = ensure(system, list, where, "a string or an array of text blocks", i)
    parts: list[Any] = []
    for j, block in enumerate(system):
        ensure(block, dict, f"{where}[{j}]", "a text block", i)
        # Text, or blocks kept whole (tool_addition in a system message).
        _decode_block(block, block.get("type"), f"{where}[{j}]", i, parts)
    return trusted_message(_SYSTEM, tuple(parts))


def _whole(block: dict[str, Any], kind: str) -> bool:
    """Whether ``block`` has keys chaincast does not model (it is then kept whole)."""
    modeled = _MODELED.get(kind)
    return modeled is None or not modeled.issuperset(block)


def _cache_point(block: dict[str, Any], parts: list[Any], key: str = CACHE_CONTROL) -> None:
    """The block's ``cache_control`` (or ``key``) as a part after the block's part."""
    value = block.get(key, MISSING)
    if value is not MISSING:
        parts.append(provider_part(_PROVIDER, key, value))


def _marks(block: dict[str, Any], parts: list[Any]) -> None:
    """What made a tool_use (on a text: never modeled) then its cache point, as parts."""
    _cache_point(block, parts, CALLER)
    _cache_point(block, parts)


def _decode_media(block: dict[str, Any], kind: str, where: str, i: int | None) -> Any:
    """An ``image``/``document``: bytes, media by URL, or kept whole (other sources)."""
    source = get_typed(block, "source", dict, "a source object", where, i)
    source_type = source.get("type")
    title = get_str(block, "title", where, i, "")
    if source_type in ("base64", "text"):
        media_type = get_str(source, "media_type", f"{where}.source", i)
        data = get_str(source, "data", f"{where}.source", i)
        raw = (
            data.encode("utf-8")
            if source_type == "text"
            else b64decode(data, f"{where}.source.data", i)
        )
        return BinaryPart(mime_type=media_type, data=raw, filename=title)
    if source_type == "url" and not title:
        url = get_str(source, "url", f"{where}.source", i)
        return ImagePart(url=url, mime_type="application/pdf" if kind == "document" else "")
    return provider_part(_PROVIDER, kind, block)


def _decode_block(
    block: dict[str, Any], kind: object, where: str, i: int | None, parts: list[Any]
) -> None:
    """A text, image or document block (or one kept whole), then its cache point."""
    if not isinstance(kind, str):
        fail(f"{where}.type", "a string", kind, i)
    if kind in _ROLES:
        fail(f"{where}.type", f"a {kind} block has no place here", index=i)
    if _whole(block, kind):
        parts.append(provider_part(_PROVIDER, kind, block))
        return
    if kind == "text":
        parts.append(TextPart(text=get_str(block, "text", where, i)))
    else:
        parts.append(_decode_media(block, kind, where, i))
    _cache_point(block, parts)


def _classify(block: object, where: str, i: int) -> tuple[str | None, object, Any]:
    """A text (its text), tool use, thinking or tool result; else media or kept (the block)."""
    if not isinstance(block, dict):
        fail(where, "a content block object", block, i)
    kind = block.get("type")
    if kind == "text" and not _whole(block, kind):
        return TEXT, kind, get_str(block, "text", where, i)
    return (_ROLES.get(kind) if isinstance(kind, str) else None), kind, block


def _decode_thinking(kind: str, block: dict[str, Any], where: str, i: int) -> Reasoning:
    if kind == "redacted_thinking":
        return redacted(get_str(block, "data", where, i))
    return read_signed(block, "thinking", where, i)


def _decode_result(
    block: dict[str, Any], where: str, i: int, _j: int, names: dict[str, str]
) -> Message:
    """A TOOL message: the result, then the blocks of its content after the first text."""
    call_id = get_str(block, "tool_use_id", where, i)
    is_error = get_typed(block, "is_error", bool, "a boolean", where, i, False)
    content = block.get("content")
    text = ""
    extras: list[Any] = []
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        for k, inner in enumerate(content):
            inner_where = f"{where}.content[{k}]"
            if not isinstance(inner, dict):
                fail(inner_where, "a content block object", inner, i)
            kind = inner.get("type")
            if k == 0 and kind == "text" and not _whole(inner, "text"):
                text = get_str(inner, "text", inner_where, i)
                _cache_point(inner, extras)  # read back as the result's own (normalized)
            else:  # media, tool_reference, search_result, ...
                _decode_block(inner, kind, inner_where, i, extras)
    elif content is not None:  # omitted: an empty result
        fail(f"{where}.content", "a string or an array of content blocks", content, i)
    own: list[Any] = []
    _cache_point(block, own)
    result = ToolResult(
        tool_call_id=call_id, name=names.get(call_id, ""), content=text, is_error=is_error
    )
    return trusted_message(_TOOL, (result, *own, *extras))


def encode(messages: Iterable[Message | dict[str, Any]]) -> dict[str, Any]:
    """A Messages API request body ``{"system"?: ..., "messages": [...]}``; a SYSTEM
    message after the first goes inside ``messages`` with ``role: "system"``."""
    return _BLOCKS.stream(as_messages(messages)).whole()


def _thinking_block(reasoning: Reasoning) -> dict[str, Any]:
    data = redacted_data(reasoning)
    if data is not None:
        return {"type": "redacted_thinking", "data": data}
    signature = signature_text(reasoning.signature)
    return {"type": "thinking", "thinking": reasoning.content, "signature": signature}


_RESULT_EXPECTED = (
    "a tool message holds tool results, each optionally followed by "
    "text, image, binary or provider parts"
)


def _encode_media(part: ImagePart | BinaryPart, where: str, i: int) -> dict[str, Any]:
    """An ``image`` or ``document`` block; what the API cannot take raises."""
    if isinstance(part, ImagePart):
        inline = parse_data_url(part.url)
        if inline is None:
            # The url source takes http(s) URLs of images (of any stated type: the API reads
            # it from what it fetches) and PDFs (a document), as cast.lint's url_media says.
            mime = part.mime_type
            if mime and mime != "application/pdf" and not mime.startswith("image/"):
                fail(where, f"the Messages API takes no {mime} by URL", index=i)
            kind = "document" if mime == "application/pdf" else "image"
            return {"type": kind, "source": {"type": "url", "url": part.url}}
        mime, data, filename = inline[0], inline[1], ""
    else:
        mime, data, filename = part.mime_type, part.data, part.filename
    if mime in IMAGE_TYPES or mime == "application/pdf":
        source = {"type": "base64", "media_type": mime, "data": b64encode(data)}
    elif mime == "text/plain":
        try:
            source = {"type": "text", "media_type": mime, "data": data.decode("utf-8")}
        except UnicodeDecodeError:
            fail(where, "a text/plain document must be UTF-8", index=i)
    else:
        fail(where, f"the Messages API takes images, PDFs and plain text, not {mime!r}", index=i)
    if mime in IMAGE_TYPES:
        return {"type": "image", "source": source}
    block: dict[str, Any] = {"type": "document", "source": source}
    if filename:
        block["title"] = filename
    return block


def _add_provider_block(
    blocks: list[dict[str, Any]],
    part: ProviderPart,
    where: str,
    i: int,
    owner: dict[str, Any] | None = None,
) -> None:
    """A kept block appended, or set on the block before it (or ``owner``, a result)."""
    value = provider_block(part, _PROVIDER, where, i)
    if part.kind not in ATTACHED_KINDS:
        blocks.append(value)
        return
    target = blocks[-1] if blocks else owner
    if target is None:
        fail(where, f"a {part.kind} part must follow the part it belongs to", index=i)
    if part.kind == CALLER and target.get("type") != "tool_use":
        fail(where, "a caller part must follow a tool call", index=i)
    target[part.kind] = value


def _encode_results(message: Message, i: int, blocks: list[dict[str, Any]]) -> None:
    """``tool_result`` blocks of a TOOL message; parts after a result join its content."""
    current: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        where = f"messages[{i}].parts[{j}]"
        if isinstance(part, ToolResult):
            current = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": part.content,
            }
            if part.is_error:
                current["is_error"] = True
            blocks.append(current)
            continue
        if current is None or isinstance(part, ToolCall):
            fail(where, _RESULT_EXPECTED, index=i)  # inline: tool_parts costs 3 % here
        content = current["content"]
        if isinstance(content, str):
            if isinstance(part, ProviderPart) and part.kind == CACHE_CONTROL:  # the result's own
                current[CACHE_CONTROL] = provider_block(part, _PROVIDER, where, i)
                continue
            # An empty result text is left out unless a text follows (read back as the result).
            keep = bool(content) or isinstance(part, TextPart)
            content = current["content"] = [{"type": "text", "text": content}] if keep else []
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ProviderPart):
            _add_provider_block(content, part, where, i, owner=current)
        else:
            content.append(_encode_media(part, where, i))
    if current is None:
        fail(f"messages[{i}].parts", "a tool message without a tool result", index=i)


_BLOCKS: BlockShapes = BlockShapes(
    content_type="a string or an array of content blocks",
    system=lambda system: _decode_system(system, "system", None),
    write_system=lambda message: write_content(message, 0, _BLOCKS),
    late_error="the Messages API takes a system prompt only before the first message",
    results=_encode_results,
    classify=_classify,
    call=read_call,
    think=_decode_thinking,
    result=_decode_result,
    other=_decode_block,
    write_call=lambda part, args: {
        "type": "tool_use",
        "id": part.id,
        "name": part.name,
        "input": args,
    },
    write_media=_encode_media,
    write_kept=_add_provider_block,
    write_think=think_before(_thinking_block),
    tagged=True,
    marks=_marks,
    system_turn=_decode_system,
    strings=True,
)


# -- detection (see cast.codecs._registry) -----------------------------------------------

_ONLY_ANTHROPIC = frozenset(
    {
        "tool_use",
        "tool_result",
        "redacted_thinking",
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "search_result",
        "tool_reference",
        "compaction",
        "fallback",
    }
)
"""Block types no other format writes in ``content`` (more in :func:`_anthropic_only`)."""


_MESSAGE_KEYS = frozenset({"role", "content"})


def detect(payload: object) -> int:
    """Messages API: ``messages`` beside a ``system`` field (and none of the fields other
    formats' requests have)."""
    return EVIDENCE if body_format(payload) == "anthropic" else 0


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """Content blocks only Anthropic has (server tools and their results, ``citations``,
    signed thinking, media with a ``source``): evidence; text blocks whose only mark is
    a ``cache_control`` fit (OpenRouter puts it on Chat text parts too)."""
    cached = False
    for item in dicts:
        if "role" not in item or not _MESSAGE_KEYS.issuperset(item):
            return 0  # a log line or a stored response (Claude Code's), not a request's
        content = item.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if _anthropic_only(block):
                return EVIDENCE
            cached = cached or (block.get("type") == "text" and "cache_control" in block)
    return FITS if cached else 0


def _anthropic_only(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    if not isinstance(kind, str):
        return False
    if kind in _ONLY_ANTHROPIC or kind.endswith(("_tool_result", "_tool_result_error")):
        return True
    if kind == "thinking":
        return isinstance(block.get("thinking"), str)  # Mistral's holds chunks
    if kind in ("image", "document"):
        return isinstance(block.get("source"), dict)
    return kind == "text" and "citations" in block
