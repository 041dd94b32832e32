"""OpenAI Responses API codec: ``{"instructions"?: ..., "input": [...]}`` (mapping and
sources in docs/codecs.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from cast.codecs import openai
from cast.codecs._common import (
    EVIDENCE,
    MISSING,
    AiParts,
    as_messages,
    body_format,
    ensure,
    fail,
    fail_part,
    get_str,
    get_typed,
    optional_str,
    pack_signature,
    parse_data_url,
    provider_block,
    provider_part,
    reasoned,
    result_parts,
    tool_parts,
)
from cast.codecs.openai import CALL_FIELDS, MESSAGE_FIELDS
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

__all__ = ["decode", "decode_signature", "detect", "detect_messages", "encode", "encode_signature"]

_HUMAN, _AI, _TOOL, _SYSTEM = Role.HUMAN, Role.AI, Role.TOOL, Role.SYSTEM

_TEXT_PARTS = ("input_text", "output_text")
_PROVIDER = "openai-responses"
_REASONING_KEYS = frozenset({"type", "id", "summary", "encrypted_content", "content"})
_ROLES = {"user": _HUMAN, "system": _SYSTEM, "developer": _SYSTEM}
_AI_ITEMS = ("function_call", "reasoning")
_ITEMS = ("message", "function_call_output", *_AI_ITEMS)
# ProviderPart kinds (named as Chat's; the table in docs/codecs.md) of the fields chaincast
# does not model of the function_call item before them (namespace, caller), or of the
# assistant message item whose texts are before them (phase), which they end.
FIELD_KINDS = frozenset({CALL_FIELDS, MESSAGE_FIELDS})
_CALL_KEYS = frozenset({"type", "call_id", "name", "arguments", "id", "status"})
_MESSAGE_KEYS = frozenset({"type", "role", "content", "id", "status"})
_IMAGE_KEYS = frozenset({"type", "image_url", "detail"})
_FILE_KEYS = frozenset({"type", "file_data", "filename"})


def encode_signature(item_id: str, encrypted_content: str | None) -> bytes:
    """A reasoning item's ``id`` and ``encrypted_content`` as one signature, as
    :func:`~cast.codecs._common.pack_signature` packs them (so LangChain and pydantic-ai
    read the id as an id): ``id + "\\n" + encrypted_content``, empty with neither."""
    return pack_signature(item_id, encrypted_content) if item_id or encrypted_content else b""


def decode_signature(signature: bytes) -> tuple[str, str | None]:
    """The ``(id, encrypted_content)`` held in a signature (see :func:`encode_signature`;
    one without a newline, an id alone as older versions wrote it, is that id)."""
    item_id, _, encrypted = signature.decode("utf-8", errors="replace").partition("\n")
    return item_id, encrypted or None


def decode(payload: object) -> list[Message]:
    """Messages of a Responses request body (or of its bare input list)."""
    out: list[Message] = []
    if isinstance(payload, dict):
        items = payload.get("input", MISSING)
        if items is MISSING:
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
    ai: AiParts | None = None  # the AI message being read
    for i, item in enumerate(items):
        where = f"input[{i}]"
        ensure(item, dict, where, "an input item object", i)
        kind = get_str(item, "type", where, i, "message")
        # Reasoning text, annotations, hosted tool calls (web_search_call, ...): kept whole.
        kept = kind not in _ITEMS or _kept_whole(item, kind)
        if _in_ai(item, kind, kept):
            ai = AiParts() if ai is None else ai
            if kept:
                ai.settle()  # no reasoning attaches to a kept item
                ai.append(provider_part(_PROVIDER, kind, item))
            elif kind == "reasoning":
                ai.think(_decode_reasoning(item, where, i))
            elif kind == "function_call":
                call_id = get_str(item, "call_id", where, i)
                names[call_id] = name = get_str(item, "name", where, i)
                arguments = get_str(item, "arguments", where, i)
                ai.append(ToolCall(id=call_id, name=name, arguments=arguments, reasoning=ai.take()))
                if not _CALL_KEYS.issuperset(item):
                    ai.append(openai._fields_part(item, _CALL_KEYS, CALL_FIELDS, _PROVIDER))
            else:
                for part_where, part in _content(item, where, i):  # output_text, refusal
                    kind = part.get("type")
                    if kind not in (*_TEXT_PARTS, "refusal"):
                        expected = f"expected a text or refusal part, got {kind!r}"
                        fail(f"{part_where}.type", expected, index=i)
                    ai.text(_text_of(part, part_where, i))
                if not _MESSAGE_KEYS.issuperset(item):
                    ai.append(openai._fields_part(item, _MESSAGE_KEYS, MESSAGE_FIELDS, _PROVIDER))
            continue
        role = item.get("role")
        own_role = _ROLES.get(role) if isinstance(role, str) else None
        if kind == "function_call_output":
            message = _decode_output(item, where, i, names)
        elif own_role is None:
            expected = f"expected user, assistant, system or developer, got {role!r}"
            fail(f"{where}.role", expected, index=i)
        elif kept:  # additional_tools, ...: its own message
            message = trusted_message(own_role, (provider_part(_PROVIDER, kind, item),))
        else:
            message = trusted_message(
                own_role, _decode_content(item, where, i, media=role == "user")
            )
        if ai is not None:
            out.append(ai.message())
            ai = None
        out.append(message)
    if ai is not None:
        out.append(ai.message())
    return out


def _in_ai(item: dict[str, Any], kind: str, kept: bool) -> bool:
    """Whether an item joins the AI message around it (a kept one: unless a user or system item)."""
    role = item.get("role")
    if kept:
        return not (isinstance(role, str) and role in _ROLES)
    return kind in _AI_ITEMS or (kind == "message" and role == "assistant")


def _in_ai_message(item: object) -> bool:
    """Whether :func:`decode` reads ``item`` into an AI message (a run of them makes one)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    return _in_ai(item, kind, kind not in _ITEMS or _kept_whole(item, kind))


