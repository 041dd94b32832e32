"""A summarize handler for Anthropic's Messages API.

Uses the official ``anthropic`` SDK (``AsyncAnthropic().messages.create``), imported
when the handler is built: the fixed system prompt as the top-level ``system`` field,
the prompt as the one user message. The SDK's retries are off;
:mod:`csum.handlers._base` retries instead.
"""

from __future__ import annotations

from typing import Any

from csum.errors import HandlerError
from csum.handlers._base import RetryPolicy, SdkErrors, SummarizeHandler, sdk_handler
from csum.prompt import DEFAULT_SYSTEM_PROMPT

__all__ = ["DEFAULT_SYSTEM_PROMPT", "anthropic"]

_PROVIDER = "anthropic"


def _import_sdk() -> Any:
    try:
        import anthropic as sdk
    except ImportError as exc:
        raise ImportError(
            "the anthropic handler needs the anthropic SDK: pip install 'chaincast[anthropic]'"
        ) from exc
    return sdk


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
) -> SummarizeHandler:
    """A handler that asks Claude ``model`` for the summary.

    ``base_url`` and ``api_key`` default to the SDK's (``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_API_KEY``). Timeouts, retries and clients behave as in
    :func:`csum.handlers.openai_compatible`: ``timeout`` bounds each attempt;
    rate limits, 408, 5xx (529 "overloaded" included), transport errors and timeouts
    are retried with backoff and jitter; other errors and a reply without text raise
    :class:`HandlerError`.
    """
    sdk = _import_sdk()
    if not model:
        raise ValueError("model must be a non-empty model name")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if max_tokens <= 0:
        raise ValueError(f"max_tokens must be > 0, got {max_tokens}")
    policy = RetryPolicy(
        max_retries=max_retries, backoff_base=backoff_base, backoff_max=backoff_max
    )
    errors = SdkErrors(
        base=sdk.AnthropicError,
        status=sdk.APIStatusError,
        connection=sdk.APIConnectionError,
        timeout=sdk.APITimeoutError,
    )

    async def complete(active: Any, prompt: str) -> str:
        response = await active.messages.create(
            model=model,
            max_tokens=max_tokens,
            system=system_prompt,
            messages=[{"role": "user", "content": prompt}],
            timeout=timeout,
        )
        return _summary_text(response, model)

    return sdk_handler(
        provider=_PROVIDER,
        model=model,
        timeout=timeout,
        policy=policy,
        errors=errors,
        client=client,
        open_client=lambda: sdk.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        ),
        complete=complete,
        name=f"anthropic({model!r})",
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
