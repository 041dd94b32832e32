"""Roles, parts and messages: frozen pydantic models, ``bytes`` as base64 in JSON, sizes
in UTF-8 bytes computed once per message."""

from __future__ import annotations

import base64
import binascii
import operator
from collections.abc import Iterable
from enum import StrEnum
from functools import cache, cached_property
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Self, TypeAlias, TypeVar, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
)

__all__ = [
    "FIELD_PART_KINDS",
    "MESSAGES_ADAPTER",
    "AnyPart",
    "BinaryPart",
    "ImagePart",
    "Message",
    "Part",
    "ProviderPart",
    "Reasoning",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "new_trusted",
    "part_size",
    "trusted_message",
    "utf8_len",
    "with_field",
]


class Role(StrEnum):
    """Who speaks a message. ``"user"`` and ``"assistant"`` are accepted on input."""

    SYSTEM = "system"
    HUMAN = "human"
    AI = "ai"
    TOOL = "tool"

    @classmethod
    def _missing_(cls, value: object) -> Role | None:
        return _ROLE_ALIASES.get(value.lower()) if isinstance(value, str) else None


_ROLE_ALIASES = {"user": Role.HUMAN, "assistant": Role.AI, **{role.value: role for role in Role}}


def utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes, without encoding ASCII text."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _bytes_from_json(value: Any) -> Any:
    # JSON carries bytes as base64 text; Python callers may pass bytes directly.
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"expected base64 text for bytes, got {value[:40]!r}") from exc
    return value


Base64Bytes: TypeAlias = Annotated[
    bytes,
    BeforeValidator(_bytes_from_json),
    PlainSerializer(
        lambda v: base64.b64encode(v).decode("ascii"), return_type=str, when_used="json"
    ),
]


_SHARED_FIELDS_SETS: dict[frozenset[str], set[str]] = {}
"""One set per distinct combination of field names given (a few per class)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    def model_post_init(self, context: Any, /) -> None:
        # pydantic gives every instance a set of the fields it was given: over 200
        # bytes each, a tenth of a decoded chain. Equal sets are shared instead (never
        # changed in place: the models are frozen, as the fast path's instances are).
        fields = self.__pydantic_fields_set__
        shared = _SHARED_FIELDS_SETS.setdefault(frozenset(fields), fields)
        if shared is not fields:
            object.__setattr__(self, "__pydantic_fields_set__", shared)

    def evolve(self, **changes: Any) -> Self:
        """A copy with some fields changed, without running pydantic again.

        Each field must exist (the ``type`` tag cannot change) and each value must have
        the field's type, else ``TypeError``.
        """
        types = _field_types(type(self))
        for name, value in changes.items():
            allowed = types.get(name)
            if allowed is None:
                raise TypeError(f"{type(self).__name__}.evolve: no field {name!r} to change")
            if not isinstance(value, allowed):
                names = " or ".join("None" if t is NoneType else t.__name__ for t in allowed)
                raise TypeError(
                    f"{type(self).__name__}.evolve: {name} must be {names}, "
                    f"not {type(value).__name__}"
                )
        return new_trusted(type(self), {**self.__dict__, **changes})


@cache
def _field_types(cls: type[BaseModel]) -> dict[str, tuple[type, ...]]:
    """The types each field of ``cls`` accepts (literal tags left out), read once."""
    table = {}
    for name, info in cls.model_fields.items():
        annotation = info.annotation
        if get_origin(annotation) is not Literal:
            union = get_origin(annotation) in (Union, UnionType)
            options = get_args(annotation) if union else (annotation,)
            table[name] = tuple(get_origin(t) or t for t in options)
    return table


class Reasoning(_Frozen):
    """A provider's reasoning: thinking text and/or its opaque signature blob."""

    content: str = ""
    signature: Base64Bytes = b""

    @property
    def size(self) -> int:
        return utf8_len(self.content) + len(self.signature)


class _Part(_Frozen):
    @property
    def size(self) -> int:
        """UTF-8 bytes of every field but ``type``, reasoning included."""
        return part_size(self)  # type: ignore[arg-type]


class TextPart(_Part):
    """Plain text, optionally carrying the reasoning that produced it."""

    type: Literal["text"] = "text"
    text: str
    reasoning: Reasoning | None = None


class ImagePart(_Part):
    """An image by URL (``data:`` URLs included), or other media by URL when
    ``mime_type`` says so (a PDF or a video a provider fetches itself)."""

    type: Literal["image_url"] = "image_url"
    url: str
    detail: str = ""
    mime_type: str = Field(default="", exclude_if=operator.not_)
    """What the URL points to, when the payload said (``""``: an image of any type)."""


