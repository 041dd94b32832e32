"""The ``csum`` command line: summarize a chain file to fit a budget.

``csum serve --upstream URL`` runs the compaction gateway (:mod:`csum.serve`).
``csum summarize FILE`` prints the sizes before and after, the handler calls and the
time (to standard error), and writes the summarized chain in the input's format.
``--budget`` bounds the whole chain (the :class:`~csum.compactor.Compactor`);
``--last-section-budget`` runs the reference algorithm instead, which bounds the
sections in progress. Without ``--handler`` it uses the offline extractive handler: no
model, no API key.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, TextIO

import anyio

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    ChainError,
    ChainIssue,
    IdTemplate,
    Message,
    open_with_human,
)
from cast.chainio import (
    add_input_limit_argument,
    decode_owned_chain,
    encode_chain,
    format_size,
    known_formats,
    one_line,
    parse_size,
    read_json,
    run_console,
    write_json,
)
from cast.internals import utf8_len
from csum.archive import HistoryArchive
from csum.cache import SummaryCache
from csum.compaction import CompactionResult
from csum.compactor import Compactor, summary_bytes
from csum.config import (
    DEFAULT_CLEAR_KEEP,
    DEFAULT_CLEARING,
    DEFAULT_KEEP_RATIO,
    DEFAULT_MAX_PROMPT_BYTES,
    DEFAULT_SUMMARY_RATIO,
    DEFAULT_TRIGGER,
    LOW_COST,
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
from csum.serve.cli import add_serve_parser, serve
from csum.store_events import StoreEvent, StoreEventKind
from csum.stores import open_store
from csum.summarizer import Summarizer, SummaryResult

__all__ = ["EXAMPLE", "entrypoint", "main", "main_parser"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EXAMPLE = "claude_code_session.json"
"""The bundled example: a Claude Code session the project recorded on its own files
(Anthropic Messages format; ``csum/examples/README.md``)."""


def _fraction(ratio: float) -> str:
    """``ratio`` as help text reads it: 1/64 rather than 0.015625."""
    inverse = 1 / ratio
    return f"1/{inverse:g}" if inverse == int(inverse) else f"{ratio:g}"


def _preset_text(preset: Preset) -> str:
    """A Compactor preset's settings in the words of the help text."""
    clearing = preset.clearing
    cleared = "no clearing" if clearing is None else f"clearing (keep {clearing.keep})"
    return (
        f"{cleared}, compaction from {preset.trigger:g} of the budget, "
        f"target {preset.keep_ratio:g}, "
        f"summaries {_fraction(preset.summary_ratio)} of the budget"
    )


def _same_as_defaults(preset: Preset) -> str:
    """'the defaults today; ' when ``preset`` is what the Compactor does without it."""
    defaults = (DEFAULT_CLEARING, DEFAULT_KEEP_RATIO, DEFAULT_SUMMARY_RATIO, DEFAULT_TRIGGER)
    values = (
        preset.clearing,
        preset.keep_ratio,
        preset.summary_ratio,
        preset.trigger,
    )
    return "the defaults today; " if values == defaults else ""


def _clearing_default() -> str:
    """What the clearing stage does without a clearing flag (the Compactor's default)."""
    if DEFAULT_CLEARING is None:
        return f"off by default; --clear keeps the newest {Clearing().keep} tool uses whole"
    return f"on by default, keeping the newest {DEFAULT_CLEARING.keep} tool uses whole"


