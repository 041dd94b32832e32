"""Command runs in the offline handler: test runners', build tools' and terminal
programs' output made compact (colour codes, banner rules) and kept as it reads (a
verdict with its counts)."""

from __future__ import annotations

import json

from cast import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.handlers._extractive.code_tools import count_follows, strip_banner, strip_colours
from csum.prompt import SummaryRequest, summary_request


def one_call(name: str, args: dict[str, object], output: str) -> SummaryRequest:
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(args))
    return summary_request([], [Message.ai("", call), Message.tool("call_1", name, output)])


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
    prompt = summary_request(
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
    from csum.handlers._extractive.code_tools import drop_zero_counts

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


def test_a_cd_prefix_gives_way_before_the_command_is_cut() -> None:
    from csum.handlers._extractive.code_tools import fit_command

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
