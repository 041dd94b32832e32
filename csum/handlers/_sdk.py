"""The model handlers, ``anthropic`` and ``openai_compatible``, through the providers' SDKs,
with one retry loop (the SDKs' own retries off) and the continuation bodies, which send a
request as the conversation the agent sent then an instruction (read from the prompt cache)."""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final, Literal, TypeAlias

import anyio

from cast import Message
from cast.chainio import install_hint
from csum._checks import check_count
from csum.config import RetryPolicy
from csum.errors import HandlerError
from csum.prompt import DEFAULT_SYSTEM_PROMPT, SummaryRequest
from csum.request import RequestHandler, is_transient, request_handler

TokenLimitParam: TypeAlias = Literal["max_completion_tokens", "max_tokens"]
"""Name of the output-token limit field of a chat completions request."""
_NEW_LIMIT_PARAM: TokenLimitParam = "max_completion_tokens"
Body = dict[str, Any]
"""The keyword arguments of one SDK call that say what is sent (messages, system...)."""

CONTINUATION_INSTRUCTION: Final = (
    "Summarize the conversation above{scope}, for your own later use: what was asked, "
    "what was done and decided, what is still open. Keep every path, identifier, id, "
    "number, error and command you may need again, exactly as written. Answer with the "
    "summary as plain text; call no tool."
)
"""The instruction that follows the conversation (the only uncached part of the input);
``{scope}`` names the messages that stay in the chain."""
_FOCUS: Final = (
    "\nThe agent's next step needs this: keep everything that serves it in full, even "
    "at the cost of other detail.\n{focus}"
)


def continuation_instruction(request: SummaryRequest) -> str:
    """The instruction after ``request.conversation``: summarize what comes before its
    last ``request.kept`` messages (they stay in the chain), with the request's focus."""
    kept = request.kept
    scope = ""
    if kept == 1:
        scope = " but its last message, which stays in the conversation as it is"
    elif kept > 1:
        scope = f" but its last {kept} messages, which stay in the conversation as they are"
    text = CONTINUATION_INSTRUCTION.format(scope=scope)
    return text + _FOCUS.format(focus=request.focus) if request.focus else text


def anthropic_body(conversation: Sequence[Message], instruction: str) -> Body:
    """A Messages API body: ``conversation`` encoded by :mod:`cast.codecs.anthropic`, a
    cache breakpoint on its last block, then ``instruction`` as the last user text."""
    from cast.codecs.anthropic import encode

    body = encode(list(conversation))
    messages: list[dict[str, Any]] = body["messages"]
    instruction_block = {"type": "text", "text": instruction}
    if messages:
        last, content = messages[-1], messages[-1]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if blocks:
            blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
        messages[-1] = {**last, "content": blocks}
    if messages and messages[-1]["role"] == "user":  # the instruction joins the last user message
        messages[-1]["content"].append(instruction_block)
    else:
        messages.append({"role": "user", "content": [instruction_block]})
    return body


def openai_body(conversation: Sequence[Message], instruction: str) -> Body:
    """A Chat Completions body: ``conversation`` encoded by :mod:`cast.codecs.openai`,
    then ``instruction`` as a last user message (OpenAI caches the common prefix by itself)."""
    from cast.codecs.openai import encode

    body = encode(list(conversation))
    body["messages"] = [*body["messages"], {"role": "user", "content": instruction}]
    return body


def _load(provider: str, handler: str) -> Any:
    """The SDK module named ``provider``, or ImportError saying how to install it."""
    try:
        return importlib.import_module(provider)
    except ImportError as exc:
        message = f"the {handler} handler needs the {provider} SDK: {install_hint(provider)}"
        raise ImportError(message) from exc


