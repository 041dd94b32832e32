"""What the offline handler keeps from real kinds of output, and how it orders it."""

from __future__ import annotations

import json

import anyio
import pytest

from cast import BodyPair, Message, ToolCall
from cast.messages import Role
from csum.handlers import extractive, summarize_extractive
from csum.handlers._extractive import _StoppedError, _summarize
from csum.prompt import SummaryRequest, summary_request


def one_call(name: str, args: dict[str, object], output: str) -> SummaryRequest:
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(args))
    return summary_request([], [Message.ai("", call), Message.tool("call_1", name, output)])


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


DEPS = (
    "Resolving Hex dependencies...\nNew:\n"
    + "".join(
        f"  {name} {version}\n"
        for name, version in [
            ("opentelemetry", "1.7.0"),
            ("opentelemetry_api", "1.5.0"),
            ("opentelemetry_exporter", "1.10.0"),
        ]
    )
    + "Unchanged:\n"
    + "".join(f"  pkg_{i} 0.{i}.0\n" for i in range(60))
)


def test_versions_stay_with_their_package_and_the_command_comes_first() -> None:
    summary = summarize_extractive(one_call("Bash", {"command": "mix deps.get"}, DEPS), 300)
    lines = summary.splitlines()
    assert lines[0] == "Bash(mix deps.get)"
    assert "opentelemetry_api 1.5.0" in lines  # the version with its package, whole line
    assert "1.5.0" not in summary.replace("opentelemetry_api 1.5.0", "")


def test_json_records_are_flattened_with_their_keys() -> None:
    record = {
        "reservation_id": "JG7FMM",
        "cabin": "economy",
        "flights": [
            {"flight_number": "HAT028", "date": "2024-05-23", "price": 126},
            {"flight_number": "HAT047", "date": "2024-05-24", "price": 139},
        ],
        "insurance": "yes",
    }
    prompt = one_call("get_reservation_details", {"reservation_id": "JG7FMM"}, json.dumps(record))
    summary = summarize_extractive(prompt, 400)
    assert summary.splitlines()[0] == "get_reservation_details(JG7FMM)"
    # The record's own id is on the call line just above: not repeated (saves room).
    assert summary.count("JG7FMM") == 1
    assert "\ncabin=economy insurance=yes" in summary
    assert "flights[0]: flight_number=HAT028 date=2024-05-23 price=126" in summary
    assert '"' not in summary  # no JSON punctuation left


def test_constraints_stay_sentences() -> None:
    issue = (
        "## Goal\nAdd tracing.\n## Notes\n"
        + "".join(f"- see docs page number {i} for background\n" for i in range(30))
        + "- Do not use `ash_opentelemetry`; use `opentelemetry_ash` instead.\n"
        + "".join(f"- more background {i}\n" for i in range(30))
    )
    summary = summarize_extractive(one_call("Bash", {"command": "bd show x-1"}, issue), 200)
    assert "Do not use `ash_opentelemetry`; use `opentelemetry_ash` instead." in summary


def test_code_and_css_with_the_word_error_are_not_errors() -> None:
    css = "\n".join(
        [".error { color: red; }", "  border: 1px solid error-red;", "def handle_error(e):"]
        + [f".item-{i} {{ margin: {i}px; }}" for i in range(40)]
        + ["Error: ENOENT: no such file or directory, open 'dist/app.css'"]
    )
    summary = summarize_extractive(one_call("Bash", {"command": "npm run build"}, css), 100)
    assert "Error: ENOENT: no such file or directory" in summary
    assert ".error {" not in summary
    assert "handle_error" not in summary


def test_test_counts_and_failures_outrank_progress_noise() -> None:
    output = "\n".join(
        ["Running ExUnit with seed: 918599"]
        + ["." * 60 for _ in range(40)]
        + [
            "  1) test mount renders (SpotterWeb.ReviewLiveTest)",
            "     test/review_live_test.exs:58",
            "     ** (RuntimeError) no :secret_key_base configuration found",
            "Finished in 1.6 seconds",
            "5 tests, 5 failures",
        ]
    )
    summary = summarize_extractive(one_call("Bash", {"command": "mix test"}, output), 260)
    assert "5 tests, 5 failures" in summary
    assert "** (RuntimeError) no :secret_key_base configuration found" in summary
    assert "....." not in summary


def test_the_whole_budget_is_used_and_never_more() -> None:
    log = "\n".join(
        f"src/module_{i}.py:{i + 10}: warning W{i:03d} unused import os" for i in range(400)
    )
    prompt = one_call("Bash", {"command": "ruff check ."}, log)
    for budget in (333, 1000, 2500):
        summary = summarize_extractive(prompt, budget)
        assert budget * 0.9 <= utf8(summary) <= budget
    assert utf8(summarize_extractive(prompt, 80)) <= 80


