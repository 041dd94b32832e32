"""An agent's answers in the offline handler's summaries (csum/handlers/_extractive/prose.py):
a long sentence in a compact form (the clauses that carry its identifiers, numbers,
causes and constraints), so that more of them fit a small budget; code fences left out;
links written plainly; no line cut to words that say nothing; a summary that fills its
budget exactly kept whole when summarized again."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import csum.handlers._extractive.collect as collect_module
import csum.handlers._extractive.reading as reading_module
from cast.messages import Message, ToolCall
from csum import SUMMARIZED_CONTENT_PREFIX
from csum.handlers import summarize_extractive
from csum.handlers._extractive.features import _score
from csum.handlers._extractive.prose import compact_prose, is_fence, plain_links
from csum.handlers._extractive.text import _ELLIPSIS as ELLIPSIS
from csum.prompt import SummaryRequest, summary_request

REPORT = """Done. The **billing-v2** migration is finished and pushed. Here's what changed:

- `InvoiceRenderer` — Jinja-based renderer that turns an invoice into PDF bytes using the \
shared layout templates from the design system
- `InvoiceController` — `POST /api/invoices/:id/render` endpoint that renders the invoice \
on demand and caches the bytes for a while
- Added 7 new renderer tests and 3 controller tests, all passing on the CI runners of both \
the staging and the production branches
"""


def compact(line: str) -> str:
    return compact_prose(line)


def answer_summary(text: str, budget: int) -> str:
    summary = summarize_extractive(summary_request([], [Message.ai(text)]), budget)
    assert len(summary.encode("utf-8")) <= budget
    return summary


def test_a_list_item_keeps_its_name_and_endpoint_without_the_description() -> None:
    line = (
        "`InvoiceController` — `POST /api/invoices/:id/render` endpoint that renders the "
        "invoice on demand and caches the bytes for a while"
    )
    assert compact(line) == "`InvoiceController` — `POST /api/invoices/:id/render`…"


def test_a_count_keeps_the_words_it_counts() -> None:
    line = "Added 7 new renderer tests, all of them passing on the runners of both branches"
    assert compact(line).startswith("Added 7 new renderer tests")


def test_a_cause_clause_is_kept_whole() -> None:
    line = (
        "The crash comes from src/billing/invoice.py:212, where a missing currency falls "
        "through to None and the total is never computed for the customer"
    )
    assert compact(line) == line


def test_a_constraint_stays_a_sentence() -> None:
    line = (
        "Do not use `requests` in the worker, the sandbox it runs in has no outbound "
        "network at all, and the retries would only hide it"
    )
    assert compact(line).startswith("Do not use `requests` in the worker")


def test_a_short_predicate_after_a_path_is_kept() -> None:
    line = "The file src/app/models/user.py has been updated, as were the fixtures it loads"
    assert compact(line).startswith("The file src/app/models/user.py has been updated")


def test_a_line_with_nothing_to_keep_is_left_as_it_is() -> None:
    line = "Let me know if you would like me to go further, or to look at something else"
    assert compact(line) == line


def test_marks_inside_backticks_and_parentheses_split_no_clause() -> None:
    line = "Used `Result<T, E>` (one per call, as the spec says) instead of raising for `parse()`"
    assert compact(line) == line


@given(
    st.lists(
        st.sampled_from(
            [
                "the",
                "cache",
                "is",
                "warm",
                "a",
                "b",
                "HAT041",
                "7",
                "tests",
                "src/a.py:3",
                "`fn()`",
                "where",
                "not",
                ",",
                ";",
                ":",
                "—",
                "-",
                "and",
                "v1.2.3",
            ]
        ),
        max_size=40,
    )
)
def test_compacting_is_never_longer_and_keeps_every_number(words: list[str]) -> None:
    line = " ".join(words)
    out = compact(line)
    assert len(out) <= len(line)
    if out != line:
        assert ELLIPSIS in out
    for word in line.split(" "):
        if any(c.isdigit() for c in word):
            assert word.strip(",;:") in out


def test_a_small_budget_keeps_more_of_an_answers_identifiers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = answer_summary(REPORT, 180)
    for kept in ("billing-v2", "`InvoiceRenderer`", "`POST /api/invoices/:id/render`"):
        assert kept in summary
    assert "7 new renderer tests and 3 controller tests" in summary
    # Whole lines (the compact form off) fit fewer of them in the same room.
    monkeypatch.setattr(reading_module, "_COMPACT_SHARE", 1e9)
    whole = answer_summary(REPORT, 180)
    assert "`InvoiceRenderer`" not in whole
    assert "billing-v2" not in whole


def test_an_answer_less_than_twice_the_budget_is_not_compacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = len(REPORT.encode("utf-8")) // 2 + 10
    summary = answer_summary(REPORT, budget)
    monkeypatch.setattr(reading_module, "_COMPACT_SHARE", 1e9)
    assert summary == answer_summary(REPORT, budget)


def test_room_left_takes_compacted_lines_back_to_their_whole_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(collect_module, "_COMPACT_RATIO", 0.1)  # compact at any budget
    summary = answer_summary(REPORT, 250)
    assert "`POST /api/invoices/:id/render` endpoint that renders" in summary
    assert len(summary.encode("utf-8")) >= 250 - 16


def test_an_error_in_an_answer_keeps_its_whole_message() -> None:
    answer = (
        "Running it again gives TypeError: unsupported operand type(s) for +: 'int' and "
        "'str', raised at the line that adds the fee to the total of the basket.\n\n" + REPORT * 3
    )
    summary = answer_summary(answer, 300)
    assert "TypeError: unsupported operand type(s) for +: 'int' and 'str', raised" in summary


PLAN = """Here is the plan for the change you asked for:

