"""OpenAI Responses API codec: the request body ``{"instructions"?: ..., "input": [...]}``.

Wire format: https://platform.openai.com/docs/api-reference/responses/create (``input``
items: messages ``{"role", "content"}`` with ``input_text`` / ``output_text`` /
``input_image`` parts, ``function_call``, ``function_call_output``, ``reasoning``),
https://platform.openai.com/docs/guides/function-calling (``call_id`` pairs a call with
its output) and https://platform.openai.com/docs/guides/reasoning (``reasoning`` items
with ``summary`` and ``encrypted_content``, passed back before the item they led to).

Mapping, in short: a run of consecutive assistant-side items (assistant messages,
``function_call`` and ``reasoning`` items) is one AI message; each
``function_call_output`` is a TOOL message named after its call; ``instructions`` and
system/developer messages are SYSTEM messages, always encoded as ``role: "system"``
items. A reasoning item becomes the ``reasoning`` of the text or call after it, with
``signature = encode_signature(id, encrypted_content)``. See ``docs/codecs.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast._fast import trusted_message
from cast.codecs._common import as_messages, b64encode, fail
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

__all__ = ["decode", "decode_signature", "encode", "encode_signature"]

_HUMAN = Role.HUMAN
_AI = Role.AI
_TOOL = Role.TOOL
_SYSTEM = Role.SYSTEM
_MISSING: Any = object()
_TEXT_PARTS = ("input_text", "output_text")


def encode_signature(item_id: str, encrypted_content: str | None) -> bytes:
    """A reasoning item's ``id`` and ``encrypted_content`` as one signature:
    ``id`` alone, or ``id + "\\n" + encrypted_content`` (ids hold no newline)."""
    if encrypted_content is None:
        return item_id.encode("utf-8")
    return f"{item_id}\n{encrypted_content}".encode()


def decode_signature(signature: bytes) -> tuple[str, str | None]:
    """The ``(id, encrypted_content)`` held in a signature (see :func:`encode_signature`)."""
    text = signature.decode("utf-8", errors="replace")
    item_id, sep, encrypted = text.partition("\n")
    return item_id, encrypted if sep else None


def decode(payload: object) -> list[Message]:
    """Messages of a Responses request body (or of its bare input list)."""
    out: list[Message] = []
    if isinstance(payload, dict):
        items = payload.get("input", _MISSING)
        if items is _MISSING:
            fail("input", "the request body has no input field")
        instructions = payload.get("instructions")
        if isinstance(instructions, str):
            out.append(trusted_message(_SYSTEM, (TextPart(text=instructions),)))
        elif instructions is not None:
            fail("instructions", "a string", instructions)
        if isinstance(items, str):  # a bare prompt
            out.append(trusted_message(_HUMAN, (TextPart(text=items),)))
            return out
        if not isinstance(items, list):
            fail("input", "a string or an array of input items", items)
    elif isinstance(payload, list):
        items = payload
    else:
        fail("", "a request body object or a list of input items", payload)

    names: dict[str, str] = {}  # call_id -> name of the latest call with that id
    ai: list[Any] | None = None  # parts of the AI message being read
    pending: Reasoning | None = None  # a reasoning item waiting for the part it led to
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            fail(where, "an input item object", item, i)
        kind = item.get("type", "message")
        role = item.get("role")
        if (kind == "message" and role == "assistant") or kind in ("function_call", "reasoning"):
            if ai is None:
                ai = []
                out.append(trusted_message(_AI, ()))
            if kind == "reasoning":
                if pending is not None:
                    ai.append(TextPart(text="", reasoning=pending))
                pending = _decode_reasoning(item, where, i)
            elif kind == "function_call":
                ai.append(_decode_call(item, where, i, names, pending))
                pending = None
            else:
                for text in _texts(item, where, i):
                    if pending is not None and text:
                        ai.append(TextPart(text=text, reasoning=pending))
                        pending = None
                        continue
                    if pending is not None:
                        ai.append(TextPart(text="", reasoning=pending))
                        pending = None
                    ai.append(TextPart(text=text))
            continue
        if ai is not None:
            _close(ai, pending, out)
            ai, pending = None, None
        if kind == "function_call_output":
            out.append(_decode_output(item, where, i, names))
        elif kind != "message":
            fail(f"{where}.type", f"unsupported input item type {kind!r}", index=i)
        elif role == "user":
            out.append(trusted_message(_HUMAN, _decode_content(item, where, i, media=True)))
        elif role in ("system", "developer"):
            out.append(trusted_message(_SYSTEM, _decode_content(item, where, i, media=False)))
        else:
            fail(
                f"{where}.role",
                f"expected user, assistant, system or developer, got {role!r}",
                index=i,
            )
    if ai is not None:
        _close(ai, pending, out)
    return out


def _close(ai: list[Any], pending: Reasoning | None, out: list[Message]) -> None:
    """Put the finished AI message (the last one in ``out``) together."""
    if pending is not None:
        ai.append(TextPart(text="", reasoning=pending))
    out[-1] = trusted_message(_AI, tuple(ai))


def _text_of(part: dict[str, Any], where: str, i: int) -> str:
    key = "refusal" if part.get("type") == "refusal" else "text"
    text = part.get(key)
    if not isinstance(text, str):
        fail(f"{where}.{key}", "a string", text, i)
    return text


def _texts(item: dict[str, Any], where: str, i: int) -> list[str]:
    """Texts of an assistant message item (``output_text`` and ``refusal`` parts)."""
    content = item.get("content", _MISSING)
    if isinstance(content, str):
        return [content]
    if content is _MISSING:
        fail(f"{where}.content", "the message has no content", index=i)
    if not isinstance(content, list):
        fail(f"{where}.content", "a string or an array of content parts", content, i)
    texts: list[str] = []
    for j, part in enumerate(content):
        part_where = f"{where}.content[{j}]"
        if not isinstance(part, dict):
            fail(part_where, "a content part object", part, i)
        kind = part.get("type")
        if kind not in (*_TEXT_PARTS, "refusal"):
            fail(f"{part_where}.type", f"expected a text or refusal part, got {kind!r}", index=i)
        texts.append(_text_of(part, part_where, i))
    return texts


def _decode_content(item: dict[str, Any], where: str, i: int, *, media: bool) -> tuple[Any, ...]:
    """Parts of a user or system message: a string, or an array of content parts."""
    content = item.get("content", _MISSING)
    if isinstance(content, str):
        return (TextPart(text=content),)
    if content is _MISSING:
        fail(f"{where}.content", "the message has no content", index=i)
    if not isinstance(content, list):
        fail(f"{where}.content", "a string or an array of content parts", content, i)
    parts: list[Any] = []
    for j, part in enumerate(content):
        part_where = f"{where}.content[{j}]"
        if not isinstance(part, dict):
            fail(part_where, "a content part object", part, i)
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(TextPart(text=_text_of(part, part_where, i)))
        elif kind == "input_image" and media:
            url = part.get("image_url")
            if not isinstance(url, str):
                fail(
                    f"{part_where}.image_url",
                    "an image URL (images by file_id are not supported)",
                    index=i,
                )
            detail = part.get("detail", "")
            if not isinstance(detail, str):
                fail(f"{part_where}.detail", "a string", detail, i)
            parts.append(ImagePart(url=url, detail=detail))
        else:
            fail(f"{part_where}.type", f"unsupported content part type {kind!r}", index=i)
    return tuple(parts)


def _string(item: dict[str, Any], key: str, where: str, i: int) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        fail(f"{where}.{key}", "a string", value, i)
    return value


def _decode_call(
    item: dict[str, Any], where: str, i: int, names: dict[str, str], reasoning: Reasoning | None
) -> ToolCall:
    call_id = _string(item, "call_id", where, i)
    name = _string(item, "name", where, i)
    arguments = _string(item, "arguments", where, i)
    names[call_id] = name
    return ToolCall(id=call_id, name=name, arguments=arguments, reasoning=reasoning)


def _decode_reasoning(item: dict[str, Any], where: str, i: int) -> Reasoning:
    item_id = item.get("id", "")
    if not isinstance(item_id, str) or "\n" in item_id:
        fail(f"{where}.id", "a string without newlines", item_id, i)
    encrypted = item.get("encrypted_content")
    if encrypted is not None and not isinstance(encrypted, str):
        fail(f"{where}.encrypted_content", "a string or null", encrypted, i)
    summary = item.get("summary", [])
    if not isinstance(summary, list):
        fail(f"{where}.summary", "an array of summary parts", summary, i)
    texts: list[str] = []
    for j, part in enumerate(summary):
        if not isinstance(part, dict):
            fail(f"{where}.summary[{j}]", "a summary_text part", part, i)
        texts.append(_text_of(part, f"{where}.summary[{j}]", i))
    return Reasoning(content="\n\n".join(texts), signature=encode_signature(item_id, encrypted))


def _decode_output(item: dict[str, Any], where: str, i: int, names: dict[str, str]) -> Message:
    call_id = _string(item, "call_id", where, i)
    name = names.get(call_id, "")
    output = item.get("output")
    if isinstance(output, str):
        return trusted_message(
            _TOOL, (ToolResult(tool_call_id=call_id, name=name, content=output),)
        )
    if not isinstance(output, list):
        fail(f"{where}.output", "a string or an array of input_text parts", output, i)
    # An array of text parts: the first is the result, the others follow it as text.
    texts: list[str] = []
    for j, part in enumerate(output):
        part_where = f"{where}.output[{j}]"
        if not isinstance(part, dict) or part.get("type") != "input_text":
            fail(part_where, "an input_text part", part, i)
        texts.append(_text_of(part, part_where, i))
    result = ToolResult(tool_call_id=call_id, name=name, content=texts[0] if texts else "")
    return trusted_message(_TOOL, (result, *(TextPart(text=t) for t in texts[1:])))


def encode(messages: Iterable[Message | dict[str, Any]]) -> dict[str, Any]:
    """A Responses request body ``{"input": [...]}``; SYSTEM messages go out as
    ``role: "system"`` items where they stand (``instructions`` is never written)."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(as_messages(messages)):
        role = message.role
        if role is _AI:
            _encode_assistant(message, i, out)
        elif role is _TOOL:
            _encode_outputs(message, i, out)
        elif role is _HUMAN:
            out.append({"role": "user", "content": _encode_content(message, i, media=True)})
        else:
            out.append({"role": "system", "content": _encode_content(message, i, media=False)})
    return {"input": out}