def _kept_whole(item: dict[str, Any], kind: str) -> bool:
    """Items with fields chaincast does not model (reasoning text, annotations)."""
    if kind == "reasoning":
        return bool(item.get("content")) or not _REASONING_KEYS.issuperset(item)
    if kind == "message" and item.get("role") == "assistant":
        content = item.get("content")
        return isinstance(content, list) and any(
            isinstance(p, dict) and p.get("annotations") for p in content
        )
    return False


def _text_of(part: dict[str, Any], where: str, i: int) -> str:
    return get_str(part, "refusal" if part.get("type") == "refusal" else "text", where, i)


def _content(item: dict[str, Any], where: str, i: int) -> Iterator[tuple[str, Any]]:
    """A message item's content parts (objects) with their paths; a string is one text."""
    content = item.get("content", MISSING)
    if isinstance(content, str):
        yield "", {"type": "input_text", "text": content}
        return
    if content is MISSING:
        fail(f"{where}.content", "the message has no content", index=i)
    content = ensure(content, list, f"{where}.content", "a string or an array of content parts", i)
    for j, part in enumerate(content):
        ensure(part, dict, f"{where}.content[{j}]", "a content part object", i)
        yield f"{where}.content[{j}]", part


def _decode_content(item: dict[str, Any], where: str, i: int, *, media: bool) -> tuple[Any, ...]:
    """Parts of a user or system message: a string, or an array of content parts."""
    parts: list[Any] = []
    for part_where, part in _content(item, where, i):
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(TextPart(text=_text_of(part, part_where, i)))
        elif kind in ("input_image", "input_file") and media:
            parts.append(_decode_media(part, kind))
        else:
            fail(f"{part_where}.type", f"unsupported content part type {kind!r}", index=i)
    return tuple(parts)


def _decode_media(part: dict[str, Any], kind: str) -> Any:
    """``input_image``/``input_file`` by URL or inline data; others kept whole."""
    if kind == "input_image":
        url = part.get("image_url")
        detail = part.get("detail", "")
        if isinstance(url, str) and isinstance(detail, str) and _IMAGE_KEYS.issuperset(part):
            return ImagePart(url=url, detail=detail)
        return provider_part(_PROVIDER, kind, part)
    data = part.get("file_data")
    filename = part.get("filename", "")
    url = part.get("file_url")
    if isinstance(data, str) and isinstance(filename, str) and _FILE_KEYS.issuperset(part):
        inline = parse_data_url(data)
        if inline is not None:
            return BinaryPart(mime_type=inline[0], data=inline[1], filename=filename)
    if isinstance(url, str) and set(part) == {"type", "file_url"}:
        return ImagePart(url=url, mime_type="application/pdf")
    return provider_part(_PROVIDER, kind, part)


def _decode_reasoning(item: dict[str, Any], where: str, i: int) -> Reasoning:
    item_id = item.get("id", "")
    if not isinstance(item_id, str) or "\n" in item_id:
        fail(f"{where}.id", "a string without newlines", item_id, i)
    encrypted = optional_str(item, "encrypted_content", where, i, "a string or null")
    summary = get_typed(item, "summary", list, "an array of summary parts", where, i, [])
    texts: list[str] = []
    for j, part in enumerate(summary):
        ensure(part, dict, f"{where}.summary[{j}]", "a summary_text part", i)
        texts.append(_text_of(part, f"{where}.summary[{j}]", i))
    return Reasoning(content="\n\n".join(texts), signature=encode_signature(item_id, encrypted))


