"""The ``cast`` command line (inspect, convert, lint, handoff): ``main(argv) -> int`` runs
in-process; user errors print one line and exit with code 2, never a traceback."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence
from typing import TextIO

from cast._lint import lint
from cast._port import LostCompactionWarning, drop_provider_fields, port
from cast.ast import BodyPair, BodyPairType, ChainAST
from cast.chainio import (
    add_input_limit_argument,
    decode_chain,
    format_size,
    known_formats,
    read_json,
    run_command,
    run_console,
    write_owned_chain,
)
from cast.errors import ChainError
from cast.handoff import handoff
from cast.messages import Message, ToolCall
from cast.parse import diagnose, parse_chain
from cast.providers import PROVIDERS

__all__ = ["entrypoint", "main", "main_parser", "render_tree"]

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_USAGE = 2


def main_parser() -> argparse.ArgumentParser:
    """The argument parser of ``cast``."""
    parser = argparse.ArgumentParser(
        prog="cast",
        description="Inspect, convert and lint LLM agent chains (message histories).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    formats = ", ".join(known_formats())
    detected = f"input format (detected when omitted): {formats}"

    inspect = commands.add_parser("inspect", help="show a chain as a tree of sections and pairs")
    inspect.add_argument("--format", "-f", help=detected)

    convert = commands.add_parser(
        "convert", help="convert a chain to another provider's format, made acceptable to it"
    )
    convert.add_argument("--from", dest="source", help=detected)
    convert.add_argument("--to", dest="target", required=True, help=f"output format: {formats}")
    convert.add_argument(
        "--target-provider",
        help="provider whose rules the output must meet (default: the --to format's provider)",
    )
    convert.add_argument(
        "--no-port",
        action="store_true",
        help="convert only; do not repair ids, reasoning or pairing",
    )
    convert.add_argument(
        "--encrypted-compaction",
        choices=("raise", "note"),
        default="raise",
        help="an OpenAI encrypted compaction item another provider cannot read: stop with "
        "an error (raise, the default) or replace it by a note saying what was lost (note)",
    )
    convert.add_argument("-o", "--output", help="output file (default: standard output)")

    lint = commands.add_parser("lint", help="list what a provider would reject in a chain")
    lint.add_argument("--target", "-t", required=True, help="provider to check against")
    lint.add_argument("--format", "-f", help=detected)
    lint.add_argument(
        "--source", help="provider that produced the chain (checks foreign reasoning)"
    )
    for command in (inspect, convert, lint):  # a positional's place makes no difference
        command.add_argument("file", help="chain file, or - for standard input")
        add_input_limit_argument(command)

    handoff = commands.add_parser(
        "handoff",
        help="write a Claude Code or Codex session as a new session of the other agent",
        description="Write a Claude Code session log or Codex rollout (SOURCE) as a new "
        "session in the target agent's own store, ported to its provider and compacted "
        "(offline, csum's extractive handler) when larger than --budget; prints the new "
        "session's id and the command that resumes it. The source is only read.",
    )
    handoff.add_argument("source", metavar="SOURCE", help="the session file (.jsonl)")
    handoff.add_argument(
        "--to",
        dest="agent",
        required=True,
        metavar="AGENT",
        help="target agent: codex or claude-code",
    )
    handoff.add_argument(
        "--cwd", help="the directory the new session belongs to (default: the source's own)"
    )
    handoff.add_argument(
        "--budget",
        metavar="SIZE",
        help="largest size of the written session, e.g. 200KB or '50000 tokens' "
        "(default: half the target model's window)",
    )
    handoff.add_argument(
        "--reasoning",
        choices=("drop", "text"),
        default="drop",
        help="the source's thinking, which the other provider cannot verify: drop it with a "
        "note (drop, the default) or keep its readable text as plain text (text)",
    )
    return parser


def _pair_line(pair_index: int, pair: BodyPair) -> str:
    calls = [p for p in pair.ai_message.parts if type(p) is ToolCall]
    line = f"    pair {pair_index}  {pair.type.value:<16} {format_size(pair.size):>10}"
    if calls:
        shown = ", ".join(f"{c.name}({c.id})" for c in calls[:4])
        more = f" +{len(calls) - 4} more" if len(calls) > 4 else ""
        line += f"  calls: {shown}{more}"
    elif pair.type is BodyPairType.COMPLETION:
        text = pair.ai_message.text.replace("\n", " ")
        line += f"  {text[:60]!r}" + ("..." if len(text) > 60 else "")
    return line


def render_tree(ast: ChainAST, messages: Sequence[Message]) -> list[str]:
    """The lines of ``cast inspect``'s tree."""
    lines = [
        f"chain: {len(messages)} messages, {format_size(ast.size)}, "
        f"{len(ast.sections)} section{'s' if len(ast.sections) != 1 else ''}"
    ]
    for s_index, section in enumerate(ast.sections):
        parts = [f"{m.role.value} {format_size(m.size)}" for m in section.header.messages()]
        lines.append(
            f"  section {s_index}  {format_size(section.size):>10}  header: {', '.join(parts)}"
            f"  pairs: {len(section.body)}"
        )
        lines.extend(_pair_line(p_index, pair) for p_index, pair in enumerate(section.body))
    return lines


