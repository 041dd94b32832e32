"""How the offline handler saves room under a small budget: a compact call line, no
repeats of what the call already says, no decoration, each diff file named once."""

from __future__ import annotations

import json

from cast import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.prompt import SummaryRequest, summary_request


def one_call(name: str, args: dict[str, object], output: str) -> SummaryRequest:
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(args))
    return summary_request([], [Message.ai("", call), Message.tool("call_1", name, output)])


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def test_a_long_call_keeps_its_identifiers_and_the_keys_of_its_numbers() -> None:
    args = {
        "order_identifier": "ORD7731QX",
        "shipping_priority": 2,
        "replacement_payment_method": "paypal_5521904",
        "express": True,
    }
    output = json.dumps({"order_identifier": "ORD7731QX", "state": "updated", "total": 88.5})
    summary = summarize_extractive(one_call("modify_pending_order_items", args, output), 260)
    call = summary.splitlines()[0]
    assert "ORD7731QX" in call
    assert "paypal_5521904" in call
    assert "shipping_priority=2" in call
    assert "express=true" in call
    assert "order_identifier=" not in call  # an identifier says what it is
    # Without its key in the call line, the result still names the id with its key.
    assert "order_identifier=ORD7731QX" in summary
    assert utf8(summary) <= 260


def test_a_result_does_not_repeat_the_arguments_shown_above_it() -> None:
    record = {"ticket": "OPS-4411", "state": "closed", "assignee": "r.ortega", "priority": "P2"}
    summary = summarize_extractive(
        one_call("close_ticket", {"ticket": "OPS-4411"}, json.dumps(record)), 200
    )
    # A lone argument is written bare: the call's name says what it is.
    assert summary.splitlines()[0] == "close_ticket(OPS-4411)"
    assert summary.count("OPS-4411") == 1
    assert "state=closed" in summary


def test_a_command_keeps_its_program_and_first_arguments() -> None:
    command = (
        "pytest tests/integration/test_checkout_flow.py -x -q --maxfail=1 " + "-k " + "x" * 200
    )
    call = one_call("Bash", {"command": command}, "1 failed, 9 passed")
    summary = summarize_extractive(call, 90)
    # The path that does not fit whole is named by its file, not cut inside.
    assert summary.startswith("Bash(pytest …/test_checkout_flow.py …)")
    assert "1 failed, 9 passed" in summary
    summary = summarize_extractive(call, 120)
    assert summary.startswith("Bash(pytest tests/integration/test_checkout_flow.py …)")


DIFF = """diff --git a/src/shop/cart.py b/src/shop/cart.py
index 3f2a1b9..8c0d4e7 100644
--- a/src/shop/cart.py
+++ b/src/shop/cart.py
@@ -88,7 +88,7 @@ class Cart:
     def total(self) -> Decimal:
         subtotal = sum(line.price * line.quantity for line in self.lines)
-        return subtotal - self.discount
+        return max(Decimal(0), subtotal - self.discount)

     def add(self, item: Item) -> None:
         self.lines.append(CartLine(item))
"""


def test_a_diff_names_its_file_once_and_keeps_the_added_line() -> None:
    summary = summarize_extractive(one_call("bash", {"command": "git diff"}, DIFF), 170)
    assert "+++ b/src/shop/cart.py" in summary
    assert "diff --git" not in summary
    assert "index 3f2a1b9" not in summary
    assert "+ return max(Decimal(0), subtotal - self.discount)" in summary
    assert utf8(summary) <= 170


LOG = "\n".join(
    [
        "09:12:01.114 [info] Starting worker pool size=8",
        *(f"09:12:01.{200 + i} [debug] heartbeat tick {i}" for i in range(30)),
        "09:12:02.731 [error] Job 5521 crashed: ** (KeyError) key :email not found",
        "09:12:02.733 [info] Worker pool stopped after 1.6s",
    ]
)


