"""The ``cast`` and ``csum`` command lines, run in-process through ``main(argv)``."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import cast.cli
import csum.cli
import csum.handlers
from cast import SUMMARIZATION_TOOL_NAME, ChainAST, Message, TextPart, diagnose
from cast._lint import lint
from cast.chainio import decode_chain
from csum.clearing import CLEARED_PREFIX
from csum.config import DEFAULT_CLEARING, DEFAULT_KEEP_RATIO, DEFAULT_SUMMARY_RATIO
from tests.conftest import CORPUS, PAYLOADS, needs

ROOT = Path(__file__).resolve().parents[2]
TAU = CORPUS / "openai_taubench" / "taubench_gpt4o_airline_task027_trial1.json"
"""26 messages, 14 KB; reuses one tool-call id (Anthropic rejects it, Mistral too)."""
CLAUDE_CODE = CORPUS / "anthropic_claudecode" / "claudecode_spotter_ae4a77f8_sub_agent-aac57f5.json"
"""A Claude Code sub-agent run: 16 messages, parallel tool calls, thinking blocks."""
CLAUDE_CODE_BROKEN = (
    CORPUS / "anthropic_claudecode" / "claudecode_spotter_8463c716_sub_agent-acompact-f46190.json"
)
"""A compaction call logged as six user entries in a row: five consecutive-human repairs."""
SOURCES = {"taubench": TAU, "claude_code": CLAUDE_CODE}
FORMATS = (
    "openai",
    "openai_responses",
    "anthropic",
    "bedrock",
    "gemini",
    "langchaingo",
    "chaincast",
)
PROVIDER_OF = {
    "openai": "openai",
    "openai_responses": "openai-responses",
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
}
EXAMPLE = "claude_code_session.json"

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not found")

BROKEN_OPENAI = [
    {"role": "system", "content": "You are a shell agent."},
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "user", "content": "hurry up"},
    {"role": "tool", "tool_call_id": "call_9", "content": "orphan"},
    {"role": "assistant", "content": "done"},
]
"""call_1 (message 2) never answered; the tool message 4 answers nothing."""


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def _run(main: Callable[..., int], argv: Sequence[str], stdin: str | None, monkeypatch: Any) -> Run:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cast_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    def run(*argv: str, stdin: str | None = None) -> Run:
        return _run(cast.cli.main, argv, stdin, monkeypatch)

    return run


@pytest.fixture
def csum_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    def run(*argv: str, stdin: str | None = None) -> Run:
        return _run(csum.cli.main, argv, stdin, monkeypatch)

    return run


def assert_user_error(result: Run, *needles: str) -> None:
    """Exit 2, nothing on stdout, exactly one line on stderr naming the problem."""
    assert result.code == 2, result
    assert result.out == ""
    assert "Traceback" not in result.err
    assert len(result.err.splitlines()) == 1, result.err
    assert result.err.endswith("\n")
    for needle in needles:
        assert needle in result.err, (needle, result.err)


def _messages(path: Path) -> list[Message]:
    return decode_chain(json.loads(path.read_text(encoding="utf-8")))[0]


def _example_messages() -> list[Message]:
    text = resources.files("csum").joinpath("examples", EXAMPLE).read_text(encoding="utf-8")
    return decode_chain(json.loads(text), "anthropic")[0]


def _strict(payload: Any, fmt: str) -> list[Message]:
    """The payload decoded as ``fmt``; it must parse without any repair."""
    messages, detected = decode_chain(payload, fmt)
    assert detected == fmt
    ChainAST.from_messages(messages)  # raises ChainError on any broken rule
    assert diagnose(messages) == []
    return messages


def _calls(messages: Sequence[Message]) -> list[str]:
    return [call.name for message in messages for call in message.tool_calls]


def _results(messages: Sequence[Message]) -> list[str]:
    return [result.content for message in messages for result in message.tool_results]


@cache
def _input_in(source: str, fmt: str) -> str:
    """The corpus chain ``source`` converted (and ported) to ``fmt`` by the CLI itself."""
    out, err = io.StringIO(), io.StringIO()
    code = cast.cli.main(["convert", str(SOURCES[source]), "--to", fmt], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


# --------------------------------------------------------------------------- inspect


@needs_corpus
def test_inspect_valid_chain_shows_the_tree(cast_cli: Callable[..., Run]) -> None:
    result = cast_cli("inspect", str(TAU))

    assert result.code == 0, result.err
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0] == "format: openai"
    assert re.fullmatch(r"chain: 26 messages, \d+\.\d KiB, \d+ sections", lines[1])
    assert re.match(r"  section 0 +\d+\.\d KiB  header: system \d+\.\d KiB, human \d+ B", lines[2])
    assert re.search(r"pair 0  request_response +\d+ B  calls: \w+\(call_\w+\)", result.out)
    for call_id in (call.id for m in _messages(TAU) for call in m.tool_calls):
        assert f"({call_id})" in result.out
    assert lines[-1] == "valid: parses strictly, no repair needed"


@needs_corpus
def test_inspect_broken_corpus_chain_lists_repairs(cast_cli: Callable[..., Run]) -> None:
    result = cast_cli("inspect", str(CLAUDE_CODE_BROKEN))

    assert result.code == 0, result.err
    assert "format: claude_code" in result.out
    assert "repairs needed (5); the tree above shows the repaired chain:" in result.out
    repairs = re.findall(r"^  message (\d+): \[([a-z-]+)\]", result.out, flags=re.MULTILINE)
    assert repairs == [(str(index), "consecutive-human") for index in range(1, 6)]
    assert "valid:" not in result.out


def test_inspect_broken_chain_names_each_repair_and_its_message(
    cast_cli: Callable[..., Run],
) -> None:
    result = cast_cli("inspect", "-", stdin=json.dumps(BROKEN_OPENAI))

    assert result.code == 0, result.err
    repairs = re.findall(r"^  message (\d+): \[([a-z-]+)\] (.*)$", result.out, flags=re.MULTILINE)
    assert [(index, rule) for index, rule, _ in repairs] == [
        ("2", "missing-tool-result"),
        ("4", "orphan-tool-message"),
    ]
    assert "'call_1'; repair adds a fallback result" in repairs[0][2]
    assert "'call_9') does not follow" in repairs[1][2]
    assert repairs[1][2].endswith("repair drops it")
    # The tree is the repaired chain: the call is kept, with its fallback result.
    assert "calls: ls(call_1)" in result.out


@pytest.mark.parametrize(
    ("argv_format", "expected"),
    [
        pytest.param((), "format: openai", id="detected"),
        pytest.param(("--format", "openai"), "format: openai", id="given"),
        pytest.param(("-f", "chaincast"), None, id="wrong-format-given"),
    ],
)
def test_inspect_reads_standard_input(
    cast_cli: Callable[..., Run], argv_format: tuple[str, ...], expected: str | None
) -> None:
    result = cast_cli("inspect", "-", *argv_format, stdin=json.dumps(BROKEN_OPENAI[:2]))

    if expected is None:
        assert_user_error(result, "cast inspect: error:")
    else:
        assert result.code == 0, result.err
        assert result.out.splitlines()[0] == expected


# --------------------------------------------------------------------------- convert


@needs_corpus
@pytest.mark.parametrize(
    ("source", "from_fmt", "to_fmt"),
    [
        pytest.param(source, a, b, id=f"{source}-{a}-to-{b}")
        for source in SOURCES
        for a in FORMATS
        for b in FORMATS
    ],
)
def test_convert_between_every_pair_of_formats(
    cast_cli: Callable[..., Run], tmp_path: Path, source: str, from_fmt: str, to_fmt: str
) -> None:
    original = _strict(json.loads(_input_in(source, from_fmt)), from_fmt)
    path = tmp_path / f"chain.{from_fmt}.json"
    path.write_text(_input_in(source, from_fmt), encoding="utf-8")

    result = cast_cli("convert", str(path), "--from", from_fmt, "--to", to_fmt)

    assert result.code == 0, result.err
    assert result.err == ""
    messages = _strict(json.loads(result.out), to_fmt)
    assert _calls(messages) == _calls(original)
    assert _results(messages) == _results(original)
    assert [m.text for m in messages if m.role == "human"][-1] == (
        [m.text for m in original if m.role == "human"][-1]
    )
    if to_fmt in PROVIDER_OF:
        assert lint(messages, PROVIDER_OF[to_fmt]) == []


@needs_corpus
@pytest.mark.parametrize("fmt", [pytest.param(fmt, id=fmt) for fmt in FORMATS])
def test_convert_detects_the_input_format(cast_cli: Callable[..., Run], fmt: str) -> None:
    payload = _input_in("claude_code", fmt)

    assert cast_cli("inspect", "-", stdin=payload).out.splitlines()[0] == f"format: {fmt}"
    result = cast_cli("convert", "-", "--to", "anthropic", stdin=payload)
    assert result.code == 0, result.err
    assert lint(_strict(json.loads(result.out), "anthropic"), "anthropic") == []


@needs_corpus
def test_convert_claude_code_log_detected(cast_cli: Callable[..., Run]) -> None:
    result = cast_cli("convert", str(CLAUDE_CODE), "--to", "gemini")

    assert result.code == 0, result.err
    messages = _strict(json.loads(result.out), "gemini")
    assert lint(messages, "gemini") == []
    assert _calls(messages) == _calls(_messages(CLAUDE_CODE))


@needs_corpus
def test_convert_no_port_changes_nothing(cast_cli: Callable[..., Run]) -> None:
    payload = json.loads(TAU.read_text(encoding="utf-8"))

    same = cast_cli("convert", str(TAU), "--to", "openai", "--no-port")
    kept = cast_cli("convert", str(TAU), "--to", "anthropic", "--no-port")
    ported = cast_cli("convert", str(TAU), "--to", "anthropic")

    assert same.code == kept.code == ported.code == 0
    assert json.loads(same.out) == {"messages": payload}
    # tau-bench reuses a tool-call id: kept as is without porting, renamed with it.
    reused = [v.rule for v in lint(decode_chain(json.loads(kept.out))[0], "anthropic")]
    assert reused == ["duplicate-tool-call-id"]
    assert lint(decode_chain(json.loads(ported.out))[0], "anthropic") == []


@needs_corpus
def test_convert_target_provider_rules_apply(cast_cli: Callable[..., Run]) -> None:
    result = cast_cli("convert", str(TAU), "--to", "openai", "--target-provider", "mistral")

    assert result.code == 0, result.err
    messages = _strict(json.loads(result.out), "openai")
    assert lint(messages, "mistral") == []
    assert all(re.fullmatch(r"[a-zA-Z0-9]{9}", c.id) for m in messages for c in m.tool_calls)


@needs_corpus
def test_convert_output_file(cast_cli: Callable[..., Run], tmp_path: Path) -> None:
    target = tmp_path / "out.json"

    result = cast_cli("convert", str(TAU), "--to", "gemini", "-o", str(target))

    assert result.code == 0, result.err
    assert result.out == ""
    assert result.err == ""
    assert lint(_strict(json.loads(target.read_text(encoding="utf-8")), "gemini"), "gemini") == []


# --------------------------------------------------------------------------- lint


@needs_corpus
def test_lint_reports_violations_with_exit_1(cast_cli: Callable[..., Run]) -> None:
    result = cast_cli("lint", str(TAU), "--target", "mistral")

    assert result.code == 1
    lines = result.out.splitlines()
    found = [re.fullmatch(r"message (\d+): \[([a-z-]+)\] (.+)", line) for line in lines[:-1]]
    assert found
    assert all(found)
    count = len(_messages(TAU))
    assert all(0 <= int(match[1]) < count for match in found if match)
    assert {match[2] for match in found if match} >= {"tool-call-id-too-long"}
    assert lines[-1] == f"{len(found)} violations for mistral"
    assert result.err == ""


@needs_corpus
@pytest.mark.parametrize(
    ("argv", "stdin_from"),
    [
        pytest.param(("lint", str(TAU), "--target", "openai"), None, id="corpus-for-openai"),
        pytest.param(("lint", "-", "-t", "mistral"), "mistral", id="ported-for-mistral"),
        pytest.param(("lint", "-", "-t", "anthropic"), "anthropic", id="ported-for-anthropic"),
    ],
)
def test_lint_clean_chain_exits_0(
    cast_cli: Callable[..., Run], argv: tuple[str, ...], stdin_from: str | None
) -> None:
    stdin = None
    if stdin_from is not None:
        ported = cast_cli("convert", str(TAU), "--to", "openai", "--target-provider", stdin_from)
        stdin = ported.out

    result = cast_cli(*argv, stdin=stdin)

    assert result.code == 0, result.out
    assert result.out == f"0 violations for {argv[-1]}\n"


def test_lint_broken_chain_names_messages(cast_cli: Callable[..., Run]) -> None:
    result = cast_cli("lint", "-", "--target", "openai", stdin=json.dumps(BROKEN_OPENAI))

    assert result.code == 1
    assert result.out.splitlines()[:2] == [
        "message 2: [missing-tool-result] An assistant message with 'tool_calls' must be followed"
        " by tool messages responding to each 'tool_call_id'. The following tool_call_ids did"
        " not have response messages: call_1",
        "message 4: [orphan-tool-message] Invalid parameter: messages with role 'tool' must be a"
        " response to a preceeding message with 'tool_calls'.",
    ]


# --------------------------------------------------------------------------- csum


SIZE = r"\d+(?:\.\d)? (?:B|KiB|MiB)"
STATS = re.compile(
    rf"(?P<origin>.+): (?P<before>{SIZE}) -> (?P<after>{SIZE}) \(\d+% smaller\),"
    rf" (?P<messages>\d+) messages, (?P<calls>\d+) handler calls \({SIZE} sent\), \d+\.\d\ds"
)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_summarize_example(csum_cli: Callable[..., Run]) -> None:
    before = _example_messages()

    result = csum_cli("summarize", "--example")

    assert result.code == 0, result.err
    after = _strict(json.loads(result.out), "anthropic")
    assert ChainAST.from_messages(after).size < ChainAST.from_messages(before).size
    assert len(result.out.encode()) < len(json.dumps(_example_payload(), indent=2).encode())
    assert after[-1] == before[-1]
    stats = STATS.fullmatch(result.err.rstrip("\n"))
    assert stats, result.err
    assert stats["origin"] == f"example:{EXAMPLE}"
    assert int(stats["messages"]) == len(after)
    assert int(stats["calls"]) > 0
    assert "\x1b" not in result.err
    assert "\r" not in result.err


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        pytest.param(("--target", "mistral"), r"[a-zA-Z0-9]{9}", id="target-mistral"),
        pytest.param(
            ("--target", "deepseek"), r"call_[0-9]{2}_[0-9a-zA-Z]{24}", id="target-deepseek"
        ),
        pytest.param(("--id-template", "sum_{r:6:h}"), r"sum_[0-9a-f]{6}", id="template"),
        pytest.param((), r"call_[0-9a-zA-Z]{24}", id="default"),
    ],
)
def test_summarize_summary_ids_follow_the_target(
    csum_cli: Callable[..., Run], argv: tuple[str, ...], pattern: str
) -> None:
    result = csum_cli("summarize", "--example", *argv)

    assert result.code == 0, result.err
    after = _strict(json.loads(result.out), "anthropic")
    summary_ids = [
        call.id for m in after for call in m.tool_calls if call.name == SUMMARIZATION_TOOL_NAME
    ]
    assert summary_ids
    assert all(re.fullmatch(pattern, call_id) for call_id in summary_ids)


def test_summarize_for_anthropic_writes_text_summaries(csum_cli: Callable[..., Run]) -> None:
    """Anthropic refuses tool calls in a request that declares no tools: the summary is a
    text turn there, not a call of the undeclared summary tool (docs/providers.md)."""
    result = csum_cli("summarize", "--example", "--target", "anthropic")

    assert result.code == 0, result.err
    after = _strict(json.loads(result.out), "anthropic")
    names = [call.name for m in after for call in m.tool_calls]
    assert SUMMARIZATION_TOOL_NAME not in names
    # placed for Anthropic (csum.assemble): a text part, in a user turn when an
    # assistant turn follows it
    texts = [p.text for m in after for p in m.parts if isinstance(p, TextPart)]
    assert any(text.startswith("**summarized content:**") for text in texts)


def _example_payload() -> Any:
    return json.loads(
        resources.files("csum").joinpath("examples", EXAMPLE).read_text(encoding="utf-8")
    )


@needs_corpus
@pytest.mark.parametrize(
    ("options", "fmt"),
    [
        pytest.param(("--budget", "12KiB"), None, id="budget-12KiB"),
        pytest.param(("--budget", "3000", "--tokens"), None, id="budget-3000-tokens"),
        pytest.param(("--budget", "12KiB", "--format", "openai"), "openai", id="format-given"),
        pytest.param(("--last-section-budget", "2KiB"), None, id="last-section-2KiB"),
        pytest.param(("--last-section-budget", "2KiB", "--qa"), None, id="qa"),
        pytest.param(
            ("--last-section-budget", "2KiB", "--qa", "--keep-sections", "2"), None, id="qa-keep-2"
        ),
        pytest.param(
            ("--last-section-budget", "2KiB", "--max-concurrency", "1"), None, id="concurrency-1"
        ),
        pytest.param(
            ("--handler", "extractive:200", "--budget", "12KiB"), None, id="extractive-200"
        ),
    ],
)
def test_summarize_standard_input(
    csum_cli: Callable[..., Run], options: tuple[str, ...], fmt: str | None
) -> None:
    text = TAU.read_text(encoding="utf-8")
    before = _messages(TAU)

    result = csum_cli("summarize", "-", *options, stdin=text)

    assert result.code == 0, result.err
    after = _strict(json.loads(result.out), fmt or "openai")
    assert ChainAST.from_messages(after).size < ChainAST.from_messages(before).size
    assert after[-1] == before[-1]
    assert after[0] == before[0]  # the system prompt is never summarized
    stats = STATS.fullmatch(result.err.rstrip("\n"))
    assert stats, result.err
    assert stats["origin"] == "standard input"


@needs_corpus
def test_summarize_qa_folds_old_sections(csum_cli: Callable[..., Run]) -> None:
    plain = csum_cli("summarize", str(TAU), "--last-section-budget", "2KiB")
    folded = csum_cli("summarize", str(TAU), "--last-section-budget", "2KiB", "--qa")

    assert plain.code == folded.code == 0
    sections = [
        len(ChainAST.from_messages(decode_chain(json.loads(r.out))[0]).sections)
        for r in (plain, folded)
    ]
    assert sections[1] < sections[0]


@pytest.mark.parametrize(
    ("options", "calls"),
    [
        # The example has three sections (69, 35 and 7 KiB): the reference algorithm
        # summarizes the sections before the kept ones, and the newest one beyond its budget.
        pytest.param(
            ("--last-section-budget", "2MB", "--pair-budget", "2MB", "--keep-sections", "3"),
            0,
            id="2MB-nothing-to-do",
        ),
        pytest.param(
            ("--last-section-budget", "2MB", "--keep-sections", "3"), 1, id="2MB-one-oversized-pair"
        ),
        pytest.param(("--last-section-budget", "50KiB"), 2, id="50KiB-two-older-sections"),
        pytest.param(
            ("--last-section-budget", "4KiB", "--pair-budget", "2MB"), 3, id="4KiB-last-section-too"
        ),
        pytest.param(("--budget", "2MB"), 0, id="whole-chain-2MB-fits"),
        pytest.param(("--budget", "50KiB"), 1, id="whole-chain-50KiB-one-call"),
        pytest.param((), 1, id="default-50KiB"),
    ],
)
def test_summarize_budget_units(
    csum_cli: Callable[..., Run], options: tuple[str, ...], calls: int
) -> None:
    result = csum_cli("summarize", "--example", "--format", "anthropic", *options)

    assert result.code == 0, result.err
    stats = STATS.fullmatch(result.err.rstrip("\n"))
    assert stats, result.err
    assert int(stats["calls"]) == calls
    if calls == 0:
        assert _strict(json.loads(result.out), "anthropic") == _example_messages()


def test_summarize_output_file(csum_cli: Callable[..., Run], tmp_path: Path) -> None:
    target = tmp_path / "summarized.json"

    result = csum_cli("summarize", "--example", "-o", str(target))

    assert result.code == 0, result.err
    assert result.out == ""
    after = _strict(json.loads(target.read_text(encoding="utf-8")), "anthropic")
    assert after[-1] == _example_messages()[-1]
    lines = result.err.splitlines()
    assert len(lines) == 2
    assert STATS.fullmatch(lines[0])
    assert re.fullmatch(rf"wrote {re.escape(str(target))} \(anthropic\) in \d+\.\d\ds", lines[1])


def test_summarize_quiet_prints_nothing_but_the_chain(csum_cli: Callable[..., Run]) -> None:
    result = csum_cli("summarize", "--example", "-q")

    assert result.code == 0
    assert result.err == ""
    assert _strict(json.loads(result.out), "anthropic")[-1] == _example_messages()[-1]


def test_summarize_progress_on_a_terminal_only() -> None:
    terminal, out = _Terminal(), io.StringIO()

    code = csum.cli.main(
        ["summarize", "--example", "--last-section-budget", "4KiB"], stdout=out, stderr=terminal
    )

    assert code == 0
    progress, _, stats = terminal.getvalue().rpartition("\r\x1b[K")
    assert progress.startswith("\rsummarizing: ")
    counts = [int(n) for n in re.findall(r"\rsummarizing: (\d+) handler calls, ", progress)]
    assert counts == sorted(counts)
    assert 1 <= counts[0] < counts[-1]  # updated as the calls come back, not only at the end
    found = STATS.fullmatch(stats.rstrip("\n"))
    assert found
    assert int(found["calls"]) == counts[-1]

    quiet = _Terminal()
    assert csum.cli.main(["summarize", "--example", "-q"], stdout=out, stderr=quiet) == 0
    assert quiet.getvalue() == ""


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(RuntimeError("model unavailable"), id="runtime-error"),
        pytest.param(TimeoutError("no answer\n<html>\n502 Bad Gateway\n</html>"), id="multiline"),
    ],
)
def test_summarize_handler_failure_writes_nothing(
    csum_cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    error: Exception,
) -> None:
    specs: list[str] = []

    def resolve(spec: str) -> Callable[[str], Any]:
        specs.append(spec)

        async def failing(prompt: str) -> str:
            raise error

        return failing

    monkeypatch.setattr(csum.handlers, "resolve_handler", resolve)
    target = tmp_path / "out.json"

    result = csum_cli("summarize", "--example", "--handler", "openai:m", "-o", str(target))

    assert specs == ["openai:m"]
    assert result.code == 1
    assert result.out == ""
    assert not target.exists()
    assert "Traceback" not in result.err
    assert len(result.err.splitlines()) == 1, result.err
    assert result.err.startswith("csum summarize: summarization failed, nothing written: ")
    assert type(error).__name__ in result.err


# --------------------------------------------------------------------------- user errors


@pytest.fixture
def bad_inputs(tmp_path: Path) -> dict[str, str]:
    """Files the error table points at, by name."""
    files = {
        "invalid.json": b'{"messages": [',
        "latin1.json": '[{"role": "user", "content": "caf\u00e9"}]'.encode("latin-1"),
        "number.json": b"42",
        "no-messages.json": b'{"model": "gpt-4o"}',
        "empty-list.json": b"[]",
        "ai-first.json": json.dumps(
            [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "q"}]
        ).encode(),
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "deep-arguments.json": json.dumps(
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [_call("c", '{"a":' * 5000 + "1" + "}" * 5000)],
                },
                {"role": "tool", "tool_call_id": "c", "content": "r"},
            ]
        ).encode(),
        "user-5.json": b'[{"role": "user", "content": 5}]',
        "bad-call.json": json.dumps(
            [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": 1}]}]
        ).encode(),
        "gemini-null-call.json": json.dumps(
            {"contents": [{"role": "model", "parts": [{"functionCall": None}]}]}
        ).encode(),
        "anthropic-bad-block.json": json.dumps(
            {"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_use"}]}]}
        ).encode(),
        "ok.json": TAU.read_bytes() if TAU.is_file() else json.dumps(BROKEN_OPENAI[:2]).encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "a-directory").mkdir()
    return {name: str(tmp_path / name) for name in [*files, "a-directory"]} | {
        "missing": str(tmp_path / "missing.json"),
        "missing-dir-out": str(tmp_path / "no" / "such" / "dir" / "out.json"),
        "newline-name": str(tmp_path / "two\nlines.json"),
    }


def _call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


def _argv(template: Sequence[str], files: dict[str, str]) -> list[str]:
    return [
        files.get(arg.removeprefix("@"), arg) if arg.startswith("@") else arg for arg in template
    ]


CAST_ERRORS = [
    pytest.param(("inspect", "@missing"), "cannot read", id="missing-file"),
    pytest.param(("inspect", "@a-directory"), "cannot read", id="directory"),
    pytest.param(("inspect", "@newline-name"), "cannot read", id="newline-in-name"),
    pytest.param(("inspect", "@invalid.json"), "is not valid JSON", id="invalid-json"),
    pytest.param(("inspect", "@latin1.json"), "not UTF-8", id="not-utf8"),
    pytest.param(("inspect", "@deep.json"), "nested too deeply", id="deeply-nested"),
    pytest.param(("inspect", "@ok.json", "--format", "nope"), "unknown format", id="bad-format"),
    pytest.param(("inspect", "@number.json"), "pass --format", id="undetectable-number"),
    pytest.param(("inspect", "@no-messages.json"), "pass --format", id="undetectable-object"),
    pytest.param(("inspect", "@empty-list.json"), "pass --format", id="undetectable-list"),
    pytest.param(("inspect", "@ai-first.json"), "message 0:", id="ai-first"),
    pytest.param(("inspect", "@user-5.json"), "messages[0].content", id="odd-content"),
    pytest.param(("inspect", "@bad-call.json"), "tool_calls[0].id", id="odd-tool-call"),
    pytest.param(("inspect", "@gemini-null-call.json"), "functionCall", id="odd-gemini-part"),
    pytest.param(
        ("lint", "@anthropic-bad-block.json", "-t", "openai"), "content[0].type", id="odd-block"
    ),
    pytest.param(
        ("convert", "@deep-arguments.json", "--to", "anthropic", "--no-port"),
        "expected a JSON object as arguments",
        id="deeply-nested-arguments",
    ),
    pytest.param(("lint", "@ok.json", "--target", "nope"), "unknown provider", id="bad-provider"),
    pytest.param(("convert", "@ok.json", "--to", "nope"), "unknown format", id="bad-to"),
    pytest.param(
        ("convert", "@ok.json", "--from", "gemini", "--to", "openai"),
        "contents[0]",
        id="wrong-from",
    ),
    pytest.param(
        ("convert", "@ok.json", "--to", "openai", "-o", "@missing-dir-out"),
        "cannot write",
        id="output-dir-missing",
    ),
    pytest.param(
        ("convert", "@ok.json", "--to", "openai", "-o", "@a-directory"),
        "cannot write",
        id="output-is-directory",
    ),
]


@pytest.mark.parametrize(("argv", "needle"), CAST_ERRORS)
def test_cast_user_errors_exit_2_with_one_line(
    cast_cli: Callable[..., Run], bad_inputs: dict[str, str], argv: tuple[str, ...], needle: str
) -> None:
    result = cast_cli(*_argv(argv, bad_inputs))

    assert_user_error(result, f"cast {argv[0]}: error: ", needle)


def test_convert_gives_a_chain_that_opens_with_an_ai_message_an_opening_human(
    cast_cli: Callable[..., Run], bad_inputs: dict[str, str]
) -> None:
    """Replayed histories open with an assistant message (recorded requests to OpenAI and
    Anthropic do); converting one adds the opening human message port adds."""
    result = cast_cli("convert", bad_inputs["ai-first.json"], "--to", "anthropic")
    assert result.code == 0, result
    payload = json.loads(result.out)
    assert [m["role"] for m in payload["messages"]] == ["user", "assistant", "user"]


def test_cast_user_error_on_standard_input(cast_cli: Callable[..., Run]) -> None:
    assert_user_error(
        cast_cli("inspect", "-", stdin="{oops"), "standard input is not valid JSON", "line 1"
    )


CSUM_ERRORS = [
    pytest.param(("@missing",), "cannot read", id="missing-file"),
    pytest.param(("@a-directory",), "cannot read", id="directory"),
    pytest.param(("@invalid.json",), "is not valid JSON", id="invalid-json"),
    pytest.param(("@latin1.json",), "not UTF-8", id="not-utf8"),
    pytest.param(("@ok.json", "--format", "nope"), "unknown format", id="bad-format"),
    pytest.param(("--example", "--format", "openai"), "messages[1]", id="wrong-format"),
    pytest.param(("@number.json",), "pass --format", id="undetectable"),
    pytest.param(("@ok.json", "--budget", "fifty"), "invalid size 'fifty'", id="budget-word"),
    pytest.param(("@ok.json", "--budget", "0"), "must be positive", id="budget-zero"),
    pytest.param(("@ok.json", "--budget", "9" * 400), "too large", id="budget-overflow"),
    pytest.param(
        ("@ok.json", "--last-section-budget", "1KiB", "--pair-budget", "1e3"),
        "invalid size",
        id="pair-budget",
    ),
    pytest.param(
        ("@ok.json", "--last-section-budget", "1KiB", "--qa-budget", "12XB"),
        "invalid size",
        id="qa-budget",
    ),
    pytest.param(("@ok.json", "--qa"), "--last-section-budget", id="qa-needs-reference-mode"),
    pytest.param(("@ok.json", "--budget", "2k", "--tokens"), "token budget", id="tokens-word"),
    pytest.param(("@ok.json", "--clear-keep", "-1"), "--clear-keep", id="clear-keep"),
    pytest.param(("@ok.json", "--clear-trigger", "2"), "--clear-trigger", id="clear-trigger"),
    pytest.param(("@ok.json", "--clear-at-least", "3"), "--clear-at-least", id="clear-at-least"),
    pytest.param(("@ok.json", "--summary-ratio", "0.9"), "--summary-ratio", id="summary-ratio"),
    pytest.param(
        ("@ok.json", "--last-section-budget", "1KiB", "--low-cost"),
        "apply to --budget",
        id="low-cost-needs-budget",
    ),
    pytest.param(("@ok.json", "--handler", "gpt4"), "unknown handler", id="handler-unknown"),
    pytest.param(("@ok.json", "--handler", "openai:"), "name the model", id="handler-no-model"),
    pytest.param(("@ok.json", "--handler", "extractive:0"), "positive", id="handler-extractive"),
    pytest.param(
        ("@ok.json", "--last-section-budget", "1KiB", "--keep-sections", "0"),
        "--keep-sections",
        id="keep-sections-0",
    ),
    pytest.param(
        ("@ok.json", "--last-section-budget", "1KiB", "--max-concurrency", "0"),
        "--max-concurrency",
        id="concurrency-0",
    ),
    pytest.param(("--example", "--target", "nope"), "unknown provider", id="target-unknown"),
    pytest.param(("--example", "--id-template", "x{r:0:d}"), "id template", id="bad-template"),
    pytest.param(("--example", "-o", "@missing-dir-out"), "cannot write", id="output-dir"),
    pytest.param(("--example", "-o", "@a-directory"), "cannot write", id="output-is-dir"),
]


@pytest.mark.parametrize(
    "mode", [(), ("--last-section-budget", "1KiB")], ids=["budget", "reference"]
)
def test_csum_summarizes_a_replay_opening_with_an_ai_message(
    csum_cli: Callable[..., Run], bad_inputs: dict[str, str], mode: tuple[str, ...]
) -> None:
    """Replayed histories open with an assistant message: both modes give them the
    opening human message port adds, as ``cast convert`` does."""
    result = csum_cli("summarize", bad_inputs["ai-first.json"], *mode)
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    messages = payload["messages"] if isinstance(payload, dict) else payload
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]


@pytest.mark.parametrize(("argv", "needle"), CSUM_ERRORS)
def test_csum_user_errors_exit_2_with_one_line(
    csum_cli: Callable[..., Run], bad_inputs: dict[str, str], argv: tuple[str, ...], needle: str
) -> None:
    result = csum_cli("summarize", *_argv(argv, bad_inputs))

    assert_user_error(result, "csum summarize: error: ", needle)


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        pytest.param(cast.cli.main, ("inspect",), id="cast-missing-file"),
        pytest.param(cast.cli.main, ("frobnicate",), id="cast-unknown-command"),
        pytest.param(cast.cli.main, ("convert", "x.json"), id="cast-convert-without-to"),
        pytest.param(csum.cli.main, ("summarize",), id="csum-no-input"),
        pytest.param(csum.cli.main, ("summarize", "--example", "x.json"), id="csum-both-inputs"),
        pytest.param(csum.cli.main, ("summarize", "--example", "--keep-sections", "x"), id="int"),
    ],
)
def test_usage_errors_exit_2_on_the_given_stream(
    main: Callable[..., int], argv: tuple[str, ...]
) -> None:
    out, err = io.StringIO(), io.StringIO()

    assert main(list(argv), stdout=out, stderr=err) == 2
    assert out.getvalue() == ""
    assert err.getvalue().startswith("usage: ")
    assert "error: " in err.getvalue().splitlines()[-1]
    assert "Traceback" not in err.getvalue()


# --------------------------------------------------------------------------- entry points


@pytest.mark.parametrize(
    ("module", "words"),
    [
        pytest.param("cast", ("inspect", "convert", "lint"), id="cast"),
        pytest.param("csum", ("summarize",), id="csum"),
    ],
)
def test_python_dash_m_help(module: str, words: tuple[str, ...]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {module} ")
    for word in words:
        assert word in done.stdout


def test_python_dash_m_user_error_has_no_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cast", "inspect", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("cast inspect: error: cannot read ")


@needs_corpus
def test_closed_pipe_ends_quietly() -> None:
    big = CORPUS / "anthropic_claudecode" / "claudecode_spotter_ae4a77f8.json"
    command = [sys.executable, "-m", "cast", "convert", str(big), "--to", "openai"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()  # the reader goes away, as `| head` does; output is ~500 KB
        error = proc.stderr.read()
        code = proc.wait(timeout=60)

    assert (code, error) == (1, b"")


def test_help_in_process_goes_to_the_given_stdout() -> None:
    out, err = io.StringIO(), io.StringIO()

    assert csum.cli.main(["summarize", "--help"], stdout=out, stderr=err) == 0
    assert "--keep-sections" in out.getvalue()
    assert err.getvalue() == ""


@pytest.mark.parametrize(
    ("entrypoint", "argv", "code"),
    [
        pytest.param(cast.cli.entrypoint, ["cast", "lint", "-", "-t", "openai"], 1, id="cast"),
        pytest.param(csum.cli.entrypoint, ["csum", "summarize", "-", "-q"], 0, id="csum"),
    ],
)
def test_console_script_functions(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    entrypoint: Callable[[], None],
    argv: list[str],
    code: int,
) -> None:
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(BROKEN_OPENAI)))

    with pytest.raises(SystemExit) as exit_info:
        entrypoint()

    assert exit_info.value.code == code
    assert capsys.readouterr().out


ENCRYPTED = PAYLOADS / "openai_responses" / "openai_responses_compact_messages.json"


@needs(ENCRYPTED)
def test_convert_an_encrypted_compaction_stops_unless_a_note_is_asked_for(
    cast_cli: Callable[..., Run],
) -> None:
    stopped = cast_cli("convert", str(ENCRYPTED), "--to", "anthropic")
    assert_user_error(stopped, "encrypted", "message")
    assert stopped.out == ""

    noted = cast_cli(
        "convert", str(ENCRYPTED), "--to", "anthropic", "--encrypted-compaction", "note"
    )
    assert noted.code == 0, noted.err
    assert "LostCompactionWarning" in noted.err
    messages = _strict(json.loads(noted.out), "anthropic")
    assert lint(messages, "anthropic") == []
    assert "encrypted_content" not in noted.out


def test_convert_refuses_an_unknown_encrypted_compaction_choice(
    cast_cli: Callable[..., Run],
) -> None:
    result = cast_cli("convert", str(ENCRYPTED), "--to", "anthropic", "--encrypted-compaction", "x")
    assert result.code == 2
    assert "invalid choice" in result.err


def _tool_results(out: str) -> list[str]:
    """The text of every tool result of an Anthropic-format chain."""
    messages = decode_chain(json.loads(out), "anthropic")[0]
    return [r.content for m in messages for r in m.tool_results]


def test_csum_clears_old_tool_results_with_clear(csum_cli: Callable[..., Run]) -> None:
    """``--clear`` (or any ``--clear-*``) runs the clearing stage: old tool results
    become placeholders, without a handler call here; with ``--summary-only`` alone,
    none does; with no flag, the default (``DEFAULT_CLEARING``) decides."""
    base = ("summarize", "--example", "--budget", "48KiB", "--summary-only")
    plain = csum_cli(*base)
    assert plain.code == 0, plain.err
    assert not any(c.startswith(CLEARED_PREFIX) for c in _tool_results(plain.out))
    default = csum_cli("summarize", "--example", "--budget", "48KiB")
    assert default.code == 0, default.err
    # The defaults' sizes without clearing: another chain exactly when clearing is on by
    # default (at a low target the summary evicts the placeholders, but it read them).
    sizes = (
        "--keep-ratio",
        str(DEFAULT_KEEP_RATIO),
        "--summary-ratio",
        str(DEFAULT_SUMMARY_RATIO),
    )
    unclear = csum_cli(*base, *sizes)
    assert unclear.code == 0, unclear.err
    assert (unclear.out != default.out) == (DEFAULT_CLEARING is not None)
    for extra in (("--clear", "--clear-keep", "1"), ("--clear-keep", "2")):
        result = csum_cli(*base, *extra)
        assert result.code == 0, result.err
        assert any(c.startswith(CLEARED_PREFIX) for c in _tool_results(result.out)), extra
        assert "0 handler calls" in result.err


def test_csum_low_cost_is_the_preset_and_explicit_options_win(
    csum_cli: Callable[..., Run],
) -> None:
    base = ("summarize", "--example", "--budget", "64KiB", "-q")
    low = csum_cli(*base, "--low-cost")
    assert low.code == 0, low.err
    # The preset's trigger (85 %) has no flag of its own; it is the Compactor's default
    # trigger, so the flags below spell all of the preset.
    spelled = ("--clear", "--clear-keep", "10", "--keep-ratio", "0.3")
    same = csum_cli(*base, *spelled, "--summary-ratio", str(1 / 64))
    assert same.code == 0, same.err
    assert same.out == low.out
    unsummarized = csum_cli(*base, *spelled, "--summary-ratio", str(1 / 32))  # another chain
    assert unsummarized.out != low.out
    wider = csum_cli(*base, "--low-cost", "--keep-ratio", "0.8")
    assert wider.code == 0, wider.err
    assert len(wider.out) > len(low.out)


def test_csum_default_summary_share_is_the_compactors(csum_cli: Callable[..., Run]) -> None:
    """Without ``--summary-ratio`` the offline handler's summaries take the Compactor's
    default share of the budget, as ``--help`` says (they took the handler's own fixed
    4 KiB: the command wraps the handler, so the Compactor could not size it)."""
    base = ("summarize", "--example", "--budget", "48KiB", "-q")
    default = csum_cli(*base)
    assert default.code == 0, default.err
    spelled = csum_cli(*base, "--summary-ratio", str(DEFAULT_SUMMARY_RATIO))
    assert spelled.out == default.out


def test_csum_summary_only_is_the_preset_and_explicit_options_win(
    csum_cli: Callable[..., Run],
) -> None:
    """``--summary-only`` is ``SUMMARY_ONLY`` (the former defaults) spelled out; a
    ``--clear*`` option given with it turns clearing back on; it excludes ``--low-cost``."""
    base = ("summarize", "--example", "--budget", "48KiB", "-q")
    only = csum_cli(*base, "--summary-only")
    assert only.code == 0, only.err
    assert not any(c.startswith(CLEARED_PREFIX) for c in _tool_results(only.out))
    spelled = csum_cli(*base, "--keep-ratio", "0.6", "--summary-ratio", str(1 / 32))
    if DEFAULT_CLEARING is None:
        assert spelled.out == only.out
    cleared = csum_cli(*base, "--summary-only", "--clear-keep", "1")
    assert cleared.code == 0, cleared.err
    assert any(c.startswith(CLEARED_PREFIX) for c in _tool_results(cleared.out))
    both = csum_cli(*base, "--summary-only", "--low-cost")
    assert both.code == 2
    assert "not allowed with argument" in both.err
    reference = csum_cli(
        "summarize", "--example", "--last-section-budget", "1KiB", "--summary-only"
    )
    assert reference.code == 2
    assert "apply to --budget" in reference.err
    # --keep-ratio sizes a --budget compaction only: refused, not checked and ignored.
    ratio = csum_cli(
        "summarize", "--example", "--last-section-budget", "1KiB", "--keep-ratio", "0.5"
    )
    assert ratio.code == 2
    assert "--keep-ratio" in ratio.err
    assert "apply to --budget" in ratio.err


def test_csum_a_clear_option_of_zero_turns_clearing_on(csum_cli: Callable[..., Run]) -> None:
    """``--clear-keep 0`` alone turns clearing on, as any ``--clear-*`` does (a zero was
    read as "not given", so ``--summary-only --clear-keep 0`` cleared nothing)."""
    base = ("summarize", "--example", "--budget", "24KiB", "--summary-only")
    zero = csum_cli(*base, "--clear-keep", "0")
    assert zero.code == 0, zero.err
    assert any(c.startswith(CLEARED_PREFIX) for c in _tool_results(zero.out))
    assert zero.out == csum_cli(*base, "--clear", "--clear-keep", "0").out


def test_csum_never_clears_an_excluded_tool(csum_cli: Callable[..., Run]) -> None:
    # Clearing at the summary stage's 60 % target, so the placeholders stay in the chain.
    base = ("summarize", "--example", "--budget", "24KiB", "--summary-only", "--clear")
    cleared = csum_cli(*base, "--clear-keep", "0")
    names = {
        json.loads(line.split(" call ", 1)[0].removeprefix(CLEARED_PREFIX))
        for c in _tool_results(cleared.out)
        for line in c.splitlines()[:1]
        if line.startswith(CLEARED_PREFIX)
    }
    assert names
    excluded = [f"--clear-exclude={name}" for name in names]
    result = csum_cli(*base, "--clear-keep", "0", *excluded)
    assert not any(c.startswith(CLEARED_PREFIX) for c in _tool_results(result.out))
