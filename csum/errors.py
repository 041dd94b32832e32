"""Exceptions of ``csum``.

Hierarchy::

    Exception
    └── CsumError                   anything csum raises on purpose
        ├── SummarizationError      (also a RuntimeError) a handler call failed or
        │                           returned something unusable; the caller's chain
        │                           is untouched. The handler's exception is the
        │                           ``__cause__`` (of the earliest section whose call
        │                           failed; others are listed in a note).
        ├── HandlerError            (also a RuntimeError) a provider call made by a
        │                           built-in handler failed for good, after any
        │                           retries; the SDK's exception is the ``__cause__``
        └── StoreError              (also a RuntimeError) a cache or archive store
                                    cannot be used (the summarizer reports it as an
                                    event instead of raising it)

Catch :class:`CsumError` for all of them, or the builtin each also is. Bad chains raise
``cast.ChainError``, bad settings ``TypeError``/``ValueError`` (pydantic's
``ValidationError`` for :class:`~csum.SummarizerConfig`): they come from the values given.
"""

from __future__ import annotations

__all__ = ["CsumError", "HandlerError", "StoreError", "SummarizationError"]


class CsumError(Exception):
    """The root of csum's exceptions."""


class SummarizationError(CsumError, RuntimeError):
    """Summarization failed; nothing of the input was changed and no partial result
    escapes. ``section`` is the index of the section being summarized, when known."""

    def __init__(
        self, message: str, *, section: int | None = None, phase: str | None = None
    ) -> None:
        self.section = section
        self.phase = phase
        where = ", ".join(w for w in (phase, section is not None and f"section {section}") if w)
        super().__init__(f"{where}: {message}" if where else message)


class StoreError(CsumError, RuntimeError):
    """A summary-cache or archive store could not be opened or used (a missing client
    package, a bad location). The summarizer never lets a store failure reach a
    compaction: it reports it as a :class:`csum.StoreEvent` and goes on without it.
    """


class HandlerError(CsumError, RuntimeError):
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
        # The default exception pickling calls __init__ with the message alone.
        return (type(self).__new__, (type(self), self.message), dict(vars(self)))
