"""OpenAI Chat Completions codec: ``{"messages": [...]}`` (mapping and sources in
docs/codecs.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from cast.codecs._common import (
    EVIDENCE,
    FITS,
    MISSING,
    as_messages,
    b64decode,
    b64encode,
    body_items,
    ensure,
    fail,
    fail_part,
    get_str,
    get_typed,
    image_url_block,
    parse_data_url,
    provider_block,
    provider_part,
    result_parts,
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
from cast.providers import IMAGE_TYPES

__all__ = ["REASONING_FIELDS", "decode", "detect_messages", "encode"]

_HUMAN, _AI, _TOOL, _SYSTEM = Role.HUMAN, Role.AI, Role.TOOL, Role.SYSTEM

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Assistant fields read as reasoning, in order of preference (DeepSeek, vLLM)."""

_PROVIDER = "openai"
_RESPONSES = "openai-responses"
# The keys chaincast models for each content part type (besides ``type``); a part with
# any other key (OpenRouter's ``cache_control``, a file by ``file_id``) is kept whole.
_MODELED = {
    kind: frozenset({"type", kind}) for kind in ("text", "image_url", "input_audio", "file")
}
# ProviderPart kinds set back on what is before them (the table in docs/codecs.md): the
# ``cache_control`` (OpenRouter) of the text before it; the text before it is the refusal
# (data {} for the field, {"type": "refusal"} for a part); the message's fields chaincast
# does not model (its last part); the fields of the tool call before it (Qwen's index).
CACHE_CONTROL = "cache_control"
REFUSAL = "refusal"
MESSAGE_FIELDS = "message_fields"
CALL_FIELDS = "call_fields"
_ATTACHED = frozenset({CACHE_CONTROL, REFUSAL, MESSAGE_FIELDS, CALL_FIELDS})
# The message keys each role's decoder reads; the others are kept as message fields.
_USER_KEYS = frozenset({"role", "content"})
_ASSISTANT_KEYS = _USER_KEYS | {"tool_calls", "refusal", "function_call", *REASONING_FIELDS}
# "developer" replaces "system" for o-series models; both are instructions, and the
# role goes back as it came (a message field).
_PLAIN = {
    "user": (_HUMAN, _USER_KEYS),
    "system": (_SYSTEM, _USER_KEYS),
    "developer": (_SYSTEM, frozenset({"content"})),
}
_TOOL_KEYS = frozenset({"role", "content", "tool_call_id", "name"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_NO_FIELDS: dict[str, Any] = {}  # shared, never changed
_REFUSAL_FIELD = provider_part(_PROVIDER, REFUSAL, {})
_REFUSAL_PART = provider_part(_PROVIDER, REFUSAL, {"type": "refusal"})


def decode(payload: object) -> list[Message]:
    """Messages of a Chat Completions request body (or of its bare message list)."""
    items = body_items(payload)[0]
    out: list[Message] = []
    # Tool messages carry only the call id: their function name comes from the latest
    # call with that id (tau-bench reuses ids, each result following its own call).
    names: dict[str, str] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            fail(f"messages[{i}]", "a message object", item, i)
        role = item.get("role")
        if role == "assistant":
            out.append(_decode_assistant(item, i, names))
        elif role == "tool":
            out.append(_decode_tool(item, i, names))
        elif isinstance(role, str) and role in _PLAIN:
            own, keys = _PLAIN[role]
            parts = _decode_content(item, i, media=own is _HUMAN)
            out.append(trusted_message(own, _with_fields(parts, item, keys)))
        elif role == "function":
            fail(f"messages[{i}].role", "legacy function messages are not supported", index=i)
        else:
            expected = f"expected system, developer, user, assistant or tool, got {role!r}"
            fail(f"messages[{i}].role", expected, index=i)
    return out


def _with_fields(
    parts: tuple[Any, ...], item: dict[str, Any], keys: frozenset[str]
) -> tuple[Any, ...]:
    """``parts``, and a :data:`MESSAGE_FIELDS` part when ``item`` has keys beyond ``keys``."""
    return parts if keys.issuperset(item) else (*parts, _fields_part(item, keys, MESSAGE_FIELDS))


def _fields_part(
    item: dict[str, Any], keys: frozenset[str], kind: str, provider: str = _PROVIDER
) -> ProviderPart:
    """The fields of ``item`` beyond ``keys``, kept as a part of ``kind`` (Chat, Responses)."""
    return provider_part(provider, kind, {k: v for k, v in item.items() if k not in keys})


def _decode_content(item: dict[str, Any], i: int, *, media: bool) -> tuple[Any, ...]:
    """Parts of a system or user message: a string, or an array of content parts."""
    content = item.get("content", MISSING)
    if isinstance(content, str):
        return (TextPart(text=content),)
    if content is None:
        return ()
    if content is MISSING:
        fail(f"messages[{i}].content", "the message has no content", index=i)
    if not isinstance(content, list):
        fail(f"messages[{i}].content", "a string or an array of content parts", content, i)
    return tuple([_decode_part(part, i, j, media) for j, part in enumerate(content)])


def _decode_part(part: object, i: int, j: int, media: bool) -> Any:
    where = f"messages[{i}].content[{j}]"
    part = ensure(part, dict, where, "a content part object", i)
    kind = get_str(part, "type", where, i)
    modeled = _MODELED.get(kind)
    if modeled is None or (not modeled.issuperset(part) and (media or kind == "text")):
        # A part type chaincast has no model for, or one with other fields: kept whole.
        return provider_part(_PROVIDER, kind, part)
    if kind == "text":
        return TextPart(text=get_str(part, "text", where, i))
    if not media:
        fail(f"{where}.type", f"expected a text part, got {kind!r}", index=i)
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, str):  # older clients send the URL itself
            return ImagePart(url=image)
        image = ensure(image, dict, f"{where}.image_url", "an object with a url", i)
        url = get_str(image, "url", f"{where}.image_url", i)
        return ImagePart(url=url, detail=get_str(image, "detail", f"{where}.image_url", i, ""))
    if kind == "input_audio":
        # {"data": <base64>, "format": "wav" | "mp3"}
        audio = get_typed(part, "input_audio", dict, "an object with data and format", where, i)
        data = get_typed(audio, "data", str, "base64 text", f"{where}.input_audio", i)
        fmt = get_str(audio, "format", f"{where}.input_audio", i)
        return BinaryPart(
            mime_type=f"audio/{fmt}", data=b64decode(data, f"{where}.input_audio.data", i)
        )
    # kind == "file": {"file": {"file_data": "data:<mime>;base64,...", "filename": ...}}
    file = get_typed(part, "file", dict, "an object with file_data", where, i)
    data_url = file.get("file_data")
    if not isinstance(data_url, str) or not {"file_data", "filename"}.issuperset(file):
        return provider_part(_PROVIDER, "file", part)  # a file by file_id
    parsed = parse_data_url(data_url)
    if parsed is None:
        fail(f"{where}.file.file_data", "a base64 data: URL", index=i)
    filename = get_str(file, "filename", f"{where}.file", i, "")
    return BinaryPart(mime_type=parsed[0], data=parsed[1], filename=filename)


def _thinking_texts(part: dict[str, Any], where: str, i: int) -> list[str]:
    """The texts of a Mistral (Magistral) ``thinking`` part: a string, or text chunks."""
    thinking = part.get("thinking")
    if isinstance(thinking, str):
        return [thinking]
    thinking = ensure(thinking, list, f"{where}.thinking", "a string or an array of text chunks", i)
    texts: list[str] = []
    for k, chunk in enumerate(thinking):
        text = chunk.get("text") if isinstance(chunk, dict) else None
        if not isinstance(text, str):
            fail(f"{where}.thinking[{k}]", "a text chunk", chunk, i)
        texts.append(text)
    return texts


def _decode_assistant(item: dict[str, Any], i: int, names: dict[str, str]) -> Message:
    parts: list[Any] = []  # texts and kept parts in order, each text's markers after it
    thoughts: list[str] = []  # Mistral thinking parts
    content = item.get("content")
    if isinstance(content, str):
        parts.append(TextPart(text=content))
    elif isinstance(content, list):
        for j, raw in enumerate(content):  # text, refusal or Mistral thinking parts
            where = f"messages[{i}].content[{j}]"
            part = ensure(raw, dict, where, "a content part object", i)
            kind = part.get("type")
            if kind == "thinking":
                thoughts.extend(_thinking_texts(part, where, i))
            elif kind in ("text", "refusal"):
                _decode_text(part, kind, where, i, parts)
            else:
                expected = f"expected a text, refusal or thinking part, got {kind!r}"
                fail(f"{where}.type", expected, index=i)
    elif content is not None:
        fail(f"messages[{i}].content", "a string, an array or null", content, i)

    refusal = item.get("refusal")
    if isinstance(refusal, str):
        # A refusal is what the model said: a text, marked to go back as the refusal.
        parts += (TextPart(text=refusal), _REFUSAL_FIELD)
    elif refusal is not None:
        fail(f"messages[{i}].refusal", "a string or null", refusal, i)

    if item.get("function_call") is not None:
        fail(f"messages[{i}].function_call", "legacy function_call is not supported", index=i)

    for field in REASONING_FIELDS:  # preferred to Mistral's thinking parts
        if item.get(field) is not None:
            thoughts = [ensure(item[field], str, f"messages[{i}].{field}", "a string", i)]
            break
    reasoning = Reasoning(content="\n\n".join(thoughts)) if thoughts else None

    calls: list[Any] = []
    raw_calls = item.get("tool_calls")
    if raw_calls is not None:
        raw_calls = ensure(raw_calls, list, f"messages[{i}].tool_calls", "an array", i)
        for j, call in enumerate(raw_calls):
            calls.append(_decode_call(call, i, j, names))
            if not _CALL_KEYS.issuperset(call):
                calls.append(_fields_part(call, _CALL_KEYS, CALL_FIELDS))

    # One reasoning per message: it goes on the first text, or on the first call when
    # the message has no text (as reasoning precedes the call it led to).
    if reasoning is not None:
        first = next((k for k, p in enumerate(parts) if type(p) is TextPart), None)
        if first is not None:
            parts[first] = TextPart(text=parts[first].text, reasoning=reasoning)
        elif calls:
            calls[0] = calls[0].model_copy(update={"reasoning": reasoning})
        else:
            parts.append(TextPart(text="", reasoning=reasoning))
    parts.extend(calls)
    return trusted_message(_AI, _with_fields(tuple(parts), item, _ASSISTANT_KEYS))


def _decode_text(part: dict[str, Any], key: str, where: str, i: int, parts: list[Any]) -> None:
    """A text (``key``) or refusal part and its marks; others (``key`` empty) kept whole."""
    if not key or not {"type", key, CACHE_CONTROL}.issuperset(part):
        parts.append(provider_part(_PROVIDER, part["type"], part))
        return
    parts.append(TextPart(text=get_str(part, key, where, i)))
    if key == "refusal":
        parts.append(_REFUSAL_PART)
    if CACHE_CONTROL in part:
        parts.append(provider_part(_PROVIDER, CACHE_CONTROL, part[CACHE_CONTROL]))


def _decode_call(call: object, i: int, j: int, names: dict[str, str]) -> ToolCall:
    where = f"messages[{i}].tool_calls[{j}]"
    if not isinstance(call, dict):
        fail(where, "a tool call object", call, i)
    kind = call.get("type", "function")
    if kind != "function":
        fail(f"{where}.type", f"only function tool calls are supported, got {kind!r}", index=i)
    # Checked inline, not by get_str: this runs for every call of a chain.
    call_id = call.get("id")
    function = call.get("function")
    if not isinstance(call_id, str):
        fail(f"{where}.id", "a string", call_id, i)
    if not isinstance(function, dict):
        fail(f"{where}.function", "an object with name and arguments", function, i)
    name = function.get("name")
    arguments = function.get("arguments")
    if not isinstance(name, str):
        fail(f"{where}.function.name", "a string", name, i)
    if not isinstance(arguments, str):
        fail(f"{where}.function.arguments", "JSON text in a string", arguments, i)
    names[call_id] = name
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _decode_tool(item: dict[str, Any], i: int, names: dict[str, str]) -> Message:
    call_id = get_str(item, "tool_call_id", f"messages[{i}]", i)
    name = item.get("name")
    if name is None:
        name = names.get(call_id, "")
    elif not isinstance(name, str):
        fail(f"messages[{i}].name", "a string", name, i)
    content = item.get("content", MISSING)
    parts: tuple[Any, ...]
    if isinstance(content, str) or content is None:
        parts = (ToolResult(tool_call_id=call_id, name=name, content=content or ""),)
    elif content is MISSING:
        fail(f"messages[{i}].content", "the tool message has no content", index=i)
    elif not isinstance(content, list):
        fail(f"messages[{i}].content", "a string or an array of text parts", content, i)
    else:
        texts: list[Any] = []  # texts (each then its cache_control) and parts kept whole
        for j, raw in enumerate(content):
            where = f"messages[{i}].content[{j}]"
            part = ensure(raw, dict, where, "a content part object", i)
            kind = ensure(part.get("type"), str, f"{where}.type", "a string", i)
            _decode_text(part, kind if kind == "text" else "", where, i, texts)
        parts = result_parts(call_id, name, texts)
    return trusted_message(_TOOL, _with_fields(parts, item, _TOOL_KEYS))


def encode(
    messages: Iterable[Message | dict[str, Any]],
    *,
    reasoning_field: str = "reasoning_content",
    tool_names: bool = True,
) -> dict[str, Any]:
    """A Chat Completions request body ``{"messages": [...]}`` for ``messages``.

    ``reasoning_field`` names the assistant field that carries reasoning
    (``"reasoning_content"`` for DeepSeek/Kimi, ``"reasoning"`` for vLLM). With
    ``tool_names`` every tool message carries its function ``name`` (as Mistral
    requires); OpenAI itself only needs ``tool_call_id``.
    """
    return _encode_stream(as_messages(messages), reasoning_field, tool_names).whole()


def _encode_stream(
    messages: Iterable[Message], reasoning_field: str = "reasoning_content", tool_names: bool = True
) -> PayloadStream:
    """:func:`encode`, one message at a time (the command lines write it as it comes)."""

    def items() -> Iterator[dict[str, Any]]:
        out: list[dict[str, Any]] = []  # a tool message gives one item per result
        for i, message in enumerate(messages):
            role = message.role
            if role is _AI:
                yield _encode_assistant(message, i, reasoning_field)
            elif role is _TOOL:
                _encode_tool(message, i, tool_names, out)
                yield from out
                out.clear()
            elif role is _HUMAN:
                yield _encode_plain("user", message, i, media=True)
            else:
                yield _encode_plain("system", message, i, media=False)

    return PayloadStream("messages", items())


def _attached(part: object) -> str | None:
    """The kind of an OpenAI part that belongs to the part (or message) before it."""
    if type(part) is ProviderPart and part.provider == _PROVIDER and part.kind in _ATTACHED:
        return part.kind
    return None


def _fields(message: Message, i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(the parts, the message fields their last ``MESSAGE_FIELDS`` part holds)."""
    parts = message.parts
    last = parts[-1] if parts else None
    if type(last) is not ProviderPart or _attached(last) != MESSAGE_FIELDS:
        return parts, _NO_FIELDS
    where = f"messages[{i}].parts[{len(parts) - 1}]"
    fields = provider_block(last, _PROVIDER, where, i)
    return parts[:-1], ensure(fields, dict, f"{where}.data", "a JSON object", i)


def _with_message_fields(out: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    out.update({key: value for key, value in fields.items() if key not in out})
    return out


def _mark(block: dict[str, Any], marker: ProviderPart, where: str, i: int) -> None:
    """A text block with the ``cache_control`` a marker part after it holds."""
    block[CACHE_CONTROL] = provider_block(marker, _PROVIDER, where, i)


def _encode_plain(role: str, message: Message, i: int, *, media: bool) -> dict[str, Any]:
    parts, fields = _fields(message, i)
    if role == "system" and fields.get("role") == "developer":
        role = "developer"
    out = {"role": role, "content": _encode_content(message, parts, i, media=media)}
    return _with_message_fields(out, fields) if fields else out


def _encode_content(
    message: Message, parts: tuple[Any, ...], i: int, *, media: bool, responses: bool = False
) -> str | list[dict[str, Any]]:
    """A user (``media``) or system message's content in Chat or Responses: a lone text is
    a string; an OpenAI ``cache_control`` marks the Chat text before it."""
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    out: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        if isinstance(part, TextPart):
            out.append({"type": "input_text" if responses else "text", "text": part.text})
        elif media and isinstance(part, ImagePart | BinaryPart):
            out.append(_media_content(part, f"messages[{i}].parts[{j}]", i, responses=responses))
        elif (
            not responses
            and _attached(part) == CACHE_CONTROL
            and out
            and out[-1].get("type") == "text"
        ):
            _mark(out[-1], part, f"messages[{i}].parts[{j}]", i)
        elif isinstance(part, ProviderPart) and (media or not responses):
            provider = _RESPONSES if responses else _PROVIDER
            out.append(provider_block(part, provider, f"messages[{i}].parts[{j}]", i))
        else:
            held = "this {} part in Responses" if responses else "a {} part in OpenAI Chat"
            fail_part(i, j, f"a {message.role.value} message cannot carry {held.format(part.type)}")
    return out


AUDIO_TYPES = frozenset({"audio/wav", "audio/mp3"})
"""``input_audio`` formats (https://platform.openai.com/docs/guides/audio)."""
FILE_TYPES = frozenset({"application/pdf"})
"""Media types Responses' ``input_file`` takes inline
(https://platform.openai.com/docs/guides/pdf-files)."""


def _media_content(
    part: ImagePart | BinaryPart, where: str, i: int, *, responses: bool
) -> dict[str, Any]:
    """An image or file as a Chat content part, or a Responses one: by URL, or inline as a
    data URL (``image_url``/``file`` nested in Chat, flat ``input_image``/``input_file`` in
    Responses); audio as Chat's ``input_audio``."""
    if isinstance(part, ImagePart):
        if not responses:
            return image_url_block(part)
        if part.mime_type:
            return {"type": "input_file", "file_url": part.url}
        image: dict[str, Any] = {"type": "input_image", "image_url": part.url}
        if part.detail:
            image["detail"] = part.detail
        return image
    mime = part.mime_type
    if not responses and mime in AUDIO_TYPES:
        audio = {"data": b64encode(part.data), "format": mime[6:]}
        return {"type": "input_audio", "input_audio": audio}
    url = f"data:{mime};base64,{b64encode(part.data)}"
    if mime in IMAGE_TYPES:
        inline = {"type": "input_image", "image_url": url}
        return inline if responses else {"type": "image_url", "image_url": {"url": url}}
    if responses and mime not in FILE_TYPES:
        fail(where, f"Responses takes images and PDFs, not {mime!r}", index=i)
    if mime.startswith(("audio/", "video/", "image/")):
        # Other images, audio and video have no part type; files are documents.
        fail(where, f"OpenAI Chat takes no {mime!r} part", index=i)
    file = {"file_data": url}
    if part.filename:
        file["filename"] = part.filename
    return {"type": "input_file", **file} if responses else {"type": "file", "file": file}


def _encode_assistant(message: Message, i: int, reasoning_field: str) -> dict[str, Any]:
    parts, fields = _fields(message, i)
    calls: list[dict[str, Any]] = []
    reasonings: list[str] = []
    blocks: list[dict[str, Any]] = []  # content parts in order
    plain = True  # every block is a text block without other keys
    refusal: str | None = None
    for j, part in enumerate(parts):
        cls = type(part)
        if cls is TextPart:
            blocks.append({"type": "text", "text": part.text})
        elif cls is ToolCall:
            function = {"name": part.name, "arguments": part.arguments}
            calls.append({"id": part.id, "type": "function", "function": function})
        elif cls is ProviderPart:
            # A mark on the text or call before it, or a block of its own.
            where = f"messages[{i}].parts[{j}]"
            kind = _attached(part)
            after_text = bool(blocks) and blocks[-1].get("type") == "text"
            if kind == REFUSAL and after_text:
                text = blocks.pop()["text"]
                if provider_block(part, _PROVIDER, where, i):  # a refusal part
                    blocks.append({"type": "refusal", "refusal": text})
                    plain = False
                else:
                    refusal = text if refusal is None else refusal + text
            elif kind == CACHE_CONTROL and after_text:
                _mark(blocks[-1], part, where, i)
                plain = False
            elif (
                kind == CALL_FIELDS
                and calls
                and isinstance(extra := provider_block(part, _PROVIDER, where, i), dict)
            ):
                _with_message_fields(calls[-1], extra)
            else:
                blocks.append(provider_block(part, _PROVIDER, where, i))
                plain = False
            continue
        else:
            fail_part(i, j, f"an assistant message cannot carry a {part.type} part in OpenAI Chat")
        reasoning = part.reasoning
        if reasoning is not None:
            reasonings.append(reasoning.content)

    content: Any = blocks
    if plain and len(blocks) <= 1:  # a lone text is a string, no text is null
        content = blocks[0]["text"] if blocks else None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        out["refusal"] = refusal
    if calls:
        out["tool_calls"] = calls
    if reasonings:
        # One field per message; signatures have no place in Chat Completions.
        out[reasoning_field] = (
            reasonings[0] if len(reasonings) == 1 else "\n\n".join(r for r in reasonings if r)
        )
    return _with_message_fields(out, fields) if fields else out


def _encode_tool(message: Message, i: int, tool_names: bool, out: list[dict[str, Any]]) -> None:
    """One tool message per result; text parts after a result join its content."""
    parts, fields = _fields(message, i)
    current: dict[str, Any] | None = None
    for j, part in enumerate(parts):
        if type(part) is ToolResult:
            current = {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.content}
            if tool_names and part.name:
                current["name"] = part.name
            out.append(current)
            continue
        if current is None or not isinstance(part, TextPart | ProviderPart):
            fail_part(i, j, _RESULT_EXPECTED)  # inline: tool_parts costs 12 % here
        content = current["content"]
        if isinstance(content, str):
            content = current["content"] = [{"type": "text", "text": content}]
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif _attached(part) == CACHE_CONTROL and content[-1].get("type") == "text":
            _mark(content[-1], part, f"messages[{i}].parts[{j}]", i)
        else:
            content.append(provider_block(part, _PROVIDER, f"messages[{i}].parts[{j}]", i))
    if current is None:
        fail(f"messages[{i}].parts", "a tool message without a tool result", index=i)
    if fields:
        _with_message_fields(current, fields)


_RESULT_EXPECTED = (
    "a tool message holds tool results, each optionally followed by text or provider parts"
)


# -- detection (see cast.codecs._registry) -----------------------------------------------

_ONLY_CHAT_ROLES = frozenset({"tool", "developer", "function"})
_ONLY_CHAT_KEYS = ("tool_calls", "tool_call_id", "refusal", "function_call", *REASONING_FIELDS)
_ONLY_CHAT_PARTS = ("image_url", "input_audio", "file", "video_url", "document_url", "refusal")


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """Chat Completions takes any list of message objects (plain user/assistant text fits
    OpenAI and Anthropic alike, and both decode it the same way); its roles, call fields
    and part types are evidence only it has."""
    for item in dicts:
        role = item.get("role")
        if (isinstance(role, str) and role in _ONLY_CHAT_ROLES) or any(
            key in item for key in _ONLY_CHAT_KEYS
        ):
            return EVIDENCE
        content = item.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in _ONLY_CHAT_PARTS for p in content
        ):
            return EVIDENCE
    return FITS
