"""The gateway's settings (``csum serve``'s flags), checked when built."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from csum.config import DEFAULT_KEEP_RATIO, Budget
from csum.serve.limits import DEFAULT_MAX_DEPTH, DEFAULT_MAX_ITEMS

__all__ = [
    "CONVERSATION_HEADER",
    "DEFAULT_COMPACTION_WORKERS",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_WINDOW_SHARE",
    "GATEWAY_KEY_HEADER",
    "SUMMARIZER_KINDS",
    "UPSTREAM_APIS",
    "ServeConfig",
]

DEFAULT_MAX_BODY_BYTES = 32 << 20
"""Largest request body the gateway reads (32 MiB); larger ones get 413."""
DEFAULT_COMPACTION_WORKERS = 16
"""Compactions at once (threads of their own pool; store I/O has anyio's default pool)."""
DEFAULT_DEADLINE = 60.0
"""Seconds a request may spend waiting for and in its compaction before it is forwarded
uncompacted (summary calls included)."""
DEFAULT_WINDOW_SHARE = 0.75
"""Without ``--budget``: the share of the request's model window a chain may take."""
CONVERSATION_HEADER = "x-csum-conversation"
"""Optional request header naming the conversation (else it is recognised by content)."""
UPSTREAM_APIS = ("same", "openai", "anthropic")
"""``same``: the upstream speaks the client's API; ``openai``: it speaks Chat Completions
only (Anthropic Messages and Responses requests are translated); ``anthropic``: it
speaks Anthropic Messages only (Chat Completions and Responses requests are
translated). See csum.serve.translate."""
SUMMARIZER_KINDS = ("extractive", "upstream", "openai", "anthropic")
"""``--summarizer``: offline; the upstream with the client's key; a separate endpoint
of an OpenAI-compatible or Anthropic API (csum.serve.summary_handler)."""
GATEWAY_KEY_HEADER = "x-csum-key"
"""Request header carrying the gateway's own key when ``--gateway-key`` is set."""


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """What ``csum serve`` runs with.

    ``upstream`` is the base URL requests are forwarded to (its path is kept as a
    prefix). ``budget`` bounds every chain; None means ``window_share`` of the
    request's model window (``Budget.of_model``); a model not in the table is then
    forwarded uncompacted. The keepers run with ``budget``'s limit and summary share,
    ``keep_ratio`` as their ``Budget.keep_ratio`` and ``trigger`` 1.0 (a request
    within the budget goes through byte for byte). ``store`` is where conversation
    state and the summary cache live: ``memory``, a SQLite file path, or a
    ``redis://`` URL (shared by replicas).
    ``upstream_api="openai"`` translates Anthropic Messages and Responses requests for
    an OpenAI-compatible (Chat Completions) upstream, ``"anthropic"`` Chat Completions
    and Responses requests for an Anthropic upstream (``upstream_model``, when set,
    replaces the model of translated requests).
    ``summarizer`` names what writes the summaries (``extractive``, ``upstream``,
    ``openai``, ``anthropic``), with its ``summarizer_*`` options: see
    :mod:`csum.serve.summary_handler`. ``archive``: where
    the messages summarized away are kept (a store location; None: not kept), one
    session per conversation key; ``archive_reinsert_bytes`` > 0 puts archived lines a
    new question needs back into the chain. ``offload``: compaction runs in a worker
    thread (its own event loop), so a large request never stalls the others;
    ``compaction_workers`` such threads at most. ``deadline``: seconds a request may
    wait for and spend in its compaction; past it, it goes uncompacted.
    """

    upstream: str
    budget: Budget | None = None
    window_share: float = DEFAULT_WINDOW_SHARE
    keep_ratio: float = DEFAULT_KEEP_RATIO
    store: str = "memory"
    state_ttl: float | None = 7 * 24 * 3600.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
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
    compaction_workers: int = DEFAULT_COMPACTION_WORKERS
    deadline: float = DEFAULT_DEADLINE
    max_depth: int = DEFAULT_MAX_DEPTH
    """Deepest JSON nesting of a body the gateway decodes (400 beyond)."""
    max_items: int = DEFAULT_MAX_ITEMS
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
    """Key of the hash that makes a tenant of a client's credential (csum.serve.tenant);
    None: one drawn at random when the gateway starts. Replicas sharing a store need
    the same one."""
    summary_only: bool = False
    """The summary stage alone (``csum.config.SUMMARY_ONLY``'s clearing and summary
    share: no clearing, summaries 1/32 of the budget) instead of the Compactor's
    defaults; ``keep_ratio`` stays the size a compaction brings the chain to."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"upstream must be an http(s) URL, got {self.upstream!r}")
        if parts.query or parts.fragment:
            raise ValueError(f"upstream must have no query or fragment: {self.upstream!r}")
        if not 0 < self.window_share <= 1:
            raise ValueError(f"window share must be within (0, 1], got {self.window_share!r}")
        if not 0 < self.keep_ratio <= 1:
            raise ValueError(f"keep_ratio must be within (0, 1], got {self.keep_ratio!r}")
        if self.max_body_bytes < 1:
            raise ValueError(f"max body bytes must be positive, got {self.max_body_bytes}")
        if self.compaction_workers < 1:
            raise ValueError(f"compaction workers must be positive, got {self.compaction_workers}")
        for name in (
            "max_client_connections",
            "max_connections_per_client",
            "max_depth",
            "max_items",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("timeout", "connect_timeout", "deadline", "header_timeout", "body_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.archive_ttl is not None and self.archive_ttl <= 0:
            raise ValueError(f"archive ttl must be positive or None, got {self.archive_ttl!r}")
        if self.state_ttl is not None and self.state_ttl <= 0:
            raise ValueError(f"state ttl must be positive or None, got {self.state_ttl!r}")
        if self.max_connections < 1:
            raise ValueError(f"max connections must be positive, got {self.max_connections}")
        if self.tenant_secret is not None and len(self.tenant_secret) < 16:
            raise ValueError("the tenant secret must be at least 16 characters")
        if self.gateway_key is not None and not self.gateway_key:
            raise ValueError("the gateway key must not be empty")
        if self.upstream_api not in UPSTREAM_APIS:
            raise ValueError(
                f"upstream api must be one of {', '.join(UPSTREAM_APIS)}, got {self.upstream_api!r}"
            )
        if self.upstream_model is not None and not self.upstream_model:
            raise ValueError("the upstream model must not be empty")
        if not self.store:
            raise ValueError("store must be memory, a SQLite path or a redis:// URL")
        self._check_summarizer()
        if self.archive is not None and not self.archive:
            raise ValueError("archive must be memory, a SQLite path or a redis:// URL")
        if self.archive_reinsert_bytes < 0:
            raise ValueError(
                f"archive reinsert bytes must be 0 or positive, got {self.archive_reinsert_bytes}"
            )

    def _check_summarizer(self) -> None:
        kind = self.summarizer
        if kind not in SUMMARIZER_KINDS:
            raise ValueError(
                f"summarizer must be one of {', '.join(SUMMARIZER_KINDS)}, got {kind!r}"
            )
        if kind in ("openai", "anthropic") and not self.summarizer_model:
            raise ValueError(f"summarizer {kind} needs a summarizer model")
        if self.summarizer_url is not None:
            if kind not in ("openai", "anthropic"):
                raise ValueError("a summarizer url goes with summarizer openai or anthropic")
            parts = urlsplit(self.summarizer_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"summarizer url must be an http(s) URL, got {self.summarizer_url!r}"
                )
        if self.summarizer_key_env is not None and kind not in ("openai", "anthropic"):
            raise ValueError("a summarizer key variable goes with summarizer openai or anthropic")
        if self.summarizer_model is not None and not self.summarizer_model:
            raise ValueError("the summarizer model must not be empty")

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