def _inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    payload = read_json(args.file, max_bytes=args.max_input_bytes)
    messages, fmt = decode_chain(payload, args.format, owned=True)
    del payload
    issues = diagnose(messages)
    ast = parse_chain(messages, repair=True)  # raises for what repair cannot fix (rule 1)
    print(f"format: {fmt}", *render_tree(ast, messages), sep="\n", file=out)
    if issues:
        head = f"repairs needed ({len(issues)}); the tree above shows the repaired chain:"
        print(head, *(f"  {issue}" for issue in issues), sep="\n", file=out)
    else:
        print("valid: parses strictly, no repair needed", file=out)
    return EXIT_OK


def _convert(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    payload = read_json(args.file, max_bytes=args.max_input_bytes)
    messages, detected = decode_chain(payload, args.source, owned=True, option="--from")
    del payload  # the decoded messages are all that is needed from here on
    if not args.no_port:
        target = args.target_provider or _provider_of_format(args.target)
        if target is None:
            # No provider rules for this format (e.g. langchaingo): repair only, without
            # the fields only their own provider reads (Anthropic caller, cache points).
            messages = parse_chain(drop_provider_fields(messages), repair=True).to_messages()
        else:
            # The input's format names the provider that produced its reasoning.
            source = _provider_of_format(detected)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", LostCompactionWarning)
                messages = port(
                    messages, target, source=source, encrypted_compaction=args.encrypted_compaction
                )
            for warning in caught:  # what the note replaced, said where the user sees it
                print(f"warning: {warning.category.__name__}: {warning.message}", file=err)
    write_owned_chain(messages, args.target, args.output, out)
    return EXIT_OK


def _provider_of_format(fmt: str) -> str | None:
    """The provider whose rules a wire format implies (None for neutral formats)."""
    providers = {
        "claude_code": "anthropic",
        "claude_code_session": "anthropic",
        "codex_rollout": "openai-responses",
    }
    name = providers.get(fmt, fmt).replace("_", "-")
    return name if name in PROVIDERS else None


def _lint(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    payload = read_json(args.file, max_bytes=args.max_input_bytes)
    messages, _ = decode_chain(payload, args.format, owned=True)
    del payload
    violations = lint(messages, args.target, source=args.source)
    for violation in violations:
        print(f"message {violation.index}: [{violation.rule}] {violation.message}", file=out)
    noun = "violation" if len(violations) == 1 else "violations"
    print(f"{len(violations)} {noun} for {args.target}", file=out)
    return EXIT_FOUND if violations else EXIT_OK


def _handoff(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    done = handoff(
        args.source, args.agent, cwd=args.cwd, budget=args.budget, reasoning=args.reasoning
    )
    for note in done.notes:
        print(f"note: {note}", file=err)
    if done.compacted:
        print(f"note: compacted from {done.size_before} to {done.size_after} {done.unit}", file=err)
    print(done.session_id, done.resume_command, sep="\n", file=out)
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``cast`` with ``argv``; returns the exit code."""
    commands = {"inspect": _inspect, "convert": _convert, "lint": _lint, "handoff": _handoff}
    failures = [((ChainError, ValueError), EXIT_USAGE, "error")]
    return run_command(main_parser(), commands, argv, (stdout, stderr), failures)


def entrypoint() -> None:
    """Console-script entry point."""
    run_console(main)
