"""``csum serve``: its flags and the server run (uvicorn); and the readers of the options
``csum summarize`` shares with it (sizes, shares, the budget), whose errors name the flag."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import MISSING, fields
from typing import TextIO

from cast.chainio import parse_size
from csum.config import DEFAULT_KEEP_RATIO, SUMMARY_ONLY, Budget
from csum.serve.config import SUMMARIZER_KINDS, UPSTREAM_APIS, ServeConfig
from csum.serve.summary_handler import SummaryHandlerFactory

__all__ = [
    "DEFAULT_KEEP_ALIVE",
    "GATEWAY_KEY_ENV",
    "SWITCH_INTERVAL",
    "TENANT_SECRET_ENV",
    "add_serve_parser",
    "budget_option",
    "config_from",
    "serve",
    "share_option",
    "size_option",
]

DEFAULT_KEEP_ALIVE = 75.0
"""Seconds uvicorn keeps an idle client connection: longer than clients and load
balancers (60 s), so they always close first."""
SWITCH_INTERVAL = 0.0005
"""Seconds between thread switches in ``csum serve`` (Python's default 0.005): the event
loop gets the GIL back from a compacting worker sooner."""
GATEWAY_KEY_ENV = "CSUM_GATEWAY_KEY"
"""Environment variable read for the gateway key (kept off the command line)."""
TENANT_SECRET_ENV = "CSUM_TENANT_SECRET"  # noqa: S105 -- a variable name, not a secret
"""Environment variable read for the tenant secret (csum.serve.tenant)."""


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to ``csum``'s sub-commands, its flags in groups (as ``--help`` lists
    them)."""
    parser = commands.add_parser("serve", help="run the compaction gateway (needs the serve extra)")
    # a flag named as a ServeConfig field and given no default of its own defaults to the
    # field's, which its help shows (--keep-ratio's depends on --summary-only: config_from)
    defaults = {f.name: f.default for f in fields(ServeConfig) if f.default is not MISSING}
    parser.set_defaults(**{k: v for k, v in defaults.items() if k != "keep_ratio"})
    _add_upstream(parser.add_argument_group("upstream"))
    _add_clients(parser.add_argument_group("clients"))
    _add_budget(parser.add_argument_group("budget"))
    _add_summarizer(parser.add_argument_group("summaries"))
    _add_state(parser.add_argument_group("state and archive"))
    _add_run(parser.add_argument_group("run"))


def _add_upstream(group: argparse._ArgumentGroup) -> None:
    """Where requests go, in which API, and how long they may take there."""
    add = group.add_argument
    add("--upstream", required=True, help="base URL requests are forwarded to")
    add(
        "--upstream-api",
        choices=UPSTREAM_APIS,
        help="same: the upstream speaks the client's API (default); openai: it speaks Chat "
        "Completions only, Anthropic Messages and Responses requests are translated; "
        "anthropic: it speaks Anthropic Messages only, Chat Completions and Responses "
        "requests are translated",
    )
    add(
        "--upstream-model",
        help="with --upstream-api openai|anthropic: model name sent in translated requests",
    )
    add(
        "--refuse-builtin-tools",
        action="store_true",
        help="with --upstream-api: answer 400 to a Responses request with a built-in tool the "
        "upstream cannot run (web_search, tool_search, ...) instead of dropping it from tools "
        "(named in the x-csum-dropped-tools response header)",
    )
    add("--timeout", type=float, help="upstream read timeout, s (default %(default)g)")
    add("--connect-timeout", type=float, help="upstream connect timeout, s")
    add(
        "--max-connections",
        type=int,
        help="upstream requests in flight (its connection pool); one more is answered 503 "
        "with Retry-After at once (default %(default)s)",
    )


def _add_clients(group: argparse._ArgumentGroup) -> None:
    """Where the gateway listens, and what it takes from a client."""
    add = group.add_argument
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    add("--port", type=int, default=8787, help="port to bind (default 8787)")
    add(
        "--gateway-key",
        help=f"require this key in the x-csum-key header (default: ${GATEWAY_KEY_ENV} if set)",
    )
    add(
        "--keep-alive",
        type=float,
        default=DEFAULT_KEEP_ALIVE,
        help="seconds an idle client connection is kept open (default %(default)g: longer "
        "than load balancers' idle timeouts)",
    )
    add(
        "--max-client-connections",
        type=int,
        help="client connections open at once; one more is answered 503 (default %(default)s)",
    )
    add(
        "--max-connections-per-client",
        type=int,
        help="client connections open at once from one address (default %(default)s)",
    )
    add(
        "--header-timeout",
        type=float,
        help="seconds a client has to send its request headers, 408 beyond (default %(default)g)",
    )
    add(
        "--body-timeout",
        type=float,
        help="seconds a client has to send its whole body, 408 beyond (default %(default)g)",
    )
    add(
        "--max-body",
        dest="max_body_bytes",
        help="largest request body, e.g. 32MiB (default 32MiB); larger ones get 413",
    )
    add(
        "--max-depth",
        type=int,
        help="deepest JSON nesting of a body the gateway decodes, 400 beyond (default %(default)s)",
    )
    add(
        "--max-items",
        type=int,
        help="most messages plus content blocks in a history the gateway decodes, 413 "
        "beyond (default %(default)s)",
    )


def _add_budget(group: argparse._ArgumentGroup) -> None:
    """How large a chain may grow, and how small a compaction makes it."""
    add = group.add_argument
    add(
        "--budget",
        help="budget of every chain, e.g. 128KiB (bytes), or tokens with --tokens "
        "(default: --window-share of the request's model window)",
    )
    add("--tokens", action="store_true", help="--budget is a number of tokens (estimated)")
    add(
        "--window-share",
        type=float,
        help="without --budget: share of the model's context window (default %(default)g)",
    )
    add(
        "--keep-ratio",
        type=float,
        metavar="R",
        help="share of the budget a compaction brings the chain to (default "
        f"{DEFAULT_KEEP_RATIO:g}; {SUMMARY_ONLY.keep_ratio:g} with --summary-only)",
    )
    add(
        "--summary-only",
        action="store_true",
        help="the former defaults (csum.config.SUMMARY_ONLY): summaries 1/32 of the "
        "budget, target 0.6 unless --keep-ratio; by default summaries with their facts "
        "take 1/8 and the target is 0.1",
    )


def _add_summarizer(group: argparse._ArgumentGroup) -> None:
    """Who writes the summaries (csum.serve.summary_handler)."""
    add = group.add_argument
    add(
        "--summarizer",
        choices=SUMMARIZER_KINDS,
        help="what writes the summaries: extractive (offline, default) | upstream (the "
        "upstream, with the key of the request being compacted) | openai | anthropic (a "
        "separate endpoint: --summarizer-url, --summarizer-model, --summarizer-key-env)",
    )
    add("--summarizer-url", help="base URL of the separate summarizer (default: the SDK's)")
    add(
        "--summarizer-model",
        help="model of the summaries (needed for openai|anthropic; with upstream, default: "
        "the request's own model)",
    )
    add(
        "--summarizer-key-env",
        help="environment variable holding the separate summarizer's key (default "
        "OPENAI_API_KEY or ANTHROPIC_API_KEY)",
    )


def _add_state(group: argparse._ArgumentGroup) -> None:
    """Where conversation state, summaries and the archive live."""
    add = group.add_argument
    add(
        "--store",
        metavar="memory|PATH|redis://...",
        help="conversation state and summary cache (default memory; Redis for replicas)",
    )
    add(
        "--memory-store-bytes",
        help="with --store memory: bytes of state and summaries kept at most, least "
        "recently used dropped first (default 256MiB)",
    )
    add(
        "--state-ttl",
        type=float,
        help="seconds a conversation's state lives (default 7 days)",
    )
    add(
        "--archive",
        metavar="PATH|redis://...",
        help="keep the messages summarized away (SQLite file or Redis), one session per "
        "conversation; default: not kept",
    )
    add(
        "--archive-reinsert",
        dest="archive_reinsert_bytes",
        help="with --archive: bytes of archived lines a new question may get back, e.g. "
        "4KiB (default 0: off)",
    )
    add(
        "--archive-ttl",
        type=float,
        help="seconds an archive session lives after its last write (default 7 days)",
    )


def _add_run(group: argparse._ArgumentGroup) -> None:
    """How compactions run, and what the gateway logs."""
    add = group.add_argument
    add(
        "--no-offload",
        action="store_true",
        help="compact on the event loop instead of a worker thread (for debugging)",
    )
    add(
        "--compaction-workers",
        type=int,
        help="compactions at once, in threads of their own (default %(default)s)",
    )
    add(
        "--deadline",
        type=float,
        help="seconds a request may wait for and spend in its compaction, summary calls "
        "included, before it is forwarded uncompacted (default %(default)g)",
    )
    add(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        help="log level of the gateway's JSON lines and uvicorn's log (default info)",
    )


def config_from(args: argparse.Namespace) -> ServeConfig:
    """The :class:`ServeConfig` of parsed ``serve`` flags (``ValueError`` when wrong)."""
    share_option("--keep-ratio", args.keep_ratio)
    keep_ratio: float | None = args.keep_ratio  # its default depends on --summary-only
    if keep_ratio is None:
        keep_ratio = SUMMARY_ONLY.keep_ratio if args.summary_only else DEFAULT_KEEP_RATIO
    if args.budget is None and args.tokens:
        raise ValueError("--tokens needs --budget")
    budget = None if args.budget is None else budget_option(args.budget, args.tokens)
    if args.keep_alive <= 0:
        raise ValueError(f"--keep-alive must be positive, got {args.keep_alive}")
    if not 0 < args.port < 65536:
        raise ValueError(f"--port must be within 1..65535, got {args.port}")
    names = {f.name for f in fields(ServeConfig)}
    given = {k: v for k, v in vars(args).items() if k in names}
    for name in ("max_body_bytes", "memory_store_bytes", "archive_reinsert_bytes"):
        size = given[name]  # the flag's text, else the field's default
        if isinstance(size, str):
            given[name] = (
                0 if size == "0" and name == "archive_reinsert_bytes" else parse_size(size)
            )
    given.update(
        budget=budget,
        keep_ratio=keep_ratio,
        gateway_key=args.gateway_key or os.environ.get(GATEWAY_KEY_ENV) or None,
        tenant_secret=os.environ.get(TENANT_SECRET_ENV) or None,
        offload=not args.no_offload,
    )
    return ServeConfig(**given)


def size_option(option: str, text: str) -> int:
    """The bytes of a size option; a malformed one is a usage error naming it."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def share_option(option: str, value: float | None, high: float = 1.0) -> None:
    """Refuse a share option (None: not given) outside (0, ``high``]."""
    if value is not None and not 0 < value <= high:
        raise ValueError(f"{option} must be within (0, {high:g}], got {value}")


def budget_option(text: str, tokens: bool) -> Budget:
    """``--budget`` in bytes, or in tokens with ``--tokens``."""
    if not tokens:
        return Budget.bytes(size_option("--budget", text))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--budget: invalid token budget {text!r}: use a positive whole number")
    return Budget.tokens(int(text))


def serve(args: argparse.Namespace, _stdout: TextIO, err: TextIO) -> int:
    """Run the gateway until interrupted; 2 when the extra is missing. A wrong flag, or
    a missing key or SDK of ``--summarizer``, is a ``ValueError`` or ``ImportError``
    raised before anything runs."""
    config = config_from(args)
    SummaryHandlerFactory(config)  # a missing key or SDK of --summarizer, said at once
    from csum.serve import INSTALL_HINT, create_app
    from csum.serve.logs import configure, uvicorn_log_config

    try:
        import uvicorn

        from csum.serve.connections import protocol

        app = create_app(config)
    except ImportError:
        print(f"csum serve: {INSTALL_HINT}", file=err)
        return 2
    configure(args.log_level if args.log_level != "trace" else "debug")
    if config.offload:
        sys.setswitchinterval(SWITCH_INTERVAL)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        proxy_headers=False,
        log_config=uvicorn_log_config(),
        http=protocol(config),
        timeout_keep_alive=args.keep_alive,
        server_header=False,
        date_header=False,
    )
    return 0
