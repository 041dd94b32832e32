"""What the SDK handlers share: their connection, the retry policy and the retry loop.

The SDKs' own retries are switched off (``max_retries=0``) and this loop retries
instead, so the policy is one, explicit and testable: rate limits (429), request
timeouts (408), server errors (5xx), transport errors and timeouts are retried with
exponential backoff and jitter; any other error fails at once. Sleeps go through
:func:`anyio.sleep`, so the handlers run on asyncio and on trio.
"""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from cast import Message
from cast.chainio import install_hint
from csum.config import RetryPolicy
from csum.errors import HandlerError
from csum.handlers._continuation import continuation_instruction
from csum.prompt import SummaryRequest
from csum.request import RequestHandler, request_handler

__all__ = [
    "Body",
    "Failure",
    "RequestHandler",
    "RetryPolicy",
    "SdkConnection",
    "SdkErrors",
    "check_token_limit",
    "classify_sdk_error",
    "import_sdk",
    "run_with_retries",
    "sdk_handler",
]

RETRIED_STATUS_CODES = frozenset({408, 429})
"""4xx statuses that are retried; every 5xx is retried too."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt, as the retry loop sees it."""

    message: str
    retryable: bool
    status_code: int | None = None
    provider_message: str = ""
    error_type: str = ""
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """The exception classes of one provider SDK (openai and anthropic share a shape)."""

    base: type[Exception]
    status: type[Exception]
    connection: type[Exception]
    timeout: type[Exception]

    @classmethod
    def of(cls, sdk: Any, base: type[Exception]) -> SdkErrors:
        """The classes of an SDK module that names them as openai and anthropic do."""
        return cls(
            base=base,
            status=sdk.APIStatusError,
            connection=sdk.APIConnectionError,
            timeout=sdk.APITimeoutError,
        )


def import_sdk(module: str, handler: str, extra: str) -> Any:
    """The SDK module, or an ImportError saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"the {handler} handler needs the {module} SDK: {install_hint(extra)}"
        ) from exc


def check_token_limit(name: str, limit: int | None) -> None:
    """ValueError for an output-token limit (the field ``name``) not above 0."""
    if limit is not None and limit <= 0:
        raise ValueError(f"{name} must be > 0, got {limit}")


@dataclass(frozen=True, slots=True)
class SdkConnection:
    """The options every SDK handler takes: which model, where, how long, how often.

    ``client`` is an SDK client to use (left open), or None to open one per call.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    client: Any = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a non-empty model name")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout}")

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.backoff_base, self.backoff_max)


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
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
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message")
            kind = inner.get("type") or inner.get("code")
            return (
                message if isinstance(message, str) else "",
                kind if isinstance(kind, str) else "",
            )
    if isinstance(body, str):
        return body, ""
    return "", ""


def classify_sdk_error(exc: Exception, errors: SdkErrors) -> Failure:
    """Map an SDK exception to a :class:`Failure`: retryable or not, and why."""
    if isinstance(exc, errors.timeout):
        return Failure("the request timed out", retryable=True, error_type="timeout")
    if isinstance(exc, errors.connection):
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause is not None and str(cause) else ""
        return Failure(f"connection error{detail}", retryable=True, error_type="connection")
    if isinstance(exc, errors.status):
        status: int = getattr(exc, "status_code", 0)
        response: Any = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        message, kind = _provider_message(getattr(exc, "body", None))
        return Failure(
            message or str(exc),
            retryable=status in RETRIED_STATUS_CODES or status >= 500,
            status_code=status,
            provider_message=message,
            error_type=kind,
            retry_after=_retry_after(headers),
        )
    return Failure(str(exc) or type(exc).__name__, retryable=False)


async def run_with_retries(
    attempt: Callable[[], Awaitable[str]],
    *,
    provider: str,
    model: str,
    timeout: float,
    policy: RetryPolicy,
    errors: SdkErrors,
) -> str:
    """Await ``attempt()`` under a ``timeout`` per attempt, retrying as ``policy`` says.

    Raises :class:`HandlerError` (the SDK error as its cause) once a failure is not
    retryable or the retries are spent.
    """
    rng = random.Random()
    attempts = 0
    while True:
        attempts += 1
        cause: BaseException
        try:
            with anyio.fail_after(timeout):
                return await attempt()
        except HandlerError as exc:
            exc.attempts = attempts
            raise
        except TimeoutError as exc:
            failure = Failure(
                f"no response within {timeout:g} s", retryable=True, error_type="timeout"
            )
            cause = exc
        except errors.base as exc:
            failure = classify_sdk_error(exc, errors)
            cause = exc
        if not failure.retryable or attempts > policy.max_retries:
            raise HandlerError(
                failure.message,
                provider=provider,
                model=model,
                status_code=failure.status_code,
                provider_message=failure.provider_message,
                error_type=failure.error_type,
                attempts=attempts,
                retryable=failure.retryable,
            ) from cause
        await anyio.sleep(policy.delay(attempts, failure.retry_after, rng))


Body = dict[str, Any]
"""The keyword arguments of one SDK call that say what is sent (messages, system...)."""


def sdk_handler(
    connection: SdkConnection,
    *,
    provider: str,
    handler: str,
    errors: SdkErrors,
    client_class: Callable[..., Any],
    complete: Callable[[Any, Body], Awaitable[str]],
    fresh: Callable[[str], Body],
    continued: Callable[[Sequence[Message], str], Body] | None,
) -> RequestHandler:
    """A request handler calling ``complete(client, body)`` with retries. The body is
    ``continued(request.conversation, instruction)`` for a request that carries its
    conversation when ``continued`` is given (a continuation handler:
    :mod:`csum.handlers._continuation`), else ``fresh(request.prompt)``.

    With ``connection.client`` given, it is used with the SDK's own retries turned off
    and never closed; otherwise each call opens its own ``client_class(...)`` (an async
    context manager, its retries off), so the handler works across event loops.
    ``handler`` names the handler factory in the handler's ``repr``.
    """
    client = connection.client
    policy = connection.policy

    def body_of(request: SummaryRequest) -> Body:
        if continued is not None and request.conversation:
            return continued(request.conversation, continuation_instruction(request))
        return fresh(request.prompt)

    async def attempt(body: Body) -> str:
        if client is not None:
            return await complete(client.with_options(max_retries=0), body)
        owned_client = client_class(
            api_key=connection.api_key,
            base_url=connection.base_url,
            timeout=connection.timeout,
            max_retries=0,
        )
        async with owned_client as owned:
            return await complete(owned, body)

    async def summarize(request: SummaryRequest) -> str:
        body = body_of(request)
        return await run_with_retries(
            lambda: attempt(body),
            provider=provider,
            model=connection.model,
            timeout=connection.timeout,
            policy=policy,
            errors=errors,
        )

    return request_handler(summarize, f"{handler}({connection.model!r})")
