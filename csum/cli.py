"""The ``csum`` command line: ``csum summarize FILE`` fits a chain file to a budget (the
Compactor with ``--budget``, the reference algorithm with ``--last-section-budget``; the
offline extractive handler by default), ``csum serve`` runs the gateway (:mod:`csum.serve`,
on uvicorn); the two share the readers of their sizes, shares and budget, whose errors
name the flag.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import MISSING, fields, replace
from functools import partial
from importlib import resources
from typing import Any, TextIO, TypeVar

import anyio

from cast import DEFAULT_TOOL_CALL_ID_TEMPLATE, ChainError, Message, open_with_human
from cast.chainio import (
    add_input_limit_argument,
    decode_chain,
    format_size,
    known_formats,
    parse_size,
    read_json,
    run_command,
    run_console,
    write_chain,
)
from cast.internals import utf8_len
from csum._checks import check_count
from csum.archive import HistoryArchive
from csum.cache import SummaryCache
from csum.compactor import Compactor, summary_bytes
from csum.config import (
    DEFAULT_CLEAR_KEEP,
    DEFAULT_CLEARING,
    DEFAULT_KEEP_RATIO,
    DEFAULT_MAX_PROMPT_BYTES,
    DEFAULT_SUMMARY_RATIO,
    LOW_COST,
    MAX_SUMMARY_RATIO,
    MIN_PROMPT_BYTES,
    SUMMARY_ONLY,
    Budget,
    Clearing,
    Preset,
    Robustness,
    Stores,
    SummarizerConfig,
)
from csum.errors import SummarizationError
from csum.prompt import SummaryRequest
from csum.request import Handler, as_request_handler, request_handler
from csum.serve.config import SUMMARIZER_KINDS, UPSTREAM_APIS, ServeConfig
from csum.serve.summary_handler import SummaryHandlerFactory
from csum.store_events import StoreEventKind
from csum.stores import open_store
from csum.summarizer import Summarizer, SummaryResult

__all__ = ["EXAMPLE", "entrypoint", "main", "main_parser"]

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EXAMPLE = "claude_code_session.json"
"""The bundled example: a Claude Code session the project recorded on its own files
(Anthropic Messages format; ``csum/examples/README.md``)."""
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


def _fraction(ratio: float) -> str:
    """``ratio`` as help text reads it: 1/64 rather than 0.015625."""
    inverse = 1 / ratio
    return f"1/{inverse:g}" if inverse == int(inverse) else f"{ratio:g}"


def _preset_help(preset: Preset, intro: str = "", note: str = "") -> str:
    """The help text of a preset's flag: its settings in words."""
    clearing = preset.clearing
    cleared = "no clearing" if clearing is None else f"clearing (keep {clearing.keep})"
    return (
        f"the {preset.name} preset{intro}: {cleared}, compaction from {preset.trigger:g} of "
        f"the budget, target {preset.keep_ratio:g}, summaries "
        f"{_fraction(preset.summary_ratio)} of the budget ({note}explicit options win)"
    )


