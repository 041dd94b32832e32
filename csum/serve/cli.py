"""``csum serve``: its flags and the server run (uvicorn)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from cast.chainio import parse_size
from csum._deprecated import add_keep_ratio_flags, keep_ratio_flag
from csum.budget import Budget
from csum.compactor import DEFAULT_TARGET_RATIO, SUMMARY_ONLY
from csum.handlers import resolve_handler
from csum.serve.config import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_WINDOW_SHARE,
    SUMMARIZER_KINDS,
    UPSTREAM_APIS,
    ServeConfig,
)
from csum.serve.summarizer import Summarizer

__all__ = [
    "DEFAULT_KEEP_ALIVE",
    "GATEWAY_KEY_ENV",
    "SWITCH_INTERVAL",
    "add_serve_parser",
    "config_from",
    "serve",
]

DEFAULT_KEEP_ALIVE = 75.0
"""Seconds uvicorn keeps an idle client connection (its own default, 5, is also
httpx's idle expiry): a server that closes a kept-alive connection just as the client
sends on it fails that request, so the gateway waits longer than clients and load
balancers (60 s on common ones) and they always close first."""
SWITCH_INTERVAL = 0.0005
"""Seconds between the interpreter's thread switches in ``csum serve`` (Python's default
is 0.005): while a worker thread compacts it holds the GIL, and the event loop waits up
to this long at every wake-up to get it back, several times per request."""
GATEWAY_KEY_ENV = "CSUM_GATEWAY_KEY"
"""Environment variable read for the gateway key (kept off the command line)."""


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to ``csum``'s sub-commands."""
    serve_parser = commands.add_parser(
        "serve", help="run the compaction gateway (needs the serve extra)"
    )
    add = serve_parser.add_argument
    add("--upstream", required=True, help="base URL requests are forwarded to")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    add("--port", type=int, default=8787, help="port to bind (default 8787)")
    add(
        "--budget",
        help="budget of every chain, e.g. 128KiB (bytes), or tokens with --tokens "
        "(default: --window-share of the request's model window)",
    )
    add("--tokens", action="store_true", help="--budget is a number of tokens (estimated)")
    add(
        "--window-share",
        type=float,
        default=DEFAULT_WINDOW_SHARE,
        help="without --budget: share of the model's context window (default "
        f"{DEFAULT_WINDOW_SHARE})",
    )
    add_keep_ratio_flags(
        add,
        "share of the budget a compaction brings the chain to (default "
        f"{DEFAULT_TARGET_RATIO:g}; {SUMMARY_ONLY['keep_ratio']:g} with --summary-only)",
    )
    add(
        "--summary-only",
        action="store_true",
        help="the former defaults (csum.compactor.SUMMARY_ONLY): summaries 1/32 of the "
        "budget, target 0.6 unless --keep-ratio; by default summaries with their facts "
        "take 1/8 and the target is 0.1",
    )
    add(
        "--store",
        default="memory",
        metavar="memory|PATH|redis://...",
        help="conversation state and summary cache (default memory; Redis for replicas)",
    )
    add(
        "--state-ttl",
        type=float,
        default=7 * 24 * 3600.0,
        help="seconds a conversation's state lives (default 7 days)",
    )
    add(
        "--max-body",
        default=str(DEFAULT_MAX_BODY_BYTES),
        help="largest request body, e.g. 32MiB (default 32MiB); larger ones get 413",
    )
    add("--timeout", type=float, default=600.0, help="upstream read timeout, s (default 600)")
    add("--connect-timeout", type=float, default=10.0, help="upstream connect timeout, s")
    add(
        "--keep-alive",
        type=float,
        default=DEFAULT_KEEP_ALIVE,
        help="seconds an idle client connection is kept open (default "
        f"{DEFAULT_KEEP_ALIVE:g}: longer than load balancers' idle timeouts)",
    )
    add("--max-connections", type=int, default=100, help="upstream connection pool size")
    add(
        "--gateway-key",
        help=f"require this key in the x-csum-key header (default: ${GATEWAY_KEY_ENV} if set)",
    )
    add(
        "--upstream-api",
        choices=UPSTREAM_APIS,
        default="same",
        help="same: the upstream speaks the client's API (default); openai: it speaks Chat "
        "Completions only, Anthropic Messages and Responses requests are translated; "
        "anthropic: it speaks Anthropic Messages only, Chat Completions and Responses "
        "requests are translated",
    )
    add(
        "--handler",
        default="extractive",
        help="what writes the summaries: extractive (offline, default) | openai:MODEL | "
        "anthropic:MODEL (keys and base URL from the SDK's environment variables)",
    )
    add(
        "--upstream-model",
        help="with --upstream-api openai|anthropic: model name sent in translated requests",
    )
    add(
        "--summarizer",
        choices=SUMMARIZER_KINDS,
        default="extractive",
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
    add(
        "--archive",
        metavar="PATH|redis://...",
        help="keep the messages summarized away (SQLite file or Redis), one session per "
        "conversation; default: not kept",
    )
    add(
        "--archive-reinsert",
        default="0",
        help="with --archive: bytes of archived lines a new question may get back, e.g. "
        "4KiB (default 0: off)",
    )
    add(
        "--no-offload",
        action="store_true",
        help="compact on the event loop instead of a worker thread (for debugging)",
    )
    add(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        help="log level of the gateway's JSON lines and uvicorn's log (default info)",
    )


def config_from(args: argparse.Namespace, err: TextIO | None = None) -> ServeConfig:
    """The :class:`ServeConfig` of parsed ``serve`` flags (``ValueError`` when wrong;
    deprecated flags are said on ``err``, default standard error)."""
    keep_ratio = keep_ratio_flag(args, err or sys.stderr)
    budget: Budget | None = None
    if args.budget is not None:
        text = args.budget
        if args.tokens:
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"invalid token budget {text!r}: use a positive whole number")
            budget = Budget.tokens(int(text))
        else:
            budget = Budget.bytes(parse_size(text))
    elif args.tokens:
        raise ValueError("--tokens needs --budget")
    if args.keep_alive <= 0:
        raise ValueError(f"--keep-alive must be positive, got {args.keep_alive}")
    if not 0 < args.port < 65536:
        raise ValueError(f"--port must be within 1..65535, got {args.port}")
    return ServeConfig(
        upstream=args.upstream,
        budget=budget,
        window_share=args.window_share,
        keep_ratio=(
            (SUMMARY_ONLY["keep_ratio"] if args.summary_only else DEFAULT_TARGET_RATIO)
            if keep_ratio is None
            else keep_ratio
        ),
        summary_only=args.summary_only,
        store=args.store,
        state_ttl=args.state_ttl,
        max_body_bytes=parse_size(args.max_body),
        timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        max_connections=args.max_connections,
        gateway_key=args.gateway_key or os.environ.get(GATEWAY_KEY_ENV) or None,
        upstream_api=args.upstream_api,
        upstream_model=args.upstream_model,
        handler=args.handler,
        summarizer=args.summarizer,
        summarizer_url=args.summarizer_url,
        summarizer_model=args.summarizer_model,
        summarizer_key_env=args.summarizer_key_env,
        archive=args.archive,
        archive_reinsert_bytes=0
        if args.archive_reinsert == "0"
        else parse_size(args.archive_reinsert),
        offload=not args.no_offload,
    )


def serve(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """Run the gateway until interrupted; 2 when the extra is missing or a flag is
    wrong."""
    err = err or sys.stderr
    try:
        config = config_from(args, err)
        resolve_handler(config.handler)  # a wrong spec or a missing SDK, said at once
        Summarizer(config)  # a missing key or SDK of --summarizer, said at once
    except (ValueError, ImportError) as exc:
        print(f"csum serve: error: {exc}", file=err)
        return 2
    from csum.serve import INSTALL_HINT, create_app
    from csum.serve.logs import configure

    try:
        import uvicorn

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
        timeout_keep_alive=args.keep_alive,
        server_header=False,
        date_header=False,
    )
    return 0
