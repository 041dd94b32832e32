"""chaincast's own JSON form: a list of ``Message.model_dump(mode="json")`` dicts, ``bytes``
as base64 text (:mod:`cast.messages`); decode also accepts ``{"messages": [...]}``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from cast.codecs._common import EVIDENCE, as_messages, ensure, typed_parts_style
from cast.errors import located_error
from cast.messages import MESSAGES_ADAPTER, Message

__all__ = ["decode", "detect_messages", "encode"]


def decode(payload: object) -> list[Message]:
    """Messages of a list of native message dicts."""
    if isinstance(payload, dict) and "messages" in payload:
        payload = payload["messages"]
    payload = ensure(payload, list, "", "an array of messages")
    try:
        return MESSAGES_ADAPTER.validate_python(payload)
    except ValidationError as exc:
        raise located_error(exc, codec=True) from exc


def encode(messages: Iterable[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """The native JSON form of ``messages``."""
    return [m.model_dump(mode="json") for m in as_messages(messages)]


# -- detection (see cast.codecs._registry) -----------------------------------------------


def detect_messages(dicts: list[dict[str, Any]]) -> int:
    """Typed parts (or chaincast's roles), flat the chaincast way."""
    return EVIDENCE if typed_parts_style(dicts) == "chaincast" else 0
