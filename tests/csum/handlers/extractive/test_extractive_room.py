"""How the offline handler spends a small budget on what a result says: a call line that
names what ran in as few bytes as it can, no indent when a call is alone, and no word
cut in the middle to fill the room."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cast.codecs import claude_code
from cast.messages import Message, ToolCall, ToolResult
from csum.handlers import summarize_extractive
from csum.prompt import SummaryRequest, summary_request
from tests.conftest import CLAUDE_CODE, corpus_files

SESSIONS = corpus_files(CLAUDE_CODE)


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def one_call(call: ToolCall, output: str) -> SummaryRequest:
    return summary_request([], [Message.ai("", call), Message.tool(call.id, call.name, output)])


def shell(command: str, output: str, budget: int) -> str:
    """The summary of one shell call and its output, checked against the budget."""
    call = ToolCall(id="c", name="Bash", arguments=json.dumps({"command": command}))
    summary = summarize_extractive(one_call(call, output), budget)
    assert utf8(summary) <= budget
    return summary


def corpus_calls() -> Iterator[tuple[ToolCall, str]]:
    """Every call of the Claude Code sessions with its result's text."""
    for path in SESSIONS:
        messages = claude_code.decode(json.loads(path.read_text("utf-8")))
        calls: dict[str, ToolCall] = {}
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolCall):
                    calls[part.id] = part
                elif isinstance(part, ToolResult) and part.tool_call_id in calls:
                    content = part.content if isinstance(part.content, str) else ""
                    yield calls.pop(part.tool_call_id), content


def command(call: ToolCall) -> str:
    value = json.loads(call.arguments or "{}")
    return value.get("command", "") if isinstance(value, dict) else ""


needs_corpus = pytest.mark.skipif(not SESSIONS, reason="shared corpus not found")


@needs_corpus
def test_a_last_stage_that_only_shortens_the_output_is_left_out() -> None:
    limited = [
        (call, out)
        for call, out in corpus_calls()
        if call.name == "Bash" and "\n" not in command(call) and "| head -" in command(call)
    ]
    assert len(limited) >= 5
    for call, output in limited:
        lines = summarize_extractive(one_call(call, output), 400).splitlines()
        ran = command(call).split(" | head -")[0].replace(" 2>&1", "").replace(" 2>/dev/null", "")
        ran = ran.replace("/home/USER/", "~/")  # a home directory is written ~/
        assert f"Bash({' '.join(ran.split())})" in lines, (lines, command(call))
        assert not any(line.startswith("Bash(") and "| head" in line for line in lines)
    # A stage that filters (grep) says what was looked for: it stays.
    grep = ToolCall(
        id="g",
        name="Bash",
        arguments=json.dumps({"command": "mix test | grep -v warning | tail -n 30"}),
    )
    assert summarize_extractive(one_call(grep, "5 tests, 0 failures"), 200).startswith(
        "Bash(mix test | grep -v warning)\n"
    )


@needs_corpus
def test_a_commit_message_is_named_by_its_subject_line() -> None:
    commits = [
        (call, out)
        for call, out in corpus_calls()
        if call.name == "Bash" and "git commit" in command(call) and "\n" in command(call)
    ]
    assert len(commits) >= 3
    for call, output in commits:
        text = command(call)
        summary = summarize_extractive(one_call(call, output), 600)
        assert utf8(summary) <= 600
        line = next(line for line in summary.splitlines() if line.startswith("Bash(git "))
        assert line.endswith(("…)", "…"))
        assert "Co-Authored-By" not in line  # the message's body is not the call
        # The subject is on the line after a heredoc's start (-m "$(cat <<'EOF').
        first, second = (ln.strip() for ln in text.splitlines()[:2])
        subject = second if first.endswith("EOF'") else first
        if len(first) < 100:
            assert subject[:30] in line, (line, text[:200])