class BinaryPart(_Part):
    """Raw bytes with their MIME type (files, audio, inline images)."""

    type: Literal["binary"] = "binary"
    mime_type: str
    data: Base64Bytes
    filename: str = Field(default="", exclude_if=operator.not_)
    """The file's name where the payload gave one (OpenAI ``file.filename``, Bedrock
    document ``name``)."""


class ToolCall(_Part):
    """A function call requested by the AI; ``arguments`` is JSON text."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: str = "{}"
    reasoning: Reasoning | None = None


class ToolResult(_Part):
    """The answer to the tool call whose id is ``tool_call_id``."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = Field(default=False, exclude_if=operator.not_)
    """The tool failed (Anthropic ``is_error``, Bedrock ``status: "error"``)."""


class ProviderPart(_Part):
    """A block only one provider understands, kept whole so that chains sent back to
    that provider are unchanged: ``provider`` is its wire format (``"anthropic"``,
    ``"openai-responses"``, ``"bedrock"``, ``"gemini"``), ``kind`` the block's type on
    the wire (``"web_search_tool_result"``, ``"cache_point"``), ``data`` the block as
    compact JSON text. :func:`cast.port` turns it into a note for other providers.
    """

    type: Literal["provider"] = "provider"
    provider: str
    kind: str
    data: str = "{}"


FIELD_PART_KINDS = frozenset({"caller", "call_fields", "message_fields", "refusal"})
"""``ProviderPart.kind`` values of parts that hold fields of the part (or message) they
belong to, not content of their own: Anthropic ``caller`` of a tool call, ``call_fields``
(Responses ``namespace``, ``caller``; Chat ``index``), ``message_fields`` (Responses
``phase``; Chat ``name``, ``prefix``, ``annotations``, ``reasoning_details``) and the Chat
``refusal`` mark of the text before it. Only their provider reads them (``cast.port``
drops them for others) and summaries leave them out."""


AnyPart: TypeAlias = TextPart | ImagePart | BinaryPart | ToolCall | ToolResult | ProviderPart
"""Any one of the six part classes (``Part`` is the same union, tagged for pydantic)."""

Part: TypeAlias = Annotated[AnyPart, Field(discriminator="type")]

_PART_CLASSES = frozenset({TextPart, ImagePart, BinaryPart, ToolCall, ToolResult, ProviderPart})


def part_size(part: AnyPart) -> int:
    """UTF-8 bytes of every field but ``type``, reasoning included."""
    if type(part) is TextPart:
        size, reasoning = utf8_len(part.text), part.reasoning
    elif type(part) is ToolResult:
        return utf8_len(part.tool_call_id) + utf8_len(part.name) + utf8_len(part.content)
    elif type(part) is ToolCall:
        size = utf8_len(part.id) + utf8_len(part.name) + utf8_len(part.arguments)
        reasoning = part.reasoning
    elif type(part) is ImagePart:
        return utf8_len(part.url) + utf8_len(part.detail) + utf8_len(part.mime_type)
    elif type(part) is ProviderPart:
        return utf8_len(part.provider) + utf8_len(part.kind) + utf8_len(part.data)
    else:
        binary: BinaryPart = part  # type: ignore[assignment]
        return utf8_len(binary.mime_type) + len(binary.data) + utf8_len(binary.filename)
    if reasoning is not None:
        size += utf8_len(reasoning.content) + len(reasoning.signature)
    return size


