"""Exceptions of ``cast``, and the rules a chain can break.

Hierarchy::

    ValueError
    ├── ChainError                  a chain or a value in it is unusable (.index, .rule)
    │   ├── MessageFormatError      an input message is not a valid Message (.field)
    │   ├── CodecError              a provider payload cannot be decoded (.path)
    │   ├── IdTemplateError         a tool-call id template is malformed or exhausted
    │   └── UnknownProviderError    a provider name nobody registered (.name, .known)
    └── InputError                  the command lines' input or output cannot be used:
                                    a file missing or unreadable, not UTF-8, not JSON,
                                    an unknown format name (the OSError is __cause__)

Every :class:`ChainError` says where: the offending message's input position
(``index``), the :class:`ParseRule` it breaks (``rule``), for format errors the field.
The functions that parse, check and repair chains are found by :class:`Registry`.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "AmbiguousFormatError",
    "ChainError",
    "CodecError",
    "IdTemplateError",
    "InputError",
    "MessageFormatError",
    "ParseRule",
    "Registry",
    "UnknownProviderError",
    "install_hint",
    "located_error",
]


_F = TypeVar("_F", bound=Callable[..., Any])
_R = TypeVar("_R")


class ParseRule(StrEnum):
    """What a :class:`ChainError` says was broken (its ``rule``): the seven parse rules
    of :mod:`cast.parse`, then the checks outside the chain's structure. The values are
    plain strings: ``error.rule == "consecutive-human"`` holds."""

    FIRST_MESSAGE = "first-message"
    """Rule 1: the chain must open with a system or human message."""
    SYSTEM_POSITION = "system-position"
    """Rule 2: a system message may only open the chain."""
    CONSECUTIVE_HUMAN = "consecutive-human"
    """Rule 3: a human message right after another human message."""
    ORPHAN_TOOL_MESSAGE = "orphan-tool-message"
    """Rule 5: a tool message that follows no AI message with tool calls."""
    MISSING_TOOL_RESULT = "missing-tool-result"
    """Rule 6: a tool call left without a result when its pair closes."""
    UNKNOWN_TOOL_RESULT = "unknown-tool-result"
    """Rule 7: a result whose id matches no call of its pair."""
    DUPLICATE_TOOL_RESULT = "duplicate-tool-result"
    """Rule 7: a second result for a call already answered."""
    FORMAT = "format"
    """An input item is not a valid message (:class:`MessageFormatError`)."""
    CODEC = "codec"
    """A provider payload cannot be decoded or encoded (:class:`CodecError`)."""
    ID_TEMPLATE = "id-template"
    """A malformed or exhausted id template (:class:`IdTemplateError`)."""
    UNKNOWN_PROVIDER = "unknown-provider"
    """A provider name nobody registered (:class:`UnknownProviderError`)."""
    UNKNOWN_TOOL_CALL = "unknown-tool-call"
    """A tool call id the chain does not hold (``add_tool_response``)."""


class ChainError(ValueError):
    """A chain that breaks a rule; ``index`` is the offending message's input position
    (``None`` when no single message is at fault), ``rule`` the :class:`ParseRule`."""

    def __init__(
        self, message: str, *, index: int | None = None, rule: ParseRule | str | None = None
    ) -> None:
        self.detail = message
        self.index = index
        self.rule: ParseRule | None = None if rule is None else ParseRule(rule)
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"message {self.index}: " if self.index is not None else ""
        return f"{where}{self.detail}"

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt from its args and state, whatever the subclass's constructor takes.
        return (type(self).__new__, (type(self), *self.args), self.__dict__)


class MessageFormatError(ChainError):
    """An input item is not a valid message; ``field`` names the bad field."""

    def __init__(self, message: str, *, index: int | None = None, field: str = "") -> None:
        self.field = field
        super().__init__(message, index=index, rule=ParseRule.FORMAT)

    def _render(self) -> str:
        where = f"message {self.index}" if self.index is not None else "message"
        if self.field:
            where += f", field {self.field}"
        return f"{where}: {self.detail}"


class CodecError(ChainError):
    """A provider payload that cannot be decoded or encoded; ``path`` locates the field
    as the provider's own errors do (``messages[3].content[1].tool_use_id``)."""

    def __init__(self, message: str, *, path: str = "", index: int | None = None) -> None:
        self.path = path
        super().__init__(message, index=index, rule=ParseRule.CODEC)

    def _render(self) -> str:
        return f"{self.path}: {self.detail}" if self.path else self.detail


class AmbiguousFormatError(CodecError):
    """A payload that two or more registered formats fit, each reading it differently:
    detection names them (``formats``) instead of guessing; name one to decode it."""

    def __init__(self, formats: tuple[str, ...]) -> None:
        self.formats = formats
        names = " and ".join(repr(name) for name in formats)
        super().__init__(f"the payload fits {names}, which read it differently")


class IdTemplateError(ChainError):
    """A malformed id template, or one that cannot yield enough distinct ids."""

    def __init__(self, message: str) -> None:
        super().__init__(message, rule=ParseRule.ID_TEMPLATE)


class UnknownProviderError(ChainError):
    """A provider name that is not registered; the message lists the known names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown provider {name!r}; known providers: {', '.join(known)}",
            rule=ParseRule.UNKNOWN_PROVIDER,
        )


def located_error(
    exc: ValidationError, index: int | None = None, *, codec: bool = False
) -> ChainError:
    """``exc``'s first error as a :class:`MessageFormatError` (index, dotted field) or, with
    ``codec``, a :class:`CodecError` (``messages[3].parts[0].text``); ``index``: of one message."""
    first = exc.errors()[0]
    loc = first["loc"]
    if index is None and loc and isinstance(loc[0], int):
        index, loc = loc[0], loc[1:]
    if not codec:
        return MessageFormatError(first["msg"], index=index, field=".".join(map(str, loc)))
    path = "messages" if index is None else f"messages[{index}]"
    path += "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    return CodecError(first["msg"], path=path, index=index)


class Registry(dict[Any, Callable[..., _R]], Generic[_R]):
    """Functions by key, each registered by a decorator where it is defined, so that a
    module finds the functions of modules that import it (no import loop)."""

    def register(self, key: object) -> Callable[[_F], _F]:
        """Register the decorated function as the one for ``key``; one per key."""

        def register(function: _F) -> _F:
            if self.setdefault(key, function) is not function:
                raise ValueError(f"{key!r} is registered twice")
            return function

        return register

    def __missing__(self, key: object) -> Callable[..., _R]:
        raise LookupError(f"no function implements {key!r} (none is registered for it)")


class InputError(ValueError):
    """A chain file, payload or format name the command lines cannot use (not a
    :class:`ChainError`: no chain is known yet); an ``OSError`` cause is ``__cause__``."""


def install_hint(extra: str) -> str:
    """The install line for an optional extra, for the ``ImportError`` of a module that
    needs it: the package form and the form that works from a checkout."""
    return f"pip install 'chaincast[{extra}]' (from a checkout: pip install '.[{extra}]')"
