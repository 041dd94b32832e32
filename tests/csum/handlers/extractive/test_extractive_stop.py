"""The offline handler stops when the next line adds nothing salient (issue 36): a
log's repeated lines do not fill its budget, since every later turn pays for them."""

from __future__ import annotations

from cast import Message, ToolCall
from cast.internals import utf8_len
from csum.handlers import summarize_extractive
from csum.prompt import SummaryRequest, summary_request

ERROR = (
    "2026-11-20 10:03:57 ERROR worker-3 batch 237 failed: ConnectionRefusedError: "
    "[Errno 111] Connection refused (db.internal:5432)"
)


def _log(error_at: int = 237, lines: int = 400) -> str:
    rows = [
        f"2026-11-20 10:{i // 60:02d}:{i % 60:02d} INFO worker-3 processed batch {i} ok"
        for i in range(lines)
    ]
    rows[error_at] = ERROR
    return "\n".join(rows)


def _one_result(output: str) -> SummaryRequest:
    ai = [
        Message.ai("", ToolCall(id="c1", name="bash", arguments='{"command": "python import.py"}')),
        Message.tool("c1", "bash", output),
    ]
    return summary_request([], ai)


def test_a_log_with_one_error_gives_the_error_not_its_filler() -> None:
    summary = summarize_extractive(_one_result(_log()), 1200)
    assert "ConnectionRefusedError" in summary
    assert "db.internal:5432" in summary
    processed = [line for line in summary.splitlines() if "processed batch" in line]
    assert len(processed) <= 1  # what the log is, once; not eleven lines of it
    assert utf8_len(summary) < 400


def test_the_error_is_kept_wherever_it_is_in_the_log() -> None:
    for where in (0, 57, 399):
        summary = summarize_extractive(_one_result(_log(where)), 1200)
        assert "Connection refused" in summary, where


def test_lines_of_one_shape_that_are_few_stay_a_table() -> None:
    # six replicas differing in their number and lag are facts, not a log's repetition
    rows = "\n".join(f"Replica db-{i} lags the primary by {3 * i} seconds." for i in range(6))
    summary = summarize_extractive(_one_result(rows), 1200)
    assert all(f"db-{i} " in summary for i in range(6)), summary
