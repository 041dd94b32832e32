"""Exceptions of ``cast``.

Hierarchy::

    ValueError
    └── ChainError              a chain breaks a parse rule (carries .index, .rule)
        ├── MessageFormatError  an input message is not a valid Message (.field)
        ├── CodecError          a provider payload cannot be decoded (.path)
        └── IdTemplateError     a tool-call id template is malformed or exhausted

Every error says where the problem is: the position of the offending message in the
caller's input (``index``), and for format errors the field path inside it.
"""

from __future__ import annotations

__all__ = ["ChainError", "CodecError", "IdTemplateError", "MessageFormatError"]


class ChainError(ValueError):
    """A chain that breaks a rule; ``index`` is the offending message's input position."""

    def __init__(self, message: str, *, index: int | None = None, rule: str | None = None) -> None:
        self.detail = message
        self.index = index
        self.rule = rule
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"message {self.index}: " if self.index is not None else ""
        return f"{where}{self.detail}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.detail, self.index, self.rule))


def _rebuild(cls: type[ChainError], detail: str, index: int | None, rule: str | None) -> ChainError:
    return cls(detail, index=index, rule=rule)


class MessageFormatError(ChainError):
    """An input item is not a valid message; ``field`` names the bad field."""

    def __init__(self, message: str, *, index: int | None = None, field: str = "") -> None:
        self.field = field
        super().__init__(message, index=index, rule="format")

    def _render(self) -> str:
        where = f"message {self.index}" if self.index is not None else "message"
        if self.field:
            where += f", field {self.field}"
        return f"{where}: {self.detail}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_format, (self.detail, self.index, self.field))


def _rebuild_format(detail: str, index: int | None, field: str) -> MessageFormatError:
    return MessageFormatError(detail, index=index, field=field)


class CodecError(ChainError):
    """A provider payload that cannot be decoded or encoded; ``path`` locates the field.

    ``path`` reads like the provider's own error messages, e.g.
    ``messages[3].content[1].tool_use_id``.
    """

    def __init__(self, message: str, *, path: str = "", index: int | None = None) -> None:
        self.path = path
        super().__init__(message, index=index, rule="codec")

    def _render(self) -> str:
        return f"{self.path}: {self.detail}" if self.path else self.detail

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_codec, (self.detail, self.path, self.index))


def _rebuild_codec(detail: str, path: str, index: int | None) -> CodecError:
    return CodecError(detail, path=path, index=index)


class IdTemplateError(ChainError):
    """A malformed id template, or one that cannot yield enough distinct ids."""

    def __init__(self, message: str) -> None:
        super().__init__(message, rule="id-template")
