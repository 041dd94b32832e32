"""The compact form of an agent's answer lines (csum/handlers/_extractive_prose.py): a
long sentence by the clauses that carry its identifiers, numbers, causes and
constraints, so that more of them fit a small budget."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import csum.handlers._extractive as extractive_module
from cast.messages import Message
from csum.handlers import summarize_extractive
from csum.handlers._extractive import _identifier_spans
from csum.handlers._extractive_prose import ELLIPSIS, compact_prose
from csum.prompt import messages_to_prompt

REPORT = """Done. The **billing-v2** migration is finished and pushed. Here's what changed:

- `InvoiceRenderer` — Jinja-based renderer that turns an invoice into PDF bytes using the \
shared layout templates from the design system
- `InvoiceController` — `POST /api/invoices/:id/render` endpoint that renders the invoice \
on demand and caches the bytes for a while
- Added 7 new renderer tests and 3 controller tests, all passing on the CI runners of both \
the staging and the production branches
"""


def compact(line: str) -> str:
    return compact_prose(line, _identifier_spans)


def answer_summary(text: str, budget: int) -> str:
    summary = summarize_extractive(messages_to_prompt([], [Message.ai(text)]), budget)
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
            ["the", "cache", "is", "warm", "a", "b", "HAT041", "7", "tests", "src/a.py:3",
             "`fn()`", "where", "not", ",", ";", ":", "—", "-", "and", "v1.2.3"]
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
    monkeypatch.setattr(extractive_module, "_COMPACT_SHARE", 1e9)
    whole = answer_summary(REPORT, 180)
    assert "`InvoiceRenderer`" not in whole
    assert "billing-v2" not in whole


def test_an_answer_less_than_twice_the_budget_is_not_compacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = len(REPORT.encode("utf-8")) // 2 + 10
    summary = answer_summary(REPORT, budget)
    monkeypatch.setattr(extractive_module, "_COMPACT_SHARE", 1e9)
    assert summary == answer_summary(REPORT, budget)


def test_room_left_takes_compacted_lines_back_to_their_whole_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(extractive_module, "_COMPACT_RATIO", 0.1)  # compact at any budget
    summary = answer_summary(REPORT, 250)
    assert "`POST /api/invoices/:id/render` endpoint that renders" in summary
    assert len(summary.encode("utf-8")) >= 250 - 16


def test_an_error_in_an_answer_keeps_its_whole_message() -> None:
    answer = (
        "Running it again gives TypeError: unsupported operand type(s) for +: 'int' and "
        "'str', raised at the line that adds the fee to the total of the basket.\n\n"
        + REPORT * 3
    )
    summary = answer_summary(answer, 300)
    assert "TypeError: unsupported operand type(s) for +: 'int' and 'str', raised" in summary
