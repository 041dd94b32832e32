"""The unchecked fast path for models: messages and parts built from values already
valid, for any pydantic model (``trusted_message`` lives beside ``Message`` in
:mod:`cast.messages`, the AST nodes' builders beside their classes in :mod:`cast.ast`;
:mod:`cast._fast` offers them all).

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

__all__ = ["new_trusted", "with_field"]

_M = TypeVar("_M", bound=BaseModel)

_set = object.__setattr__
# pydantic keeps these three in slots; a model built without __init__ must fill them.
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__
_FIELDS_SETS: dict[type[Any], set[str]] = {}
_DEFAULTS: dict[type[Any], dict[str, Any]] = {}


def new_trusted(cls: type[_M], fields: dict[str, Any], size: int | None = None) -> _M:
    """A ``cls`` model holding ``fields`` (every required field of ``cls``; the others
    take their defaults), not validated.

    ``size`` is stored as the model's cached size (messages only).
    """
    obj = object.__new__(cls)
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        defaults = _DEFAULTS[cls] = {
            name: info.default
            for name, info in cls.model_fields.items()
            if not info.is_required() and info.default_factory is None
        }
    if defaults:  # fields added with a default after a caller was written
        obj.__dict__.update(defaults)
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