class Message(_Frozen):
    """One message of a chain: a role and its parts, in order."""

    role: Role
    parts: tuple[Part, ...] = ()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        # Computed once while the message is built: the AST reads it for free.
        self.__dict__["size"] = sum(map(part_size, self.parts))

    @cached_property
    def size(self) -> int:
        """UTF-8 bytes of all parts; the role adds nothing."""
        return sum(map(part_size, self.parts))

    @classmethod
    def from_parts(cls, role: Role | str, parts: Iterable[AnyPart]) -> Message:
        """A message of part models already built, without running pydantic again.

        ``role`` is read like the field (``"user"`` means human); each part must be an
        instance of one of the six part classes, else ``TypeError`` naming its index.
        The size is computed here, as for any message.
        """
        items = parts if type(parts) is tuple else tuple(parts)
        for index, part in enumerate(items):
            if type(part) not in _PART_CLASSES:
                raise TypeError(
                    f"Message.from_parts: parts[{index}] must be a TextPart, ImagePart, "
                    f"BinaryPart, ToolCall, ToolResult or ProviderPart, not {type(part).__name__}"
                )
        return trusted_message(role if type(role) is Role else Role(role), items)

    def evolve(self, **changes: Any) -> Self:
        """A copy with ``role`` and/or ``parts`` changed (checked like :meth:`from_parts`)."""
        unknown = set(changes) - {"role", "parts"}
        if unknown:
            raise TypeError(f"Message.evolve: no field {sorted(unknown)[0]!r} to change")
        role, parts = changes.get("role", self.role), changes.get("parts", self.parts)
        return Message.from_parts(role, parts)  # type: ignore[return-value]

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Message:
        """Copy, recomputing the size when fields change."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied.__dict__["size"] = sum(map(part_size, copied.parts))
        return copied

    @property
    def text(self) -> str:
        """The text parts joined by newlines (reasoning and other parts left out)."""
        return "\n".join(p.text for p in self.parts if type(p) is TextPart)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls among the parts, in order."""
        return tuple(p for p in self.parts if type(p) is ToolCall)

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """The tool results among the parts, in order."""
        return tuple(p for p in self.parts if type(p) is ToolResult)

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message with one text part."""
        return Message(role=Role.SYSTEM, parts=(TextPart(text=text),))

    @classmethod
    def human(cls, text: str) -> Message:
        """A human message with one text part."""
        return Message(role=Role.HUMAN, parts=(TextPart(text=text),))

    @classmethod
    def ai(cls, text: str = "", *tool_calls: ToolCall) -> Message:
        """An AI message: optional text, then tool calls."""
        parts: tuple[Any, ...] = ((TextPart(text=text),) if text else ()) + tool_calls
        return Message(role=Role.AI, parts=parts)

    @classmethod
    def tool(cls, tool_call_id: str, name: str, content: str) -> Message:
        """A tool message holding one result."""
        result = ToolResult(tool_call_id=tool_call_id, name=name, content=content)
        return Message(role=Role.TOOL, parts=(result,))


MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def trusted_message(role: Role, parts: tuple[Any, ...], size: int | None = None) -> Message:
    """A message of valid parts; its size is computed unless given."""
    if size is None:
        size = sum(map(part_size, parts))
    return new_trusted(Message, {"role": role, "parts": parts}, size)


# -- the unchecked fast path: models built from values already valid ---------------------------

_M = TypeVar("_M", bound=BaseModel)
# pydantic keeps these three in slots; a model built without __init__ must fill them.
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__
_DEFAULTS: dict[type[Any], tuple[dict[str, Any], set[str]]] = {}
"""Each class's field defaults, and the fields set its trusted instances share."""


def new_trusted(cls: type[_M], fields: dict[str, Any], size: int | None = None) -> _M:
    """A ``cls`` model of ``fields`` (others default), not validated; ``size``: a message's size."""
    obj = object.__new__(cls)
    known = _DEFAULTS.get(cls)
    if known is None:
        model_fields = cls.model_fields.items()
        defaults = {n: f.default for n, f in model_fields if not f.is_required()}
        known = _DEFAULTS[cls] = (defaults, set(cls.model_fields))
    obj.__dict__.update(known[0])
    obj.__dict__.update(fields)
    if size is not None:
        obj.__dict__["size"] = size
    _SET_FIELDS_SET(obj, known[1])  # shared: pydantic never mutates it
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def with_field(model: _M, name: str, value: object) -> _M:
    """A copy of a part (not a message) with one field replaced, not validated."""
    obj = object.__new__(type(model))
    obj.__dict__.update(model.__dict__)
    obj.__dict__[name] = value
    _SET_FIELDS_SET(obj, model.__pydantic_fields_set__)
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def _retagged(*classes: type[BaseModel]) -> None:
    """Give ``classes`` consecutive CPython type version tags, so that reads on them never
    evict each other from CPython's method cache. Pydantic's ``__getattr__`` sends every
    attribute read on a model through a hook that looks ``__getattr__`` and
    ``__getattribute__`` up on the class, in a 4,096-slot cache indexed by the class's
    tag XOR the name's address / 8. Those two names lie 64 bytes apart, so two classes
    whose tags differ by 8 share slots, and in import order Message and ToolResult often
    did: each read then walked the MRO (+10 % instructions for a summary run). Tags in a
    row differ by less than 8. Setting an attribute on a class drops its tag; its next
    look-up gives it the next one."""
    for cls in classes:
        type.__setattr__(cls, "__doc__", cls.__doc__)
    for cls in classes:
        getattr(cls, "_version_tag", None)  # a look-up on the class itself tags it


_retagged(Message, TextPart, ToolCall, ToolResult, Reasoning, ImagePart, BinaryPart, ProviderPart)