def _encode_content(message: Message, i: int, *, media: bool) -> str | list[dict[str, Any]]:
    parts = message.parts
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    out: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        if isinstance(part, TextPart):
            out.append({"type": "input_text", "text": part.text})
            continue
        if media and isinstance(part, ImagePart):
            image: dict[str, str] = {"type": "input_image", "image_url": part.url}
            if part.detail:
                image["detail"] = part.detail
            out.append(image)
            continue
        if media and isinstance(part, BinaryPart) and part.mime_type.startswith("image/"):
            url = f"data:{part.mime_type};base64,{b64encode(part.data)}"
            out.append({"type": "input_image", "image_url": url})
            continue
        fail(
            f"messages[{i}].parts[{j}]",
            f"a {message.role.value} message cannot carry this {part.type} part in Responses",
            index=i,
        )
    return out


def _reasoning_item(reasoning: Reasoning) -> dict[str, Any]:
    item_id, encrypted = decode_signature(reasoning.signature)
    item: dict[str, Any] = {"type": "reasoning"}
    if item_id:
        item["id"] = item_id
    summary = [{"type": "summary_text", "text": reasoning.content}] if reasoning.content else []
    item["summary"] = summary
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _encode_assistant(message: Message, i: int, out: list[dict[str, Any]]) -> None:
    """Items of an AI message in part order: a part's reasoning item right before it,
    consecutive texts in one assistant message item, each call its own item."""
    texts: list[str] | None = None  # the texts of the open assistant message item
    start = len(out)
    for j, part in enumerate(message.parts):
        reasoning = part.reasoning if isinstance(part, TextPart | ToolCall) else None
        if reasoning is not None:
            out.append(_reasoning_item(reasoning))
            texts = None
        if isinstance(part, TextPart):
            if reasoning is not None and not part.text:
                continue  # a reasoning-only part: the reasoning item alone
            if texts is None:
                texts = []
                out.append({"role": "assistant", "content": texts})
            texts.append(part.text)
        elif isinstance(part, ToolCall):
            out.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": part.arguments,
                }
            )
            texts = None
        else:
            fail(
                f"messages[{i}].parts[{j}]",
                f"an assistant message cannot carry a {part.type} part in Responses",
                index=i,
            )
    if len(out) == start:  # an empty AI message still takes its place
        out.append({"role": "assistant", "content": []})
    for item in out[start:]:
        content = item.get("content")
        if isinstance(content, list) and content:
            item["content"] = (
                content[0]
                if len(content) == 1
                else [{"type": "output_text", "text": t} for t in content]
            )


def _encode_outputs(message: Message, i: int, out: list[dict[str, Any]]) -> None:
    """One ``function_call_output`` per result; text parts after a result join it."""
    current: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        if isinstance(part, ToolResult):
            current = {
                "type": "function_call_output",
                "call_id": part.tool_call_id,
                "output": part.content,
            }
            out.append(current)
        elif isinstance(part, TextPart) and current is not None:
            output = current["output"]
            if isinstance(output, str):
                output = current["output"] = [{"type": "input_text", "text": output}]
            output.append({"type": "input_text", "text": part.text})
        else:
            fail(
                f"messages[{i}].parts[{j}]",
                "a tool message holds tool results, each optionally followed by text parts",
                index=i,
            )
    if current is None:
        fail(f"messages[{i}].parts", "a tool message without a tool result", index=i)
