"""OpenAI Chat Completions codec: the request body ``{"messages": [...]}``.

Wire format: https://platform.openai.com/docs/api-reference/chat/create (message
objects), https://platform.openai.com/docs/guides/function-calling (``tool_calls``
and ``tool`` messages). Reasoning fields: DeepSeek ``reasoning_content``
(https://api-docs.deepseek.com/guides/thinking_mode) and vLLM ``reasoning``
(vllm-project/vllm PR #27752).

Canonical shape (``encode(decode(x)) == x``): content is a string when a message is
one text part and a list of parts otherwise; an assistant message without text has
``content: null``; tool messages carry ``name``. Everything else is normalized as
listed in ``docs/codecs.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from cast._fast import trusted_message
from cast.codecs._common import (
    as_messages,
    b64decode,
    b64encode,
    error,
    fail,
    parse_data_url,
    provider_block,
    provider_part,
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
)

__all__ = ["REASONING_FIELDS", "decode", "encode"]

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Assistant fields read as reasoning, in order of preference (DeepSeek, vLLM)."""

_HUMAN = Role.HUMAN
_AI = Role.AI
_TOOL = Role.TOOL
_SYSTEM = Role.SYSTEM
_MISSING: Any = object()
_PROVIDER = "openai"
# The keys chaincast models for each content part type (besides ``type``); a part with
# any other key (OpenRouter's ``cache_control``, a file by ``file_id``) is kept whole.
_MODELED = {
    "text": frozenset({"type", "text"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "file": frozenset({"type", "file"}),
}


def decode(payload: object) -> list[Message]:
    """Messages of a Chat Completions request body (or of its bare message list)."""
    if isinstance(payload, dict):
        items = payload.get("messages", _MISSING)
        if items is _MISSING:
            fail("messages", "the request body has no messages field")
        if not isinstance(items, list):
            fail("messages", "an array of messages", items)
    elif isinstance(payload, list):
        items = payload
    else:
        fail("", "a request body object or a list of messages", payload)

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
        elif role == "user":
            out.append(trusted_message(_HUMAN, _decode_content(item, i, media=True)))
        elif role in ("system", "developer"):
            # "developer" replaces "system" for o-series models; both are instructions.
            out.append(trusted_message(_SYSTEM, _decode_content(item, i, media=False)))
        elif role == "function":
            fail(f"messages[{i}].role", "legacy function messages are not supported", index=i)
        else:
            fail(
                f"messages[{i}].role",
                f"expected system, developer, user, assistant or tool, got {role!r}",
                index=i,
            )
    return out


def _decode_content(item: dict[str, Any], i: int, *, media: bool) -> tuple[Any, ...]:
    """Parts of a system or user message: a string, or an array of content parts."""
    content = item.get("content", _MISSING)
    if isinstance(content, str):
        return (TextPart(text=content),)
    if content is None:
        return ()
    if content is _MISSING:
        fail(f"messages[{i}].content", "the message has no content", index=i)
    if not isinstance(content, list):
        fail(f"messages[{i}].content", "a string or an array of content parts", content, i)
    parts: list[Any] = []
    for j, part in enumerate(content):
        parts.append(_decode_part(part, i, j, media))
    return tuple(parts)


def _decode_part(part: object, i: int, j: int, media: bool) -> Any:
    where = f"messages[{i}].content[{j}]"
    if not isinstance(part, dict):
        fail(where, "a content part object", part, i)
    kind = part.get("type")
    modeled = _MODELED.get(kind) if isinstance(kind, str) else None
    if modeled is not None and not modeled.issuperset(part) and (media or kind == "text"):
        return provider_part(_PROVIDER, kind, part)  # type: ignore[arg-type]
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str):
            fail(f"{where}.text", "a string", text, i)
        return TextPart(text=text)
    if not media:
        fail(f"{where}.type", f"expected a text part, got {kind!r}", index=i)
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, str):  # older clients send the URL itself
            return ImagePart(url=image)
        if not isinstance(image, dict):
            fail(f"{where}.image_url", "an object with a url", image, i)
        url = image.get("url")
        if not isinstance(url, str):
            fail(f"{where}.image_url.url", "a string", url, i)
        detail = image.get("detail", "")
        if not isinstance(detail, str):
            fail(f"{where}.image_url.detail", "a string", detail, i)
        return ImagePart(url=url, detail=detail)
    if kind == "input_audio":
        # {"data": <base64>, "format": "wav" | "mp3"}
        audio = part.get("input_audio")
        if not isinstance(audio, dict):
            fail(f"{where}.input_audio", "an object with data and format", audio, i)
        data = audio.get("data")
        if not isinstance(data, str):
            fail(f"{where}.input_audio.data", "base64 text", data, i)
        fmt = audio.get("format")
        if not isinstance(fmt, str):
            fail(f"{where}.input_audio.format", "a string", fmt, i)
        return BinaryPart(
            mime_type=f"audio/{fmt}", data=b64decode(data, f"{where}.input_audio.data", i)
        )
    if kind == "file":
        # {"file": {"file_data": "data:<mime>;base64,...", "filename": ...}}
        file = part.get("file")
        if not isinstance(file, dict):
            fail(f"{where}.file", "an object with file_data", file, i)
        data_url = file.get("file_data")
        if not isinstance(data_url, str) or not {"file_data", "filename"}.issuperset(file):
            return provider_part(_PROVIDER, "file", part)  # a file by file_id
        parsed = parse_data_url(data_url)
        if parsed is None:
            fail(f"{where}.file.file_data", "a base64 data: URL", index=i)
        filename = file.get("filename", "")
        if not isinstance(filename, str):
            fail(f"{where}.file.filename", "a string", filename, i)
        return BinaryPart(mime_type=parsed[0], data=parsed[1], filename=filename)
    raise error(f"{where}.type", f"unsupported content part type {kind!r}", index=i)


