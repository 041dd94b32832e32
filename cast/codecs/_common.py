"""Helpers shared by the codecs: typed field access that fails with a
:class:`~cast.errors.CodecError` naming the field, exact JSON and base64 conversions, the
message intake, the request-body shapes several formats share, and detection helpers."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from cast.codecs._streaming import PayloadStream
from cast.errors import CodecError
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
from cast.parse import to_message
from cast.transforms import loads_strict

# Roles as module globals (here and in the codecs): ``Role.AI`` is an enum lookup, five
# times slower, on every message.
_HUMAN, _AI, _TOOL = Role.HUMAN, Role.AI, Role.TOOL

T = TypeVar("T")
MISSING: Any = object()
"""A key's absence, told apart from a JSON null."""
REDACTED_THINKING_PREFIX = b"redacted_thinking:"
"""Marks a ``Reasoning.signature`` holding a ``redacted_thinking`` block's ``data``
(``Reasoning(content="", signature=PREFIX + data)``), told apart from omitted thinking."""

_JSON_TYPES = (
    (type(None), "null"),
    (bool, "boolean"),
    (str, "string"),
    (int | float, "number"),
    (list | tuple, "array"),
    (dict, "object"),
)


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    return next(
        (name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__
    )


def error(path: str, expected: str, value: object = ..., index: int | None = None) -> CodecError:
    """A :class:`CodecError` at ``path``; with ``value``, it says what was found."""
    if value is MISSING:
        return CodecError(f"missing; expected {expected}", path=path, index=index)
    message = expected if value is ... else f"expected {expected}, got {json_type(value)}"
    return CodecError(message, path=path, index=index)


def fail(path: str, expected: str, value: object = ..., index: int | None = None) -> NoReturn:
    """Raise :func:`error`."""
    raise error(path, expected, value, index)


def fail_part(i: int, j: int, expected: str) -> NoReturn:
    """Raise: part ``j`` of message ``i`` cannot be encoded (``expected`` says why)."""
    fail(f"messages[{i}].parts[{j}]", expected, index=i)


def ensure(value: object, kind: type[T], path: str, expected: str, i: int | None = None) -> T:
    """``value`` if it is a ``kind``, else a :class:`CodecError` at ``path``."""
    if not isinstance(value, kind):
        fail(path, expected, value, i)
    return value


def get_typed(  # noqa: PLR0917 (read like the call sites: field, type, place)
    obj: dict[str, Any],
    key: str,
    kind: type[T],
    expected: str,
    where: str,
    i: int | None,
    default: Any = None,
) -> T:
    """:func:`ensure` of ``obj[key]`` (``default`` when absent), at ``where.key``."""
    value = obj.get(key, default)
    if not isinstance(value, kind):
        fail(f"{where}.{key}", expected, value, i)
    return value


def get_str(obj: dict[str, Any], key: str, where: str, i: int | None, default: Any = None) -> str:
    """:func:`get_typed` of a string."""
    value = obj.get(key, default)
    if not isinstance(value, str):
        fail(f"{where}.{key}", "a string", value, i)
    return value


def optional_str(
    obj: dict[str, Any], key: str, where: str, i: int | None, expected: str = "a string"
) -> str | None:
    """``obj[key]``: a string, or None when absent or null (else a CodecError)."""
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        fail(f"{where}.{key}", expected, value, i)
    return value


_STANDARD_ONLY = frozenset("+/")
_URL_SAFE_ONLY = frozenset("-_")
_TO_STANDARD = str.maketrans("-_", "+/")


def b64decode_any(text: str) -> bytes | None:
    """Base64 text (standard or URL-safe alphabet, padded or not) as bytes, else None."""
    chars = set(text)
    url_safe = not chars.isdisjoint(_URL_SAFE_ONLY)
    if url_safe and not chars.isdisjoint(_STANDARD_ONLY):
        return None
    if len(text) % 4:
        if text.endswith("="):
            return None
        text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text.translate(_TO_STANDARD) if url_safe else text, validate=True)
    except (binascii.Error, ValueError):
        return None


def b64decode(text: str, path: str, index: int | None = None) -> bytes:
    """Base64 text (either alphabet, padded or not) to bytes, strictly otherwise."""
    data = b64decode_any(text)
    if data is None:
        fail(path, f"expected base64 data, got {text[:40]!r}", index=index)
    return data


