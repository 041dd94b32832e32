"""A client's credential: its API key as a provider reads it, and its tenant, a keyed hash
(HMAC-SHA-256, key: the tenant secret) of the credential that scopes its conversation
state, archive and summaries; the credential is never stored. Requests without one share
the anonymous tenant."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from urllib.parse import parse_qsl

__all__ = ["ANONYMOUS", "CREDENTIAL_HEADERS", "CREDENTIAL_QUERY_KEYS", "TenantKeys", "client_key"]

CREDENTIAL_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
"""Request headers that carry a client's credential."""
CREDENTIAL_QUERY_KEYS = ("key", "api_key")
"""Query parameters that carry a client's credential (Gemini's ``?key=``)."""
ANONYMOUS = "anonymous"
"""The tenant of requests without a credential."""


class TenantKeys:
    """Derives tenants with the gateway's secret (``secret``: None draws one)."""

    def __init__(self, secret: str | None = None) -> None:
        self._key = secret.encode() if secret is not None else secrets.token_bytes(32)

    def __repr__(self) -> str:
        return "TenantKeys(<secret>)"

    def tenant_of(self, headers: Mapping[str, str], query: str) -> str:
        """The tenant of a request (32 hex digits, or :data:`ANONYMOUS`)."""
        parts = [f"{name}\n{headers[name]}" for name in CREDENTIAL_HEADERS if headers.get(name)]
        params = sorted((k, v) for k, v in parse_qsl(query) if k.lower() in CREDENTIAL_QUERY_KEYS)
        parts.extend(f"?{k}\n{v}" for k, v in params)
        if not parts:
            return ANONYMOUS
        text = "\n\n".join(parts).encode("utf-8", "surrogateescape")
        return hmac.new(self._key, text, hashlib.sha256).hexdigest()[:32]


def client_key(headers: Mapping[str, str], provider: str) -> str | None:
    """The API key in ``headers`` (lower-case names): ``x-api-key`` or a bearer
    ``authorization``, the one ``provider`` reads when both are sent (None: neither)."""
    api_key = headers.get("x-api-key")
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    bearer = token.strip() if scheme.lower() == "bearer" else None
    first, second = (api_key, bearer) if provider == "anthropic" else (bearer, api_key)
    return first or second or None
