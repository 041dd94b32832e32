"""Command runs in the offline handler: test runners', build tools' and terminal
programs' output made compact (colour codes, banner rules) and kept as it reads (a
verdict with its counts)."""

from __future__ import annotations

import json

from cast import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.handlers._extractive.runs import count_follows, strip_banner, strip_colours
from csum.prompt import messages_to_prompt


def one_call(name: str, args: dict[str, object], output: str) -> str:
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(args))
    return messages_to_prompt([], [Message.ai("", call), Message.tool("call_1", name, output)])


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def assert_kept(command: str, output: str, budget: int, *texts: str) -> str:
    """The summary of one bash call's run within ``budget``, holding each of ``texts``."""
    summary = summarize_extractive(one_call("bash", {"command": command}, output), budget)
    for text in texts:
        assert text in summary, summary
    assert utf8(summary) <= budget
    return summary


PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0
rootdir: /srv/shop
collected 7 items

tests/test_cart.py ......F                                               [100%]

=================================== FAILURES ===================================
_______________________________ test_discount __________________________________
tests/test_cart.py:41: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_discount - assert 90 == 85
========================= 1 failed, 6 passed in 0.31s ==========================
"""

CARGO = """\
   Compiling ledger v0.3.1 (/work/ledger)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.10s
     Running unittests src/lib.rs (target/debug/deps/ledger-9f1c2ab0e3d4c5f6)

running 4 tests
test tests::opens_account ... ok
test tests::rejects_overdraft ... FAILED
test tests::sums_entries ... ok
test tests::parses_amounts ... ok

failures:

---- tests::rejects_overdraft stdout ----
thread 'tests::rejects_overdraft' panicked at src/lib.rs:88:9:
assertion failed: result.is_err()

test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""

CARGO_DOCS = """\
   Doc-tests ledger

running 12 tests
test src/entry.rs - entry::Entry::parse (line 14) ... ok
test src/account.rs - account::Account::open (line 30) ... ok

test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.41s

all doctests ran in 0.52s; merged doctests compilation took 0.40s
"""


def test_banner_rules_are_dropped_and_the_verdict_kept() -> None:
    assert strip_banner("===== 1 failed, 6 passed in 0.31s =====") == "1 failed, 6 passed in 0.31s"
    assert strip_banner("---- tests::rejects_overdraft stdout ----") == (
        "tests::rejects_overdraft stdout"
    )
    assert strip_banner("_____ test_discount _____") == "test_discount"
    # Not a rule: a diff's file line, an arrow, a flag.
    assert strip_banner("--> src/main.rs:4:5") == "--> src/main.rs:4:5"
    assert strip_banner("--fail-under-lines 100") == "--fail-under-lines 100"
    summary = summarize_extractive(one_call("bash", {"command": "pytest -q"}, PYTEST), 130)
    assert "1 failed, 6 passed in 0.31s" in summary
    assert "===" not in summary
    assert utf8(summary) <= 130


def test_colour_codes_are_dropped() -> None:
    coloured = "\x1b[32m[+] key recovered: pub1.pem\x1b[0m\n\x1b[31mfatal: bad padding\x1b[0m\n"
    assert strip_colours(coloured) == "[+] key recovered: pub1.pem\nfatal: bad padding\n"
    summary = summarize_extractive(one_call("bash", {"command": "./attack.py"}, coloured * 3), 200)
    assert "\x1b" not in summary
    assert "fatal: bad padding" in summary


def test_a_verdict_keeps_its_counts_on_its_line() -> None:
    assert count_follows("3 passed; 1 failed; 0 ignored")
    assert not count_follows("The next test opens a socket.")
    for output, verdict, budget in (
        (CARGO, "test result: FAILED. 3 passed; 1 failed", 300),
        (CARGO_DOCS, "test result: ok. 12 passed; 0 failed", 150),
    ):
        summary = summarize_extractive(one_call("bash", {"command": "cargo test"}, output), budget)
        assert any(line.startswith(verdict) for line in summary.splitlines()), summary
        assert utf8(summary) <= budget


