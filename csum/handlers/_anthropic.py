"""A summarize handler for Anthropic's Messages API.

Uses the official ``anthropic`` SDK (``AsyncAnthropic().messages.create``), imported
when the handler is built: the fixed system prompt as the top-level ``system`` field,
the prompt as the one user message; with ``continuation=True``, a request that carries
its conversation is sent as that conversation, a cache breakpoint, then the instruction
(:mod:`csum.handlers._continuation`). The SDK's retries are off;
:mod:`csum.handlers._base` retries instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

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
from csum.handlers._continuation import anthropic_body
from csum.prompt import DEFAULT_SYSTEM_PROMPT

__all__ = ["DEFAULT_SYSTEM_PROMPT", "anthropic"]

_PROVIDER = "anthropic"


def anthropic(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 3,
    max_tokens: int = 1024,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    client: Any = None,
    backoff_base: float = 0.5,
    backoff_max: float = 20.0,
    continuation: bool = False,
    tools: Sequence[Mapping[str, Any]] = (),
) -> RequestHandler:
    """A handler that asks Claude ``model`` for the summary.

    ``base_url`` and ``api_key`` default to the SDK's (``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_API_KEY``). Timeouts, retries and clients behave as in
    :func:`csum.handlers.openai_compatible`: ``timeout`` bounds each attempt;
    rate limits, 408, 5xx (529 "overloaded" included), transport errors and timeouts
    are retried with backoff and jitter; other errors and a reply without text raise
    :class:`HandlerError`.

    With ``continuation``, a request that carries its conversation (a Compactor's) is
    sent as a continuation of it: the conversation as the agent sent it (its system
    prompt, messages and ``tools``), a cache breakpoint at its end, then the instruction
    (:func:`csum.handlers._continuation.anthropic_body`), so the input is read from the
    prompt cache; ``system_prompt`` is then not sent. Any other request is sent fresh.
    """
    sdk = import_sdk("anthropic", "anthropic", "anthropic")
    check_token_limit("max_tokens", max_tokens)
    connection = SdkConnection(
        model, base_url, api_key, timeout, max_retries, backoff_base, backoff_max, client
    )

    async def complete(active: Any, body: Body) -> str:
        response = await active.messages.create(
            model=model, max_tokens=max_tokens, timeout=timeout, **body
        )
        return _summary_text(response, model)

    def fresh(prompt: str) -> Body:
        return {"system": system_prompt, "messages": [{"role": "user", "content": prompt}]}

    return sdk_handler(
        connection,
        provider=_PROVIDER,
        handler="anthropic",
        errors=SdkErrors.of(sdk, sdk.AnthropicError),
        client_class=sdk.AsyncAnthropic,
        complete=complete,
        fresh=fresh,
        continued=partial(anthropic_body, tools=tools) if continuation else None,
    )


def _summary_text(response: Any, model: str) -> str:
    """The text blocks of the reply joined; none, or only blanks, is a HandlerError."""
    blocks = getattr(response, "content", None) or []
    text = "".join(
        block.text
        for block in blocks
        if getattr(block, "type", None) == "text" and isinstance(block.text, str)
    ).strip()
    if text:
        return text
    reason = getattr(response, "stop_reason", None)
    hint = "; raise max_tokens" if reason == "max_tokens" else ""
    raise HandlerError(
        f"the response has no summary text (stop_reason={reason!r}{hint})",
        provider=_PROVIDER,
        model=model,
        error_type="empty_response",
    )
