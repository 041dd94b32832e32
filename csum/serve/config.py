"""The gateway's settings (``csum serve``'s flags), checked when built."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from urllib.parse import urlsplit

from csum.config import DEFAULT_KEEP_RATIO, Budget, _check_share

__all__ = [
    "CONVERSATION_HEADER",
    "GATEWAY_KEY_HEADER",
    "RETRY_AFTER",
    "SUMMARIZER_KINDS",
    "UPSTREAM_APIS",
    "ServeConfig",
]

CONVERSATION_HEADER = "x-csum-conversation"
"""Optional request header naming the conversation (else it is recognised by content)."""
UPSTREAM_APIS = ("same", "openai", "anthropic")
"""The API the upstream speaks: the client's own, or only ``openai`` Chat Completions or
``anthropic`` Messages (the other APIs' requests translated: csum.serve.translate)."""
SUMMARIZER_KINDS = ("extractive", "upstream", "openai", "anthropic")
"""``--summarizer``: offline, the upstream, or a separate endpoint (csum.serve.summary_handler)."""
RETRY_AFTER = 1
"""Seconds a client refused for load (503) is told to wait (``Retry-After``)."""
GATEWAY_KEY_HEADER = "x-csum-key"
"""Request header carrying the gateway's own key when ``--gateway-key`` is set."""


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """What ``csum serve`` runs with: each field is the flag of its name (``csum serve --help``
    and docs/serve.md say what each does); ``budget`` None means ``window_share`` of the
    model's window (an unknown model is forwarded uncompacted)."""

    upstream: str
    budget: Budget | None = None
    window_share: float = 0.75
    keep_ratio: float = DEFAULT_KEEP_RATIO
    store: str = "memory"
    state_ttl: float | None = 7 * 24 * 3600.0
    max_body_bytes: int = 32 << 20
    """Largest request body the gateway reads (32 MiB); larger ones get 413."""
    timeout: float = 600.0
    connect_timeout: float = 10.0
    max_connections: int = 100
    gateway_key: str | None = None
    upstream_api: str = "same"
    upstream_model: str | None = None
    refuse_builtin_tools: bool = False
    """With translation: answer 400 to a Responses request naming a built-in tool the
    upstream cannot run (``web_search``, ...), instead of dropping it from ``tools``
    with a warning header (``x-csum-dropped-tools``)."""
    summarizer: str = "extractive"
    summarizer_url: str | None = None
    summarizer_model: str | None = None
    summarizer_key_env: str | None = None
    archive: str | None = None
    archive_reinsert_bytes: int = 0
    archive_ttl: float | None = 7 * 24 * 3600.0
    """Seconds an archive session lives after its last write (None: for good)."""
    offload: bool = True
    compaction_workers: int = 16
    """Compactions at once (threads of their own pool; store I/O has anyio's default pool)."""
    deadline: float = 60.0
    """Seconds a request may wait for and spend in its compaction (then forwarded as it came)."""
    max_depth: int = 100
    """Deepest JSON nesting of a body the gateway decodes (400 beyond)."""
    max_items: int = 20_000
    """Most messages plus content blocks in a history the gateway decodes (413 beyond)."""
    memory_store_bytes: int = 256 << 20
    """With ``store="memory"``: bytes of state and summaries the store holds at most
    (least recently used dropped first)."""
    header_timeout: float = 10.0
    """Seconds a client has to send its request line and headers (408 beyond)."""
    body_timeout: float = 60.0
    """Seconds a client has to send its whole body once its headers are in (408 beyond)."""
    max_client_connections: int = 1024
    """Client connections open at once, in all; one more is answered 503 at once."""
    max_connections_per_client: int = 128
    """Client connections open at once from one address; one more is answered 503."""
    tenant_secret: str | None = field(default=None, repr=False)
    """Key of the hash making a tenant of a credential (None: drawn at start; replicas
    sharing a store need the same one)."""
    summary_only: bool = False
    """``csum.config.SUMMARY_ONLY``'s clearing and summary share instead of the defaults."""

    def __post_init__(self) -> None:
        _check_url("upstream", self.upstream)
        if urlsplit(self.upstream).query or urlsplit(self.upstream).fragment:
            raise ValueError(f"upstream must have no query or fragment: {self.upstream!r}")
        for name in ("window_share", "keep_ratio"):  # as Budget checks them, at start
            _check_share(_said(name), getattr(self, name))
        for name in (f.name for f in fields(self) if f.name != "archive_reinsert_bytes"):
            value = getattr(self, name)  # every number (the ttls may be None)
            if type(value) in (int, float) and value <= 0:
                raise ValueError(f"{_said(name)} must be positive, got {value!r}")
        for name in ("gateway_key", "upstream_model", "summarizer_model", "store", "archive"):
            if getattr(self, name) == "":
                raise ValueError(f"the {_said(name)} must not be empty")
        for name, kinds in (("upstream_api", UPSTREAM_APIS), ("summarizer", SUMMARIZER_KINDS)):
            value = getattr(self, name)
            if value not in kinds:
                raise ValueError(f"{_said(name)} must be one of {', '.join(kinds)}, got {value!r}")
        if self.tenant_secret is not None and len(self.tenant_secret) < 16:
            raise ValueError("the tenant secret must be at least 16 characters")
        if (reinsert := self.archive_reinsert_bytes) < 0:
            raise ValueError(f"archive reinsert bytes must be 0 or positive, got {reinsert}")
        separate = self.summarizer in ("openai", "anthropic")
        if separate and not self.summarizer_model:
            raise ValueError(f"summarizer {self.summarizer} needs a summarizer model")
        for name, said in (("summarizer_url", "url"), ("summarizer_key_env", "key variable")):
            if not separate and getattr(self, name) is not None:
                raise ValueError(f"a summarizer {said} goes with summarizer openai or anthropic")
        if self.summarizer_url is not None:
            _check_url("summarizer url", self.summarizer_url)

    def budget_for(self, model: object) -> Budget | None:
        """The budget of a request for ``model``; None when it cannot be known (no
        ``--budget`` and a model missing from the window table)."""
        if self.budget is not None:
            return self.budget
        if not isinstance(model, str) or not model:
            return None
        try:
            return Budget.of_model(model, self.window_share)
        except ValueError:
            return None


def _said(name: str) -> str:
    return name.replace("_", " ")


def _check_url(name: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must be an http(s) URL, got {url!r}")