def _thinking_texts(part: dict[str, Any], where: str, i: int) -> list[str]:
    """The texts of a Mistral (Magistral) ``thinking`` part: a string, or text chunks."""
    thinking = part.get("thinking")
    if isinstance(thinking, str):
        return [thinking]
    if not isinstance(thinking, list):
        fail(f"{where}.thinking", "a string or an array of text chunks", thinking, i)
    texts: list[str] = []
    for k, chunk in enumerate(thinking):
        text = chunk.get("text") if isinstance(chunk, dict) else None
        if not isinstance(text, str):
            fail(f"{where}.thinking[{k}]", "a text chunk", chunk, i)
        texts.append(text)
    return texts


def _decode_assistant(item: dict[str, Any], i: int, names: dict[str, str]) -> Message:
    texts: list[str] = []
    thoughts: list[str] = []  # Mistral thinking parts
    content = item.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for j, part in enumerate(content):
            where = f"messages[{i}].content[{j}]"
            if not isinstance(part, dict):
                fail(where, "a content part object", part, i)
            kind = part.get("type")
            if kind == "thinking":
                thoughts.extend(_thinking_texts(part, where, i))
                continue
            key = "text" if kind == "text" else "refusal" if kind == "refusal" else None
            if key is None:
                fail(
                    f"{where}.type",
                    f"expected a text, refusal or thinking part, got {kind!r}",
                    index=i,
                )
            text = part.get(key)
            if not isinstance(text, str):
                fail(f"{where}.{key}", "a string", text, i)
            texts.append(text)
    elif content is not None:
        fail(f"messages[{i}].content", "a string, an array or null", content, i)

    refusal = item.get("refusal")
    if isinstance(refusal, str):
        texts.append(refusal)  # a refusal is what the model said: kept as text
    elif refusal is not None:
        fail(f"messages[{i}].refusal", "a string or null", refusal, i)

    if item.get("function_call") is not None:
        fail(f"messages[{i}].function_call", "legacy function_call is not supported", index=i)

    reasoning: Reasoning | None = None
    for field in REASONING_FIELDS:
        value = item.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            fail(f"messages[{i}].{field}", "a string", value, i)
        reasoning = Reasoning(content=value)
        break
    if reasoning is None and thoughts:
        reasoning = Reasoning(content="\n\n".join(thoughts))

    calls: list[ToolCall] = []
    raw_calls = item.get("tool_calls")
    if raw_calls is not None:
        if not isinstance(raw_calls, list):
            fail(f"messages[{i}].tool_calls", "an array", raw_calls, i)
        for j, call in enumerate(raw_calls):
            calls.append(_decode_call(call, i, j, names))

    # One reasoning per message: it goes on the first text, or on the first call when
    # the message has no text (as reasoning precedes the call it led to).
    parts: list[Any] = [TextPart(text=t) for t in texts]
    if reasoning is not None:
        if parts:
            parts[0] = TextPart(text=texts[0], reasoning=reasoning)
        elif calls:
            calls[0] = calls[0].model_copy(update={"reasoning": reasoning})
        else:
            parts.append(TextPart(text="", reasoning=reasoning))
    parts.extend(calls)
    return trusted_message(_AI, tuple(parts))