def test_an_earlier_summary_comes_first_and_keeps_its_place() -> None:
    earlier = summarize_extractive(one_call("Bash", {"command": "mix deps.get"}, DEPS), 300)
    pair = BodyPair.summarization(earlier)
    noise = [
        Message.ai("", ToolCall(id=f"n{i}", name="Bash", arguments='{"command": "ls"}'))
        for i in range(10)
    ]
    messages: list[Message] = [pair.ai_message, *pair.tool_messages]
    for i, call in enumerate(noise):
        messages += [
            call,
            Message.tool(f"n{i}", "Bash", f"error: build {i} failed at src/x_{i}.py:{i}\n" * 3),
        ]
    summary = summarize_extractive(summary_request([], messages), 800)
    # First, whole, in its order, before the new errors. (A call alone in a summary is
    # written without indents; among other calls its result lines are indented again.)
    lines = [line.strip() for line in earlier.splitlines()]
    assert [line.strip() for line in summary.splitlines()][: len(lines)] == lines
    assert "src/x_" in summary  # and new content still fills the rest


def test_summaries_of_summaries_keep_the_oldest_facts() -> None:
    text = summarize_extractive(one_call("Bash", {"command": "mix deps.get"}, DEPS), 300)
    for round_ in range(5):  # fold it into a new summary with fresh noise, again and again
        pair = BodyPair.summarization(text)
        fresh = [
            Message.ai("", ToolCall(id=f"r{round_}", name="Bash", arguments='{"command": "make"}')),
            Message.tool(f"r{round_}", "Bash", f"build {round_}: 12 files in 3 s\n" * 40),
        ]
        text = summarize_extractive(
            summary_request([], [pair.ai_message, *pair.tool_messages, *fresh]), 600
        )
    assert "opentelemetry_api 1.5.0" in text
    assert "build 4: 12 files in 3 s" in text


def test_a_text_that_only_looks_like_a_summary_tool_is_still_content() -> None:
    fake = Message(role=Role.AI, parts=(ToolCall(id="f", name="lookalike", arguments="{}"),))
    summary = summarize_extractive(
        summary_request([], [fake, Message.tool("f", "lookalike", "error: disk full on /dev/sda1")])
    )
    assert summary.splitlines()[0] == "lookalike()"


# --- cancellation ---------------------------------------------------------------------


def test_long_work_reaches_checkpoints() -> None:
    output = "\n".join(f"line {i} of src/app_{i}.py:{i}" for i in range(20000))
    prompt = one_call("Bash", {"command": "cat big.log"}, output)
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1
        if calls == 20:
            raise _StoppedError

    with pytest.raises(_StoppedError):
        _summarize(prompt, 2000, check)
    assert calls == 20  # stopped at a checkpoint, long before the end


@pytest.mark.anyio
async def test_a_cancelled_long_summary_returns_to_the_caller() -> None:
    output = "\n".join(f"line {i} of src/app_{i}.py:{i} took {i} ms" for i in range(100_000))
    prompt = one_call("Bash", {"command": "cat big.log"}, output)
    with anyio.CancelScope() as scope:
        scope.cancel()  # already cancelled when the handler starts: it must not finish
        await extractive(1000)(prompt)
    assert scope.cancelled_caught
    with anyio.move_on_after(0.001) as later:
        await extractive(1000)(prompt)
    assert later.cancelled_caught  # cancelled while the worker thread runs


def test_a_line_ending_in_failed_is_an_error() -> None:
    copies = "\n".join(f"copied assets/img_{i}.png to dist/img_{i}.png" for i in range(20))
    output = f"{copies}\nUpload to the release bucket failed.\n"
    summary = summarize_extractive(one_call("Bash", {"command": "./release.sh"}, output), 140)
    assert "Upload to the release bucket failed." in summary


def test_a_file_listing_never_spends_room_on_empty_numbered_lines() -> None:
    listing = "\n".join(
        f"{n:>6}→" + (f"timeout_{n} = {n * 10}" if n % 3 == 0 else "") for n in range(1, 40)
    )
    prompt = one_call("Read", {"file_path": "/srv/app/conf.py"}, listing)
    summary = summarize_extractive(prompt, 200)
    kept = summary.splitlines()[1:]
    assert kept
    assert all(not line.strip().rstrip("→").isdigit() for line in kept)