def b64encode(data: bytes) -> str:
    """Bytes to standard padded base64 text (what every encoder writes)."""
    return base64.b64encode(data).decode("ascii")


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps_compact(value: object) -> str:
    """Compact JSON with non-ASCII kept, as OpenAI writes tool-call arguments."""
    return _COMPACT.encode(value)


def args_object(arguments: str, path: str, index: int | None = None) -> dict[str, Any]:
    """Tool-call arguments as a JSON object (``""``, from OpenAI streams, is ``{}``)."""
    if not arguments:
        return {}
    try:
        value = loads_strict(arguments)
    except (ValueError, RecursionError):
        fail(path, f"expected a JSON object as arguments, got {arguments[:40]!r}", index=index)
    return ensure(value, dict, path, "a JSON object as arguments", index)


def canonical_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed when it is exactly ``dumps_compact`` of an object, else ``None``."""
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
    """A signature blob as the string a provider sends (not UTF-8: base64)."""
    try:
        return signature.decode("utf-8")
    except UnicodeDecodeError:
        return b64encode(signature)


def redacted(data: str) -> Reasoning:
    """A redacted thinking block's ``data`` as reasoning (:data:`REDACTED_THINKING_PREFIX`)."""
    return Reasoning(signature=REDACTED_THINKING_PREFIX + data.encode("utf-8"))


def redacted_data(reasoning: Reasoning) -> str | None:
    """The ``data`` of the redacted thinking block ``reasoning`` holds, else None."""
    signature = reasoning.signature
    if reasoning.content or not signature.startswith(REDACTED_THINKING_PREFIX):
        return None
    return signature_text(signature[len(REDACTED_THINKING_PREFIX) :])


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """``data:<mime>;base64,<data>`` as ``(mime, bytes)``; ``None`` for other URLs."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    decoded = b64decode_any(data)
    return None if decoded is None else (head[5 : -len(";base64")], decoded)


def image_url_block(part: ImagePart) -> dict[str, Any]:
    """An image by URL as Chat Completions', LangChain's and langchaingo's ``image_url``."""
    image = {"url": part.url}
    if part.detail:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def provider_part(provider: str, kind: str, block: object) -> ProviderPart:
    """``block`` kept whole, as the opaque part of ``provider`` (its wire format)."""
    return ProviderPart(provider=provider, kind=kind, data=dumps_compact(block))


def provider_block(part: ProviderPart, provider: str, path: str, index: int) -> Any:
    """The block a :class:`ProviderPart` of ``provider`` holds; another provider's raises."""
    if part.provider != provider:
        held = f"a {part.provider} {part.kind!r} block cannot be sent to {provider}"
        fail(path, f"{held} (port the chain to turn it into text)", index=index)
    try:
        return loads_strict(part.data)
    except (ValueError, RecursionError):
        fail(f"{path}.data", f"expected JSON text, got {part.data[:40]!r}", index=index)


def as_messages(messages: Iterable[Message | dict[str, Any]]) -> list[Message]:
    """The messages to encode: Messages as they are, dicts validated (CodecError)."""
    return list(iter_messages(messages))


def iter_messages(messages: Iterable[Message | dict[str, Any]]) -> Iterator[Message]:
    """:func:`as_messages` one message at a time (the command lines' streamed encoding)."""
    for index, item in enumerate(messages):
        if isinstance(item, Message):
            yield item
        elif isinstance(item, dict):
            yield to_message(item, index, codec=True)
        else:
            fail(f"messages[{index}]", "a Message or its dict", item, index)


def reasoned(
    message: Message, blocks: list[Any], think: Callable[[Reasoning], Any]
) -> Iterator[tuple[int, Any]]:
    """``message``'s parts by index, an AI part's reasoning first written to ``blocks``."""
    ai = message.role is _AI
    for j, part in enumerate(message.parts):
        reasoning = part.reasoning if ai and isinstance(part, TextPart | ToolCall) else None
        if reasoning is not None:
            blocks.append(think(reasoning))
            if type(part) is TextPart and not part.text:
                continue
        yield j, part