def _decode_call(call: object, i: int, j: int, names: dict[str, str]) -> ToolCall:
    where = f"messages[{i}].tool_calls[{j}]"
    if not isinstance(call, dict):
        fail(where, "a tool call object", call, i)
    kind = call.get("type", "function")
    if kind != "function":
        fail(f"{where}.type", f"only function tool calls are supported, got {kind!r}", index=i)
    call_id = call.get("id")
    if not isinstance(call_id, str):
        fail(f"{where}.id", "a string", call_id, i)
    function = call.get("function")
    if not isinstance(function, dict):
        fail(f"{where}.function", "an object with name and arguments", function, i)
    name = function.get("name")
    if not isinstance(name, str):
        fail(f"{where}.function.name", "a string", name, i)
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        fail(f"{where}.function.arguments", "JSON text in a string", arguments, i)
    names[call_id] = name
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _decode_tool(item: dict[str, Any], i: int, names: dict[str, str]) -> Message:
    call_id = item.get("tool_call_id")
    if not isinstance(call_id, str):
        fail(f"messages[{i}].tool_call_id", "a string", call_id, i)
    name = item.get("name")
    if name is None:
        name = names.get(call_id, "")
    elif not isinstance(name, str):
        fail(f"messages[{i}].name", "a string", name, i)
    content = item.get("content", _MISSING)
    if isinstance(content, str):
        return trusted_message(
            _TOOL, (ToolResult(tool_call_id=call_id, name=name, content=content),)
        )
    if content is None:
        return trusted_message(_TOOL, (ToolResult(tool_call_id=call_id, name=name, content=""),))
    if content is _MISSING:
        fail(f"messages[{i}].content", "the tool message has no content", index=i)
    if not isinstance(content, list):
        fail(f"messages[{i}].content", "a string or an array of text parts", content, i)
    # An array of text parts: the first is the result, the others follow it as text.
    texts = [_decode_part(part, i, j, False).text for j, part in enumerate(content)]
    result = ToolResult(tool_call_id=call_id, name=name, content=texts[0] if texts else "")
    return trusted_message(_TOOL, (result, *(TextPart(text=t) for t in texts[1:])))


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
    return _encode_stream(
        as_messages(messages), reasoning_field=reasoning_field, tool_names=tool_names
    ).whole()


