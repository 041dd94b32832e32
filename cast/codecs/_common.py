"""Helpers shared by the provider codecs: typed field access that fails with a
:class:`~cast.errors.CodecError` naming the bad field, JSON and base64 conversions
that round-trip exactly, and the encode-side message intake.

Paths are only formatted when an error is raised, so the happy path costs one
``isinstance`` per field.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

from pydantic import ValidationError

from cast.codecs._streaming import PayloadStream
from cast.errors import CodecError
from cast.messages import Message, ProviderPart, Role
from cast.transforms import loads_strict

__all__ = [
    "EVIDENCE",
    "FITS",
    "args_object",
    "as_messages",
    "b64decode",
    "b64decode_any",
    "b64encode",
    "canonical_object",
    "converse_body",
    "converse_messages",
    "dumps_compact",
    "encode_user_turns",
    "error",
    "fail",
    "gemini_fields",
    "iter_messages",
    "json_type",
    "parse_data_url",
    "provider_block",
    "provider_part",
    "signature_text",
    "typed_parts_style",
]


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def error(path: str, expected: str, value: object = ..., index: int | None = None) -> CodecError:
    """A :class:`CodecError` at ``path``; with ``value``, it says what was found."""
    message = expected if value is ... else f"expected {expected}, got {json_type(value)}"
    return CodecError(message, path=path, index=index)


def fail(path: str, expected: str, value: object = ..., index: int | None = None) -> NoReturn:
    """Raise :func:`error`."""
    raise error(path, expected, value, index)


_STANDARD_ONLY = frozenset("+/")
_URL_SAFE_ONLY = frozenset("-_")


def b64decode_any(text: str) -> bytes | None:
    """Base64 text in either alphabet of RFC 4648 (standard §4 or URL-safe §5), with or
    without padding, as bytes; ``None`` when it is not base64 (stray characters, both
    alphabets mixed, a bad length). Gemini sends URL-safe base64 in ``inlineData``."""
    chars = set(text)
    url_safe = not chars.isdisjoint(_URL_SAFE_ONLY)
    if url_safe and not chars.isdisjoint(_STANDARD_ONLY):
        return None
    if len(text) % 4:
        if text.endswith("="):
            return None
        text += "=" * (-len(text) % 4)
    try:
        if url_safe:
            return base64.b64decode(text.translate(_TO_STANDARD), validate=True)
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


_TO_STANDARD = str.maketrans("-_", "+/")


def b64decode(text: str, path: str, index: int | None = None) -> bytes:
    """Base64 text (standard or URL-safe, padded or not) to bytes, strictly otherwise:
    no stray characters. Encoders always write standard padded base64."""
    data = b64decode_any(text)
    if data is None:
        fail(path, f"expected base64 data, got {text[:40]!r}", index=index)
    return data


def b64encode(data: bytes) -> str:
    """Bytes to standard padded base64 text."""
    return base64.b64encode(data).decode("ascii")


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps_compact(value: object) -> str:
    """The canonical JSON text of ``value``: compact separators, non-ASCII kept.

    OpenAI returns tool-call arguments in this form (``{"user_id":"omar_davis_3817"}``
    in the tau-bench corpus), so object-valued arguments (Anthropic ``input``,
    Gemini ``args``) are turned into the same text.
    """
    return _COMPACT.encode(value)


def args_object(arguments: str, path: str, index: int | None = None) -> dict[str, Any]:
    """Tool-call arguments (JSON text) as the object Anthropic and Gemini expect.

    An empty string means no arguments (OpenAI streams send it for argument-less
    calls); anything else must be a JSON object.
    """
    if not arguments:
        return {}
    try:
        value = loads_strict(arguments)
    except (ValueError, RecursionError):
        fail(path, f"expected a JSON object as arguments, got {arguments[:40]!r}", index=index)
    if not isinstance(value, dict):
        fail(path, "a JSON object as arguments", value, index)
    return value


def canonical_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed when it is exactly the canonical JSON text of an object
    (``dumps_compact`` of the result gives ``text`` back), else ``None``."""
    if not text or text[0] != "{" or text[-1] != "}":
        return None
    try:
        value = loads_strict(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and dumps_compact(value) == text:
        return value
    return None


def signature_text(signature: bytes) -> str:
    """A signature blob as the string a provider sends.

    Codecs keep a provider's signature string as its UTF-8 bytes, so this is the
    exact inverse for every signature decoded here. Bytes that are not UTF-8 (for
    example a raw blob from langchaingo) go out as base64 text.
    """
    try:
        return signature.decode("utf-8")
    except UnicodeDecodeError:
        return b64encode(signature)


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """``data:<mime>;base64,<data>`` as ``(mime, bytes)``; ``None`` for other URLs
    or data URLs that are not base64 (RFC 2397)."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    mime = head[5 : -len(";base64")]
    decoded = b64decode_any(data)
    return None if decoded is None else (mime, decoded)


def provider_part(provider: str, kind: str, block: object) -> ProviderPart:
    """``block`` kept whole, as the opaque part of ``provider`` (its wire format)."""
    return ProviderPart(provider=provider, kind=kind, data=dumps_compact(block))


def provider_block(part: ProviderPart, provider: str, path: str, index: int) -> Any:
    """The block a :class:`ProviderPart` holds, when it belongs to ``provider``; a part of
    another provider raises (``cast.port`` turns those into text first)."""
    if part.provider != provider:
        fail(
            path,
            f"a {part.provider} {part.kind!r} block cannot be sent to {provider} "
            "(port the chain to turn it into text)",
            index=index,
        )
    try:
        return loads_strict(part.data)
    except (ValueError, RecursionError):
        fail(f"{path}.data", f"expected JSON text, got {part.data[:40]!r}", index=index)


def as_messages(messages: Iterable[Message | dict[str, Any]]) -> list[Message]:
    """The messages to encode: Messages pass through, dicts (the native JSON form)
    are validated; a bad one raises :class:`CodecError`."""
    return list(iter_messages(messages))


def iter_messages(messages: Iterable[Message | dict[str, Any]]) -> Iterator[Message]:
    """:func:`as_messages` one message at a time, each validated as it is reached (the
    command lines' streamed encoding holds no list of them)."""
    for index, item in enumerate(messages):
        if isinstance(item, Message):
            yield item
            continue
        if not isinstance(item, dict):
            fail(f"messages[{index}]", "a Message or its dict", item, index)
        try:
            message = Message.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CodecError(first["msg"], path=f"messages[{index}].{where}", index=index) from exc
        yield message


Blocks = list[dict[str, Any]]


def encode_user_turns(
    messages: Iterable[Message],
    *,
    api: str,
    results: Callable[[Message, int, Blocks], None],
    human: Callable[[Message, int], Any],
    human_blocks: Callable[[Message, int], Blocks],
    assistant: Callable[[Message, int], Any],
    system: Callable[[Message], Any],
    late_system: Callable[[Message, int], Any] | None = None,
) -> PayloadStream:
    """The request body ``{"messages": [...], "system"?: ...}`` of APIs that carry tool
    results in user turns (Anthropic, Bedrock): consecutive TOOL messages share one
    user turn, results first, and a HUMAN message right after them joins it; the system
    prompt is hoisted. Turns come one at a time (see :mod:`cast.codecs._streaming`).

    ``results`` appends one TOOL message's result blocks to the turn; ``human`` gives a
    user turn's content, ``human_blocks`` the blocks a HUMAN message adds to a results
    turn, ``assistant`` an assistant turn's content, ``system`` the top-level value;
    ``late_system``, where the API takes them, the content of a ``role: "system"``
    message for a SYSTEM message after the first (else such a message is an error).
    """
    tail: dict[str, Any] = {}

    def turns() -> Iterator[dict[str, Any]]:
        tool_turn: Blocks | None = None  # the blocks of the latest results turn
        held: dict[str, Any] | None = None  # that turn, until no message can join it
        for i, message in enumerate(messages):
            role = message.role
            if role is Role.TOOL:
                if tool_turn is None:
                    tool_turn = []
                    held = {"role": "user", "content": tool_turn}
                results(message, i, tool_turn)
                continue
            turn: dict[str, Any] | None = None
            if role is Role.HUMAN:
                if tool_turn is not None and message.parts:
                    tool_turn.extend(human_blocks(message, i))
                else:
                    turn = {"role": "user", "content": human(message, i)}
            elif role is Role.AI:
                turn = {"role": "assistant", "content": assistant(message, i)}
            elif i != 0 and late_system is not None:
                turn = {"role": "system", "content": late_system(message, i)}
            else:
                if i != 0:
                    fail(
                        f"messages[{i}]",
                        f"{api} takes a system prompt only before the first message",
                        index=i,
                    )
                value = system(message)
                if value is not None:
                    tail["system"] = value
            if held is not None:
                yield held
                held = None
            if turn is not None:
                yield turn
            tool_turn = None
        if held is not None:
            yield held

    return PayloadStream("messages", turns(), tail)


def messages_and_system(payload: object) -> tuple[list[Any], object]:
    """The ``messages`` list and the ``system`` field of a request body shaped
    ``{"system": ..., "messages": [...]}`` (Anthropic Messages, Bedrock Converse), or a
    bare message list with no system; anything else is a :class:`CodecError`."""
    if isinstance(payload, list):
        return payload, None
    if not isinstance(payload, dict):
        fail("", "a request body object or a list of messages", payload)
    if "messages" not in payload:
        fail("messages", "the request body has no messages field")
    items = payload["messages"]
    if not isinstance(items, list):
        fail("messages", "an array of messages", items)
    return items, payload.get("system")


# -- detection (see cast.codecs._registry) -----------------------------------------------

FITS = 1
"""A detection score: the payload has the shape of the codec's format, and of others too
(Chat Completions takes any list of message objects)."""
EVIDENCE = 2
"""A detection score: the payload holds what only the codec's format has."""

_GEMINI_KEYS = ("contents", "systemInstruction", "system_instruction")
_FLAT = ("url", "mime_type", "tool_call_id", "arguments", "id")  # chaincast's part fields


def gemini_fields(payload: object) -> bool:
    """Whether ``payload`` has ``generateContent``'s fields (``contents`` or a system
    instruction), which no other request body has."""
    return isinstance(payload, dict) and any(k in payload for k in _GEMINI_KEYS)


def typed_parts_style(dicts: list[dict[str, Any]]) -> str | None:
    """``"langchaingo"`` or ``"chaincast"`` for messages with roles and typed parts (both
    have them: langchaingo nests a part's fields under its type, ``{"type": "tool_call",
    "tool_call": {...}}``, and writes a lone text part as ``{"role", "text"}``, while
    chaincast's parts are flat and its text parts always carry ``reasoning``); None for
    messages without typed parts."""
    if not any("parts" in item or item.get("role") in ("human", "ai", "generic") for item in dicts):
        return None
    for item in dicts:
        if "text" in item or item.get("role") in ("generic", "function"):
            return "langchaingo"
        parts = item.get("parts")
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if not isinstance(kind, str):
                continue
            if kind == "tool_response" or isinstance(part.get(kind), dict):
                return "langchaingo"
            if kind == "tool_result" or any(key in part for key in _FLAT):
                return "chaincast"
            if kind == "text":
                reasoning = part.get("reasoning", ...)
                if reasoning is None or (
                    isinstance(reasoning, dict)
                    and "content" in reasoning
                    and "signature" in reasoning
                ):
                    return "chaincast"
                return "langchaingo"
    return "chaincast"


_CONVERSE_BLOCKS = (
    "text",
    "image",
    "document",
    "video",
    "toolUse",
    "toolResult",
    "reasoningContent",
)


def converse_messages(items: list[Any]) -> bool:
    """Whether ``items`` are Bedrock Converse messages: content blocks keyed by kind
    (``{"toolUse": ...}``), with no ``type``."""
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and any(map(_converse_block, content)):
            return True
    return False


def converse_body(payload: object) -> bool:
    """Whether ``payload`` is a Converse request: ``messages`` or ``system`` holding
    Converse blocks (and none of the fields other requests have)."""
    if not isinstance(payload, dict) or gemini_fields(payload) or "input" in payload:
        return False
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return False
    system = payload.get("system")
    return converse_messages(messages) or (
        isinstance(system, list) and any(map(_converse_block, system))
    )


def _converse_block(block: object) -> bool:
    return (
        isinstance(block, dict)
        and "type" not in block
        and any(key in block for key in _CONVERSE_BLOCKS)
    )
