"""Anthropic Messages API codec: the request body ``{"system": ..., "messages": [...]}``.

Wire format: https://docs.anthropic.com/en/api/messages (content blocks),
https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
(``tool_use``/``tool_result``: results live in the next user message and "must come
FIRST in the content array"), https://docs.anthropic.com/en/docs/build-with-claude/
extended-thinking (``thinking`` with ``signature``, ``redacted_thinking`` with ``data``;
thinking blocks are returned before the text or tool use they led to).

Mapping, in short: every ``tool_result`` becomes its own TOOL message, and the rest of
that user message a HUMAN message after them; encode merges consecutive TOOL messages
(and the HUMAN message right after them) back into one user message. A thinking
block becomes the ``reasoning`` of the text or tool use that follows it; one that
precedes nothing it can attach to becomes an empty TextPart holding only that
reasoning. Canonical shape: user content is a string when it is one text part,
assistant content is always a list. See ``docs/codecs.md`` for every normalization.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast._fast import trusted_message
from cast.codecs._common import (
    args_object,
    b64decode,
    b64encode,
    dumps_compact,
    encode_user_turns,
    error,
    fail,
    parse_data_url,
    signature_text,
)
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)

__all__ = ["REDACTED_THINKING_PREFIX", "decode", "encode"]

REDACTED_THINKING_PREFIX = b"redacted_thinking:"
"""Marks a ``Reasoning.signature`` that holds a ``redacted_thinking`` block's ``data``.

