"""The format-free position prior of the offline handler: the line opening a section
(after a blank line or a heading) is worth a little more than the lines going on with
it, whatever program printed the text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from cast import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.handlers._extractive.reading import opens_section
from csum.prompt import SummaryRequest, summary_request


def one_call(name: str, args: dict[str, object], output: str) -> SummaryRequest:
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(args))
    return summary_request([], [Message.ai("", call), Message.tool("call_1", name, output)])


# A status report of no known format: two groups of near-identical lines.
REPLICAS = [
    "Replica db-3 lags the primary by 14 seconds.",
    "Replica db-4 lags the primary by 11 seconds.",
    "Replica db-5 lags the primary by 12 seconds.",
    "Replica db-6 lags the primary by 13 seconds.",
    "Replica db-7 lags the primary by 10 seconds.",
    "Replica db-8 lags the primary by 12 seconds.",
]


def test_a_blank_line_or_a_heading_opens_a_section() -> None:
    assert opens_section("")
    assert opens_section("   \t")
    assert opens_section("## Failing checks")
    assert not opens_section("Replica db-3 lags the primary by 14 seconds.")
    assert not opens_section("  return total  # sum")


def test_the_line_opening_a_section_is_kept_before_its_neighbours() -> None:
    grouped = "\n".join([*REPLICAS[:3], "", *REPLICAS[3:]])
    summary = summarize_extractive(one_call("check_replicas", {}, grouped), 150)
    assert "db-6" in summary, summary
    assert "db-5" not in summary, summary
    assert len(summary.encode("utf-8")) <= 150


def test_without_the_blank_line_the_earlier_line_is_kept() -> None:
    # The same lines without their section break: the choice above was the break's.
    flat = "\n".join(REPLICAS)
    summary = summarize_extractive(one_call("check_replicas", {}, flat), 150)
    assert "db-5" in summary, summary
    assert "db-6" not in summary, summary


def test_an_answers_paragraph_opens_a_section() -> None:
    answer = (
        "The nightly export ran on four hosts.\n"
        "Host etl-1 wrote 120 files in 14 minutes.\n"
        "Host etl-2 wrote 118 files in 15 minutes.\n"
        "\n"
        "Host etl-3 wrote 121 files in 16 minutes.\n"
        "Host etl-4 wrote 119 files in 13 minutes.\n"
    )
    summary = summarize_extractive(summary_request([], [Message.ai(answer)]), 90)
    assert "Host etl-3 wrote 121 files in 16 minutes." in summary, summary
    assert "etl-2" not in summary, summary
    assert len(summary.encode("utf-8")) <= 90


def test_the_prior_orders_lines_without_overruling_what_they_hold() -> None:
    # An error below the section's first line still comes first.
    output = "\n".join(
        [*REPLICAS[:3], "", REPLICAS[3], "ERROR replica db-7: replication slot is missing"]
    )
    summary = summarize_extractive(one_call("check_replicas", {}, output), 110)
    assert "ERROR replica db-7: replication slot is missing" in summary, summary
    assert "db-6" not in summary, summary


@given(st.lists(st.text(alphabet=" \t#abc1\n", max_size=12), max_size=30))
def test_section_breaks_never_break_the_budget(pieces: list[str]) -> None:
    output = "\n".join(pieces) + "\nDone: 3 files written to out/."
    summary = summarize_extractive(one_call("bash", {"command": "make"}, output), 60)
    assert len(summary.encode("utf-8")) <= 60
