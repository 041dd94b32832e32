"""OpenAI Agents SDK codec: the SDK's input items (Responses items, or its pydantic item
objects) ↔ chaincast messages, through :mod:`cast.codecs.openai_responses`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cast.codecs._common import array_of
from cast.codecs.openai_responses import _in_ai_message
from cast.codecs.openai_responses import decode as decode_responses
from cast.codecs.openai_responses import encode as encode_responses
from cast.errors import install_hint
from cast.messages import Message

__all__ = ["decode", "decode_counted", "encode", "group_items"]

INSTALL_HINT = install_hint("openai-agents")


def _as_items(payload: object) -> list[Any]:
    items: list[Any] = []
    for item in array_of(payload, "input items", "input"):
        dump = getattr(item, "model_dump", None)
        items.append(dump(exclude_unset=True, mode="json") if callable(dump) else item)
    return items


def group_items(items: list[Any]) -> list[list[Any]]:
    """The items in the groups that each decode to one message: a run of the items
    :func:`~cast.codecs.openai_responses.decode` reads into an AI message is one; any other
    item is one."""
    groups: list[list[Any]] = []
    for item in items:
        if groups and _in_ai_message(item) and _in_ai_message(groups[-1][-1]):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def decode(payload: object) -> list[Message]:
    """Messages of a list of input items (dicts or the SDK's item objects)."""
    return decode_responses(_as_items(payload))


def decode_counted(payload: object) -> tuple[list[Message], list[int]]:
    """The messages, and how many each group of :func:`group_items` became (one)."""
    items = _as_items(payload)
    messages = decode_responses(items)
    return messages, [1] * len(group_items(items))


def encode(messages: Iterable[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """The input items of ``messages``."""
    items: list[dict[str, Any]] = encode_responses(messages)["input"]
    return items