def _failure(
    sdk: Any, exc: Exception, model: str, timeout: float
) -> tuple[HandlerError, float | None]:
    """An SDK exception (or our own ``timeout``) as its HandlerError, and the wait asked for."""
    error = partial(HandlerError, provider=sdk.__name__, model=model)
    if isinstance(exc, TimeoutError):
        message = f"no response within {timeout:g} s"
        return error(message, retryable=True, error_type="timeout"), None
    if isinstance(exc, sdk.APITimeoutError):
        return error("the request timed out", retryable=True, error_type="timeout"), None
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause is not None and str(cause) else ""
        return error(f"connection error{detail}", retryable=True, error_type="connection"), None
    if isinstance(exc, sdk.APIStatusError):
        status: int = getattr(exc, "status_code", 0)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        message, kind = _provider_message(getattr(exc, "body", None))
        failure = error(
            message or str(exc),
            retryable=is_transient(exc),
            status_code=status,
            provider_message=message,
            error_type=kind,
        )
        return failure, _retry_after(headers)
    return error(str(exc) or type(exc).__name__), None


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name) if headers else None
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: the backoff alone decides
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _provider_message(body: object) -> tuple[str, str]:
    """(message, error type) from an SDK error body: the inner ``error`` object."""
    if isinstance(body, str):
        return body, ""
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    if not isinstance(inner, Mapping):
        return "", ""
    message, kind = inner.get("message"), inner.get("type") or inner.get("code")
    return (message if isinstance(message, str) else "", kind if isinstance(kind, str) else "")


def _sdk_handler(
    name: str,
    sdk: Any,
    model: str,
    policy: RetryPolicy,
    *,
    connect: Callable[..., Any],
    base: type[Exception],
    timeout: float,
    client: Any,
    create: Callable[[Any, Body], Awaitable[Any]],
    text: Callable[[Any, str], str],
    fresh: Callable[[str], Body],
    continued: Callable[[Sequence[Message], str], Body] | None,
    tools: Sequence[Mapping[str, Any]],
) -> RequestHandler:
    """The handler ``name``: each body sent by ``create`` (on ``client``, else a new one);
    a continuation body gets ``tools`` as the agent sent them (they lead the cached prefix)."""
    if not model:
        raise ValueError("model must be a non-empty model name")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")

    async def attempt(body: Body) -> str:
        if client is not None:
            return text(await create(client.with_options(max_retries=0), body), model)
        async with connect(timeout=timeout, max_retries=0) as owned:
            return text(await create(owned, body), model)

    async def summarize(request: SummaryRequest) -> str:
        if continued is not None and request.conversation:
            body = continued(request.conversation, continuation_instruction(request))
            if tools:
                body["tools"] = [dict(tool) for tool in tools]
        else:
            body = fresh(request.prompt)
        body = {"model": model, "timeout": timeout, **body}
        rng = random.Random()
        attempts = 0
        while True:
            attempts += 1
            try:
                with anyio.fail_after(timeout):
                    return await attempt(body)
            except HandlerError as exc:
                exc.attempts = attempts
                raise
            except (TimeoutError, base) as exc:
                (error, retry_after), cause = _failure(sdk, exc, model, timeout), exc
            error.attempts = attempts
            if not error.retryable or attempts > policy.max_retries:
                raise error from cause
            await anyio.sleep(policy.delay(attempts, retry_after, rng))

    return request_handler(summarize, f"{name}({model!r})")


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
    """A handler that asks ``model`` for the summary through chat completions (the
    official ``openai`` SDK), the system prompt first so that its prefix is cached.

    ``base_url`` and ``api_key`` default to the SDK's (``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``). ``timeout`` bounds each attempt; ``max_retries`` retries follow
    HTTP 408/409/425/429 and 5xx (:func:`csum.is_transient`), transport errors and timeouts,
    waiting ``backoff_base * 2**n`` seconds with jitter. Other errors, and a response
    without text, raise :class:`HandlerError` at once. ``token_limit_param``: ``max_tokens``
    for servers that predate ``max_completion_tokens``. Without ``client`` each call opens
    (and closes) its own ``AsyncOpenAI`` (so it works across event loops); a ``client``
    given is used with its retries off and left open. With ``continuation``, a request
    carrying its conversation (a Compactor's) goes as that conversation (and ``tools``) plus
    the instruction as a last user message (:func:`openai_body`).
    """
    sdk = _load("openai", "openai_compatible")
    check_count("max_output_tokens", max_output_tokens, none=True, type_error=False)
    limits = {} if max_output_tokens is None else {token_limit_param: max_output_tokens}
    system = {"role": "system", "content": system_prompt}
    return _sdk_handler(
        "openai_compatible",
        sdk,
        model,
        RetryPolicy(max_retries, backoff_base, backoff_max),
        connect=partial(sdk.AsyncOpenAI, api_key=api_key, base_url=base_url),
        base=sdk.OpenAIError,
        timeout=timeout,
        client=client,
        create=lambda active, body: active.chat.completions.create(**limits, **body),
        text=_openai_text,
        fresh=lambda prompt: {"messages": [system, {"role": "user", "content": prompt}]},
        continued=openai_body if continuation else None,
        tools=tools,
    )


