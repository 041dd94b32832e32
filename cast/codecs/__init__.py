"""Provider codecs: request payloads (dicts, as sent over the wire) ↔ chaincast messages.

Each codec module exposes ``decode(payload) -> list[Message]`` and
``encode(messages) -> payload``; ``encode(decode(x)) == x`` for payloads in the
provider's canonical shape (see ``docs/codecs.md``). Malformed payloads raise
:class:`~cast.errors.CodecError` with the path of the bad field. Payloads are never
modified.

====================  ======================================================
name                  payload
====================  ======================================================
``openai``            Chat Completions ``{"messages": [...]}``
``anthropic``         Messages API ``{"system": ..., "messages": [...]}``
``gemini``            ``generateContent`` ``{"systemInstruction": ..., "contents": [...]}``
``langchaingo``       Go ``[]llms.MessageContent`` JSON (PentAGI's stored chains)
``claude_code``       Claude Code session log entries
``bedrock``           Bedrock Converse ``{"system": [...], "messages": [...]}``
``openai_responses``  Responses API ``{"instructions": ..., "input": [...]}``
``pydantic_ai``       pydantic-ai ``ModelMessagesTypeAdapter`` JSON (or ``ModelMessage`` objects)
``langchain``         LangChain ``messages_to_dict`` JSON (or ``BaseMessage`` objects)
``openai_agents``     OpenAI Agents SDK input items (a bare Responses item list)
``chaincast``         chaincast's own JSON form of ``Message``
====================  ======================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any, Protocol, cast

from cast.codecs import (
    anthropic,
    bedrock,
    claude_code,
    gemini,
    langchain,
    langchaingo,
    native,
    openai,
    openai_agents,
    openai_responses,
    pydantic_ai,
)
from cast.codecs._common import json_type
from cast.errors import CodecError
from cast.messages import Message

__all__ = ["CODECS", "NATIVE", "Codec", "detect_format", "get_codec"]


class Codec(Protocol):
    """What every codec module provides."""

    def decode(self, payload: Any, /) -> list[Message]: ...

    def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any: ...


NATIVE = "chaincast"
"""Name of chaincast's own JSON form (:mod:`cast.codecs.native`)."""

_MODULES: dict[str, ModuleType] = {
    "openai": openai,
    "anthropic": anthropic,
    "gemini": gemini,
    "langchaingo": langchaingo,
    "claude_code": claude_code,
    "bedrock": bedrock,
    "openai_responses": openai_responses,
    "pydantic_ai": pydantic_ai,
    "langchain": langchain,
    "openai_agents": openai_agents,
}

CODECS: tuple[str, ...] = tuple(_MODULES)
"""The provider codecs' names; :func:`get_codec` also takes :data:`NATIVE`."""


def get_codec(name: str) -> Codec:
    """The codec module called ``name`` (one of :data:`CODECS`, or :data:`NATIVE`)."""
    key = name.lower().replace("-", "_")
    module = native if key == NATIVE else _MODULES.get(key)
    if module is None:
        raise CodecError(f"unknown codec {name!r}; expected one of {', '.join((*CODECS, NATIVE))}")
    return cast(Codec, module)


_ANTHROPIC_BLOCKS = (
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
)
_RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning")
_RESPONSES_PARTS = ("input_text", "output_text", "input_image")
_CONVERSE_BLOCKS = ("text", "image", "toolUse", "toolResult", "reasoningContent")
_NESTED = ("image_url", "binary", "tool_call", "tool_response")  # langchaingo part payloads
_FLAT = ("url", "mime_type", "tool_call_id", "arguments", "id")  # native part fields


def detect_format(payload: object) -> str:
    """Guess which codec ``payload`` is for, from its shape alone.

    Returns a name from :data:`CODECS` or :data:`NATIVE`; raises :class:`CodecError`
    when the shape fits none of them. A list of plain-text user/assistant messages
    fits OpenAI and Anthropic alike (both decode it the same way): it is ``openai``.
    """
    if isinstance(payload, dict):
        if any(k in payload for k in ("contents", "systemInstruction", "system_instruction")):
            return "gemini"
        if "input" in payload:
            return "openai_responses"
        messages = payload.get("messages")
        if isinstance(messages, list):
            if _converse(messages) or _converse_system(payload.get("system")):
                return "bedrock"
            return "anthropic" if "system" in payload else _detect_list(messages)
        raise CodecError("cannot detect the format: no messages, contents or input field")
    if isinstance(payload, list):
        return _detect_list(payload)
    raise CodecError(f"cannot detect the format of a JSON {json_type(payload)}")


