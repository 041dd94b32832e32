"""Gemini ``generateContent`` codec: ``{"systemInstruction": ..., "contents": [...]}``
(mapping, ids, thoughts and sources in docs/codecs.md)."""

from __future__ import annotations

import mimetypes
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from cast.codecs._common import (
    EVIDENCE,
    MISSING,
    RESULT,
    TEXT,
    BlockShapes,
    as_messages,
    b64decode,
    b64encode,
    body_format,
    canonical_object,
    dumps_compact,
    ensure,
    fail,
    get_str,
    get_typed,
    optional_str,
    parse_data_url,
    provider_block,
    provider_part,
    signature_text,
    system_blocks,
    tool_parts,
)
from cast.constants import DEFAULT_TOOL_CALL_ID_TEMPLATE
from cast.ids import TemplateLike, as_template
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

__all__ = ["decode", "detect", "detect_messages", "encode"]

_AI, _TOOL, _SYSTEM = Role.AI, Role.TOOL, Role.SYSTEM

_PROVIDER = "gemini"
_MEDIA_KEYS = {"inlineData", "inline_data", "fileData", "file_data"}

# The REST API accepts both spellings (proto3 JSON mapping); the SDKs' dict forms use
# snake_case. Decode reads either; encode writes lowerCamelCase.
_SNAKE = {
    "systemInstruction": "system_instruction",
    "thoughtSignature": "thought_signature",
    "inlineData": "inline_data",
    "fileData": "file_data",
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "mimeType": "mime_type",
    "fileUri": "file_uri",
}


def _get(obj: dict[str, Any], key: str) -> Any:
    value = obj.get(key, MISSING)
    return obj.get(_SNAKE[key], MISSING) if value is MISSING else value


class _Ids:
    """Ids for calls and responses that arrive without one (see docs/codecs.md)."""

    def __init__(self, template: TemplateLike) -> None:
        self.template = as_template(template)
        self.pending: defaultdict[str, deque[str]] = defaultdict(deque)

    def call(self, call_id: str | None, name: str, c: int, j: int) -> str:
        if call_id is None:
            call_id = self.template.generate(name, seed=f"gemini:call:{c}:{j}:{name}")
        self.pending[name].append(call_id)
        return call_id

    def response(self, call_id: str | None, name: str, c: int, j: int) -> str:
        queue = self.pending.get(name)
        if call_id is not None:
            if queue and call_id in queue:
                queue.remove(call_id)
            return call_id
        if queue:
            return queue.popleft()
        return self.template.generate(name, seed=f"gemini:response:{c}:{j}:{name}")


def decode(
    payload: object, *, id_template: TemplateLike = DEFAULT_TOOL_CALL_ID_TEMPLATE
) -> list[Message]:
    """Messages of a ``generateContent`` request body (or of its bare ``contents``).

    ``id_template`` shapes the ids made up for calls that have none on the wire.
    """
    return _BLOCKS.read(payload, lambda: _Ids(id_template))


def _decode_system(system: object) -> Message:
    system = ensure(system, dict, "systemInstruction", "a content object")
    parts = get_typed(system, "parts", list, "an array of parts", "systemInstruction", None)
    texts: list[TextPart] = []
    for j, part in enumerate(parts):
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            fail(f"systemInstruction.parts[{j}]", "a text part", part)
        texts.append(TextPart(text=text))
    return trusted_message(_SYSTEM, tuple(texts))


def _signature(part: dict[str, Any], where: str, c: int) -> bytes:
    signature = _get(part, "thoughtSignature")
    if signature is MISSING or signature is None:
        return b""
    return ensure(signature, str, f"{where}.thoughtSignature", "base64 text", c).encode()


def _attachable(part: object) -> bool:
    """Whether a thought part right before ``part`` is read as ``part``'s reasoning."""
    if not isinstance(part, dict) or part.get("thought") is True:
        return False
    if _get(part, "functionCall") is not MISSING:
        return True
    text = part.get("text")
    return isinstance(text, str) and text != ""


def _decode_model(parts: list[Any], c: int, ids: _Ids) -> Message:
    out: list[Any] = []
    thought = ""  # the reasoning of the part after it
    for j, raw in enumerate(parts):
        where = f"contents[{c}].parts[{j}]"
        part = ensure(raw, dict, where, "a part object", c)
        signature = _signature(part, where, c)
        if part.get("thought") is True:
            text = get_str(part, "text", where, c, "")
            if text and not signature and j + 1 < len(parts) and _attachable(parts[j + 1]):
                thought = text
            else:
                out.append(
                    TextPart(text="", reasoning=Reasoning(content=text, signature=signature))
                )
            continue
        reasoning = (
            Reasoning(content=thought, signature=signature) if thought or signature else None
        )
        thought = ""
        out.append(_decode_model_part(part, c, j, reasoning, ids))
    return trusted_message(_AI, tuple(out))