class AiParts(list[Any]):
    """An AI message's parts: reasoning waits for the part it led to (else stands alone)."""

    pending: Reasoning | None = None

    def think(self, reasoning: Reasoning) -> None:
        """A reasoning block; one still waiting stands alone."""
        self.settle()
        self.pending = reasoning

    def take(self) -> Reasoning | None:
        """The waiting reasoning, for the part it led to."""
        pending, self.pending = self.pending, None
        return pending

    def settle(self) -> None:
        """The waiting reasoning alone (nothing it can attach to follows)."""
        if self.pending is not None:
            self.append(TextPart(text="", reasoning=self.pending))
            self.pending = None

    def text(self, text: str) -> None:
        """A text part; a non-empty one takes the waiting reasoning."""
        if self.pending is not None and text:
            self.append(TextPart(text=text, reasoning=self.take()))
            return
        self.settle()
        self.append(TextPart(text=text))

    def message(self, role: Role = _AI) -> Message:
        """The message of these parts."""
        self.settle()
        return trusted_message(role, tuple(self))


Blocks = list[dict[str, Any]]
_NOT_CALLS = (TextPart, ImagePart, BinaryPart, ProviderPart)


def result_parts(
    call_id: str, name: str, parts: list[Any], is_error: bool = False
) -> tuple[Any, ...]:
    """A TOOL message's parts: the result holding a first text of ``parts``, then the rest."""
    text = ""
    if parts and type(parts[0]) is TextPart:
        text = parts[0].text
        parts = parts[1:]
    result = ToolResult(tool_call_id=call_id, name=name, content=text, is_error=is_error)
    return (result, *parts)


def tool_parts(
    parts: tuple[Any, ...], i: int, expected: str, follow: type | tuple[type, ...] = _NOT_CALLS
) -> Iterator[tuple[int, Any]]:
    """TOOL message ``i``'s parts, each result followed by ``follow`` parts only."""
    seen = False
    for j, part in enumerate(parts):
        if isinstance(part, ToolResult):
            seen = True
        elif not seen or not isinstance(part, follow):
            fail_part(i, j, expected)
        yield j, part
    if not seen:
        fail(f"messages[{i}].parts", "a tool message without a tool result", index=i)


def body_items(payload: object, key: str = "messages") -> tuple[list[Any], dict[str, Any]]:
    """The ``key`` list of a request body, and the body (``{}`` for a bare list)."""
    if isinstance(payload, list):
        return payload, {}
    if not isinstance(payload, dict):
        fail("", f"a request body object or a list of {key}", payload)
    if key not in payload:
        fail(key, f"the request body has no {key} field")
    items = payload[key]
    if not isinstance(items, list):
        fail(key, f"an array of {key}", items)
    return items, payload


def system_blocks(
    message: Message, kept: Callable[[ProviderPart, str, int], dict[str, Any]], what: str
) -> Blocks:
    """A system prompt's ``{"text"}`` blocks (kept parts by ``kept``): Bedrock, Gemini."""
    blocks: Blocks = []
    for j, part in enumerate(message.parts):
        if type(part) is TextPart:
            blocks.append({"text": part.text})
        elif type(part) is ProviderPart:
            blocks.append(kept(part, f"messages[0].parts[{j}]", 0))
        else:
            fail(f"messages[0].parts[{j}]", f"{what} holds text only", index=0)
    return blocks


def array_of(payload: object, what: str, key: str = "") -> list[Any]:
    """A payload that must be an array (a list or tuple) of ``what``, or a body holding
    it at ``key``, as a list."""
    if key and isinstance(payload, dict) and key in payload:
        payload = payload[key]
    if not isinstance(payload, list | tuple):
        fail("", f"a list of {what}", payload)
    return list(payload)


def json_history(
    payload: object, key: str, dump: Callable[[list[Any]], list[Any]], what: str
) -> list[Any]:
    """``payload`` (or its ``key``) as JSON dicts; framework objects go through ``dump``."""
    items = array_of(payload, what, key)
    for i, item in enumerate(items):
        if item is None or isinstance(item, str | int | float | list):
            fail(f"[{i}]", "a message object", item, i)
    if all(isinstance(item, dict) for item in items):
        return items
    try:
        return dump(items)
    except ImportError as exc:
        raise error("", f"message dicts ({what} need {exc})") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise error("", f"{what} ({exc})") from exc


def pack_signature(item_id: str | None, signature: str | None) -> bytes:
    """A framework reasoning item as ``Reasoning.signature``: ``id + "\\n" + signature``
    (the signature alone without an id; a redacted one is :func:`redacted`'s)."""
    blob = signature or ""
    if item_id is not None:  # an empty id too, so a signature holding "\n" reads back whole
        return f"{item_id}\n{blob}".encode()
    return blob.encode()