Both a redacted block and a thinking block whose text is omitted have no readable
content and one opaque string, so the redacted kind is told apart by this prefix:
``redacted_thinking{data}`` ↔ ``Reasoning(content="", signature=PREFIX + data)``.
"""

_HUMAN = Role.HUMAN
_AI = Role.AI
_TOOL = Role.TOOL
_SYSTEM = Role.SYSTEM
_MISSING: Any = object()


def decode(payload: object) -> list[Message]:
    """Messages of a Messages API request body (or of its bare message list)."""
    system: object = None
    if isinstance(payload, dict):
        items = payload.get("messages", _MISSING)
        if items is _MISSING:
            fail("messages", "the request body has no messages field")
        if not isinstance(items, list):
            fail("messages", "an array of messages", items)
        system = payload.get("system")
    elif isinstance(payload, list):
        items = payload
    else:
        fail("", "a request body object or a list of messages", payload)

    out: list[Message] = []
    if system is not None:
        out.append(_decode_system(system))
    names: dict[str, str] = {}  # tool_use id -> name of the latest call with that id
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            fail(f"messages[{i}]", "a message object", item, i)
        role = item.get("role")
        content = item.get("content", _MISSING)
        if content is _MISSING:
            fail(f"messages[{i}].content", "the message has no content", index=i)
        if role == "assistant":
            out.append(_decode_assistant(content, i, names))
        elif role == "user":
            _decode_user(content, i, names, out)
        elif role == "system":
            fail(
                f"messages[{i}].role",
                "the Messages API takes the system prompt in the top-level system field",
                index=i,
            )
        else:
            fail(f"messages[{i}].role", f"expected user or assistant, got {role!r}", index=i)
    return out


def _decode_system(system: object) -> Message:
    if isinstance(system, str):
        return trusted_message(_SYSTEM, (TextPart(text=system),))
    if not isinstance(system, list):
        fail("system", "a string or an array of text blocks", system)
    parts: list[TextPart] = []
    for j, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            fail(f"system[{j}]", "a text block", block)
        text = block.get("text")
        if not isinstance(text, str):
            fail(f"system[{j}].text", "a string", text)
        parts.append(TextPart(text=text))
    return trusted_message(_SYSTEM, tuple(parts))


def _text(block: dict[str, Any], where: str, i: int) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        fail(f"{where}.text", "a string", text, i)
    return text


def _decode_media(block: dict[str, Any], kind: str, where: str, i: int) -> Any:
    """``image``/``document`` blocks: a base64 source is raw bytes with their media
    type, a URL source (images only) is an image by URL."""
    source = block.get("source")
    if not isinstance(source, dict):
        fail(f"{where}.source", "a source object", source, i)
    source_type = source.get("type")
    if source_type == "base64":
        media_type = source.get("media_type")
        if not isinstance(media_type, str):
            fail(f"{where}.source.media_type", "a string", media_type, i)
        data = source.get("data")
        if not isinstance(data, str):
            fail(f"{where}.source.data", "base64 text", data, i)
        return BinaryPart(mime_type=media_type, data=b64decode(data, f"{where}.source.data", i))
    if source_type == "url" and kind == "image":
        url = source.get("url")
        if not isinstance(url, str):
            fail(f"{where}.source.url", "a string", url, i)
        return ImagePart(url=url)
    raise error(f"{where}.source.type", f"unsupported {kind} source type {source_type!r}", index=i)


def _decode_assistant(content: object, i: int, names: dict[str, str]) -> Message:
    if isinstance(content, str):
        return trusted_message(_AI, (TextPart(text=content),))
    if not isinstance(content, list):
        fail(f"messages[{i}].content", "a string or an array of content blocks", content, i)
    parts: list[Any] = []
    pending: Reasoning | None = None  # a thinking block waiting for the part it led to
    for j, block in enumerate(content):
        where = f"messages[{i}].content[{j}]"
        if not isinstance(block, dict):
            fail(where, "a content block object", block, i)
        kind = block.get("type")
        if kind == "text":
            text = _text(block, where, i)
            if pending is not None and text:
                parts.append(TextPart(text=text, reasoning=pending))
                pending = None
                continue
            if pending is not None:
                parts.append(TextPart(text="", reasoning=pending))
                pending = None
            parts.append(TextPart(text=text))
        elif kind == "tool_use":
            call_id = block.get("id")
            if not isinstance(call_id, str):
                fail(f"{where}.id", "a string", call_id, i)
            name = block.get("name")
            if not isinstance(name, str):
                fail(f"{where}.name", "a string", name, i)
            arguments = block.get("input")
            if not isinstance(arguments, dict):
                fail(f"{where}.input", "an object", arguments, i)
            names[call_id] = name
            parts.append(
                ToolCall(
                    id=call_id, name=name, arguments=dumps_compact(arguments), reasoning=pending
                )
            )
            pending = None
        elif kind in ("thinking", "redacted_thinking"):
            if pending is not None:
                parts.append(TextPart(text="", reasoning=pending))
            pending = _decode_thinking(block, kind, where, i)
        elif kind in ("image", "document"):
            if pending is not None:
                parts.append(TextPart(text="", reasoning=pending))
                pending = None
            parts.append(_decode_media(block, kind, where, i))
        else:
            fail(f"{where}.type", f"unsupported assistant content block {kind!r}", index=i)
    if pending is not None:
        parts.append(TextPart(text="", reasoning=pending))
    return trusted_message(_AI, tuple(parts))


def _decode_thinking(block: dict[str, Any], kind: str, where: str, i: int) -> Reasoning:
    if kind == "redacted_thinking":
        data = block.get("data")
        if not isinstance(data, str):
            fail(f"{where}.data", "a string", data, i)
        return Reasoning(signature=REDACTED_THINKING_PREFIX + data.encode("utf-8"))
    thinking = block.get("thinking")
    if not isinstance(thinking, str):
        fail(f"{where}.thinking", "a string", thinking, i)
    signature = block.get("signature", "")
    if not isinstance(signature, str):
        fail(f"{where}.signature", "a string", signature, i)
    return Reasoning(content=thinking, signature=signature.encode("utf-8"))


def _decode_user(content: object, i: int, names: dict[str, str], out: list[Message]) -> None:
    """A user message: each ``tool_result`` becomes a TOOL message; every run of
    other blocks becomes a HUMAN message, in the order they come."""
    if isinstance(content, str):
        out.append(trusted_message(_HUMAN, (TextPart(text=content),)))
        return
    if not isinstance(content, list):
        fail(f"messages[{i}].content", "a string or an array of content blocks", content, i)
    human: list[Any] = []
    emitted = False
    for j, block in enumerate(content):
        where = f"messages[{i}].content[{j}]"
        if not isinstance(block, dict):
            fail(where, "a content block object", block, i)
        kind = block.get("type")
        if kind == "tool_result":
            if human:
                out.append(trusted_message(_HUMAN, tuple(human)))
                human = []
            out.append(_decode_result(block, where, i, names))
            emitted = True
        elif kind == "text":
            human.append(TextPart(text=_text(block, where, i)))
        elif kind in ("image", "document"):
            human.append(_decode_media(block, kind, where, i))
        else:
            fail(f"{where}.type", f"unsupported user content block {kind!r}", index=i)
    if human or not emitted:
        out.append(trusted_message(_HUMAN, tuple(human)))


def _decode_result(block: dict[str, Any], where: str, i: int, names: dict[str, str]) -> Message:
    """A ``tool_result`` block as a TOOL message: the result, then the blocks of its
    content after the first text (images, documents, further texts)."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        fail(f"{where}.tool_use_id", "a string", call_id, i)
    name = names.get(call_id, "")
    content = block.get("content")
    if isinstance(content, str):
        return trusted_message(
            _TOOL, (ToolResult(tool_call_id=call_id, name=name, content=content),)
        )
    if content is None:  # omitted: an empty result
        return trusted_message(_TOOL, (ToolResult(tool_call_id=call_id, name=name, content=""),))
    if not isinstance(content, list):
        fail(f"{where}.content", "a string or an array of content blocks", content, i)
    text = ""
    extras: list[Any] = []
    for k, inner in enumerate(content):
        inner_where = f"{where}.content[{k}]"
        if not isinstance(inner, dict):
            fail(inner_where, "a content block object", inner, i)
        kind = inner.get("type")
        if kind == "text":
            if k == 0:
                text = _text(inner, inner_where, i)
            else:
                extras.append(TextPart(text=_text(inner, inner_where, i)))
        elif kind in ("image", "document"):
            extras.append(_decode_media(inner, kind, inner_where, i))
        else:
            fail(f"{inner_where}.type", f"unsupported tool result block {kind!r}", index=i)
    result = ToolResult(tool_call_id=call_id, name=name, content=text)
    return trusted_message(_TOOL, (result, *extras))