def _decode_model_part(
    part: dict[str, Any], c: int, j: int, reasoning: Reasoning | None, ids: _Ids
) -> Any:
    where = f"contents[{c}].parts[{j}]"
    text = part.get("text", MISSING)
    if text is not MISSING:
        text = ensure(text, str, f"{where}.text", "a string", c)
        return TextPart(text=text, reasoning=reasoning)
    call = _get(part, "functionCall")
    if call is MISSING:
        if _get(part, "functionResponse") is not MISSING:
            fail(f"{where}.functionResponse", "function responses belong in a user turn", index=c)
        return _decode_media(part, c, where)
    where = f"{where}.functionCall"
    call = ensure(call, dict, where, "an object with name and args", c)
    name = get_str(call, "name", where, c)
    args = get_typed(call, "args", dict, "an object", where, c, {})
    call_id = ids.call(optional_str(call, "id", where, c), name, c, j)
    return ToolCall(id=call_id, name=name, arguments=dumps_compact(args), reasoning=reasoning)


def _decode_media(part: dict[str, Any], c: int, where: str) -> Any:
    """``inlineData`` as bytes, ``fileData`` by URL; any other part kept whole."""
    if len(part) != 1 or not _MEDIA_KEYS.issuperset(part):
        kind = next(
            (str(k) for k in part if k not in ("thoughtSignature", "thought_signature")), ""
        )
        if not kind:
            expected = "a text, functionCall, functionResponse, inlineData or fileData part"
            fail(where, expected, index=c)
        return provider_part(_PROVIDER, kind, part)
    inline = _get(part, "inlineData")
    if inline is not MISSING:
        inline = ensure(inline, dict, f"{where}.inlineData", "an object with mimeType and data", c)
        mime = ensure(_get(inline, "mimeType"), str, f"{where}.inlineData.mimeType", "a string", c)
        data = get_typed(inline, "data", str, "base64 text", f"{where}.inlineData", c)
        return BinaryPart(mime_type=mime, data=b64decode(data, f"{where}.inlineData.data", c))
    file = ensure(_get(part, "fileData"), dict, f"{where}.fileData", "an object with fileUri", c)
    uri = ensure(_get(file, "fileUri"), str, f"{where}.fileData.fileUri", "a string", c)
    mime = _get(file, "mimeType")
    mime = "" if mime is MISSING else ensure(mime, str, f"{where}.fileData.mimeType", "a string", c)
    return ImagePart(url=uri, mime_type=mime)


def _classify(part: object, where: str, c: int) -> tuple[str | None, str, Any]:
    """A user turn's part: a function response, a text, or else (media, kept, a call)."""
    part = ensure(part, dict, where, "a part object", c)
    response = _get(part, "functionResponse")
    if response is not MISSING:
        return RESULT, "functionResponse", response
    text = part.get("text", MISSING)
    if text is not MISSING:
        return TEXT, "text", ensure(text, str, f"{where}.text", "a string", c)
    return None, "functionCall" if _get(part, "functionCall") is not MISSING else "", part


def _decode_other(part: dict[str, Any], kind: str, where: str, c: int, human: list[Any]) -> None:
    if kind == "functionCall":
        fail(f"{where}.functionCall", "function calls belong in a model turn", index=c)
    human.append(_decode_media(part, c, where))


def _decode_response(response: object, where: str, c: int, j: int, ids: _Ids) -> Message:
    where = f"{where}.functionResponse"
    response = ensure(response, dict, where, "an object with name and response", c)
    name = get_str(response, "name", where, c)
    call_id = optional_str(response, "id", where, c)
    body = get_typed(response, "response", dict, "an object", where, c, {})
    # Gemini 3: images and documents a tool returned
    media = get_typed(response, "parts", list, "an array of parts", where, c, [])
    extras: list[Any] = []
    for k, inner in enumerate(media):
        ensure(inner, dict, f"{where}.parts[{k}]", "a part object", c)
        extras.append(_decode_media(inner, c, f"{where}.parts[{k}]"))
    error = body.get("error") if len(body) == 1 else None
    result = ToolResult(
        tool_call_id=ids.response(call_id, name, c, j),
        name=name,
        content=error if isinstance(error, str) else _response_text(body),
        is_error=isinstance(error, str),
    )
    return trusted_message(_TOOL, (result, *extras))


def _response_text(body: dict[str, Any]) -> str:
    """``{"result": text}`` (or ``{"error": text}``) is that text; other objects compact JSON."""
    if len(body) == 1:
        value = body.get("result", MISSING)
        if isinstance(value, str):
            return value
    return dumps_compact(body)


def _response_object(content: str) -> dict[str, Any]:
    """Inverse of :func:`_response_text`: ``content`` as the object it is, or wrapped."""
    value = canonical_object(content)
    if value is not None and not (
        len(value) == 1 and isinstance(value.get("result", value.get("error")), str)
    ):
        return value
    return {"result": content}


def encode(
    messages: Iterable[Message | dict[str, Any]], *, include_ids: bool = True
) -> dict[str, Any]:
    """A ``generateContent`` request body ``{"systemInstruction"?, "contents"}``.

    With ``include_ids=False`` calls and responses go without ``id`` (Gemini 2.x and
    Vertex AI endpoints that reject it); responses then pair with calls by order.
    """
    blocks = _BLOCKS if include_ids else _BLOCKS_WITHOUT_IDS
    return blocks.stream(as_messages(messages)).whole()