def main_parser() -> argparse.ArgumentParser:
    """The argument parser of ``csum``."""
    parser = argparse.ArgumentParser(
        prog="csum", description="Summarize LLM agent chains to fit byte budgets."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    summarize = commands.add_parser("summarize", help="summarize a chain file")
    source = summarize.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", help="chain file, or - for standard input")
    source.add_argument(
        "--example",
        action="store_true",
        help="use the bundled example chain (a recorded Claude Code session)",
    )
    summarize.add_argument(
        "--format", "-f", help=f"input format, also used for output: {', '.join(known_formats())}"
    )
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
    summarize.add_argument("-o", "--output", help="output file (default: standard output)")
    summarize.add_argument(
        "--force",
        action="store_true",
        help="write -o through a symbolic link (refused otherwise: it replaces the link's target)",
    )
    summarize.add_argument("--quiet", "-q", action="store_true", help="print no statistics")
    add_input_limit_argument(summarize)
    add_serve_parser(commands)
    return parser


def _add_budget_flags(summarize: argparse.ArgumentParser) -> None:
    """The budget of ``csum summarize`` and the Compactor's shares."""
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
    summarize.add_argument(
        "--tokens", action="store_true", help="--budget is a number of tokens (estimated)"
    )
    summarize.add_argument(
        "--max-prompt-bytes",
        help="with --budget: largest prompt sent to the handler (default "
        f"{format_size(DEFAULT_MAX_PROMPT_BYTES)}); more is summarized in pieces, then merged",
    )
    summarize.add_argument(
        "--keep-ratio",
        type=float,
        default=None,
        metavar="R",
        help="with --budget: share of the budget a compaction brings the chain down to "
        f"(default {DEFAULT_KEEP_RATIO:g}; {LOW_COST.keep_ratio:g} with --low-cost, "
        f"{SUMMARY_ONLY.keep_ratio:g} with --summary-only)",
    )
    summarize.add_argument(
        "--summary-ratio",
        type=float,
        default=None,
        help="with --budget: share of the budget a summary may take (default "
        f"{_fraction(DEFAULT_SUMMARY_RATIO)}; {_fraction(LOW_COST.summary_ratio)} with "
        f"--low-cost, {_fraction(SUMMARY_ONLY.summary_ratio)} with --summary-only); sizes "
        "the extractive handler's summaries",
    )


def _add_clearing_flags(summarize: argparse.ArgumentParser) -> None:
    """The clearing stage's flags and the presets."""
    clearing = summarize.add_argument_group(
        "clearing (with --budget): old tool results become placeholders before anything is "
        f"summarized, without a handler call ({_clearing_default()})"
    )
    presets = clearing.add_mutually_exclusive_group()
    presets.add_argument(
        "--low-cost",
        action="store_true",
        help=f"the LOW_COST preset: {_preset_text(LOW_COST)} ({_same_as_defaults(LOW_COST)}"
        "explicit options win)",
    )
    presets.add_argument(
        "--summary-only",
        action="store_true",
        help=f"the SUMMARY_ONLY preset, the former defaults: {_preset_text(SUMMARY_ONLY)} "
        f"(remembers more without an archive, costs more; {_same_as_defaults(SUMMARY_ONLY)}"
        "explicit options win)",
    )
    clearing.add_argument(
        "--clear",
        action="store_true",
        help="turn the clearing stage on (any --clear-* does), e.g. with --summary-only",
    )
    clearing.add_argument(
        "--clear-keep",
        type=int,
        help=f"newest tool uses whose results stay whole (default {DEFAULT_CLEAR_KEEP})",
    )
    clearing.add_argument(
        "--clear-trigger",
        type=float,
        help="share of the budget where clearing starts, in (0, 1] (default: the trigger)",
    )
    clearing.add_argument(
        "--clear-at-least",
        type=float,
        help="share of the budget a clearing pass must free to be applied alone (default 0)",
    )
    clearing.add_argument(
        "--clear-exclude",
        action="append",
        metavar="TOOL",
        help="tool whose results are never cleared (repeatable)",
    )
    clearing.add_argument(
        "--clear-inputs", action="store_true", help="clear the cleared calls' arguments too"
    )
    clearing.add_argument(
        "--clear-reasoning", action="store_true", help="clear old AI messages' reasoning"
    )


def _add_reference_flags(summarize: argparse.ArgumentParser) -> None:
    """The flags of the reference algorithm (``--last-section-budget``)."""
    reference = summarize.add_argument_group("reference algorithm (with --last-section-budget)")
    reference.add_argument(
        "--pair-budget",
        help="size over which an older pair is summarized alone (default: budget/3, max 16KiB)",
    )
    reference.add_argument(
        "--keep-sections", type=int, help="newest sections kept with all their pairs (default 1)"
    )
    reference.add_argument(
        "--qa",
        action="store_true",
        help="also fold the oldest sections into one (QA summarization)",
    )
    reference.add_argument(
        "--qa-budget", help="chain size that triggers QA summarization (default: 2x budget)"
    )


def _add_handler_flags(summarize: argparse.ArgumentParser) -> None:
    """The handler, its concurrency, the summary cache and the history archive."""
    summarize.add_argument(
        "--handler",
        default="extractive",
        help="extractive (offline, default) | openai:MODEL | anthropic:MODEL",
    )
    summarize.add_argument(
        "--max-concurrency", type=int, default=None, help="handler calls in flight at most"
    )
    summarize.add_argument(
        "--cache",
        metavar="PATH|redis://...",
        help="summary cache: a SQLite file or a Redis URL (same prompt, no second call)",
    )
    summarize.add_argument(
        "--cache-id",
        help="handler identity in the cache keys (default: the --handler value); change it "
        "when the model or its settings change",
    )
    summarize.add_argument(
        "--cache-ttl", type=float, help="seconds a cached summary lives (default: forever)"
    )
    summarize.add_argument(
        "--archive",
        metavar="PATH|redis://...",
        help="history archive: keep every message summarized away (SQLite file or Redis URL)",
    )
    summarize.add_argument(
        "--session",
        help="archive session (required with --archive): whose messages these are; "
        "recall and deletion see one session only",
    )


_REFERENCE_ONLY = ("pair_budget", "keep_sections", "qa", "qa_budget")


def _config(args: argparse.Namespace) -> SummarizerConfig:
    budget = _size("--last-section-budget", args.last_section_budget)
    pair_budget = (
        min(16384, max(budget // 3, 1))
        if args.pair_budget is None
        else _size("--pair-budget", args.pair_budget)
    )
    qa_budget = 2 * budget if args.qa_budget is None else _size("--qa-budget", args.qa_budget)
    keep_sections = 1 if args.keep_sections is None else args.keep_sections
    if keep_sections < 1:
        raise ValueError("--keep-sections must be at least 1")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise ValueError("--max-concurrency must be at least 1")
    return SummarizerConfig(
        last_section_bytes=budget,
        max_body_pair_bytes=pair_budget,
        keep_qa_sections=keep_sections,
        use_qa=args.qa,
        max_qa_bytes=qa_budget,
    )


def _budget(args: argparse.Namespace) -> Budget:
    """The whole-chain budget of ``--budget`` (bytes, or tokens with ``--tokens``)."""
    for name in _REFERENCE_ONLY:
        if getattr(args, name) not in (None, False):
            option = "--" + name.replace("_", "-")
            raise ValueError(
                f"{option} applies to the reference algorithm: use it with --last-section-budget"
            )
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise ValueError("--max-concurrency must be at least 1")
    text = "50KiB" if args.budget is None else args.budget
    if args.tokens:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(
                f"--budget: invalid token budget {text!r}: use a positive whole number"
            )
        return Budget.tokens(int(text))
    return Budget.bytes(_size("--budget", text))


def _size(option: str, text: str) -> int:
    """The bytes of a size option; an empty or malformed one is a usage error naming it
    (never a silent default)."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def _max_prompt_bytes(args: argparse.Namespace) -> int:
    if args.max_prompt_bytes is None:
        return DEFAULT_MAX_PROMPT_BYTES
    limit = _size("--max-prompt-bytes", args.max_prompt_bytes)
    if limit < MIN_PROMPT_BYTES:
        raise ValueError(f"--max-prompt-bytes must be at least {MIN_PROMPT_BYTES}, got {limit}")
    return limit


def _piece_concurrency(args: argparse.Namespace) -> int:
    """Calls in flight when ``--budget`` summarizes in pieces: as given, else 1 for the
    offline handler (CPU-bound: concurrent calls only hold more prompts in memory and
    contend for the interpreter) and 4 for a model."""
    if args.max_concurrency is not None:
        return int(args.max_concurrency)
    offline = args.handler.strip().partition(":")[0].lower() == "extractive"
    return 1 if offline else 4


def _load(args: argparse.Namespace) -> tuple[Any, str]:
    if args.example:
        text = resources.files("csum").joinpath("examples", EXAMPLE).read_text(encoding="utf-8")
        import json

        return json.loads(text), "example:" + EXAMPLE
    origin = "standard input" if args.file == "-" else args.file
    return read_json(args.file, max_bytes=args.max_input_bytes), origin


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


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What either mode produced, for the statistics line."""

    messages: list[Message]
    size_before: int
    size_after: int
    handler_calls: int
    handler_input_bytes: int
    repairs: tuple[ChainIssue, ...]
    seconds: float
    cache_hits: int = 0
    store_events: tuple[StoreEvent, ...] = ()
    """What the cache and the archive reported, for the stores' report."""


def _report(result: _Outcome, origin: str, err: TextIO) -> None:
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
        print(f"repaired {len(result.repairs)} problems first:", file=err)
        for issue in result.repairs:
            print(f"  {issue}", file=err)


def _id_template(args: argparse.Namespace) -> IdTemplate:
    """The template of summary call ids: given, the target provider's, or the default."""
    if args.id_template:
        return IdTemplate(args.id_template)
    if args.target:
        from cast import get_provider

        return get_provider(args.target).id_template
    return IdTemplate(DEFAULT_TOOL_CALL_ID_TEMPLATE)


def _cache(args: argparse.Namespace) -> SummaryCache | None:
    if args.cache is None:
        return None
    if not args.cache.strip():
        raise ValueError("--cache needs 'memory', a SQLite file path or a Redis URL, not ''")
    if args.cache_ttl is not None and not args.cache_ttl > 0:
        raise ValueError("--cache-ttl must be a positive number of seconds")
    handler_id = args.handler if args.cache_id is None else args.cache_id
    return SummaryCache(open_store(args.cache), handler_id=handler_id, ttl=args.cache_ttl)


def _archive(args: argparse.Namespace) -> HistoryArchive | None:
    if args.archive is None:
        if args.session is not None:
            raise ValueError("--session applies to --archive")
        return None
    if not args.archive.strip():
        raise ValueError("--archive needs a SQLite file path or a Redis URL, not an empty text")
    if not args.session or not args.session.strip():
        raise ValueError(
            "--archive needs --session NAME: the session whose messages these are "
            "(tenants sharing an archive must never share a session)"
        )
    return HistoryArchive(args.archive, session=args.session)


def _report_stores(result: _Outcome, args: argparse.Namespace, err: TextIO) -> None:
    """Cache hits, archived batches and store failures (a failing store never fails
    the run)."""
    kinds = Counter(event.kind for event in result.store_events)
    if args.cache:
        print(f"cache: {result.cache_hits} hits, {result.handler_calls} handler calls", file=err)
    if kinds[StoreEventKind.ARCHIVED]:
        print(f"archive: {kinds[StoreEventKind.ARCHIVED]} batches archived", file=err)
    failures = [event for event in result.store_events if event.failed]
    for event in failures[:3]:
        print(f"warning: {event.kind} ({event.store}): {event.detail}", file=err)
    if len(failures) > 3:
        print(f"warning: {len(failures) - 3} more store failures", file=err)


def _reference(
    args: argparse.Namespace, messages: list[Message], handler: Handler, err: TextIO
) -> _Outcome:
    """``--last-section-budget``: the reference algorithm (bounds the active sections)."""
    summarizer = Summarizer(
        _config(args),
        max_concurrency=args.max_concurrency,
        stores=Stores(cache=_cache(args), archive=_archive(args)),
    )
    progress = _Progress(err, not args.quiet)

    async def run() -> SummaryResult:
        try:
            return await summarizer.summarize(
                handler,
                open_with_human(messages),  # a replay opening with an AI message
                id_template=_id_template(args),
                on_call=progress,
                target=args.target,
                allow_growth=False,
            )
        finally:  # close the cache and archive connections
            if summarizer.cache is not None:
                await summarizer.cache.aclose()
            if summarizer.archive is not None:
                await summarizer.archive.aclose()

    try:
        result = anyio.run(run)
    finally:
        progress.done()
    return _Outcome(
        result.messages,
        result.size_before,
        result.size_after,
        result.handler_calls,
        result.handler_input_bytes,
        result.repairs,
        result.seconds,
        result.cache_hits,
        result.store_events,
    )


def _compact(
    args: argparse.Namespace, messages: list[Message], handler: Handler, err: TextIO
) -> tuple[_Outcome, bool]:
    """``--budget``: the Compactor bounds the whole chain; (outcome, over budget)."""
    progress = _Progress(err, not args.quiet)
    sent = [0, 0]
    options = _compactor_options(args)
    budget: Budget = options["budget"]
    if getattr(handler, "sized_by_compactor", False):
        # the default extractive handler, wrapped below (so the Compactor cannot size it):
        # sized here as the Compactor would, at the summary share given or its default
        from csum.handlers import extractive

        ratio = DEFAULT_SUMMARY_RATIO if budget.summary_ratio is None else budget.summary_ratio
        handler = extractive(summary_bytes(budget, ratio))
    inner = as_request_handler(handler)

    async def report(request: SummaryRequest) -> str:
        summary = await inner(request)
        sent[0] += 1
        sent[1] += utf8_len(request.prompt)
        progress(sent[0], sent[1])
        return summary

    cache = _cache(args)
    archive = _archive(args)
    compactor = Compactor(
        request_handler(report, repr(inner)),
        **options,
        target=args.target,
        id_template=args.id_template,
        stores=Stores(cache=cache, archive=archive),
        robustness=Robustness(
            max_prompt_bytes=_max_prompt_bytes(args), max_concurrency=_piece_concurrency(args)
        ),
    )

    async def run() -> CompactionResult:
        try:
            return await compactor.run(messages)
        finally:  # close the cache and archive connections
            if cache is not None:
                await cache.aclose()
            if archive is not None:
                await archive.aclose()

    try:
        result = anyio.run(run)
    finally:
        progress.done()
    return _compaction_outcome(result, err), result.over_budget


def _compaction_outcome(result: CompactionResult, err: TextIO) -> _Outcome:
    """What ``--budget`` reports of the Compactor's result (a warning when it is still
    over its budget)."""
    if result.over_budget:
        print(
            f"warning: the chain is still over its budget ({result.size_after:,} > "
            f"{result.budget:,} {result.unit}): the system prompt, the last question and the "
            "newest turn alone exceed it",
            file=err,
        )
    return _Outcome(
        result.messages,
        result.bytes_before,
        result.bytes_after,
        result.handler_calls,
        sum(event.prompt_bytes for event in result.events),
        result.repairs,
        result.seconds,
        sum(event.cache_hits for event in result.events),
        result.store_events,
    )


_CLEAR_OPTIONS = (
    "clear_keep",
    "clear_trigger",
    "clear_at_least",
    "clear_exclude",
    "clear_inputs",
    "clear_reasoning",
)


_CLEAR_FLAGS = {
    "keep": "--clear-keep",
    "trigger": "--clear-trigger",
    "clear_at_least": "--clear-at-least",
    "exclude_tools": "--clear-exclude",
}


def _clearing(args: argparse.Namespace, base: Clearing | None) -> Clearing | None:
    """The clearing stage the options ask for (None: none asked for): ``base`` (the
    preset's stage; without one the default, ``Clearing()``) with the ``--clear-*``
    options given."""
    asked = [name for name in _CLEAR_OPTIONS if getattr(args, name) not in (None, False)]
    if not (args.clear or args.low_cost or asked):
        return None
    options: dict[str, Any] = {}
    for name, key in (
        ("clear_keep", "keep"),
        ("clear_trigger", "trigger"),
        ("clear_at_least", "clear_at_least"),
    ):
        if getattr(args, name) is not None:
            options[key] = getattr(args, name)
    if args.clear_exclude:
        options["exclude_tools"] = frozenset(args.clear_exclude)
    if args.clear_inputs:
        options["clear_tool_inputs"] = True
    if args.clear_reasoning:
        options["clear_reasoning"] = True
    try:
        return replace(base or DEFAULT_CLEARING or Clearing(), **options)
    except (TypeError, ValueError) as error:
        field = str(error).removeprefix("Clearing.").split(" ", 1)[0]
        flag = _CLEAR_FLAGS.get(field, "--clear")
        raise ValueError(f"{flag}: {error}") from None


def _compactor_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Compactor's ``budget`` (``--budget`` with the settings of ``--low-cost`` or
    ``--summary-only``, ``--keep-ratio`` and ``--summary-ratio``) and ``clearing`` (from
    the preset and the ``--clear-*`` options), explicit options winning over the
    preset's."""
    preset = LOW_COST if args.low_cost else SUMMARY_ONLY if args.summary_only else None
    settings: dict[str, Any] = preset.settings() if preset is not None else {}
    options: dict[str, Any] = {"clearing": preset.clearing} if preset is not None else {}
    clearing = _clearing(args, preset.clearing if preset is not None else None)
    if clearing is not None:
        options["clearing"] = clearing
    if args.keep_ratio is not None:
        settings["keep_ratio"] = args.keep_ratio
    if args.summary_ratio is not None:
        if not 0 < args.summary_ratio <= 0.5:
            raise ValueError(f"--summary-ratio must be within (0, 0.5], got {args.summary_ratio}")
        settings["summary_ratio"] = args.summary_ratio
    options["budget"] = _budget(args).evolve(**settings)
    return options


def _check_output(args: argparse.Namespace) -> None:
    """Refuse ``-o`` naming a symbolic link unless ``--force``: the file written is the
    link's target, which may be anything the user can write (a usage error, before any
    work)."""
    if args.output is not None and not args.output.strip():
        raise ValueError("-o needs a file name, not an empty text")
    if args.output and os.path.islink(args.output) and not args.force:
        raise ValueError(
            f"-o {args.output} is a symbolic link (to {os.readlink(args.output)}): writing "
            "would replace the file it points to; pass --force to write through it"
        )


def _summarize(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from csum.handlers import resolve_handler

    if args.last_section_budget is None:
        _budget(args)  # usage errors before any work
        _max_prompt_bytes(args)
    elif args.tokens:
        raise ValueError("--tokens applies to --budget")
    elif args.max_prompt_bytes is not None:
        raise ValueError("--max-prompt-bytes applies to --budget")
    if args.keep_ratio is not None and not 0 < args.keep_ratio <= 1:
        raise ValueError(f"--keep-ratio must be within (0, 1], got {args.keep_ratio}")
    if args.last_section_budget is None:
        _compactor_options(args)  # usage errors before any work
    elif (
        args.low_cost
        or args.summary_only
        or args.summary_ratio is not None
        or _clearing(args, None) is not None
    ):
        raise ValueError(
            "--low-cost, --summary-only, --clear and --summary-ratio apply to --budget"
        )
    _check_output(args)
    payload, origin = _load(args)
    messages, fmt = decode_owned_chain(payload, args.format)
    del payload  # held through the whole run, it made the peak memory 1.5x larger
    handler = resolve_handler(args.handler)
    started = time.perf_counter()
    over = False
    if args.last_section_budget is not None:
        result = _reference(args, messages, handler, err)
    else:
        result, over = _compact(args, messages, handler, err)
    write_json(encode_chain(result.messages, fmt), args.output, out)
    if not args.quiet:
        _report(result, origin, err)
        _report_stores(result, args, err)
        if args.output:
            print(f"wrote {args.output} ({fmt}) in {time.perf_counter() - started:.2f}s", file=err)
    return EXIT_FAILED if over else EXIT_OK


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``csum`` with ``argv``; returns the exit code."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        with redirect_stdout(out), redirect_stderr(err):  # argparse prints to sys.std*
            args = main_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "serve":
        return serve(args, err)
    try:
        with redirect_stderr(err):  # warnings about the input
            return _summarize(args, out, err)
    except SummarizationError as exc:
        print(
            f"csum {args.command}: summarization failed, nothing written: {one_line(exc)}",
            file=err,
        )
        return EXIT_FAILED
    except (ChainError, ValueError, ImportError) as exc:
        print(f"csum {args.command}: error: {one_line(exc)}", file=err)
        return EXIT_USAGE


def entrypoint() -> None:
    """Console-script entry point."""
    run_console(main)
