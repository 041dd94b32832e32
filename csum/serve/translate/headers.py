"""The client's headers on a translated request: its API key where the other provider
reads it, without the headers only its own provider knows."""

from __future__ import annotations

from collections.abc import Iterable

from csum.serve.apis import Api

__all__ = ["ANTHROPIC_VERSION", "translated_headers"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent when an OpenAI client reaches Anthropic."""


def translated_headers(headers: Iterable[tuple[str, str]], target: Api) -> list[tuple[str, str]]:
    """The client's headers with its API key where ``target`` reads it (and an
    ``anthropic-version`` for Anthropic), without the other provider's own headers."""
    foreign = "openai-" if target.provider == "anthropic" else "anthropic-"
    items = [(k, v) for k, v in headers if not k.lower().startswith(foreign)]
    names = {k.lower() for k, _ in items}
    if target.provider == "anthropic":
        out = [(k, v) for k, v in items if k.lower() != "authorization"]
        if "x-api-key" not in names:
            for k, v in items:
                if k.lower() == "authorization" and v.lower().startswith("bearer "):
                    out.append(("x-api-key", v[7:].strip()))
        if "anthropic-version" not in names:
            out.append(("anthropic-version", ANTHROPIC_VERSION))
        return out
    out = [(k, v) for k, v in items if k.lower() != "x-api-key"]
    if "authorization" not in names:
        out.extend(("authorization", f"Bearer {v}") for k, v in items if k.lower() == "x-api-key")
    return out