def unpack_signature(blob: bytes) -> tuple[str | None, str | None, bool]:
    """The ``(id, signature, redacted)`` :func:`pack_signature` packed."""
    if blob.startswith(REDACTED_THINKING_PREFIX):
        return None, signature_text(blob[len(REDACTED_THINKING_PREFIX) :]), True
    if not blob:
        return None, None, False
    text = signature_text(blob)
    head, sep, tail = text.partition("\n")
    return (head, tail or None, False) if sep else (None, text, False)


# -- detection (see cast.codecs._registry) -----------------------------------------------

FITS = 1
"""A detection score: the payload has the shape of the codec's format, and of others too
(Chat Completions takes any list of message objects)."""
EVIDENCE = 2
"""A detection score: the payload holds what only the codec's format has."""

_GEMINI_KEYS = ("contents", "systemInstruction", "system_instruction")
_FLAT = ("url", "mime_type", "tool_call_id", "arguments", "id")  # chaincast's part fields


def typed_parts_style(dicts: list[dict[str, Any]]) -> str | None:
    """``"langchaingo"`` or ``"chaincast"`` for messages with roles and typed parts
    (langchaingo nests a part's fields under its type and writes a lone text as
    ``{"role", "text"}``; chaincast's parts are flat, its texts carry ``reasoning``);
    None for messages without typed parts."""
    if not any("parts" in item or item.get("role") in ("human", "ai", "generic") for item in dicts):
        return None
    for item in dicts:
        if "text" in item or item.get("role") in ("generic", "function"):
            return "langchaingo"
        parts = item.get("parts")
        for part in parts if isinstance(parts, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if not isinstance(kind, str):
                continue
            if kind == "tool_response" or isinstance(part.get(kind), dict):
                return "langchaingo"
            if kind == "tool_result" or any(key in part for key in _FLAT):
                return "chaincast"
            if kind == "text":
                reasoning = part.get("reasoning", ...)
                chaincast = reasoning is None or (
                    isinstance(reasoning, dict) and {"content", "signature"} <= reasoning.keys()
                )
                return "chaincast" if chaincast else "langchaingo"
    return "chaincast"


CONVERSE_KINDS = ("text", "image", "document", "video", "toolUse", "toolResult", "reasoningContent")


def converse_messages(items: list[Any]) -> bool:
    """Whether ``items`` are Bedrock Converse messages: untyped blocks keyed by kind."""
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and any(map(_converse_block, content)):
            return True
    return False


def body_format(payload: object) -> str | None:
    """Which request body ``payload`` is by its fields, in this order: ``gemini``
    (``generateContent``'s fields, no other body has them), ``openai_responses`` (an
    ``input``), ``bedrock`` (Converse blocks in ``messages`` or ``system``), ``anthropic``
    (a ``system`` beside ``messages``); None for a body none of them claims."""
    if not isinstance(payload, dict):
        return None
    if any(k in payload for k in _GEMINI_KEYS):
        return "gemini"
    if "input" in payload:
        return "openai_responses"
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return None
    system = payload.get("system")
    if converse_messages(messages) or (
        isinstance(system, list) and any(map(_converse_block, system))
    ):
        return "bedrock"
    return "anthropic" if "system" in payload else None


def _converse_block(block: object) -> bool:
    return (
        isinstance(block, dict)
        and "type" not in block
        and any(key in block for key in CONVERSE_KINDS)
    )


# -- the content blocks Anthropic, Converse and Gemini write in three shapes: each codec
# fills a BlockShapes table, whose read and stream read and write them. What a block is:
TEXT, CALL, THINK, RESULT = "text", "call", "think", "result"

Parts = list[Any]
Block = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockShapes:
    """One format's key names and the readers and writers of its block shapes."""

    key: str = "messages"  # the list of turns in a request body
    content: str = "content"  # a turn's list of blocks
    ai_role: str = "assistant"
    turn: str = "a message object"  # what a turn is, for errors
    content_type: str = "an array of content blocks"  # what its content is, for errors
    content_default: Any = MISSING  # a turn's content when absent (else an error)
    strings: bool = False  # a turn's content may be a string (one text), as a lone text is
    default_role: str | None = None
    system_keys: tuple[str, ...] = ("system",)  # of the system prompt (the first written)
    system: Callable[[Any], Message]  # reads the system prompt
    system_turn: Callable[[object, str, int], Message] | None = None  # a system role
    classify: Callable[[Any, str, int], tuple[str | None, Any, Any]]  # (role, kind, value)
    # (the value of a TEXT is its text, checked)
    marks: Callable[[Any, Parts], None] | None = None  # parts after a text or call block
    call: Callable[[Any, str, int, Any, AiParts], None] | None = None  # appends the call
    think: Callable[[str, Any, str, int], Reasoning] | None = None  # (None: ai_turn's own)
    ai_turn: Callable[[list[Any], int, Any], Message] | None = None  # else read_ai
    result: Callable[[Any, str, int, int, Any], Message]
    other: Callable[[Any, Any, str, int, Parts], None]  # (value, kind): media or kept
    user_other: Callable[[Any, Any, str, int, Parts], None] | None = None  # else other
    tagged: bool = False  # a block's kind is its "type" (else its one key)
    write_call: Callable[[ToolCall, Block], Block]
    write_media: Callable[[ImagePart | BinaryPart, str, int], Block]
    write_kept: Callable[[list[Block], ProviderPart, str, int], None]
    write_think: Callable[[list[Block], Block, Reasoning, bool], Block | None]
    who: Callable[[Role], str] = lambda role: f"a {role.value}"
    write_system: Callable[[Message], Any]
    late_error: str  # a later system prompt, where the format has no system_turn
    results: Callable[[Message, int, Blocks], None]  # a TOOL message into the user turn

    def read(self, payload: object, new_state: Callable[[], Any]) -> list[Message]:
        """The messages of a request body (or of its bare turns); ``new_state()`` pairs results."""
        items, body = body_items(payload, self.key)
        system = next((body[key] for key in self.system_keys if key in body), None)
        out: list[Message] = [] if system is None else [self.system(system)]
        state = new_state()
        for i, item in enumerate(items):
            where = f"{self.key}[{i}]"
            ensure(item, dict, where, self.turn, i)
            at = f"{where}.{self.content}"
            content = item.get(self.content, self.content_default)
            if content is MISSING:
                fail(at, "the message has no content", index=i)
            if not self.strings and not isinstance(content, list):
                fail(at, self.content_type, content, i)
            role = item.get("role", self.default_role)
            if role == "system" and self.system_turn is not None:
                # Accepted inside ``messages`` by the Messages API (instructions mid-chain).
                out.append(self.system_turn(content, at, i))
                continue
            ai = role == self.ai_role
            if not ai and role != "user":
                fail(f"{where}.role", f"expected user or {self.ai_role}, got {role!r}", index=i)
            if isinstance(content, str):
                out.append(trusted_message(_AI if ai else _HUMAN, (TextPart(text=content),)))
            elif not isinstance(content, list):
                fail(at, self.content_type, content, i)
            elif not ai:
                read_user(self, content, i, state, out)
            elif self.ai_turn is not None:
                out.append(self.ai_turn(content, i, state))
            else:
                out.append(read_ai(self, content, i, state))
        return out

    def stream(self, messages: Iterable[Message]) -> PayloadStream:
        """The body ``{key: [...], system?: ...}``, a turn at a time, of APIs with tool
        results in user turns: consecutive TOOL messages (and a HUMAN right after) share one;
        the system prompt is hoisted, a later one is a system turn (``system_turn``) or raises."""
        tail: dict[str, Any] = {}
        content = self.content

        def turns() -> Iterator[dict[str, Any]]:
            tool_turn: Blocks | None = None  # the latest results turn, until nothing can join it
            for i, message in enumerate(messages):
                role = message.role
                if role is _TOOL:
                    if tool_turn is None:
                        tool_turn = []
                    self.results(message, i, tool_turn)
                    continue
                turn: dict[str, Any] | None = None
                if role is _HUMAN:
                    if tool_turn is not None and message.parts:
                        tool_turn.extend(write_blocks(message, i, self))
                    else:
                        turn = {"role": "user", content: write_content(message, i, self)}
                elif role is _AI:
                    turn = {"role": self.ai_role, content: write_blocks(message, i, self)}
                elif i != 0 and self.system_turn is not None:  # written as it is read
                    turn = {"role": "system", content: write_content(message, i, self)}
                else:
                    if i != 0:
                        fail(f"messages[{i}]", self.late_error, index=i)
                    value = self.write_system(message)
                    if value is not None:
                        tail[self.system_keys[0]] = value
                if tool_turn is not None:
                    yield {"role": "user", content: tool_turn}
                    tool_turn = None
                if turn is not None:
                    yield turn
            if tool_turn is not None:
                yield {"role": "user", content: tool_turn}

        return PayloadStream(self.key, turns(), tail)


def read_ai(b: BlockShapes, content: list[Any], i: int, state: Any) -> Message:
    """An AI turn: a reasoning block is the reasoning of the text or call after it."""
    parts = AiParts()
    classify, marks, call, think = b.classify, b.marks, b.call, b.think
    assert call is not None  # (None: the format reads its own AI turns)
    assert think is not None
    at = f"{b.key}[{i}].{b.content}"
    for j, block in enumerate(content):
        where = f"{at}[{j}]"
        role, kind, value = classify(block, where, i)
        if role is TEXT:
            parts.text(value)
            if marks is not None:
                marks(block, parts)
        elif role is CALL:
            call(value, where, i, state, parts)
            if marks is not None:
                marks(block, parts)
        elif role is THINK:
            parts.think(think(kind, value, where, i))
        else:
            parts.settle()
            b.other(value, kind, where, i, parts)
    return parts.message()


def read_user(b: BlockShapes, content: list[Any], i: int, state: Any, out: list[Message]) -> None:
    """Each tool result a TOOL message, each run of other blocks a HUMAN message."""
    classify, marks, other = b.classify, b.marks, b.user_other or b.other
    human: Parts = []
    emitted = False
    at = f"{b.key}[{i}].{b.content}"
    for j, block in enumerate(content):
        where = f"{at}[{j}]"
        role, kind, value = classify(block, where, i)
        if role is RESULT:
            result = b.result(value, where, i, j, state)
            if human:
                out.append(trusted_message(_HUMAN, tuple(human)))
                human = []
            out.append(result)
            emitted = True
        elif role is TEXT:
            human.append(TextPart(text=value))
            if marks is not None:
                marks(block, human)
        else:
            other(value, kind, where, i, human)
    if human or not emitted:
        out.append(trusted_message(_HUMAN, tuple(human)))


def read_call(
    obj: Block, where: str, i: int, names: dict[str, str], parts: AiParts, *, id_key: str = "id"
) -> None:
    """A tool call (``id_key``, ``name``, ``input``) taking the waiting reasoning."""
    call_id = get_str(obj, id_key, where, i)
    name = get_str(obj, "name", where, i)
    arguments = dumps_compact(get_typed(obj, "input", dict, "an object", where, i))
    names[call_id] = name
    parts.append(ToolCall(id=call_id, name=name, arguments=arguments, reasoning=parts.take()))


def read_signed(obj: dict[str, Any], key: str, where: str, i: int) -> Reasoning:
    """Reasoning text at ``key`` with its optional ``signature``."""
    text = get_str(obj, key, where, i)
    return Reasoning(content=text, signature=get_str(obj, "signature", where, i, "").encode())


def think_before(think: Callable[[Reasoning], Block]) -> Callable[..., Block | None]:
    """A ``write_think`` putting ``think``'s block before the part's (alone: instead)."""

    def write(blocks: list[Block], block: Block, reasoning: Reasoning, alone: bool) -> Any:
        blocks.append(think(reasoning))
        return None if alone else block

    return write


def write_blocks(message: Message, i: int, b: BlockShapes) -> list[Block]:
    """A message's content blocks; an AI part's reasoning as ``write_think`` places it."""
    ai = message.role is _AI
    blocks: list[Block] = []
    for j, part in enumerate(message.parts):
        where = f"messages[{i}].parts[{j}]"
        block: Block | None
        if isinstance(part, TextPart):
            block = {"type": "text", "text": part.text} if b.tagged else {"text": part.text}
        elif isinstance(part, ToolCall) and ai:
            block = b.write_call(part, args_object(part.arguments, f"{where}.arguments", i))
        elif isinstance(part, ImagePart | BinaryPart):
            blocks.append(b.write_media(part, where, i))
            continue
        elif isinstance(part, ProviderPart):
            b.write_kept(blocks, part, where, i)
            continue
        else:
            fail(where, f"{b.who(message.role)} message cannot carry a {part.type} part", index=i)
        reasoning = part.reasoning if ai else None
        if reasoning is not None:
            alone = type(part) is TextPart and not part.text
            block = b.write_think(blocks, block, reasoning, alone)
        if block is not None:
            blocks.append(block)
    return blocks


def write_content(message: Message, i: int, b: BlockShapes) -> str | list[Block]:
    """A turn's content: a lone text as a string where the format takes one (``strings``)."""
    parts = message.parts
    if b.strings and len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    return write_blocks(message, i, b)