def _encode_stream(
    messages: Iterable[Message],
    *,
    reasoning_field: str = "reasoning_content",
    tool_names: bool = True,
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
                yield {"role": "user", "content": _encode_content(message, i, media=True)}
            else:
                yield {"role": "system", "content": _encode_content(message, i, media=False)}

    return PayloadStream("messages", items())


def _encode_content(message: Message, i: int, *, media: bool) -> str | list[dict[str, Any]]:
    parts = message.parts
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    out: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        elif media and isinstance(part, ImagePart):
            image: dict[str, str] = {"url": part.url}
            if part.detail:
                image["detail"] = part.detail
            out.append({"type": "image_url", "image_url": image})
        elif media and isinstance(part, BinaryPart):
            out.append(_encode_binary(part, f"messages[{i}].parts[{j}]", i))
        elif isinstance(part, ProviderPart):
            out.append(provider_block(part, _PROVIDER, f"messages[{i}].parts[{j}]", i))
        else:
            fail(
                f"messages[{i}].parts[{j}]",
                f"a {message.role.value} message cannot carry a {part.type} part in OpenAI Chat",
                index=i,
            )
    return out


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
"""Images a user message takes (https://platform.openai.com/docs/guides/images-vision)."""
AUDIO_TYPES = frozenset({"audio/wav", "audio/mp3"})
"""``input_audio`` formats (https://platform.openai.com/docs/guides/audio)."""


def _encode_binary(part: BinaryPart, where: str, i: int) -> dict[str, Any]:
    mime = part.mime_type
    if mime in AUDIO_TYPES:
        return {
            "type": "input_audio",
            "input_audio": {"data": b64encode(part.data), "format": mime[6:]},
        }
    if mime in IMAGE_TYPES:
        url = f"data:{mime};base64,{b64encode(part.data)}"
        return {"type": "image_url", "image_url": {"url": url}}
    if mime.startswith(("audio/", "video/", "image/")):
        # Other images, audio and video have no part type; files are documents.
        fail(where, f"OpenAI Chat takes no {mime!r} part", index=i)
    file = {"file_data": f"data:{mime};base64,{b64encode(part.data)}"}
    if part.filename:
        file["filename"] = part.filename
    return {"type": "file", "file": file}


def _encode_assistant(message: Message, i: int, reasoning_field: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasonings: list[str] = []
    blocks: list[dict[str, Any]] = []  # content parts in order, when a kept block is among them
    for j, part in enumerate(message.parts):
        if isinstance(part, ProviderPart):
            blocks.append(provider_block(part, _PROVIDER, f"messages[{i}].parts[{j}]", i))
            continue
        if isinstance(part, TextPart):
            texts.append(part.text)
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall):
            calls.append(
                {
                    "id": part.id,
                    "type": "function",
                    "function": {
                        "name": part.name,
                        "arguments": part.arguments,
                    },
                }
            )
        else:
            fail(
                f"messages[{i}].parts[{j}]",
                f"an assistant message cannot carry a {part.type} part in OpenAI Chat",
                index=i,
            )
        reasoning = part.reasoning
        if reasoning is not None:
            reasonings.append(reasoning.content)

    content: Any
    if len(blocks) > len(texts):
        content = blocks
    elif not texts:
        content = None
    elif len(texts) == 1:
        content = texts[0]
    else:
        content = [{"type": "text", "text": t} for t in texts]
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    if reasonings:
        # One field per message; signatures have no place in Chat Completions.
        out[reasoning_field] = (
            reasonings[0] if len(reasonings) == 1 else "\n\n".join(r for r in reasonings if r)
        )
    return out


def _encode_tool(message: Message, i: int, tool_names: bool, out: list[dict[str, Any]]) -> None:
    """One tool message per result; text parts after a result join its content."""
    current: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        if isinstance(part, ToolResult):
            current = {
                "role": "tool",
                "tool_call_id": part.tool_call_id,
                "content": part.content,
            }
            if tool_names and part.name:
                current["name"] = part.name
            out.append(current)
        elif isinstance(part, TextPart | ProviderPart) and current is not None:
            content = current["content"]
            if isinstance(content, str):
                content = current["content"] = [{"type": "text", "text": content}]
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            else:
                content.append(provider_block(part, _PROVIDER, f"messages[{i}].parts[{j}]", i))
        else:
            fail(
                f"messages[{i}].parts[{j}]",
                "a tool message holds tool results, each optionally followed by text or "
                "provider parts",
                index=i,
            )
    if current is None:
        fail(f"messages[{i}].parts", "a tool message without a tool result", index=i)