def encode(messages: Iterable[Message | dict[str, Any]]) -> dict[str, Any]:
    """A Messages API request body ``{"system"?: ..., "messages": [...]}``."""
    out, system = encode_user_turns(
        messages,
        api="the Messages API",
        results=_encode_results,
        human=_encode_user,
        human_blocks=_encode_blocks,
        assistant=_encode_blocks,
        system=_encode_system,
    )
    payload: dict[str, Any] = {"messages": out}
    if system is not None:
        payload["system"] = system
    return payload


def _encode_system(message: Message) -> str | list[dict[str, Any]]:
    parts = message.parts
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        if type(part) is not TextPart:
            fail(f"messages[0].parts[{j}]", "the system prompt holds text only", index=0)
        blocks.append({"type": "text", "text": part.text})
    return blocks


def _encode_user(message: Message, i: int) -> str | list[dict[str, Any]]:
    parts = message.parts
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    return _encode_blocks(message, i)


def _thinking_block(reasoning: Reasoning) -> dict[str, Any]:
    signature = reasoning.signature
    if not reasoning.content and signature.startswith(REDACTED_THINKING_PREFIX):
        data = signature[len(REDACTED_THINKING_PREFIX) :]
        return {"type": "redacted_thinking", "data": signature_text(data)}
    return {
        "type": "thinking",
        "thinking": reasoning.content,
        "signature": signature_text(signature),
    }


def _encode_media(part: ImagePart | BinaryPart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        # The url source takes http(s) URLs; a data: URL goes inline as base64.
        inline = parse_data_url(part.url)
        if inline is None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        mime, data = inline
    else:
        mime, data = part.mime_type, part.data
    kind = "image" if mime.startswith("image/") else "document"
    source = {"type": "base64", "media_type": mime, "data": b64encode(data)}
    return {"type": kind, "source": source}


def _encode_blocks(message: Message, i: int) -> list[dict[str, Any]]:
    """Content blocks of an assistant or user message; a part's reasoning goes out
    as a thinking block right before it."""
    blocks: list[dict[str, Any]] = []
    ai = message.role is _AI
    for j, part in enumerate(message.parts):
        if isinstance(part, TextPart):
            reasoning = part.reasoning
            if reasoning is not None and ai:
                blocks.append(_thinking_block(reasoning))
                if not part.text:
                    continue  # a reasoning-only part: the thinking block alone
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall) and ai:
            if part.reasoning is not None:
                blocks.append(_thinking_block(part.reasoning))
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.id,
                    "name": part.name,
                    "input": args_object(
                        part.arguments,
                        f"messages[{i}].parts[{j}].arguments",
                        i,
                    ),
                }
            )
        elif isinstance(part, ImagePart | BinaryPart):
            blocks.append(_encode_media(part))
        else:
            fail(
                f"messages[{i}].parts[{j}]",
                f"a {message.role.value} message cannot carry a {part.type} part",
                index=i,
            )
    return blocks


def _encode_results(message: Message, i: int, blocks: list[dict[str, Any]]) -> None:
    """``tool_result`` blocks of a TOOL message; parts after a result join its content
    (a string when the result is text alone, else a block list)."""
    current: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        if isinstance(part, ToolResult):
            current = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": part.content,
            }
            blocks.append(current)
            continue
        if current is None or isinstance(part, ToolCall | ToolResult):
            fail(
                f"messages[{i}].parts[{j}]",
                "a tool message holds tool results, each optionally followed by "
                "text, image or binary parts",
                index=i,
            )
        content = current["content"]
        if isinstance(content, str):
            # An empty result text is left out unless a text block follows (which would
            # otherwise be read back as the result itself).
            keep = bool(content) or isinstance(part, TextPart)
            content = current["content"] = [{"type": "text", "text": content}] if keep else []
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        else:
            content.append(_encode_media(part))
    if current is None:
        fail(f"messages[{i}].parts", "a tool message without a tool result", index=i)