def _detect_list(items: list[Any]) -> str:
    dicts = [item for item in items if isinstance(item, dict)]
    if not dicts:
        raise CodecError("cannot detect the format of a list without message objects")
    framework = _framework(dicts)
    if framework is not None:
        return framework
    if _responses(dicts):
        return "openai_responses"
    if _converse(dicts):
        return "bedrock"
    for item in dicts:
        # Claude Code: whole log lines, or assistant entries with their message id.
        if ("message" in item and "role" not in item) or (
            item.get("role") == "assistant" and item.get("type") == "message" and "id" in item
        ):
            return "claude_code"
    for item in dicts:
        parts = item.get("parts")
        if item.get("role") == "model" or (
            isinstance(parts, list) and any(isinstance(p, dict) and "type" not in p for p in parts)
        ):
            return "gemini"
    for item in dicts:
        if "parts" in item or item.get("role") in ("human", "ai", "generic"):
            return _native_or_langchaingo(dicts)
    for item in dicts:
        if item.get("role") in ("tool", "developer", "function") or "tool_calls" in item:
            return "openai"
        content = item.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
        ):
            return "anthropic"
    return "openai"


_LANGCHAIN_TYPES = ("system", "human", "ai", "tool", "chat", "function")


def _framework(dicts: list[dict[str, Any]]) -> str | None:
    """pydantic-ai messages carry ``kind`` and ``parts`` (whose items have ``part_kind``);
    LangChain's ``messages_to_dict`` items are ``{"type": ..., "data": {...}}``."""
    first = dicts[0]
    if first.get("kind") in ("request", "response") and isinstance(first.get("parts"), list):
        return "pydantic_ai"
    if (
        first.get("type") in _LANGCHAIN_TYPES
        and isinstance(first.get("data"), dict)
        and "role" not in first
    ):
        return "langchain"
    return None


def _native_or_langchaingo(dicts: list[dict[str, Any]]) -> str:
    """Both have roles and typed parts; langchaingo nests a part's fields under its
    type (``{"type": "tool_call", "tool_call": {...}}``) and writes a lone text part
    as ``{"role", "text"}``, while native parts are flat and always carry
    ``reasoning`` on text parts."""
    for item in dicts:
        if "text" in item or item.get("role") in ("generic", "function"):
            return "langchaingo"
        parts = item.get("parts")
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if not isinstance(kind, str):
                continue
            if kind == "tool_response" or isinstance(part.get(kind), dict):
                return "langchaingo"
            if kind == "tool_result" or any(key in part for key in _FLAT):
                return NATIVE
            if kind == "text":
                reasoning = part.get("reasoning", ...)
                if reasoning is None or _native_reasoning(reasoning):
                    return NATIVE
                return "langchaingo"
    return NATIVE


def _native_reasoning(value: object) -> bool:
    return isinstance(value, dict) and "content" in value and "signature" in value


def _responses(dicts: list[dict[str, Any]]) -> bool:
    """Responses items: typed call/output/reasoning items, or ``input_text``-style parts."""
    for item in dicts:
        if item.get("type") in _RESPONSES_ITEMS:
            return True
        content = item.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in _RESPONSES_PARTS for p in content
        ):
            return True
    return False


def _converse(items: list[Any]) -> bool:
    """Converse messages: content blocks keyed by kind (``{"toolUse": ...}``), no ``type``."""
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and any(_converse_block(b) for b in content):
            return True
    return False


def _converse_system(system: object) -> bool:
    return isinstance(system, list) and any(_converse_block(b) for b in system)


def _converse_block(block: object) -> bool:
    return (
        isinstance(block, dict)
        and "type" not in block
        and any(key in block for key in _CONVERSE_BLOCKS)
    )