def _kept(part: ProviderPart, where: str, i: int) -> dict[str, Any]:
    block = provider_block(part, _PROVIDER, where, i)
    return ensure(block, dict, f"{where}.data", "a JSON object (a whole part)", i)


_MEDIA_TYPES = mimetypes.MimeTypes()
"""Python's own table of media types, not the machine's (``/etc/mime.types``), so a URL
encodes alike on every machine."""


def _encode_media(part: ImagePart | BinaryPart) -> dict[str, Any]:
    if isinstance(part, BinaryPart):
        return {"inlineData": {"mimeType": part.mime_type, "data": b64encode(part.data)}}
    url = part.url
    inline = parse_data_url(url)
    if inline is not None:
        return {"inlineData": {"mimeType": inline[0], "data": b64encode(inline[1])}}
    file: dict[str, str] = {"fileUri": url}
    mime = part.mime_type or _MEDIA_TYPES.guess_type(url, strict=False)[0]
    if mime:
        file["mimeType"] = mime
    return {"fileData": file}


def _thought(
    parts: list[dict[str, Any]], out: dict[str, Any], reasoning: Reasoning, alone: bool
) -> dict[str, Any]:
    """A thought part before ``out`` (alone: instead of it), the signature on ``out``."""
    if reasoning.content:
        thought = {"text": reasoning.content, "thought": True}
        if alone:
            out = thought  # a reasoning-only part: the thought part alone, signed
        else:
            parts.append(thought)
    if reasoning.signature:
        out["thoughtSignature"] = signature_text(reasoning.signature)
    return out


def _encode_results(
    message: Message, i: int, include_ids: bool, parts: list[dict[str, Any]]
) -> None:
    """``functionResponse`` parts: later texts join the result's, media its ``parts``."""
    results: list[tuple[ToolResult, list[str], list[dict[str, Any]]]] = []
    for j, part in tool_parts(message.parts, i, _RESULT_EXPECTED):
        if isinstance(part, ToolResult):
            results.append((part, [], []))
        elif isinstance(part, TextPart):
            results[-1][1].append(part.text)
        elif isinstance(part, ProviderPart):
            results[-1][2].append(_kept(part, f"messages[{i}].parts[{j}]", i))
        else:
            results[-1][2].append(_encode_media(part))
    for result, extra, media in results:
        content = "\n".join([result.content, *extra]) if extra else result.content
        # A failed call goes as {"error": text}, the documented key for error details.
        body = {"error": content} if result.is_error else _response_object(content)
        response: dict[str, Any] = {"name": result.name, "response": body}
        if include_ids:
            response["id"] = result.tool_call_id
        if media:
            response["parts"] = media
        parts.append({"functionResponse": response})


_RESULT_EXPECTED = "a Gemini tool turn holds function responses (with text and media) only"


_BLOCKS = BlockShapes(
    key="contents",
    content="parts",
    ai_role="model",
    turn="a content object",
    content_type="an array of parts",
    system_keys=("systemInstruction", "system_instruction"),
    system=_decode_system,
    write_system=lambda message: {"parts": system_blocks(message, _kept, "the system instruction")},
    late_error="Gemini takes a system instruction only before the first message",
    results=lambda message, i, parts: _encode_results(message, i, True, parts),
    classify=_classify,
    result=_decode_response,
    other=_decode_other,
    write_call=lambda part, args: {
        "functionCall": {"name": part.name, "args": args, "id": part.id}
    },
    write_media=lambda part, _where, _i: _encode_media(part),
    write_kept=lambda parts, part, where, i: parts.append(_kept(part, where, i)),
    write_think=_thought,
    ai_turn=_decode_model,
    default_role="user",  # a single-turn request may omit it
    content_default=[],
    who=lambda role: "an AI" if role is _AI else "a human",
)
_BLOCKS_WITHOUT_IDS = replace(
    _BLOCKS,
    write_call=lambda part, args: {"functionCall": {"name": part.name, "args": args}},
    results=lambda message, i, parts: _encode_results(message, i, False, parts),
)


# -- detection (see cast.codecs._registry) -----------------------------------------------


_CONTENT_KEYS = frozenset({"role", "parts"})


def detect(payload: object) -> int:
    """``generateContent``: ``contents`` or a system instruction."""
    return EVIDENCE if body_format(payload) == "gemini" else 0


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """A ``model`` role, or ``parts`` whose items have no ``type``, in ``Content``
    objects (which hold nothing but ``role`` and ``parts``)."""
    if not all(_CONTENT_KEYS.issuperset(item) for item in dicts):
        return 0
    for item in dicts:
        parts = item.get("parts")
        if item.get("role") == "model" or (
            isinstance(parts, list) and any(isinstance(p, dict) and "type" not in p for p in parts)
        ):
            return EVIDENCE
    return 0