EXUNIT = """\
Running ExUnit with seed: 31337, max_cases: 16

warning: variable "rows" is unused (if the variable is not meant to be used, prefix it with _)
  lib/billing/invoice.ex:88: Billing.Invoice.total/1

  1) test refunds a paid invoice (Billing.InvoiceTest)
     test/billing/invoice_test.exs:214
     ** (MatchError) no match of right hand side value: {:error, :already_refunded}
     stacktrace:
       (billing 0.4.0) lib/billing/refunds.ex:41: Billing.Refunds.apply/2
       (billing 0.4.0) lib/billing/ledger.ex:120: Billing.Ledger.post/3
       (ecto 3.11.2) lib/ecto/repo/transaction.ex:18: Ecto.Repo.Transaction.transaction/4
       test/billing/invoice_test.exs:220: (test)

Finished in 2.3 seconds (1.1s async, 1.2s sync)
58 tests, 1 failure
"""

COVERAGE = """\
---------- coverage: platform linux, python 3.11.9-final-0 -----------
Name                         Stmts   Miss  Cover
------------------------------------------------
shop/__init__.py                 4      0   100%
shop/cart.py                   120      6    95%
shop/checkout.py                88      0   100%
shop/discounts.py               57     11    81%
shop/inventory.py              140      0   100%
shop/payments.py                96      2    98%
------------------------------------------------
TOTAL                          505     19    96%

42 passed in 3.10s
"""


def test_a_numbered_failure_header_ranks_with_its_place() -> None:
    from csum.handlers._extractive.runs import is_failure_header

    assert is_failure_header("  1) test refunds a paid invoice (Billing.InvoiceTest)")
    assert is_failure_header("  12) User#refund raises when already refunded")
    assert not is_failure_header("(billing 0.4.0) lib/billing/refunds.ex:41: f/2")
    assert_kept("mix test", EXUNIT, 260, "test/billing/invoice_test.exs:214", "58 tests, 1 failure")


def test_a_tables_total_row_is_kept() -> None:
    from csum.handlers._extractive.runs import is_total_row

    assert is_total_row("TOTAL 505 19 96%")
    assert is_total_row("All files | 85.5 | 80.1 | 90 | 85.5 |")
    assert not is_total_row("Totally fine")
    assert_kept("pytest --cov=shop", COVERAGE, 90, "TOTAL 505 19 96%")


def test_a_lone_call_keeps_its_whole_command_when_it_nearly_fits() -> None:
    command = "python -m pytest tests/test_invoice_totals.py -x"
    output = "\n".join(
        [
            "platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0",
            "rootdir: /srv/shop",
            "collected 9 items",
            "",
            "tests/test_invoice_totals.py .........                          [100%]",
            "",
            "============================== 9 passed in 0.21s ===============================",
        ]
    )
    budget = 95  # the whole call line is 55 bytes: more than half the budget, within 80 %
    summary = summarize_extractive(one_call("bash", {"command": command}, output), budget)
    assert summary.splitlines()[0] == f"bash({command})"
    assert "9 passed in 0.21s" in summary
    assert utf8(summary) <= budget
    # Too long to fit even so: cut to the usual half, as before.
    long_command = command + " --maxfail=1 --durations=10 -p no:cacheprovider"
    summary = summarize_extractive(one_call("bash", {"command": long_command}, output), budget)
    assert utf8(summary.splitlines()[0]) <= budget // 2
    assert "9 passed in 0.21s" in summary


