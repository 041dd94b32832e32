"""What the framework codecs (pydantic-ai, LangChain) share: reading a history given as
the framework's objects or as their JSON form, and one packing of a reasoning item's
id, signature and redaction into ``Reasoning.signature``.

The packing is the Responses codec's (``id + "\\n" + signature``; the signature alone
without an id), with the Anthropic codec's :data:`REDACTED_THINKING_PREFIX` for redacted
thinking, so the same provider reasoning reads the same through every codec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cast.codecs._common import error, fail, signature_text
from cast.codecs.anthropic import REDACTED_THINKING_PREFIX
from cast.messages import Message, Role

__all__ = [
    "SignedReasoning",
    "json_history",
    "message_of",
    "pack_signature",
    "unpack_signature",
]


def message_of(role: Role, parts: tuple[Any, ...]) -> Message:
    """A message of parts the codec built (validated: these codecs are not hot paths)."""
    return Message(role=role, parts=parts)


def json_history(
    payload: object, key: str, dump: Callable[[list[Any]], list[Any]], what: str
) -> list[Any]:
    """``payload`` (a list, or a dict holding it under ``key``) as a list of JSON dicts.

    When it holds objects, ``dump`` (which imports the framework) turns them into their
    JSON form; ``what`` names them in errors. JSON values that are not objects raise
    :class:`~cast.errors.CodecError` at their index.
    """
    if isinstance(payload, dict) and key in payload:
        payload = payload[key]
    if not isinstance(payload, list | tuple):
        fail("", f"a list of {what}", payload)
    items = list(payload)
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


SignedReasoning = tuple[str | None, str | None, bool]
"""A reasoning item's ``(id, signature, redacted)``."""


def pack_signature(item_id: str | None, signature: str | None, *, redacted: bool) -> bytes:
    """The ``Reasoning.signature`` of a reasoning item (see the module docstring)."""
    blob = signature or ""
    if redacted:
        return REDACTED_THINKING_PREFIX + blob.encode()
    if item_id is not None:  # an empty id too, so a signature holding "\n" reads back whole
        return f"{item_id}\n{blob}".encode()
    return blob.encode()


def unpack_signature(blob: bytes) -> SignedReasoning:
    """The inverse of :func:`pack_signature` (an empty signature reads as ``None``)."""
    if blob.startswith(REDACTED_THINKING_PREFIX):
        return None, signature_text(blob[len(REDACTED_THINKING_PREFIX) :]), True
    if not blob:
        return None, None, False
    text = signature_text(blob)
    head, sep, tail = text.partition("\n")
    return (head, tail or None, False) if sep else (None, text, False)
