"""The provider APIs the gateway compacts: where each request keeps its history, the
codec that reads it and the provider it goes to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cast.codecs.anthropic as anthropic_codec
import cast.codecs.openai as openai_codec
import cast.codecs.openai_responses as responses_codec
from cast import Message
from csum.serve.translate.responses_as_sent import as_sent

__all__ = ["APIS", "CHAT", "MESSAGES", "RESPONSES", "Api", "api_for"]


@dataclass(frozen=True, slots=True)
class Api:
    """One endpoint: ``history_keys`` are the body fields the codec reads and writes
    (``list_key`` the list of turns among them); every other field is left as sent."""

    name: str
    path: str
    codec: Any  # the cast.codecs module
    provider: str
    history_keys: tuple[str, ...]
    list_key: str
    held_keys: tuple[str, ...] = ()
    """Fields that make the provider hold the history (such a request goes as it came)."""

    def history(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """The part of ``payload`` the codec decodes; None when it holds no list of
        turns (a Responses ``input`` string, a missing field)."""
        if not isinstance(payload.get(self.list_key), list):
            return None
        return {key: payload[key] for key in self.history_keys if key in payload}

    def decode(self, payload: Mapping[str, Any]) -> list[Message]:
        """The messages of ``payload``'s history fields (raises ``cast.CodecError`` naming
        a bad field)."""
        history = {key: payload[key] for key in self.history_keys if key in payload}
        messages: list[Message] = self.codec.decode(history)
        return messages

    def encode(self, messages: list[Message], sent: Mapping[str, Any]) -> dict[str, Any]:
        """The history fields for ``messages``; a Responses history keeps the client's own
        items of ``sent`` (the history as it came) wherever the compaction kept them."""
        # OpenAI's tool messages need no function name (Mistral's do)
        named = {"tool_names": False} if self.codec is openai_codec else {}
        fields: dict[str, Any] = self.codec.encode(messages, **named)
        return as_sent(dict(sent), fields) if self.name == "responses" else fields

    def others(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of ``payload`` but its history's."""
        return {k: v for k, v in payload.items() if k not in self.history_keys}

    def merged(self, payload: Mapping[str, Any], history: Mapping[str, Any]) -> dict[str, Any]:
        """``payload`` with its history fields replaced by ``history``, in its order."""
        out: dict[str, Any] = {}
        for key, value in payload.items():
            if key not in self.history_keys:
                out[key] = value
            elif key in history:
                out[key] = history[key]
        for key, value in history.items():
            out.setdefault(key, value)
        return out


CHAT = Api("chat", "/v1/chat/completions", openai_codec, "openai", ("messages",), "messages")
"""OpenAI Chat Completions."""
RESPONSES = Api(
    "responses",
    "/v1/responses",
    responses_codec,
    "openai-responses",
    ("instructions", "input"),
    "input",
    ("previous_response_id", "conversation"),
)
"""OpenAI Responses."""
MESSAGES = Api(
    "messages", "/v1/messages", anthropic_codec, "anthropic", ("system", "messages"), "messages"
)
"""Anthropic Messages."""
APIS: tuple[Api, ...] = (CHAT, RESPONSES, MESSAGES)

_BY_PATH = {api.path: api for api in APIS}


def api_for(path: str) -> Api | None:
    """The API served at ``path`` (exact match), or None (forwarded untouched)."""
    return _BY_PATH.get(path.rstrip("/") or "/")