def test_several_calls_share_their_room_as_before() -> None:
    first = ToolCall(id="call_1", name="bash", arguments=json.dumps({"command": "make build"}))
    second = ToolCall(
        id="call_2",
        name="bash",
        arguments=json.dumps({"command": "python -m pytest tests/test_invoice_totals.py -x"}),
    )
    prompt = messages_to_prompt(
        [],
        [
            Message.ai("", first),
            Message.tool("call_1", "bash", "build/shop.whl written"),
            Message.ai("", second),
            Message.tool("call_2", "bash", "9 passed in 0.21s"),
        ],
    )
    summary = summarize_extractive(prompt, 85)
    assert "tests/test_invoice_totals.py -x)" not in summary  # cut to the calls' share
    assert utf8(summary) <= 85


def test_under_a_tiny_budget_the_outcome_outranks_the_call() -> None:
    command = "python3 -c 'from billing.tax import rate; print(rate(\"XX\"))'"
    output = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        "KeyError: 'XX'\n"
    )
    prompt = one_call("bash", {"command": command}, output)
    # Room for the error, not for the call line with it: the error alone.
    summary = summarize_extractive(prompt, 30)
    assert summary.endswith("KeyError: 'XX'")
    assert "bash(" not in summary
    # Room for both: the call line comes first, as always.
    summary = summarize_extractive(prompt, 120)
    assert summary.startswith("bash(")
    assert "KeyError: 'XX'" in summary
    # A weak line (no error, no count) never displaces the call line.
    quiet = one_call("bash", {"command": command}, "reading rates from cache\n")
    assert summarize_extractive(quiet, 30).startswith("bash(")


def test_zero_counts_of_secondary_outcomes_are_dropped() -> None:
    from csum.handlers._extractive.runs import drop_zero_counts

    line = "test result: ok. 31 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; x"
    assert drop_zero_counts(line) == "test result: ok. 31 passed; 0 failed; x"
    assert drop_zero_counts("Failed: 1, Passed: 40, Skipped: 0, Total: 41") == (
        "Failed: 1, Passed: 40, Total: 41"
    )
    # Non-zero counts, and zero failures, are what the run says: kept.
    assert drop_zero_counts("3 passed; 0 failed; 2 ignored") == "3 passed; 0 failed; 2 ignored"
    output = "\n".join(
        [
            "   Compiling ledger v0.3.1 (/work/ledger)",
            "     Running unittests src/lib.rs (target/debug/deps/ledger-9f1c2ab0e3d4c5f6)",
            "running 31 tests",
            *(f"test tests::case_{n:02d} ... ok" for n in range(31)),
            "test result: ok. 31 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out;"
            " finished in 0.40s",
            "   Doc-tests ledger",
            "running 6 tests",
            *(f"test src/entry.rs - entry::parse_{n} (line {10 * n + 4}) ... ok" for n in range(6)),
            "test result: ok. 6 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out;"
            " finished in 0.22s",
        ]
    )
    assert_kept(
        "cargo test",
        output,
        230,
        "test result: ok. 31 passed; 0 failed; finished in 0.40s",
        "test result: ok. 6 passed; 0 failed; finished in 0.22s",
    )


def test_the_last_line_of_a_run_says_where_it_ended() -> None:
    output = "\n".join(
        ["Connecting to 10.0.4.12:5432 ...", "waiting for the replica to catch up"]
        + [f"attempt {n}: lag 3 s" for n in range(1, 24)]
        + ["attempt 24: lag 0 s", "replica ready"]
    )
    assert_kept("./wait_replica.sh", output, 150, "attempt 24: lag 0 s")


def test_only_consecutive_lines_differing_in_numbers_make_a_run() -> None:
    from csum.handlers._extractive.runs import favour_run_ends
    from csum.handlers._extractive.weights import WEIGHTS

    class Row:
        def __init__(self, text: str) -> None:
            self.text = text
            self.score = 0.0

    rows = [Row(t) for t in ("step 1", "step 2", "step 3", "done", "step 4", "step 5")]
    favour_run_ends(rows)
    assert [row.score for row in rows] == [0.0, 0.0, WEIGHTS["run_end"], 0.0, 0.0, 0.0]
    same = [Row("retrying") for _ in range(4)]  # no number: a repeat, not a run
    favour_run_ends(same)
    assert all(row.score == 0.0 for row in same)