def test_log_clock_times_and_box_rules_are_dropped_but_error_levels_stay() -> None:
    summary = summarize_extractive(one_call("bash", {"command": "mix run jobs.exs"}, LOG), 180)
    assert "09:12:02.731" not in summary
    assert "[error] Job 5521 crashed: ** (KeyError) key :email not found" in summary
    boxed = "┃ [W] ↗ lib/app/mailer.ex:41:7 unused variable conn\n" * 1 + "Done.\n"
    kept = summarize_extractive(one_call("bash", {"command": "mix credo"}, boxed), 120)
    assert "\n[W] ↗ lib/app/mailer.ex:41:7" in kept  # a call alone: no indent


def test_json_fields_are_chosen_by_what_they_say_and_keep_their_record() -> None:
    order = {
        "order_id": "ORD-55120",
        "created_at": "2023-11-02T08:14:09",
        "state": "shipped",
        "note": "left at the front desk, signed by the concierge on duty that evening",
        "gift_wrap": False,
        "payment_methods": {
            "paypal_88213": {"source": "paypal", "id": "paypal_88213", "amount": 41.5},
        },
        "items": [
            {"sku": "KB-7731", "title": "keyboard", "unit_price": 39.0, "weight_grams": 800},
            {"sku": "CB-1020", "title": "cable", "unit_price": 2.5, "weight_grams": 40},
        ],
    }
    output = json.dumps(order)
    prompt = one_call("get_order", {"order_id": "ORD-55120"}, output)
    summary = summarize_extractive(prompt, 140)
    assert utf8(summary) <= 140
    assert "state=shipped" in summary  # a state word with its key, before timestamps
    assert "created_at" not in summary
    assert "note=" not in summary
    # A record's line starts with its identifier: never a price alone.
    for line in summary.splitlines()[1:]:
        if line.strip().startswith("items["):
            assert "sku=" in line
    # A field that repeats the key its record is filed under is left out.
    wide = summarize_extractive(prompt, 600)
    assert "paypal_88213(amount=41.5)" in wide
    assert "source=paypal" not in wide
    assert "id=paypal_88213" not in wide
    assert "items[0]: sku=KB-7731 title=keyboard unit_price=39.0" in wide


def test_a_command_drops_where_its_error_output_went() -> None:
    prompt = one_call("Bash", {"command": "cargo build --release 2>&1"}, "Finished in 3.2s")
    summary = summarize_extractive(prompt, 200)
    assert summary.splitlines()[0] == "Bash(cargo build --release)"


def test_the_lines_below_a_failed_assertion_are_kept_with_it() -> None:
    noise = "\n".join(f"compiling module_{i} (warm cache, nothing to do)" for i in range(30))
    output = (
        f"{noise}\n"
        "  1) test refund keeps the ledger balanced (LedgerTest)\n"
        "     Assertion with == failed\n"
        "     code:  assert Ledger.total(book) == 0\n"
        "     left:  17\n"
        "     right: 0\n"
        f"{noise.replace('module', 'helper')}\n"
        "Finished in 0.4 seconds\n"
        "40 tests, 1 failure\n"
    )
    summary = summarize_extractive(one_call("Bash", {"command": "mix test"}, output), 260)
    assert "Assertion with == failed" in summary
    assert "left: 17" in summary
    assert "40 tests, 1 failure" in summary


def test_a_better_line_that_nearly_fits_is_cut_rather_than_skipped() -> None:
    error = (
        "error: src/engine/plan.c:88: undeclared identifier 'plan_cost' in plan_select "
        "(first use in this function)"
    )
    output = f"building 41 objects\n{error}\nmake: *** [check] Error 2"
    prompt = one_call("Bash", {"command": "make check"}, output)
    summary = summarize_extractive(prompt, 100)
    assert utf8(summary) <= 100
    assert "src/engine/plan.c:88: undeclared identifier 'plan_cost'" in summary


def test_lines_with_nothing_in_them_only_take_what_is_left() -> None:
    error = (
        "error: src/engine/plan.c:88: undeclared identifier 'plan_cost' in plan_select "
        "(first use in this function); did you mean 'plan_costs'?"
    )
    output = f"Entering the build tree now\nScanning the dependencies now\n{error}"
    summary = summarize_extractive(one_call("Bash", {"command": "make"}, output), 72)
    assert utf8(summary) <= 72
    assert "src/engine/plan.c:88" in summary
