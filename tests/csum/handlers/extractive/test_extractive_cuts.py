"""Where the offline handler cuts a call line's command: between words, never inside a
path, an id or a version; a path that does not fit whole is named by its file and
nearest directories (``…/jobs/sync_test.exs``), as its tail says more than its head."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import regex

from cast.messages import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.prompt import summary_request
from tests.csum.handlers.extractive.test_extractive_room import (
    command,
    corpus_calls,
    needs_corpus,
    one_call,
)


def call_line(cmd: str, budget: int) -> str:
    call = ToolCall(id="c", name="Bash", arguments=json.dumps({"command": cmd}))
    summary = summarize_extractive(one_call(call, "3 tests, 0 failures"), budget)
    assert len(summary.encode("utf-8")) <= budget
    return summary.split("\n", 1)[0]


def whole_or_path_tail(line: str, cmd: str) -> list[str]:
    """The words of a call line that are neither a word of ``cmd``, an ellipsis, nor
    ``…/`` and the end of a path of ``cmd``."""
    inner = line[len("Bash(") : -1] if line.endswith(")") else line[len("Bash(") :]
    words = set(cmd.split(" "))
    return [
        word
        for word in inner.split(" ")
        if word not in words
        and word != "…"
        and not (word.startswith("…/") and any(w.endswith(word[1:]) for w in words))
    ]


def test_a_long_test_path_keeps_its_file() -> None:
    cmd = "mix test test/billing/invoices/rendering/pdf_layout_test.exs --seed 0"
    # The whole line (74 bytes) takes more than 80 % of 90 bytes: cut to its half.
    assert call_line(cmd, 90) == "Bash(mix test …/pdf_layout_test.exs …)"
    assert call_line(cmd, 160) == f"Bash({cmd})"


def test_an_id_is_whole_or_left_out() -> None:
    cmd = "bd update billing-7f3.12 --status in_progress --assignee ops"
    lines = [call_line(cmd, budget) for budget in range(40, 140, 3)]
    for line in lines:
        assert "billing-7f3.12" in line or "billing-" not in line, line
    assert "Bash(bd update billing-7f3.12 …)" in lines


@pytest.mark.parametrize("budget", [64, 100, 160, 240])
@needs_corpus
def test_no_real_command_is_cut_inside_a_word(budget: int) -> None:
    cut = 0
    for call, _ in corpus_calls():
        cmd = command(call)
        if call.name != "Bash" or not cmd or any(c in cmd.strip() for c in ("\n", "|", "2>", "&>")):
            continue  # shortened first: several lines, pipelines, redirections
        line = call_line(cmd, budget)
        cut += "…" in line
        home = regex.sub(r"/(?:home|Users)/[^/\s\"']+/", "~/", " ".join(cmd.split()))
        assert not whole_or_path_tail(line, home), line
    assert cut > 0


WARNING = (
    "/opt/build/workspace/ci-runners/shared-cache/venvs/py311-analytics-nightly/lib/python3.11/"
    "site-packages/pandas/core/frame.py:1203: FutureWarning: DataFrame.applymap has been "
    "deprecated. Use DataFrame.map instead."
)


def test_a_long_line_shows_the_file_not_its_leading_directories() -> None:
    """A line too long for its window writes a long path by its last directories and
    file, so the window holds the file, its line and what is said of it."""
    output = f"Loading 12 notebooks\n{WARNING}\nwrote report.html (12 KiB)"
    kept = 0
    for budget in range(150, 400, 10):
        line = next(
            (ln for ln in call_line_and_result("python run.py", output, budget) if "frame" in ln),
            "",
        )
        if line:
            assert line.startswith("…/"), line
            assert "/pandas/core/frame.py:1203: FutureWarning" in line, line
            kept += 1
    assert kept > 10


def call_line_and_result(cmd: str, output: str, budget: int) -> list[str]:
    call = ToolCall(id="c", name="Bash", arguments=json.dumps({"command": cmd}))
    summary = summarize_extractive(one_call(call, output), budget)
    assert len(summary.encode("utf-8")) <= budget
    return summary.splitlines()


def _word_runs_at_cuts(summary: str) -> Iterator[tuple[str, str]]:
    """(word run just before, just after) each ``…`` of a summary."""
    for match in regex.finditer(r"(\w*)…(\w*)", summary):
        yield match.group(1), match.group(2)


@pytest.mark.parametrize("budget", [150, 300, 900])
@needs_corpus
def test_a_long_output_line_is_windowed_between_words(budget: int) -> None:
    """A result's line longer than its window is cut at a space near the window's ends,
    or at a mark between words: no half word, code or path is shown (``…mnants``,
    ``BA…``), unless a single token is longer than a quarter of the window (a hash)."""
    cuts = 0
    for call, output in corpus_calls():
        if len(output) < 2 * budget or max(map(len, output.splitlines()), default=0) < 240:
            continue  # no line long enough to be windowed
        prompt = one_call(call, output)
        said = f"{prompt}\n{command(call)}"  # the command as the call line shows it
        summary = summarize_extractive(prompt, budget)
        if summary.startswith(f"{call.name}("):
            summary = summary.partition("\n")[2]  # the call line is cut by other rules
        for before, after in _word_runs_at_cuts(summary):
            cuts += 1
            if 0 < len(before) < _QUARTER_OF_THE_LEAST_WINDOW:
                assert regex.search(rf"{regex.escape(before)}(?!\w)", said), (before, summary)
            if 0 < len(after) < _QUARTER_OF_THE_LEAST_WINDOW:
                assert regex.search(rf"(?<!\w){regex.escape(after)}", said), (after, summary)
    assert cuts > 20


_QUARTER_OF_THE_LEAST_WINDOW = 20  # a line's window is never below 80 characters


@pytest.mark.parametrize("budget", [90, 120, 166])
def test_a_version_is_never_cut_at_its_dots(budget: int) -> None:
    """A window whose end falls inside a version, at one of its dots, moves to the space
    before it: ``12…`` or ``12.40…`` of ``12.40.7`` would read as another version."""
    notes = "\n".join(f"Other note {i}: nothing else changed here today." for i in range(12))
    shown = 0
    for pad in range(60, 82):  # the version straddles the 80-character window's end
        head = ("the newest stable build of the parser we ship is " * 3)[:pad].rstrip()
        text = f"{head} 12.40.7 and it fixes the cache for every user of the store\n\n{notes}"
        summary = summarize_extractive(summary_request([], [Message.ai(text)]), budget)
        assert len(summary.encode("utf-8")) <= budget
        assert not regex.search(r"(?<![\w.])12(?:\.40)?+\.?…", summary), (pad, summary)
        shown += "12.40.7" in summary
    assert shown  # where the window holds it whole, it is shown