def _openai_text(completion: Any, model: str) -> str:
    """The text of the first choice; a missing or blank one is a :class:`HandlerError`."""
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise HandlerError("the response has no choices", provider="openai", model=model)
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if isinstance(content, str) and content.strip():
        return content.strip()
    reason = getattr(choices[0], "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    detail = f"finish_reason={reason!r}" + (f", refusal={refusal!r}" if refusal else "")
    if reason == "length":
        detail += "; raise max_output_tokens"
    raise _empty_response(detail, "openai", model)


def _empty_response(detail: str, provider: str, model: str) -> HandlerError:
    return HandlerError(
        f"the response has no summary text ({detail})",
        provider=provider,
        model=model,
        error_type="empty_response",
    )


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
    """A handler that asks Claude ``model`` for the summary (the official ``anthropic``
    SDK: the system prompt as the ``system`` field, the prompt as the one user message).

    ``base_url`` and ``api_key`` default to the SDK's (``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_API_KEY``). Timeouts, retries (529 "overloaded" included) and clients
    behave as in :func:`csum.handlers.openai_compatible`. With ``continuation``, a
    request that carries its conversation (a Compactor's) is sent as the conversation
    the agent sent (system prompt, messages, ``tools``), a cache breakpoint at its end,
    then the instruction (:func:`anthropic_body`), read from the prompt cache
    (``system_prompt`` is then not sent); any other request is sent fresh.
    """
    sdk = _load("anthropic", "anthropic")
    check_count("max_tokens", max_tokens, none=True, type_error=False)
    return _sdk_handler(
        "anthropic",
        sdk,
        model,
        RetryPolicy(max_retries, backoff_base, backoff_max),
        connect=partial(sdk.AsyncAnthropic, api_key=api_key, base_url=base_url),
        base=sdk.AnthropicError,
        timeout=timeout,
        client=client,
        create=lambda active, body: active.messages.create(max_tokens=max_tokens, **body),
        text=_anthropic_text,
        fresh=lambda prompt: {
            "system": system_prompt,
            "messages": [{"role": "user", "content": prompt}],
        },
        continued=anthropic_body if continuation else None,
        tools=tools,
    )


def _anthropic_text(response: Any, model: str) -> str:
    """The text blocks of the reply joined; none, or only blanks, is a HandlerError."""
    text = "".join(
        block.text
        for block in getattr(response, "content", None) or []
        if getattr(block, "type", None) == "text" and isinstance(block.text, str)
    ).strip()
    if text:
        return text
    reason = getattr(response, "stop_reason", None)
    hint = "; raise max_tokens" if reason == "max_tokens" else ""
    raise _empty_response(f"stop_reason={reason!r}{hint}", "anthropic", model)
