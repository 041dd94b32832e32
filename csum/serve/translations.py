"""Which client API is translated for which upstream API, and how: the request, the
whole response and the streamed one (csum.serve.translate, translate_chat,
translate_responses). Same-provider traffic is never translated."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from csum.serve.apis import APIS, Api
from csum.serve.translate import MessagesStream, chat_request, messages_response
from csum.serve.translate_chat import ChatStream, chat_response, messages_request
from csum.serve.translate_responses import (
    AnthropicResponsesStream,
    ResponsesStream,
    chat_request_for_responses,
    messages_request_for_responses,
    responses_from_messages,
    responses_response,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "TRANSLATIONS",
    "Stream",
    "Translation",
    "translated_headers",
    "translation_for",
]

_CHAT, _RESPONSES, _MESSAGES = APIS
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent when an OpenAI client reaches Anthropic."""


class Stream(Protocol):
    """A streamed answer being translated: the upstream's bytes in, the client's out."""

    def feed(self, data: bytes) -> bytes: ...

    def close(self) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Translation:
    """How requests of the ``client`` API reach an ``upstream`` that speaks ``target``.

    ``request`` maps the client's body to the upstream's; ``response(answer, model,
    request)`` and ``stream(model, request)`` map the answer back (``model`` is the
    client's, ``request`` its body as sent)."""

    client: Api
    upstream: str
    target: Api
    request: Callable[[dict[str, Any]], dict[str, Any]]
    response: Callable[[dict[str, Any], str, dict[str, Any]], dict[str, Any]]
    stream: Callable[[str, dict[str, Any]], Stream]


def _wants_usage(request: dict[str, Any]) -> bool:
    options = request.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


TRANSLATIONS: tuple[Translation, ...] = (
    Translation(
        _MESSAGES,
        "openai",
        _CHAT,
        chat_request,
        lambda answer, model, request: messages_response(answer, model),
        lambda model, request: MessagesStream(model),
    ),
    Translation(
        _CHAT,
        "anthropic",
        _MESSAGES,
        messages_request,
        lambda answer, model, request: chat_response(answer, model),
        lambda model, request: ChatStream(model, usage=_wants_usage(request)),
    ),
    Translation(
        _RESPONSES,
        "openai",
        _CHAT,
        chat_request_for_responses,
        responses_response,
        ResponsesStream,
    ),
    Translation(
        _RESPONSES,
        "anthropic",
        _MESSAGES,
        messages_request_for_responses,
        responses_from_messages,
        AnthropicResponsesStream,
    ),
)
"""Every translation the gateway makes."""

_BY_PAIR = {(t.client.name, t.upstream): t for t in TRANSLATIONS}


def translation_for(client: str, upstream: str) -> Translation | None:
    """The translation of the ``client`` API's requests for an ``upstream`` API
    (``same``, ``openai``, ``anthropic``), or None: forwarded in the client's API."""
    return _BY_PAIR.get((client, upstream))


def translated_headers(headers: Iterable[tuple[str, str]], target: Api) -> list[tuple[str, str]]:
    """The client's headers with its API key where the target provider reads it
    (OpenAI: ``authorization: Bearer``; Anthropic: ``x-api-key``, plus an
    ``anthropic-version`` when the client sent none), without the other provider's own
    headers (``anthropic-beta``, ``anthropic-version`` on an OpenAI upstream; ``openai-*``
    on Anthropic). Nothing is stored or logged."""
    foreign = "openai-" if target.provider == "anthropic" else "anthropic-"
    items = [(k, v) for k, v in headers if not k.lower().startswith(foreign)]
    names = {k.lower() for k, _ in items}
    if target.provider == "anthropic":
        out = [(k, v) for k, v in items if k.lower() != "authorization"]
        if "x-api-key" not in names:
            for k, v in items:
                if k.lower() == "authorization" and v.lower().startswith("bearer "):
                    out.append(("x-api-key", v[7:].strip()))
        if "anthropic-version" not in names:
            out.append(("anthropic-version", ANTHROPIC_VERSION))
        return out
    out = [(k, v) for k, v in items if k.lower() != "x-api-key"]
    if "authorization" not in names:
        out.extend(("authorization", f"Bearer {v}") for k, v in items if k.lower() == "x-api-key")
    return out
