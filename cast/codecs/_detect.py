"""The built-in codecs' shape tests, which :func:`cast.codecs.detect_format` runs in
registration order (see :mod:`cast.codecs._registry`): ``*_payload`` tests look at a
whole payload, ``*_messages`` tests at its message objects."""

from __future__ import annotations

from typing import Any

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
_FLAT = ("url", "mime_type", "tool_call_id", "arguments", "id")  # native part fields
_LANGCHAIN_TYPES = ("system", "human", "ai", "tool", "chat", "function")
_GEMINI_KEYS = ("contents", "systemInstruction", "system_instruction")
NATIVE = "chaincast"


# -- whole payloads (dicts) ---------------------------------------------------------------
# These exclude one another, so their order does not matter.


def gemini_payload(payload: object) -> bool:
    """``generateContent``: ``contents`` or a system instruction."""
    return isinstance(payload, dict) and any(k in payload for k in _GEMINI_KEYS)


def responses_payload(payload: object) -> bool:
    """A Responses request: an ``input`` field (and no Gemini field)."""
    return isinstance(payload, dict) and "input" in payload and not gemini_payload(payload)


def bedrock_payload(payload: object) -> bool:
    """Converse: ``messages`` or ``system`` holding untyped Converse blocks."""
    if not isinstance(payload, dict) or gemini_payload(payload) or "input" in payload:
        return False
    messages = payload.get("messages")
    return isinstance(messages, list) and (
        converse_messages(messages) or _converse_system(payload.get("system"))
    )


def anthropic_payload(payload: object) -> bool:
    """Messages API: ``messages`` beside a ``system`` field (and none of the fields
    the tests above look for)."""
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("messages"), list)
        and "system" in payload
        and not gemini_payload(payload)
        and "input" not in payload
        and not bedrock_payload(payload)
    )


# -- message objects ----------------------------------------------------------------------


def pydantic_ai_messages(dicts: list[dict[str, Any]]) -> bool:
    """pydantic-ai messages carry ``kind`` and ``parts`` (whose items have ``part_kind``)."""
    first = dicts[0]
    return first.get("kind") in ("request", "response") and isinstance(first.get("parts"), list)


def langchain_messages(dicts: list[dict[str, Any]]) -> bool:
    """LangChain's ``messages_to_dict`` items are ``{"type": ..., "data": {...}}``."""
    first = dicts[0]
    return (
        first.get("type") in _LANGCHAIN_TYPES
        and isinstance(first.get("data"), dict)
        and "role" not in first
    )


def responses_messages(dicts: list[dict[str, Any]]) -> bool:
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


def converse_messages(items: list[Any]) -> bool:
    """Converse messages: content blocks keyed by kind (``{"toolUse": ...}``), no ``type``."""
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and any(_converse_block(b) for b in content):
            return True
    return False


def claude_code_messages(dicts: list[dict[str, Any]]) -> bool:
    """Whole log lines, or assistant entries with their message id."""
    return any(
        ("message" in item and "role" not in item)
        or (item.get("role") == "assistant" and item.get("type") == "message" and "id" in item)
        for item in dicts
    )


def gemini_messages(dicts: list[dict[str, Any]]) -> bool:
    """A ``model`` role, or ``parts`` whose items have no ``type``."""
    for item in dicts:
        parts = item.get("parts")
        if item.get("role") == "model" or (
            isinstance(parts, list) and any(isinstance(p, dict) and "type" not in p for p in parts)
        ):
            return True
    return False


def langchaingo_messages(dicts: list[dict[str, Any]]) -> bool:
    """Typed parts (or chaincast's roles), nested the langchaingo way."""
    return _typed_parts(dicts) and _native_or_langchaingo(dicts) == "langchaingo"


def native_messages(dicts: list[dict[str, Any]]) -> bool:
    """Typed parts (or chaincast's roles), flat the chaincast way."""
    return _typed_parts(dicts) and _native_or_langchaingo(dicts) == NATIVE


def anthropic_messages(dicts: list[dict[str, Any]]) -> bool:
    """Anthropic content blocks, in an item before any OpenAI-only field."""
    for item in dicts:
        if _openai_item(item):
            return False
        content = item.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
        ):
            return True
    return False


def openai_messages(dicts: list[dict[str, Any]]) -> bool:
    """Chat Completions takes any list of message objects: plain user/assistant text
    fits OpenAI and Anthropic alike (both decode it the same way)."""
    return True


def _openai_item(item: dict[str, Any]) -> bool:
    return item.get("role") in ("tool", "developer", "function") or "tool_calls" in item


def _typed_parts(dicts: list[dict[str, Any]]) -> bool:
    return any("parts" in item or item.get("role") in ("human", "ai", "generic") for item in dicts)


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


def _converse_system(system: object) -> bool:
    return isinstance(system, list) and any(_converse_block(b) for b in system)


def _converse_block(block: object) -> bool:
    return (
        isinstance(block, dict)
        and "type" not in block
        and any(key in block for key in _CONVERSE_BLOCKS)
    )
