"""Which client API is translated for which upstream API, and by which directions; the
headers of a translated request; ``count_tokens`` estimated for a Chat upstream."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cast import Message
from csum.serve.apis import CHAT, MESSAGES, RESPONSES, Api
from csum.serve.tenant import client_key
from csum.serve.translate import TranslatedStream
from csum.serve.translate.anthropic_to_chat import ChatStream, chat_request, chat_response
from csum.serve.translate.anthropic_to_responses import (
    AnthropicResponsesStream,
    responses_from_messages,
)
from csum.serve.translate.chat_to_anthropic import (
    MessagesStream,
    messages_request,
    messages_response,
)
from csum.serve.translate.chat_to_responses import ResponsesStream, responses_response
from csum.serve.translate.responses_to_anthropic import messages_request_for_responses
from csum.serve.translate.responses_to_chat import chat_request_for_responses
from csum.tokens import EstimatedTokens

__all__ = ["TRANSLATIONS", "Translation", "count_tokens", "translated_headers", "translation_for"]


@dataclass(frozen=True, slots=True)
class Translation:
    """How requests of the ``client`` API reach an upstream that speaks ``target`` (its
    provider names it in ``--upstream-api``): ``request(body, chain)`` (``chain``: the
    history decoded, or None), and the answer back by ``response(answer, model, request)``
    and ``stream(model, request)``."""

    client: Api
    target: Api
    request: Callable[[dict[str, Any], list[Message] | None], dict[str, Any]]
    response: Callable[[dict[str, Any], str, dict[str, Any]], dict[str, Any]]
    stream: Callable[[str, dict[str, Any]], TranslatedStream]


TRANSLATIONS: tuple[Translation, ...] = (
    Translation(MESSAGES, CHAT, chat_request, messages_response, MessagesStream),
    Translation(CHAT, MESSAGES, messages_request, chat_response, ChatStream),
    Translation(RESPONSES, CHAT, chat_request_for_responses, responses_response, ResponsesStream),
    Translation(
        RESPONSES,
        MESSAGES,
        messages_request_for_responses,
        responses_from_messages,
        AnthropicResponsesStream,
    ),
)
"""Every translation the gateway makes."""

_BY_PAIR = {(t.client.name, t.target.provider): t for t in TRANSLATIONS}


def translation_for(client: str, upstream: str) -> Translation | None:
    """The translation of ``client``'s requests for ``upstream``, or None (not translated)."""
    return _BY_PAIR.get((client, upstream))


_ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent when an OpenAI client reaches Anthropic."""


def translated_headers(headers: Iterable[tuple[str, str]], target: Api) -> list[tuple[str, str]]:
    """The client's headers with its API key where ``target`` reads it (and an
    ``anthropic-version`` for Anthropic), without the other provider's own headers."""
    anthropic = target.provider == "anthropic"
    foreign = "openai-" if anthropic else "anthropic-"
    key, other = ("x-api-key", "authorization") if anthropic else ("authorization", "x-api-key")
    items = [(k, v) for k, v in headers if not k.lower().startswith(foreign)]
    named = {k.lower(): v for k, v in reversed(items)}  # the first of each name
    out = [(k, v) for k, v in items if k.lower() != other]
    given = None if key in named else client_key(named, target.provider)
    if given:
        out.append((key, given if anthropic else f"Bearer {given}"))
    if anthropic and "anthropic-version" not in named:
        out.append(("anthropic-version", _ANTHROPIC_VERSION))
    return out


def count_tokens(payload: dict[str, Any]) -> dict[str, int]:
    """``count_tokens``'s answer, estimated (an OpenAI-compatible upstream has no such
    endpoint): the :class:`~csum.tokens.EstimatedTokens` count of the history."""
    counter = EstimatedTokens("anthropic")
    return {"input_tokens": sum(counter.count(m) for m in MESSAGES.decode(payload))}