def test_a_cd_prefix_gives_way_before_the_command_is_cut() -> None:
    from csum.handlers._extractive.runs import fit_command

    command = "cd ~/projects/shop/assets && npm install --save-dev happy-dom"
    assert fit_command(command, 80) == command
    assert fit_command(command, 50) == "cd …/assets && npm install --save-dev happy-dom"
    assert fit_command(command, 40) == "npm install --save-dev happy-dom"
    assert fit_command("npm install --save-dev happy-dom", 10) == (
        "npm install --save-dev happy-dom"  # no cd: left to the usual cut
    )
    long = "cd /home/ana/projects/shop/assets && npm install --save-dev happy-dom 2>&1 | tail -5"
    summary = summarize_extractive(
        one_call("bash", {"command": long}, "added 41 packages in 3s\n"), 80
    )
    assert summary.splitlines()[0] == "bash(npm install --save-dev happy-dom)"
    assert "added 41 packages in 3s" in summary


def test_a_recipes_echoed_command_is_kept() -> None:
    from csum.handlers._extractive.runs import echoes_command

    assert echoes_command("cargo clippy --all-targets -- -D warnings", 0)
    assert echoes_command("+ pytest -q --maxfail=1", 1)
    assert not echoes_command("cargo clippy --all-targets", 7)  # not an echo
    assert not echoes_command("Checking shop v0.2.0 (/srv/shop)", 0)
    output = "\n".join(
        [
            "cargo clippy --all-targets -- -D warnings",
            "    Checking serde v1.0.203",
            "    Checking tokio v1.38.0",
            "    Checking hyper v1.3.1",
            "    Checking shop v0.2.0 (/srv/shop)",
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 14.02s",
        ]
    )
    assert_kept("just lint", output, 140, "cargo clippy --all-targets -- -D warnings")


def test_a_refusal_in_a_programs_own_words_is_an_outcome() -> None:
    from csum.handlers._extractive.runs import is_refusal

    assert is_refusal("Password incorrect, try again")
    assert is_refusal("HTTP/1.1 401 Unauthorized")
    assert not is_refusal("Welcome to the build host")
    output = "\n".join(
        [
            "Trying 10.0.7.21...",
            "Connected to build-07.lan.",
            "Escape character is '^]'.",
            "Debian GNU/Linux 12",
            "build-07 login: deploy",
            "Password:",
            "Password incorrect, try again",
            "build-07 login:",
            "Connection closed by foreign host.",
        ]
    )
    assert_kept("telnet build-07.lan", output, 90, "Password incorrect, try again")
    # In code, the word is no outcome: a file listing's line does not rank up for it.
    prompt = one_call(
        "read_file",
        {"path": "src/auth.py"},
        "\n".join(f"{n:>4}\tdef check_{n}(token):" for n in range(1, 30))
        + '\n  30\t    raise ValueError("invalid token")',
    )
    assert "invalid token" not in summarize_extractive(prompt, 60)


def test_a_whole_call_line_gives_way_to_its_cut_before_the_outcome_drops_it() -> None:
    command = "mix test test/billing/invoices/rendering/pdf_layout_test.exs --seed 0"
    prompt = one_call("bash", {"command": command}, "3 tests, 0 failures\n")
    whole = f"bash({command})"  # 75 bytes: within 80 % of the budgets below
    # One byte short of the whole call line with the count (19 bytes and a line
    # break): the cut, not no call line.
    budget = utf8(whole) + 19
    summary = summarize_extractive(prompt, budget)
    first, second = summary.splitlines()
    assert first.startswith("bash(mix test")
    assert "…" in first
    assert second == "3 tests, 0 failures"
    assert utf8(summary) <= budget
    # One byte more: both whole.
    assert summarize_extractive(prompt, budget + 1) == f"{whole}\n3 tests, 0 failures"