def main_parser() -> argparse.ArgumentParser:
    """The argument parser of ``csum``."""
    parser = argparse.ArgumentParser(
        prog="csum", description="Summarize LLM agent chains to fit byte budgets."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    summarize = commands.add_parser("summarize", help="summarize a chain file")
    add = summarize.add_argument
    source = summarize.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", help="chain file, or - for standard input")
    source.add_argument(
        "--example",
        action="store_true",
        help="use the bundled example chain (a recorded Claude Code session)",
    )
    add("--format", "-f", help=f"input format, also used for output: {', '.join(known_formats())}")
    _add_budget_flags(summarize)
    _add_clearing_flags(summarize)
    _add_reference_flags(summarize)
    _add_handler_flags(summarize)
    ids = summarize.add_mutually_exclusive_group()
    ids.add_argument(
        "--target",
        help="provider the chain is sent to: the summaries break none of its rules "
        "(ids, reasoning, role order)",
    )
    ids.add_argument(
        "--id-template",
        help="template of the summary tool-call ids, e.g. 'toolu_{r:24:b}' (default call_{r:24:x})",
    )
    add("-o", "--output", help="output file (default: standard output)")
    add(
        "--force",
        action="store_true",
        help="write -o through a symbolic link (refused otherwise: it replaces the link's target)",
    )
    add("--quiet", "-q", action="store_true", help="print no statistics")
    add_input_limit_argument(summarize)
    _add_serve_parser(commands)
    return parser


def _add_budget_flags(summarize: argparse.ArgumentParser) -> None:
    """The budget of ``csum summarize`` and the Compactor's shares."""
    add = summarize.add_argument
    bound = summarize.add_mutually_exclusive_group()
    bound.add_argument(
        "--budget",
        help="budget of the whole chain, e.g. 50KiB, 2MB (default: 50KiB); "
        "with --tokens, a number of tokens",
    )
    bound.add_argument(
        "--last-section-budget",
        help="reference algorithm instead: byte budget of the active (last) sections only",
    )
    add("--tokens", action="store_true", help="--budget is a number of tokens (estimated)")
    add(
        "--max-prompt-bytes",
        help="with --budget: largest prompt sent to the handler (default "
        f"{format_size(DEFAULT_MAX_PROMPT_BYTES)}); more is summarized in pieces, then merged",
    )
    add(
        "--keep-ratio",
        type=float,
        metavar="R",
        help="with --budget: share of the budget a compaction brings the chain down to "
        f"(default {DEFAULT_KEEP_RATIO:g}; the presets set their own)",
    )
    add(
        "--summary-ratio",
        type=float,
        help="with --budget: share of the budget a summary may take (default "
        f"{_fraction(DEFAULT_SUMMARY_RATIO)}; the presets set their own); sizes the "
        "extractive handler's summaries",
    )


def _add_clearing_flags(summarize: argparse.ArgumentParser) -> None:
    """The clearing stage's flags and the presets."""
    default = (
        f"off by default; --clear keeps the newest {Clearing().keep} tool uses whole"
        if DEFAULT_CLEARING is None
        else f"on by default, keeping the newest {DEFAULT_CLEARING.keep} tool uses whole"
    )
    clearing = summarize.add_argument_group(
        "clearing (with --budget): old tool results become placeholders before anything is "
        f"summarized, without a handler call ({default})"
    )
    add = clearing.add_argument
    presets = clearing.add_mutually_exclusive_group()
    presets.add_argument("--low-cost", action="store_true", help=_preset_help(LOW_COST))
    presets.add_argument(
        "--summary-only",
        action="store_true",
        help=_preset_help(
            SUMMARY_ONLY, ", the former defaults", "remembers more without an archive, costs more; "
        ),
    )
    add(
        "--clear",
        action="store_true",
        help="turn the clearing stage on (any --clear-* does), e.g. with --summary-only",
    )
    add(
        "--clear-keep",
        type=int,
        help=f"newest tool uses whose results stay whole (default {DEFAULT_CLEAR_KEEP})",
    )
    add(
        "--clear-trigger",
        type=float,
        help="share of the budget where clearing starts, in (0, 1] (default: the trigger)",
    )
    add(
        "--clear-at-least",
        type=float,
        help="share of the budget a clearing pass must free to be applied alone (default 0)",
    )
    add(
        "--clear-exclude",
        action="append",
        metavar="TOOL",
        help="tool whose results are never cleared (repeatable)",
    )
    add("--clear-inputs", action="store_true", help="clear the cleared calls' arguments too")
    add("--clear-reasoning", action="store_true", help="clear old AI messages' reasoning")


def _add_reference_flags(summarize: argparse.ArgumentParser) -> None:
    """The flags of the reference algorithm (``--last-section-budget``)."""
    reference = summarize.add_argument_group("reference algorithm (with --last-section-budget)")
    add = reference.add_argument
    add(
        "--pair-budget",
        help="size over which an older pair is summarized alone (default: budget/3, max 16KiB)",
    )
    add("--keep-sections", type=int, help="newest sections kept with all their pairs (default 1)")
    add(
        "--qa",
        action="store_true",
        help="also fold the oldest sections into one (QA summarization)",
    )
    add("--qa-budget", help="chain size that triggers QA summarization (default: 2x budget)")


def _add_handler_flags(summarize: argparse.ArgumentParser) -> None:
    """The handler, its concurrency, the summary cache and the history archive."""
    add = summarize.add_argument
    add(
        "--handler",
        default="extractive",
        help="extractive (offline, default) | openai:MODEL | anthropic:MODEL",
    )
    add("--max-concurrency", type=int, help="handler calls in flight at most")
    add(
        "--cache",
        metavar="PATH|redis://...",
        help="summary cache: a SQLite file or a Redis URL (same prompt, no second call)",
    )
    add(
        "--cache-id",
        help="handler identity in the cache keys (default: the --handler value); change it "
        "when the model or its settings change",
    )
    add("--cache-ttl", type=float, help="seconds a cached summary lives (default: forever)")
    add(
        "--archive",
        metavar="PATH|redis://...",
        help="history archive: keep every message summarized away (SQLite file or Redis URL)",
    )
    add(
        "--session",
        help="archive session (required with --archive): whose messages these are; "
        "recall and deletion see one session only",
    )


def _add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``csum serve``, its flags in groups (as ``--help`` lists them)."""
    parser = commands.add_parser("serve", help="run the compaction gateway (needs the serve extra)")
    # a flag named as a ServeConfig field and given no default of its own defaults to the
    # field's, which its help shows (--keep-ratio's depends on --summary-only: _serve_config)
    parser.set_defaults(**{k: v for k, v in _SERVE_DEFAULTS.items() if k != "keep_ratio"})
    _add_upstream(partial(_add_field_flag, parser.add_argument_group("upstream")))
    _add_clients(partial(_add_field_flag, parser.add_argument_group("clients")))
    _add_serve_budget(partial(_add_field_flag, parser.add_argument_group("budget")))
    _add_summarizer(partial(_add_field_flag, parser.add_argument_group("summaries")))
    _add_state(partial(_add_field_flag, parser.add_argument_group("state and archive")))
    _add_run(partial(_add_field_flag, parser.add_argument_group("run")))


_SERVE_DEFAULTS = {f.name: f.default for f in fields(ServeConfig) if f.default is not MISSING}
_SIZE_FIELDS = ("max_body_bytes", "memory_store_bytes", "archive_reinsert_bytes")
"""The :class:`ServeConfig` sizes, whose flags are read as text (``32MiB``)."""


def _add_field_flag(group: argparse._ArgumentGroup, flag: str, **options: Any) -> None:
    """A ``serve`` flag; one named as a number field of :class:`ServeConfig` (not a size:
    read as text) reads the field's type, as it takes the field's default."""
    name = options.get("dest") or flag[2:].replace("-", "_")
    default = _SERVE_DEFAULTS.get(name)
    if type(default) in (int, float) and name not in _SIZE_FIELDS:
        options.setdefault("type", type(default))
    group.add_argument(flag, **options)


def _add_upstream(add: Callable[..., None]) -> None:
    """Where requests go, in which API, and how long they may take there."""
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
    add("--timeout", help="upstream read timeout, s (default %(default)g)")
    add("--connect-timeout", help="upstream connect timeout, s")
    add(
        "--max-connections",
        help="upstream requests in flight (its connection pool); one more is answered 503 "
        "with Retry-After at once (default %(default)s)",
    )


def _add_clients(add: Callable[..., None]) -> None:
    """Where the gateway listens, and what it takes from a client."""
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
        help="client connections open at once; one more is answered 503 (default %(default)s)",
    )
    add(
        "--max-connections-per-client",
        help="client connections open at once from one address (default %(default)s)",
    )
    add(
        "--header-timeout",
        help="seconds a client has to send its request headers, 408 beyond (default %(default)g)",
    )
    add(
        "--body-timeout",
        help="seconds a client has to send its whole body, 408 beyond (default %(default)g)",
    )
    add(
        "--max-body",
        dest="max_body_bytes",
        help="largest request body, e.g. 32MiB (default 32MiB); larger ones get 413",
    )
    add(
        "--max-depth",
        help="deepest JSON nesting of a body the gateway decodes, 400 beyond (default %(default)s)",
    )
    add(
        "--max-items",
        help="most messages plus content blocks in a history the gateway decodes, 413 "
        "beyond (default %(default)s)",
    )


def _add_serve_budget(add: Callable[..., None]) -> None:
    """How large a chain may grow, and how small a compaction makes it."""
    add(
        "--budget",
        help="budget of every chain, e.g. 128KiB (bytes), or tokens with --tokens "
        "(default: --window-share of the request's model window)",
    )
    add("--tokens", action="store_true", help="--budget is a number of tokens (estimated)")
    add(
        "--window-share",
        help="without --budget: share of the model's context window (default %(default)g)",
    )
    add(
        "--keep-ratio",
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


def _add_summarizer(add: Callable[..., None]) -> None:
    """Who writes the summaries (csum.serve.summary_handler)."""
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


def _add_state(add: Callable[..., None]) -> None:
    """Where conversation state, summaries and the archive live."""
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
    add("--state-ttl", help="seconds a conversation's state lives (default 7 days)")
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
        help="seconds an archive session lives after its last write (default 7 days)",
    )


def _add_run(add: Callable[..., None]) -> None:
    """How compactions run, and what the gateway logs."""
    add(
        "--no-offload",
        action="store_true",
        help="compact on the event loop instead of a worker thread (for debugging)",
    )
    add(
        "--compaction-workers",
        help="compactions at once, in threads of their own (default %(default)s)",
    )
    add(
        "--deadline",
        help="seconds a request may wait for and spend in its compaction, summary calls "
        "included, before it is forwarded uncompacted (default %(default)g)",
    )
    add(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        help="log level of the gateway's JSON lines and uvicorn's log (default info)",
    )


_CLEAR_FIELDS = {
    "clear_keep": "keep",
    "clear_trigger": "trigger",
    "clear_at_least": "clear_at_least",
    "clear_exclude": "exclude_tools",
    "clear_inputs": "clear_tool_inputs",
    "clear_reasoning": "clear_reasoning",
}
"""Each ``--clear-*`` option's :class:`Clearing` field."""


def _size_option(option: str, text: str) -> int:
    """The bytes of a size option; a malformed one is a usage error naming it."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def _share_option(option: str, value: float | None, high: float = 1.0) -> None:
    """Refuse a share option (None: not given) outside (0, ``high``]."""
    if value is not None and not 0 < value <= high:
        raise ValueError(f"{option} must be within (0, {high:g}], got {value}")


def _budget_option(text: str, tokens: bool) -> Budget:
    """``--budget`` in bytes, or in tokens with ``--tokens``."""
    if not tokens:
        return Budget.bytes(_size_option("--budget", text))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--budget: invalid token budget {text!r}: use a positive whole number")
    return Budget.tokens(int(text))


def _config(args: argparse.Namespace) -> SummarizerConfig:
    """The reference algorithm's budgets (``--last-section-budget`` and its group); the
    options of ``--budget`` are refused."""
    if args.tokens:
        raise ValueError("--tokens applies to --budget")
    if args.max_prompt_bytes is not None:
        raise ValueError("--max-prompt-bytes applies to --budget")
    ratios = (args.keep_ratio, args.summary_ratio)
    if args.low_cost or args.summary_only or ratios != (None, None) or _clearing(args, None):
        raise ValueError(
            "--low-cost, --summary-only, --clear, --keep-ratio and --summary-ratio "
            "apply to --budget"
        )
    budget = _size_option("--last-section-budget", args.last_section_budget)
    pair_budget = min(16384, max(budget // 3, 1))
    if args.pair_budget is not None:
        pair_budget = _size_option("--pair-budget", args.pair_budget)
    qa_budget = (
        2 * budget if args.qa_budget is None else _size_option("--qa-budget", args.qa_budget)
    )
    keep_sections = 1 if args.keep_sections is None else args.keep_sections
    check_count("--keep-sections", keep_sections)
    return SummarizerConfig(
        last_section_bytes=budget,
        max_body_pair_bytes=pair_budget,
        keep_qa_sections=keep_sections,
        use_qa=args.qa,
        max_qa_bytes=qa_budget,
    )


def _clearing(args: argparse.Namespace, base: Clearing | None) -> Clearing | None:
    """``base`` (or the default stage) with the ``--clear-*`` options; None when none is given."""
    given = {
        key: value
        for name, key in _CLEAR_FIELDS.items()
        if (value := getattr(args, name)) is not None and value is not False
    }
    if not (args.clear or args.low_cost or given):
        return None
    try:
        return replace(base or DEFAULT_CLEARING or Clearing(), **given)
    except (TypeError, ValueError) as error:
        field = str(error).removeprefix("Clearing.").split(" ", 1)[0]
        names = [name for name, key in _CLEAR_FIELDS.items() if key == field]
        flag = "--" + names[0].replace("_", "-") if names else "--clear"
        raise ValueError(f"{flag}: {error}") from None


def _settings(args: argparse.Namespace) -> tuple[Budget, Clearing | None, int]:
    """(budget, clearing stage, prompt bound) of ``--budget`` and its options (the
    reference algorithm's refused); usage errors name their option."""
    for name in ("pair_budget", "keep_sections", "qa", "qa_budget"):
        if getattr(args, name) not in (None, False):
            option = "--" + name.replace("_", "-")
            raise ValueError(
                f"{option} applies to the reference algorithm: use it with --last-section-budget"
            )
    budget = _budget_option("50KiB" if args.budget is None else args.budget, args.tokens)
    max_prompt_bytes = DEFAULT_MAX_PROMPT_BYTES
    if args.max_prompt_bytes is not None:
        max_prompt_bytes = _size_option("--max-prompt-bytes", args.max_prompt_bytes)
        check_count("--max-prompt-bytes", max_prompt_bytes, least=MIN_PROMPT_BYTES)
    _share_option("--keep-ratio", args.keep_ratio)
    preset = LOW_COST if args.low_cost else SUMMARY_ONLY if args.summary_only else None
    base = DEFAULT_CLEARING if preset is None else preset.clearing
    clearing = _clearing(args, base) or base
    _share_option("--summary-ratio", args.summary_ratio, MAX_SUMMARY_RATIO)
    settings = {} if preset is None else preset.settings()
    ratios = {"keep_ratio": args.keep_ratio, "summary_ratio": args.summary_ratio}
    settings.update({name: ratio for name, ratio in ratios.items() if ratio is not None})
    return budget.evolve(**settings), clearing, max_prompt_bytes


def _check_output(args: argparse.Namespace) -> None:
    """Refuse an empty ``-o``, and one naming a symbolic link unless ``--force``."""
    if args.output is not None and not args.output.strip():
        raise ValueError("-o needs a file name, not an empty text")
    if args.output and os.path.islink(args.output) and not args.force:
        raise ValueError(
            f"-o {args.output} is a symbolic link (to {os.readlink(args.output)}): writing "
            "would replace the file it points to; pass --force to write through it"
        )


def _piece_concurrency(args: argparse.Namespace) -> int:
    """Calls in flight when ``--budget`` summarizes in pieces: as given, else 1 for the
    offline handler (CPU-bound: more only holds more prompts) and 4 for a model."""
    if args.max_concurrency is not None:
        return int(args.max_concurrency)
    offline = args.handler.strip().partition(":")[0].lower() == "extractive"
    return 1 if offline else 4


def _stores(args: argparse.Namespace) -> Stores:
    """The summary cache of ``--cache`` and the history archive of ``--archive``."""
    cache = archive = None
    if args.cache is not None:
        if not args.cache.strip():
            raise ValueError("--cache needs 'memory', a SQLite file path or a Redis URL, not ''")
        if args.cache_ttl is not None and not args.cache_ttl > 0:
            raise ValueError("--cache-ttl must be a positive number of seconds")
        handler_id = args.handler if args.cache_id is None else args.cache_id
        cache = SummaryCache(open_store(args.cache), handler_id=handler_id, ttl=args.cache_ttl)
    if args.archive is None:
        if args.session is not None:
            raise ValueError("--session applies to --archive")
    elif not args.archive.strip():
        raise ValueError("--archive needs a SQLite file path or a Redis URL, not an empty text")
    elif not args.session or not args.session.strip():
        raise ValueError(
            "--archive needs --session NAME: the session whose messages these are "
            "(tenants sharing an archive must never share a session)"
        )
    else:
        archive = HistoryArchive(args.archive, session=args.session)
    return Stores(cache=cache, archive=archive)


class _Progress:
    """A one-line progress display on a terminal; silent when output is piped."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self.shown = False

    def __call__(self, calls: int, input_bytes: int) -> None:
        if self.enabled:
            self.stream.write(
                f"\rsummarizing: {calls} handler calls, {format_size(input_bytes)} sent"
            )
            self.stream.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _run(work: Callable[[], Awaitable[T]], stores: Stores, progress: _Progress) -> T:
    """``work()`` on an event loop, then the progress line cleared and the stores closed."""

    async def run() -> T:
        try:
            return await work()
        finally:
            progress.done()
            for store in (stores.cache, stores.archive):
                if store is not None:
                    await store.aclose()

    return anyio.run(run)


def _compact(
    args: argparse.Namespace,
    settings: tuple[Budget, Clearing | None, int],
    messages: list[Message],
    handler: Handler,
    *,
    stores: Stores,
    progress: _Progress,
) -> tuple[SummaryResult, bool]:
    """``--budget``: the Compactor bounds the whole chain; (what it did, over budget)."""
    budget, clearing, max_prompt_bytes = settings
    sent = [0, 0]
    if getattr(handler, "sized_by_compactor", False):
        # the default extractive handler, wrapped below (so the Compactor cannot size it):
        # sized here as the Compactor would, at the summary share of the budget
        from csum.handlers import extractive

        handler = extractive(summary_bytes(budget, budget.summary_ratio))
    inner = as_request_handler(handler)

    async def report(request: SummaryRequest) -> str:
        summary = await inner(request)
        sent[0] += 1
        sent[1] += utf8_len(request.prompt)
        progress(sent[0], sent[1])
        return summary

    compactor = Compactor(
        request_handler(report, repr(inner)),
        budget=budget,
        clearing=clearing,
        target=args.target,
        id_template=args.id_template,
        stores=stores,
        robustness=Robustness(
            max_prompt_bytes=max_prompt_bytes, max_concurrency=_piece_concurrency(args)
        ),
    )
    result = _run(lambda: compactor.run(messages), stores, progress)
    if result.over_budget:
        print(
            f"warning: the chain is still over its budget ({result.size_after:,} > "
            f"{result.budget:,} {result.unit}): the system prompt, the last question and the "
            "newest turn alone exceed it",
            file=progress.stream,
        )
    done = SummaryResult(
        result.messages,
        result.bytes_before,
        result.bytes_after,
        result.handler_calls,
        sum(event.prompt_bytes for event in result.events),
        sum(event.summary_bytes for event in result.events),
        result.repairs,
        result.seconds,
        sum(event.cache_hits for event in result.events),
        result.store_events,
    )
    return done, result.over_budget


def _report(result: SummaryResult, origin: str, args: argparse.Namespace, err: TextIO) -> None:
    """The statistics, the repairs and the stores' events (a store failure never fails the run)."""
    saved = result.size_before - result.size_after
    share = 100 * saved / result.size_before if result.size_before else 0.0
    print(
        f"{origin}: {format_size(result.size_before)} -> {format_size(result.size_after)} "
        f"({share:.0f}% smaller), {len(result.messages)} messages, "
        f"{result.handler_calls} handler calls ({format_size(result.handler_input_bytes)} sent), "
        f"{result.seconds:.2f}s",
        file=err,
    )
    if result.repairs:
        issues = (f"  {issue}" for issue in result.repairs)
        print(f"repaired {len(result.repairs)} problems first:", *issues, sep="\n", file=err)
    if args.cache:
        print(f"cache: {result.cache_hits} hits, {result.handler_calls} handler calls", file=err)
    archived = sum(event.kind == StoreEventKind.ARCHIVED for event in result.store_events)
    if archived:
        print(f"archive: {archived} batches archived", file=err)
    failures = [event for event in result.store_events if event.failed]
    for event in failures[:3]:
        print(f"warning: {event.kind} ({event.store}): {event.detail}", file=err)
    if len(failures) > 3:
        print(f"warning: {len(failures) - 3} more store failures", file=err)


def _summarize(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from csum.handlers import resolve_handler

    check_count("--max-concurrency", args.max_concurrency, none=True)
    compacting = args.last_section_budget is None
    if compacting:  # usage errors before any work
        settings = _settings(args)
    else:
        config = _config(args)
    _check_output(args)
    if args.example:
        text = resources.files("csum").joinpath("examples", EXAMPLE).read_text(encoding="utf-8")
        payload, origin = json.loads(text), "example:" + EXAMPLE
    else:
        payload = read_json(args.file, max_bytes=args.max_input_bytes)
        origin = "standard input" if args.file == "-" else args.file
    messages, fmt = decode_chain(payload, args.format, owned=True)
    del payload  # held through the whole run, it made the peak memory 1.5x larger
    handler = resolve_handler(args.handler)
    started = time.perf_counter()
    stores = _stores(args)
    progress = _Progress(err, not args.quiet)
    if compacting:
        result, over = _compact(args, settings, messages, handler, stores=stores, progress=progress)
    else:  # the reference algorithm bounds the active sections
        summarizer = Summarizer(config, max_concurrency=args.max_concurrency, stores=stores)
        work = partial(
            summarizer.summarize,
            handler,
            open_with_human(messages),  # a replay opening with an AI message
            id_template=args.id_template or DEFAULT_TOOL_CALL_ID_TEMPLATE,
            on_call=progress,
            target=args.target,
            allow_growth=False,
        )
        result, over = _run(work, stores, progress), False
    write_chain(result.messages, fmt, args.output, out)
    if not args.quiet:
        _report(result, origin, args, err)
        if args.output:
            print(f"wrote {args.output} ({fmt}) in {time.perf_counter() - started:.2f}s", file=err)
    return EXIT_FAILED if over else EXIT_OK


def _serve_config(args: argparse.Namespace) -> ServeConfig:
    """The :class:`ServeConfig` of parsed ``serve`` flags (``ValueError`` when wrong)."""
    _share_option("--keep-ratio", args.keep_ratio)
    keep_default = SUMMARY_ONLY.keep_ratio if args.summary_only else DEFAULT_KEEP_RATIO
    if args.budget is None and args.tokens:
        raise ValueError("--tokens needs --budget")
    budget = None if args.budget is None else _budget_option(args.budget, args.tokens)
    if args.keep_alive <= 0:
        raise ValueError(f"--keep-alive must be positive, got {args.keep_alive}")
    if not 0 < args.port < 65536:
        raise ValueError(f"--port must be within 1..65535, got {args.port}")
    names = {f.name for f in fields(ServeConfig)}
    given = {k: v for k, v in vars(args).items() if k in names}
    for name in _SIZE_FIELDS:
        size = given[name]  # the flag's text, else the field's default
        if isinstance(size, str):
            given[name] = (
                0 if size == "0" and name == "archive_reinsert_bytes" else parse_size(size)
            )
    given.update(
        budget=budget,
        keep_ratio=keep_default if args.keep_ratio is None else args.keep_ratio,
        gateway_key=args.gateway_key or os.environ.get(GATEWAY_KEY_ENV) or None,
        tenant_secret=os.environ.get(TENANT_SECRET_ENV) or None,
        offload=not args.no_offload,
    )
    return ServeConfig(**given)


def _serve(args: argparse.Namespace, _stdout: TextIO, err: TextIO) -> int:
    """Run the gateway until interrupted; 2 when the extra is missing. A wrong flag, or
    a missing key or SDK of ``--summarizer``, is refused before anything runs."""
    config = _serve_config(args)
    SummaryHandlerFactory(config)  # a missing key or SDK of --summarizer, said at once
    from csum.serve import INSTALL_HINT, create_app
    from csum.serve.logs import configure, uvicorn_log_config

    try:
        import uvicorn

        from csum.serve.connections import protocol

        app = create_app(config)
    except ImportError:
        print(f"csum serve: {INSTALL_HINT}", file=err)
        return EXIT_USAGE
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
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``csum`` with ``argv``; returns the exit code."""
    commands = {"summarize": _summarize, "serve": _serve}
    failures = [
        ((SummarizationError,), EXIT_FAILED, "summarization failed, nothing written"),
        ((ChainError, ValueError, ImportError), EXIT_USAGE, "error"),
    ]
    return run_command(main_parser(), commands, argv, (stdout, stderr), failures)


def entrypoint() -> None:
    """Console-script entry point."""
    run_console(main)