def test_a_lone_argument_is_written_without_its_key_and_not_repeated() -> None:
    call = ToolCall(id="c", name="get_order_details", arguments='{"order_id": "#W5918442"}')
    record = {"order_id": "#W5918442", "status": "delivered", "user_id": "sofia_rossi_8776"}
    summary = summarize_extractive(one_call(call, json.dumps(record)), 200)
    assert summary.splitlines()[0] == "get_order_details(#W5918442)"
    assert summary.count("W5918442") == 1
    assert "status=delivered" in summary
    # Prose keeps its key: it does not say what it is.
    prose = ToolCall(id="p", name="think", arguments='{"thought": "check the refund first"}')
    assert summarize_extractive(one_call(prose, "ok"), 200).startswith(
        "think(thought=check the refund first)"
    )


def test_a_call_alone_has_no_indent_and_a_call_among_others_does() -> None:
    call = ToolCall(id="c", name="Bash", arguments='{"command": "mix test"}')
    alone = summarize_extractive(one_call(call, "13 tests, 1 failure"), 200)
    assert alone == "Bash(mix test)\n13 tests, 1 failure"
    chain = [
        Message.ai("", call),
        Message.tool("c", "Bash", "13 tests, 1 failure"),
        Message.ai("One test fails: the sync duplicates messages."),
    ]
    both = summarize_extractive(summary_request([], chain), 200)
    assert "Bash(mix test)\n  13 tests, 1 failure\nOne test fails" in both


DIALYZER = """\
lib/shop/services/pricing/rules.ex:112:pattern_match
lib/shop/services/pricing/rules.ex:70:13:pattern_match
lib/shop/services/pricing/rules.ex:115:9:pattern_match
lib/shop/services/pricing/rules/discount_builder.ex:40:22:call_without_opaque
lib/shop/services/pricing/rules/discount_builder.ex:92:24:call_without_opaque
lib/shop_web/live/cart_live.ex:25:guard_fail
"""


def test_the_room_left_is_not_filled_with_half_a_path() -> None:
    for budget in range(60, 200, 7):
        summary = shell("mix dialyzer", DIALYZER, budget)
        directory = ""
        for line in summary.splitlines()[1:]:
            # Every path kept is whole: a cut one would name a file that does not exist.
            path = line.split(":", 1)[0].rstrip("…")
            if path.startswith("…/"):  # in the directory of the path above
                path = directory + path[1:]
            directory = path.rsplit("/", 1)[0]
            assert any(row.startswith(path + ":") for row in DIALYZER.splitlines()), line


def test_a_warning_is_not_an_error() -> None:
    output = (
        "Warning: could not open the cache directory /root/.cache/pip; caching is off\n"
        "Downloading model weights\n"
        "Saved checkpoint to runs/exp7/ckpt_0042.pt\n"
        "Finished\n"
    )
    summary = shell("python train.py", output, 70)
    assert "Saved checkpoint to runs/exp7/ckpt_0042.pt" in summary
    assert "cache directory" not in summary
    # An error is still one.
    failed = output.replace("Warning: could not", "error: could not")
    assert "error: could not open the cache directory" in shell("python train.py", failed, 100)


PROGRESS = """\
[x] Opening connection to db.example.net on port 5432
[x] Opening connection to db.example.net on port 5432: Trying 10.0.0.7
[x] Opening connection to db.example.net on port 5432: Resolving
[+] Opening connection to db.example.net on port 5432: Done
[*] Closed connection to db.example.net port 5432
session token 7f3c9a2e0b accepted for user_4411
"""


def test_a_progress_line_printed_again_counts_as_a_repeat() -> None:
    for budget in (130, 160):
        summary = shell("python login.py", PROGRESS, budget)
        assert summary.count("Opening connection") == 1, summary
        assert "session token 7f3c9a2e0b accepted for user_4411" in summary


def test_markup_alone_is_not_kept() -> None:
    output = (
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
        '  File "/srv/app/tests/test_cart.py", line 12, in <module>\n'
        "    total(cart)\n"
        "ZeroDivisionError: division by zero\n</output>\n"
    )
    call = ToolCall(id="c", name="bash", arguments='{"command": "python tests/test_cart.py"}')
    for budget in range(60, 240, 10):
        summary = summarize_extractive(one_call(call, output), budget)
        assert "</output>" not in summary
        assert "<output>" not in summary


