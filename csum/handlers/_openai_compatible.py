"""A summarize handler for OpenAI and OpenAI-compatible chat completion servers.

Uses the official ``openai`` SDK (``AsyncOpenAI().chat.completions.create``), imported
when the handler is built. The fixed system prompt goes first and the prompt last, so
providers that cache prompt prefixes reuse the system part across calls; with
``continuation=True``, a request that carries its conversation is sent as that
conversation then the instruction (:mod:`csum.handlers._continuation`). The SDK's
retries are off; :mod:`csum.handlers._base` retries instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Literal, TypeAlias

from csum.errors import HandlerError
from csum.handlers._base import (
    Body,
    RequestHandler,
    SdkConnection,
    SdkErrors,
    check_token_limit,
    import_sdk,
    sdk_handler,
)
from csum.handlers._continuation import openai_body
from csum.prompt import DEFAULT_SYSTEM_PROMPT

__all__ = ["DEFAULT_SYSTEM_PROMPT", "TokenLimitParam", "openai_compatible"]

_PROVIDER = "openai"
TokenLimitParam: TypeAlias = Literal["max_completion_tokens", "max_tokens"]
"""Name of the output-token limit field in the request."""
_NEW_LIMIT_PARAM: TokenLimitParam = "max_completion_tokens"


def openai_compatible(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 3,
    max_output_tokens: int | None = 1024,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    client: Any = None,
    backoff_base: float = 0.5,
    backoff_max: float = 20.0,
    token_limit_param: TokenLimitParam = _NEW_LIMIT_PARAM,
    continuation: bool = False,
    tools: Sequence[Mapping[str, Any]] = (),
) -> RequestHandler:
    """A handler that asks ``model`` for the summary through chat completions.

    ``base_url`` and ``api_key`` default to the SDK's (``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``). ``timeout`` bounds each attempt as a whole; ``max_retries``
    retries follow rate limits, 408, 5xx, transport errors and timeouts, waiting
    ``backoff_base * 2**n`` seconds with jitter. Other errors, and a response without
    text, raise :class:`HandlerError` at once. ``token_limit_param`` names the output
    limit field: ``max_tokens`` for servers that predate ``max_completion_tokens``.
    Without ``client`` each call opens (and closes) its own ``AsyncOpenAI``, so the
    handler works across event loops; a ``client`` given is used (with its retries
    off) and left open.

    With ``continuation``, a request carrying its conversation (a Compactor's) goes as
    that conversation (messages and ``tools``) plus the instruction as a last user
    message (``_continuation.openai_body``): the provider's prefix cache serves it.
    """
    sdk = import_sdk("openai", "openai_compatible", "openai")
    check_token_limit("max_output_tokens", max_output_tokens)
    connection = SdkConnection(
        model, base_url, api_key, timeout, max_retries, backoff_base, backoff_max, client
    )
    limits: dict[str, int] = {}
    if max_output_tokens is not None:
        limits[token_limit_param] = max_output_tokens

    async def complete(active: Any, body: Body) -> str:
        completion = await active.chat.completions.create(
            model=model, timeout=timeout, **limits, **body
        )
        return _summary_text(completion, model)

    def fresh(prompt: str) -> Body:
        system = {"role": "system", "content": system_prompt}
        return {"messages": [system, {"role": "user", "content": prompt}]}

    return sdk_handler(
        connection,
        provider=_PROVIDER,
        handler="openai_compatible",
        errors=SdkErrors.of(sdk, sdk.OpenAIError),
        client_class=sdk.AsyncOpenAI,
        complete=complete,
        fresh=fresh,
        continued=partial(openai_body, tools=tools) if continuation else None,
    )


def _summary_text(completion: Any, model: str) -> str:
    """The text of the first choice; a missing or blank one is a :class:`HandlerError`."""
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise HandlerError("the response has no choices", provider=_PROVIDER, model=model)
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    if isinstance(content, str) and content.strip():
        return content.strip()
    reason = getattr(choice, "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    detail = f"finish_reason={reason!r}"
    if refusal:
        detail += f", refusal={refusal!r}"
    if reason == "length":
        detail += "; raise max_output_tokens"
    raise HandlerError(
        f"the response has no summary text ({detail})",
        provider=_PROVIDER,
        model=model,
        error_type="empty_response",
    )
