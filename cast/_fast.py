"""The unchecked fast path: frozen models and AST nodes built from values already valid.

Private to ``cast``. The parser, the transforms and the codecs rebuild thousands of
messages and nodes from parts of validated ones; checking them again would cost more
than the work itself. Everything here trusts its caller: nothing is validated, sizes
are taken as given. Other packages use the checked public builders instead
(:meth:`Message.from_parts`, ``part.evolve(...)``, :meth:`Section.build` and friends),
which check what they are given and then come here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from cast.ast import BodyPair, BodyPairType, ChainAST, Header, Section
from cast.messages import Message, Role, part_size

__all__ = [
    "new_trusted",
    "trusted_chain",
    "trusted_header",
    "trusted_message",
    "trusted_pair",
    "trusted_section",
    "with_field",
]

_M = TypeVar("_M", bound=BaseModel)

_set = object.__setattr__
# pydantic keeps these three in slots; a model built without __init__ must fill them.
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__
_FIELDS_SETS: dict[type[Any], set[str]] = {}


def new_trusted(cls: type[_M], fields: dict[str, Any], size: int | None = None) -> _M:
    """A ``cls`` model holding ``fields`` (every field of ``cls``), not validated.

    ``size`` is stored as the model's cached size (messages only).
    """
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    if size is not None:
        obj.__dict__["size"] = size
    fields_set = _FIELDS_SETS.get(cls)
    if fields_set is None:
        fields_set = _FIELDS_SETS[cls] = set(cls.model_fields)
    # The fields set is shared between trusted instances; pydantic never mutates it.
    _SET_FIELDS_SET(obj, fields_set)
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def with_field(model: _M, name: str, value: object) -> _M:
    """A copy of a part (not a message) with one field replaced, not validated."""
    obj = object.__new__(type(model))
    fields = obj.__dict__
    fields.update(model.__dict__)
    fields[name] = value
    _SET_FIELDS_SET(obj, model.__pydantic_fields_set__)
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def trusted_message(role: Role, parts: tuple[Any, ...], size: int | None = None) -> Message:
    """A message of valid parts; its size is computed unless given."""
    if size is None:
        size = sum(map(part_size, parts))
    return new_trusted(Message, {"role": role, "parts": parts}, size)


def trusted_header(system: Message | None, human: Message | None, size: int) -> Header:
    """A header; ``size`` must be the sum of its messages' sizes."""
    node = Header.__new__(Header)
    _set(node, "system_message", system)
    _set(node, "human_message", human)
    _set(node, "size", size)
    return node


def trusted_pair(
    kind: BodyPairType,
    ai_message: Message,
    tool_messages: tuple[Message, ...],
    size: int | None = None,
) -> BodyPair:
    """A body pair; its size is computed from the messages unless given."""
    if size is None:
        size = ai_message.size + sum(m.size for m in tool_messages)
    node = BodyPair.__new__(BodyPair)
    _set(node, "type", kind)
    _set(node, "ai_message", ai_message)
    _set(node, "tool_messages", tool_messages)
    _set(node, "size", size)
    return node


def trusted_section(header: Header, body: tuple[BodyPair, ...], size: int | None = None) -> Section:
    """A section; its size is computed from the children unless given."""
    if size is None:
        size = header.size + sum(pair.size for pair in body)
    node = Section.__new__(Section)
    _set(node, "header", header)
    _set(node, "body", body)
    _set(node, "size", size)
    return node


def trusted_chain(sections: tuple[Section, ...], size: int | None = None) -> ChainAST:
    """A chain; its size is computed from the sections unless given."""
    node = ChainAST.__new__(ChainAST)
    _set(node, "sections", sections)
    _set(node, "size", sum(s.size for s in sections) if size is None else size)
    return node