def test_a_paragraph_keeps_the_sentence_that_matters() -> None:
    answer = (
        "I looked through the whole module and the configuration around it, and most of it "
        "reads fine. The crash comes from src/billing/invoice.py:212, where a missing "
        "currency falls through to None. I have not changed anything yet; tell me whether "
        "you want the default to be EUR or an error."
    )
    summary = summarize_extractive(summary_request([], [Message.ai(answer)]), 150)
    assert utf8(summary) <= 150
    assert summary.startswith("The crash comes from src/billing/invoice.py:212, where")
    assert "I looked through" not in summary


HUNK = """\
diff --git a/src/shop/pricing.py b/src/shop/pricing.py
index 3f2a1b9..8c0d4e7 100644
--- a/src/shop/pricing.py
+++ b/src/shop/pricing.py
@@ -140,7 +140,8 @@ def apply_discounts(cart: "Cart", rules: list["Rule"], today: date) -> Decimal:
     subtotal = cart.subtotal()
     for rule in rules:
-        subtotal -= rule.amount(subtotal)
+        if rule.applies(today or date.today()):
+            subtotal -= rule.amount(subtotal)
     return max(Decimal(0), subtotal)
"""


def test_a_hunk_header_keeps_its_place_and_the_name_around_it() -> None:
    summary = shell("git diff", HUNK, 110)
    assert "\n@@ -140,7 +140,8 @@ def apply_discounts(…" in summary
    assert "+++ b/src/shop/pricing.py" in summary
    assert "rules: list" not in summary  # the signature's rest is not where


def test_the_records_of_a_list_share_one_line_and_its_path() -> None:
    order = {
        "order_id": "#W2378156",
        "status": "pending",
        "items": [
            {"item_id": f"{4_982_943_000 + n}", "name": name, "price": 50 + 7 * n}
            for n, name in enumerate(["Laptop", "Keyboard", "Desk Lamp", "Monitor"])
        ],
    }
    call = ToolCall(id="c", name="get_order_details", arguments='{"order_id": "#W2378156"}')
    prompt = one_call(call, json.dumps(order))
    for budget in range(60, 400, 9):
        summary = summarize_extractive(prompt, budget)
        assert utf8(summary) <= budget
        lines = summary.splitlines()
        listed = [line for line in lines if line.startswith("items[")]
        assert len(listed) <= 1  # one line for the list
        assert not any(line.startswith("[") for line in lines)
    wide = summarize_extractive(prompt, 400)
    assert "items[0]: item_id=4982943000 name=Laptop price=50; [1]: item_id=4982943001" in wide


@needs_corpus
def test_a_home_directory_is_written_as_a_tilde() -> None:
    reads = [
        (call, out)
        for call, out in corpus_calls()
        if call.name == "Read" and '"/home/' in call.arguments and out
    ]
    assert len(reads) >= 5
    for call, output in reads[:20]:
        path = json.loads(call.arguments)["file_path"]
        summary = summarize_extractive(one_call(call, output), 300)
        home = "/".join(path.split("/")[:3]) + "/"
        call_line = next(line for line in summary.splitlines() if line.startswith("Read("))
        assert path.replace(home, "~/", 1) in call_line
        assert "/home/" not in summary


CONFIG_LOG = """\
loaded settings from conf/base.yaml and conf/prod.yaml
checking the settings
merged conf/base.yaml into conf/prod.yaml
applying the settings
wrote cache to var/cache/app.db and var/run/app.pid
ready
"""


def test_a_name_said_again_counts_less() -> None:
    summary = shell("./serve --check", CONFIG_LOG, 130)
    # The line naming new files outranks the one naming the same files again.
    assert "loaded settings from conf/base.yaml and conf/prod.yaml" in summary
    assert "wrote cache to var/cache/app.db and var/run/app.pid" in summary
    assert "merged" not in summary
