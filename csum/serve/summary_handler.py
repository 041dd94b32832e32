"""Which handler writes a gateway's summaries (``--summarizer``), per request.

``extractive`` (the default) runs offline. ``upstream`` asks the gateway's own upstream,
with the credentials of the request being compacted (they are used for that one
request's summary calls and kept nowhere). ``openai`` / ``anthropic`` ask a separate
endpoint of that API (``--summarizer-url``, ``--summarizer-model``, its key read from
the environment variable ``--summarizer-key-env`` when the gateway starts).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from csum.config import RetryPolicy, Robustness
from csum.handlers import anthropic, openai_compatible
from csum.request import Handler
from csum.serve.config import ServeConfig

__all__ = [
    "SUMMARY_RETRIES",
    "SUMMARY_TIMEOUT",
    "Credentials",
    "SummaryHandler",
    "SummaryHandlerFactory",
    "robustness",
]

_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
SUMMARY_TIMEOUT = 120.0
"""Seconds one attempt of a summary call may take."""
SUMMARY_RETRIES = 2
"""Retries of a summary call that failed transiently (429, 408, 5xx, a timeout). The
gateway's handlers make one attempt per call and the Compactor's robust handler alone
retries (:func:`robustness`): one policy, never retries nested in retries. The whole
call is bounded by the request's deadline (``--deadline``)."""


def robustness(offline: bool, max_prompt_bytes: int) -> Robustness:
    """How the gateway's Compactor calls its handler: a model's prompt bounded by
    ``max_prompt_bytes`` and its transient failures retried :data:`SUMMARY_RETRIES`
    times, each attempt at most :data:`SUMMARY_TIMEOUT` seconds; the offline handler as
    the Compactor's default."""
    if offline:
        return Robustness(max_prompt_bytes=None)
    return Robustness(
        timeout=SUMMARY_TIMEOUT,
        retry=RetryPolicy(max_retries=SUMMARY_RETRIES),
        max_prompt_bytes=max_prompt_bytes,
    )


@dataclass(frozen=True, slots=True)
class Credentials:
    """A client's API key as its request carried it (``x-api-key`` or a bearer
    ``authorization``); never shown by ``repr``, never stored."""

    api_key: str | None = field(default=None, repr=False)
    bearer: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, headers: Any) -> Credentials | None:
        """The credentials in request ``headers`` (a case-insensitive mapping)."""
        api_key = headers.get("x-api-key") or None
        auth = headers.get("authorization") or ""
        scheme, _, token = auth.partition(" ")
        bearer = token.strip() if scheme.lower() == "bearer" and token.strip() else None
        if api_key is None and bearer is None:
            return None
        return cls(api_key, bearer)


@dataclass(frozen=True, slots=True)
class SummaryHandler:
    """The handler of one request (None: the Compactor's own extractive one), the id its
    summaries are cached under, and whether it runs offline."""

    handler: Handler | None
    handler_id: str | None
    offline: bool


class SummaryHandlerFactory:
    """Makes the :class:`SummaryHandler` of each request from the gateway's
    ``--summarizer`` (built when the gateway starts: a missing key or SDK is said then)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.kind = config.summarizer
        self._fixed: SummaryHandler | None = None
        if self.kind == "extractive":
            self._fixed = SummaryHandler(None, None, True)
        elif self.kind in ("openai", "anthropic"):
            self._fixed = self._separate()

    def _separate(self) -> SummaryHandler:
        config = self.config
        model = config.summarizer_model
        if model is None:  # ServeConfig refuses it; said again for the type checker
            raise ValueError(f"--summarizer {self.kind} needs --summarizer-model")
        env = config.summarizer_key_env or _DEFAULT_KEY_ENV[self.kind]
        key = os.environ.get(env)
        if not key:
            raise ValueError(f"--summarizer {self.kind}: the environment variable {env} is unset")
        url = config.summarizer_url
        if self.kind == "openai":
            handler = openai_compatible(
                model, base_url=url, api_key=key, timeout=SUMMARY_TIMEOUT, max_retries=0
            )
        else:
            handler = anthropic(
                model, base_url=url, api_key=key, timeout=SUMMARY_TIMEOUT, max_retries=0
            )
        return SummaryHandler(handler, f"{self.kind}:{url or ''}:{model}", False)

    def for_request(
        self, provider: str, model: object, credentials: Credentials | None
    ) -> SummaryHandler:
        """The handler for a request to ``provider`` for ``model`` carrying
        ``credentials``. With ``upstream`` and no usable credentials (or no model
        name), the offline handler."""
        if self._fixed is not None:
            return self._fixed
        name = self.config.summarizer_model or (model if isinstance(model, str) else None)
        if not name or credentials is None:
            return SummaryHandler(None, None, True)
        base = self.config.upstream.rstrip("/")
        # the SDK is given the key as its api_key and sends it as that SDK version does
        if provider == "anthropic":
            key = credentials.api_key or credentials.bearer
            handler = anthropic(
                name, base_url=base, api_key=key, timeout=SUMMARY_TIMEOUT, max_retries=0
            )
        else:
            key = credentials.bearer or credentials.api_key
            handler = openai_compatible(
                name, base_url=f"{base}/v1", api_key=key, timeout=SUMMARY_TIMEOUT, max_retries=0
            )
        # cached by model, not by key: a summary is a function of the text summarized
        return SummaryHandler(handler, f"upstream:{provider}:{name}", False)