def _decode_output(item: dict[str, Any], where: str, i: int, names: dict[str, str]) -> Message:
    call_id = get_str(item, "call_id", where, i)
    name = names.get(call_id, "")
    output = item.get("output")
    if isinstance(output, str):
        output = [{"type": "input_text", "text": output}]
    output = ensure(output, list, f"{where}.output", "a string or an array of input parts", i)
    # An array of parts: a first text is the result, the others follow it.
    extras: list[Any] = []
    for j, part in enumerate(output):
        part_where = f"{where}.output[{j}]"
        ensure(part, dict, part_where, "an input_text, input_image or input_file part", i)
        kind = part.get("type")
        if kind == "input_text":
            extras.append(TextPart(text=_text_of(part, part_where, i)))
        elif kind in ("input_image", "input_file"):
            extras.append(_decode_media(part, kind))
        else:
            fail(f"{part_where}.type", f"unsupported output part type {kind!r}", index=i)
    return trusted_message(_TOOL, result_parts(call_id, name, extras))


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
        elif (
            len(message.parts) == 1
            and type(item := message.parts[0]) is ProviderPart
            and item.provider == _PROVIDER
            and not item.kind.startswith("input_")
        ):  # a message holding one kept input item (not a content part)
            out.append(provider_block(item, _PROVIDER, f"messages[{i}].parts[0]", i))
        else:
            human = role is _HUMAN
            content = openai._encode_content(message, message.parts, i, media=human, responses=True)
            out.append({"role": "user" if human else "system", "content": content})
    return {"input": out}


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
    """Items of an AI message in part order (a reasoning item before its part)."""
    item: dict[str, Any] | None = None  # the open assistant message item: its texts so far
    start = len(out)
    for j, part in reasoned(message, out, _reasoning_item):
        if isinstance(part, TextPart):
            if item is None or out[-1] is not item:  # another item ended it
                item = {"role": "assistant", "content": []}
                out.append(item)
            item["content"].append(part.text)
        elif isinstance(part, ToolCall):
            out.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": part.arguments,
                }
            )
        elif isinstance(part, ProviderPart):
            where = f"messages[{i}].parts[{j}]"
            block = provider_block(part, _PROVIDER, where, i)
            if part.kind not in FIELD_KINDS:
                out.append(block)
            else:  # kept fields set on their item: the call before them, or the message item
                ensure(block, dict, f"{where}.data", "a JSON object of item fields", i)
                if part.kind == CALL_FIELDS and (
                    len(out) == start or out[-1].get("type") != "function_call"
                ):
                    fail(where, "call fields must follow the tool call they belong to", index=i)
                if part.kind == MESSAGE_FIELDS and (item is None or out[-1] is not item):
                    out.append({"role": "assistant", "content": []})
                out[-1].update(block)
                item = None  # the fields end their message item
        else:
            fail_part(i, j, f"an assistant message cannot carry a {part.type} part in Responses")
    if len(out) == start:  # an empty AI message still takes its place
        out.append({"role": "assistant", "content": []})
    for item in out[start:]:
        content = item.get("content")
        if isinstance(content, list) and content and isinstance(content[0], str):
            item["content"] = (
                content[0]
                if len(content) == 1
                else [{"type": "output_text", "text": t} for t in content]
            )


def _encode_outputs(message: Message, i: int, out: list[dict[str, Any]]) -> None:
    """One ``function_call_output`` per result; parts after it make ``output`` a list."""
    current: dict[str, Any] = {}
    for j, part in tool_parts(message.parts, i, _RESULT_EXPECTED):
        if isinstance(part, ToolResult):
            current = {
                "type": "function_call_output",
                "call_id": part.tool_call_id,
                "output": part.content,
            }
            out.append(current)
            continue
        output = current["output"]
        if isinstance(output, str):
            keep = bool(output) or isinstance(part, TextPart)
            output = current["output"] = [{"type": "input_text", "text": output}] if keep else []
        if isinstance(part, TextPart):
            output.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart | BinaryPart):
            output.append(
                openai._media_content(part, f"messages[{i}].parts[{j}]", i, responses=True)
            )
        else:
            output.append(provider_block(part, _PROVIDER, f"messages[{i}].parts[{j}]", i))


_RESULT_EXPECTED = (
    "a tool message holds tool results, each optionally followed by "
    "text, image, file or provider parts"
)


# -- detection (see cast.codecs._registry) -----------------------------------------------

_DETECT_ITEMS = ("function_call", "function_call_output", "reasoning")
_DETECT_PARTS = ("input_text", "output_text", "input_image")


def detect(payload: object) -> int:
    """A Responses request: an ``input`` field (and no Gemini field)."""
    return EVIDENCE if body_format(payload) == "openai_responses" else 0


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """Responses items: typed call/output/reasoning items, or ``input_text``-style parts."""
    for item in dicts:
        if item.get("type") in _DETECT_ITEMS:
            return EVIDENCE
        content = item.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in _DETECT_PARTS for p in content
        ):
            return EVIDENCE
    return 0