- Outbound Flight (JFK to LHR on 2024-06-02): move to Premium Economy on flight BA178.
- Return Flight (LHR to JFK on 2024-06-09): stay in Economy on flight BA117.
- Checked Bags: add 1 checked bag.
- Fare Difference Total: $212
- Change fee: none, as the fare allows changes.

Shall I go ahead with it, and which card should I charge?"""


@pytest.mark.parametrize("budget", range(20, 160, 2))
def test_no_line_is_cut_to_words_that_say_nothing(budget: int) -> None:
    # "Fare Difference…" without its "$212" names a value it no longer holds.
    summary = answer_summary(PLAN, budget)
    for line in summary.splitlines():
        if line.endswith(ELLIPSIS):
            assert _score(line, listing=False, diff=False) > 0, line


def test_a_code_blocks_fences_are_left_out() -> None:
    answer = (
        "The fix guards the division, so a zero divisor now raises ValueError instead of "
        "ZeroDivisionError deep in the report code:\n\n```python\ndef ratio(a: float, b: "
        "float) -> float:\n    if b == 0:\n        raise ValueError('b must not be 0')\n"
        "    return a / b\n```\n\nThe 12 tests in tests/test_ratio.py pass.\n"
    ) + "Nothing else in the module needed a change, as far as I could see. " * 8
    summary = answer_summary(answer, 250)
    assert "```" not in summary
    assert "tests/test_ratio.py" in summary


def test_a_link_is_written_as_its_url_without_tracking() -> None:
    assert (
        plain_links("([reuters.com](https://www.reuters.com/world/a-b-2025?utm_source=openai))")
        == "(https://www.reuters.com/world/a-b-2025)"
    )
    assert (
        plain_links("see [the release notes](https://example.org/notes?v=3&utm_medium=chat)")
        == "see the release notes (https://example.org/notes?v=3)"
    )
    assert (
        plain_links("[docs](https://example.org/p?utm_source=x&id=7)")
        == "docs (https://example.org/p?id=7)"
    )
    assert plain_links("no link [here] (at all)") == "no link [here] (at all)"


def test_fences_are_recognised() -> None:
    for fence in ("```", "```python", "~~~ "):
        assert is_fence(fence)
    for line in ("``` not a fence", "`code`"):
        assert not is_fence(line)


def history_prompt(summary: str, outputs: list[str]) -> SummaryRequest:
    """An earlier summary (as the Compactor places it), then one shell call per output."""
    messages = [Message.ai(SUMMARIZED_CONTENT_PREFIX + summary)] if summary else []
    for index, output in enumerate(outputs):
        call = ToolCall(id=f"c{index}", name="bash", arguments=f'{{"command": "step {index}"}}')
        messages += [Message.ai("", call), Message.tool(call.id, "bash", output)]
    return summary_request([], messages)


def test_a_summary_filling_its_budget_summarized_alone_again_comes_back_unchanged() -> None:
    # Its last line has no newline: a budget of exactly its size holds it all, and the
    # packing counts it so (one byte more, and the second summary cut a line).
    rounds = [
        [
            "FAILED tests/test_orders.py::test_refund - AssertionError: expected 201, got 409",
            "Pinned httpx==0.27.2 in requirements.txt\n"
            '{"level": "warn", "file": "src/shop/orders.py", "line": 88}',
        ],
        ["Never run the migration twice: it drops the audit table."],
    ]
    for budget in (220, 221, 228, 240):
        summary = ""
        for outputs in rounds:
            summary = summarize_extractive(history_prompt(summary, outputs), budget)
        again = summarize_extractive(history_prompt(summary, []), budget)
        assert again == summary


def test_bold_underscores_dropped_and_dunder_names_kept() -> None:
    answer = (
        "I moved the check into `Config.__post_init__` and exported it from "
        "pkg/__init__.py; __the old loader is gone__ now."
    )
    summary = answer_summary(answer, 4000)
    assert "__post_init__" in summary
    assert "pkg/__init__.py" in summary
    assert "the old loader is gone now" in summary
