"""Two-line records in tool output: a message with its place on the next line (a
compiler error and its ``-->``, a linter finding, a failing test's header and its
``path:line``) is one unit for the offline handler, written place first."""

from __future__ import annotations

from tests.csum.handlers.extractive.test_extractive_room import shell

CARGO = """\
   Compiling tokenizer v0.4.2 (/work/tokenizer)
warning: unused import: `std::fmt`
 --> src/parser/ast.rs:3:5
  |
3 | use std::fmt;
  |     ^^^^^^^^
error[E0308]: mismatched types
  --> src/parser/lexer.rs:88:17
   |
88 |         let n: u32 = token.len();
   |                ---   ^^^^^^^^^^^ expected `u32`, found `usize`
   |                |
   |                expected due to this
error: could not compile `tokenizer` (lib) due to 1 previous error; 1 warning emitted"""

LINTER = """\
Checking 64 source files ...

  Code Readability

┃ [R] ↘ Modules should have a @moduledoc tag.
┃       lib/shop/cart/line_item.ex:1:11 #(Shop.Cart.LineItem)
┃ [R] ↘ Pipe chain should start with a raw value.
┃       lib/shop/pricing/rules.ex:48:7 #(Shop.Pricing.Rules.apply)
┃ [R] ↘ Prefer using an implicit `try` rather than explicit `try`.
┃       lib/shop/payments/gateway.ex:131:5 #(Shop.Payments.Gateway.charge)

Analysis took 0.4 seconds (0.04s to load, 0.3s running 61 checks on 64 files)
212 mods/funs, found 3 code readability issues."""


def test_a_message_and_its_place_below_are_one_line_place_first() -> None:
    summary = shell("cargo build", CARGO, 2000)
    assert "\nsrc/parser/ast.rs:3:5 warning: unused import: `std::fmt`\n" in summary
    assert "lexer.rs:88:17 error[E0308]: mismatched types\n" in summary


def test_a_place_is_never_kept_without_its_message() -> None:
    """... unless the room left at the end is filled with the pair cut short, from the
    budget at which a line's window (a third of it) holds both."""
    findings = {
        "line_item.ex:1:11": "@moduledoc",
        "rules.ex:48:7": "Pipe chain",
        "gateway.ex:131:5": "implicit",
    }
    kept = set()
    for budget in range(420, 900, 9):
        for line in shell("mix credo --strict", LINTER, budget).splitlines():
            for place, message in findings.items():
                if place in line:
                    assert message in line or line.endswith("…"), (budget, line)
                    kept.add(place)
    assert kept == set(findings)


def test_places_one_after_another_stay_lines_of_their_own() -> None:
    """grep output (a place on every line) has no message line to join."""
    matches = "\n".join(
        f"src/shop/pricing/rules_{n}.ex:{n * 7}:  discount = apply(rule, cart)" for n in range(6)
    )
    summary = shell("grep -rn apply src/", matches, 2000)
    assert summary.count("\n") == 6


def test_a_message_too_long_to_share_a_window_keeps_its_own_line() -> None:
    header = "  1) test " + "rejects a token that expired long ago " * 6 + "(Auth.TokenTest)"
    output = f"{header}\n     test/auth/token_test.exs:57\n     Assertion with == failed"
    summary = shell("mix test", output, 2000)
    assert "\ntest/auth/token_test.exs:57\n" in summary


def test_a_place_with_a_message_of_its_own_is_not_joined_to_the_line_above() -> None:
    """A grep match (``path:line: words``) after a line without a place (a log line, a
    sentence) is a record of its own: joined, it would lend the line above its place
    and make one long unit of two."""
    output = (
        "2024-05-13 13:54:02 INFO worker-5 processed 313 items in 207 ms\n"
        "src/shop/pricing/rules.ex:48:  discount = apply(rule, cart)\n"
        "Searched 64 files in 0.2 seconds."
    )
    summary = shell("grep -rn apply src/", output, 2000)
    lines = summary.splitlines()
    assert "src/shop/pricing/rules.ex:48: discount = apply(rule, cart)" in lines
    assert "worker-5 processed 313 items in 207 ms" in lines
