"""Errors raised by the summarize handlers.

Hierarchy::

    RuntimeError
    └── HandlerError          a provider call failed for good (after any retries)

The SDK's own exception, when there is one, is chained as ``__cause__``.
"""

from __future__ import annotations

__all__ = ["HandlerError"]


class HandlerError(RuntimeError):
    """A summarize handler could not get a summary from its provider.

    ``status_code`` is the HTTP status (``None`` for timeouts, transport errors and
    unusable responses), ``provider_message`` what the provider said, ``attempts`` how
    many requests were made, ``retryable`` whether the last failure was of a kind that
    is retried (so the retries ran out rather than the request being refused).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status_code: int | None = None,
        provider_message: str = "",
        error_type: str = "",
        attempts: int = 1,
        retryable: bool = False,
    ) -> None:
        self.provider = provider
        self.model = model
        self.status_code = status_code
        self.provider_message = provider_message
        self.error_type = error_type
        self.attempts = attempts
        self.retryable = retryable
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        where = f"{self.provider} model {self.model!r}"
        status = f"HTTP {self.status_code}: " if self.status_code is not None else ""
        kind = f"{self.error_type}: " if self.error_type else ""
        tries = "attempt" if self.attempts == 1 else "attempts"
        return f"{where}: {status}{kind}{self.message} ({self.attempts} {tries})"

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only fields would be lost by the default exception pickling.
        return (_rebuild, (self.message, dict(vars(self))))


def _rebuild(message: str, fields: dict[str, object]) -> HandlerError:
    error = HandlerError.__new__(HandlerError)
    RuntimeError.__init__(error, message)
    vars(error).update(fields)
    return error
