"""Which handler writes a gateway's summaries (``--summarizer``), per request: offline
(``extractive``), the ``upstream`` with the request's own credentials (kept nowhere), or
a separate ``openai`` / ``anthropic`` endpoint."""

from __future__ import annotations

import os
from dataclasses import dataclass

from csum.config import RetryPolicy, Robustness
from csum.handlers import anthropic, openai_compatible
from csum.request import Handler
from csum.serve.config import ServeConfig

__all__ = [
    "MODEL_PROMPT_BYTES",
    "SUMMARY_RETRIES",
    "SUMMARY_TIMEOUT",
    "SummaryHandler",
    "SummaryHandlerFactory",
]

_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
SUMMARY_TIMEOUT = 120.0
"""Seconds one attempt of a summary call may take."""
SUMMARY_RETRIES = 2
"""Retries of a transiently failed summary call (by the Compactor's robust handler alone)."""
MODEL_PROMPT_BYTES = 1 << 20
"""Largest prompt sent to a model handler (beyond it: summarized in pieces, merged)."""


@dataclass(frozen=True, slots=True)
class SummaryHandler:
    """The handler of one request and its cache id (None: the extractive one, offline)."""

    handler: Handler | None = None
    handler_id: str | None = None

    @property
    def robustness(self) -> Robustness:
        """How the gateway's Compactor calls the handler (a model's within the bounds above)."""
        if self.handler is None:
            return Robustness(max_prompt_bytes=None)
        return Robustness(
            timeout=SUMMARY_TIMEOUT,
            retry=RetryPolicy(max_retries=SUMMARY_RETRIES),
            max_prompt_bytes=MODEL_PROMPT_BYTES,
        )


class SummaryHandlerFactory:
    """Makes each request's :class:`SummaryHandler` from ``--summarizer`` (checked at start)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.kind = kind = config.summarizer
        self._fixed = SummaryHandler()
        if kind in _DEFAULT_KEY_ENV:  # a separate endpoint (ServeConfig requires its model)
            model, url = config.summarizer_model or "", config.summarizer_url
            env = config.summarizer_key_env or _DEFAULT_KEY_ENV[kind]
            key = os.environ.get(env)
            if not key:
                raise ValueError(f"--summarizer {kind}: the environment variable {env} is unset")
            handler_id = f"{kind}:{url or ''}:{model}"
            self._fixed = SummaryHandler(_handler(kind, model, url, key), handler_id)

    def for_request(self, provider: str, model: object, key: str | None) -> SummaryHandler:
        """The handler for a request to ``provider`` for ``model`` carrying the API ``key``
        (the offline one for ``upstream`` without a key or a model name)."""
        name = self.config.summarizer_model or (model if isinstance(model, str) else None)
        if self.kind != "upstream" or not name or key is None:
            return self._fixed
        base = self.config.upstream.rstrip("/")
        # the SDK is given the key as its api_key and sends it as that SDK version does
        url = base if provider == "anthropic" else f"{base}/v1"
        handler = _handler(provider, name, url, key)
        # cached by model, not by key: a summary is a function of the text summarized
        return SummaryHandler(handler, f"upstream:{provider}:{name}")


def _handler(kind: str, model: str, url: str | None, key: str | None) -> Handler:
    """One attempt per call (the Compactor's robust handler retries)."""
    make = anthropic if kind == "anthropic" else openai_compatible
    return make(model, base_url=url, api_key=key, timeout=SUMMARY_TIMEOUT, max_retries=0)
