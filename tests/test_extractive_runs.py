"""Command runs in the offline handler: test runners', build tools' and terminal
programs' output made compact (colour codes, banner rules) and kept as it reads (a
verdict with its counts)."""

from __future__ import annotations

import json

from cast import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.handlers._extractive_runs import count_follows, strip_banner, strip_colours
from csum.prompt import messages_to_prompt


def one_call(name: str, args: dict[str, object], output: str) -> str:
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(args))
    return messages_to_prompt([], [Message.ai("", call), Message.tool("call_1", name, output)])


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


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
