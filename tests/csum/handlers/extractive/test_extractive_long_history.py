"""The extractive handler on long histories: an earlier summary folded again keeps its
facts first and gives up its noise, kinds of lines that carry a fact (pins, named
measurements, places in words, one-line JSON records) rank above look-alike noise,
routine log lines and sentences that merely open with "Error" do not pass for errors,
and the call lines of many calls share a quarter of the budget.

Inputs are real outputs (the labelled fidelity set, a real Claude Code session) or
written in the shape real tools print (pytest, pip, uvicorn and docker lines)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.fidelity_items import load_items
from cast import BodyPair, Message, ToolCall
from csum import SUMMARIZED_CONTENT_PREFIX
from csum.handlers import summarize_extractive
from csum.prompt import SummaryRequest, summary_request
from tests.conftest import FIDELITY, needs


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def calls(*outputs: tuple[str, dict[str, object], str]) -> list[Message]:
    """An AI call and its tool result per ``(name, arguments, output)``."""
    messages: list[Message] = []
    for index, (name, args, output) in enumerate(outputs):
        call = ToolCall(id=f"call_{index}", name=name, arguments=json.dumps(args))
        messages += [Message.ai("", call), Message.tool(f"call_{index}", name, output)]
    return messages


def prior(text: str) -> list[Message]:
    """An earlier summary as the Compactor places it (a summarized-content answer)."""
    return [Message.ai(SUMMARIZED_CONTENT_PREFIX + text)]


def fold(summary: str, new: list[Message], max_bytes: int) -> str:
    return summarize_extractive(summary_request([], [*prior(summary), *new]), max_bytes)


EARLIER = "\n".join(
    [
        "bash(pytest tests/test_api.py -q)",
        "  FAILED tests/test_api.py::test_login - AssertionError: expected 200, got 500",
        "  2024-05-02 14:03:11 INFO uvicorn.access GET /health 200 in 4 ms",
        "Do not bump fastapi past 0.110: the auth middleware breaks on 0.111.",
        "The rest of the run looked the same as yesterday and nothing else stood out.",
    ]
)
NEW = calls(
    (
        "bash",
        {"command": "pip install -r requirements.txt"},
        "Collecting httpx\nERROR: Could not find a version that satisfies the requirement "
        "starlette==9.9 (from versions: 0.36.3, 0.37.2)\nERROR: No matching distribution "
        "found for starlette==9.9",
    ),
)


def test_an_earlier_summarys_facts_stay_first_and_its_noise_makes_room() -> None:
    summary = fold(EARLIER, NEW, utf8(EARLIER))
    lines = summary.splitlines()
    failed = lines.index(EARLIER.splitlines()[1])
    constraint = lines.index(EARLIER.splitlines()[3])
    # The facts of the earlier summary lead, in their order, with their call above them.
    assert lines[: constraint + 1] == [
        "bash(pytest tests/test_api.py -q)",
        lines[failed],
        lines[constraint],
    ]
    # Its routine log line and its empty sentence gave their room to the new error.
    assert "uvicorn.access" not in summary
    assert "nothing else stood out" not in summary
    assert "starlette==9.9" in summary
    assert utf8(summary) <= utf8(EARLIER)


def test_with_room_an_earlier_summary_comes_back_whole() -> None:
    summary = fold(EARLIER, NEW, 4 * utf8(EARLIER))
    assert summary.startswith(EARLIER)


def test_the_archive_line_of_an_earlier_summary_is_kept() -> None:
    text = "Read(src/app.py)\n  line one of little worth\n[archived: 3f2a9c0d1e]"
    summary = fold(text, NEW, 120)
    assert "[archived: 3f2a9c0d1e]" in summary


@needs(FIDELITY)
def test_a_long_chain_of_folds_keeps_the_facts_of_every_fold() -> None:
    """Twelve folds of the labelled real outputs with fresh routine noise between them:
    the summary ends up holding the facts, not the noise."""
    items = [item for item in load_items() if item.call_name is not None]
    noise = "\n".join(
        f"2024-05-{day:02d} 10:{day:02d}:00 INFO worker-{day} processed {day * 7} items in {day} ms"
        for day in range(1, 29)
    )
    summary = ""
    for round_ in range(12):
        batch: list[Message] = []
        for index, item in enumerate(items[round_ * 3 : round_ * 3 + 3]):
            call_id = f"r{round_}_{index}"
            name = item.call_name or "tool"
            call = ToolCall(id=call_id, name=name, arguments=item.call_arguments)
            batch += [Message.ai("", call), Message.tool(call_id, name, item.output)]
            batch += calls(("bash", {"command": "tail -n 28 worker.log"}, noise))
        summary = summarize_extractive(
            summary_request([], [*(prior(summary) if summary else []), *batch]), 6000
        )
        assert utf8(summary) <= 6000
    assert summary.count(" INFO worker-") <= 2  # routine lines only fill what is left
    assert "FAILED" in summary or "Error" in summary or "error" in summary


def test_pins_measurements_and_places_in_words_outrank_lookalike_noise() -> None:
    grep = "\n".join(
        f"src/app/module_{i}.py:{i * 7}: return handler(request, session)" for i in range(30)
    )
    facts = [
        "Pinned cryptography==42.0.5 in requirements.txt",
        "api-gateway p99 latency: 412 ms under the 200 req/s load",
        "The failing check is at line 88 of src/app/auth.py.",
    ]
    output = grep + "\n" + "\n".join(facts) + "\n" + grep.replace("module_", "view_")
    summary = summarize_extractive(
        summary_request([], calls(("bash", {"command": "./check.sh"}, output))), 300
    )
    for fact in facts:
        assert fact in summary
    # Of the 60 grep lines, only the output's first ones (which say most) got in.
    assert summary.count("return handler(") <= 2


def test_a_one_line_json_record_keeps_its_keys_without_its_quotes() -> None:
    log = "\n".join(
        [
            "starting worker pool with 4 workers and nothing else to report here",
            '{"level": "warn", "file": "src/app/db.py", "line": 42, "msg": "pool exhausted"}',
            "shutting down worker pool after the batch finished without trouble",
        ]
    )
    summary = summarize_extractive(
        summary_request([], calls(("bash", {"command": "python run.py"}, log))), 120
    )
    assert "level=warn file=src/app/db.py line=42 msg=pool exhausted" in summary


def test_routine_log_lines_earn_nothing_for_their_timings_and_clock() -> None:
    lines = [
        f"2024-05-04 11:{m:02d} INFO test-runner-{m} processed {m * 3} items in {m * 11} ms"
        for m in range(20)
    ]
    lines.insert(11, "WARNING disk /var/lib/postgresql at 91% usage, 2 GiB left")
    summary = summarize_extractive(
        summary_request([], calls(("bash", {"command": "journalctl -u app"}, "\n".join(lines)))),
        150,
    )
    assert "WARNING disk /var/lib/postgresql at 91% usage" in summary
    # The clock's "11:12 INFO test" is no count of tests: no INFO line beat the warning.
    assert summary.count("INFO") <= 1


@needs(FIDELITY)
def test_a_real_migration_log_keeps_what_it_names() -> None:
    """cc-migrate (a real Ecto run): its [info] lines name the migration; only their
    timings go unrewarded."""
    item = next(item for item in load_items() if item.id == "cc-migrate")
    summary = summarize_extractive(item.request(), max(1, item.size // 4))
    assert "20260211203856" in summary


def test_a_sentence_opening_with_error_is_not_an_error() -> None:
    prose = "Error handling lives in the loader module and retries twice before giving up."
    real = "Error response from daemon: Conflict. The container name is already in use."
    filler = "\n".join(f"step {i} of the deploy script ran through as planned" for i in range(20))
    for line, kept in ((prose, False), (real, True)):
        output = f"{filler}\n{line}\n{filler}"
        summary = summarize_extractive(
            summary_request([], calls(("bash", {"command": "./deploy.sh"}, output))), 130
        )
        assert (line in summary) is kept, summary


def test_the_call_lines_of_many_calls_share_a_quarter_of_the_budget() -> None:
    command = "pytest tests/integration/test_checkout_flow.py -k 'card and not slow' -x -q"
    failure = "FAILED tests/integration/test_{}.py::test_pay - KeyError: 'sku'"
    outputs = [("bash", {"command": command}, failure.format(i)) for i in range(20)]
    prompt = summary_request([], calls(*outputs))
    summary = summarize_extractive(prompt, 2000)
    heads = [line for line in summary.splitlines() if line.startswith("bash(")]
    assert heads
    assert all(utf8(head) <= 48 for head in heads)  # 2000 / 4 / 20 calls, at least 48
    # One call alone keeps its whole command line.
    single = summarize_extractive(summary_request([], calls(outputs[0])), 2000)
    assert single.splitlines()[0] == f"bash({command})"


def test_a_cut_call_line_keeps_its_identifiers_before_its_prose() -> None:
    args = {
        "note": "please look this customer up again, they wrote to support twice about it",
        "customer": "cust_88231",
        "order_code": "ZK4Q7P",
    }
    outputs = [("lookup", args, "status=open")] + [
        ("bash", {"command": f"cat notes/{i}.txt"}, "nothing new") for i in range(30)
    ]
    summary = summarize_extractive(summary_request([], calls(*outputs)), 1000)
    head = next(line for line in summary.splitlines() if line.startswith("lookup("))
    assert "cust_88231" in head
    assert "ZK4Q7P" in head


# --- laws -----------------------------------------------------------------------------

LINES = st.sampled_from(
    [
        "FAILED tests/test_api.py::test_login - AssertionError: expected 200, got 500",
        "2024-05-02 14:03:11 INFO uvicorn.access GET /health 200 in 4 ms",
        "Do not bump fastapi past 0.110: the auth middleware breaks on 0.111.",
        "Pinned cryptography==42.0.5 in requirements.txt",
        '{"level": "warn", "file": "src/app/db.py", "line": 42}',
        "src/app/module_3.py:21: return handler(request, session)",
        "commit 4e1f9a2 fix the loader",
        "The run looked the same as yesterday.",
        "Erreur: fichier introuvable — ünïcode ✓",
        "",
    ]
)
OUTPUTS = st.lists(st.lists(LINES, min_size=1, max_size=12).map("\n".join), min_size=1, max_size=6)


def _prompt(summary: str, outputs: list[str]) -> SummaryRequest:
    new = calls(*(("bash", {"command": f"step {i}"}, out) for i, out in enumerate(outputs)))
    return summary_request([], [*(prior(summary) if summary else []), *new])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(OUTPUTS, min_size=1, max_size=4), max_bytes=st.integers(40, 900))
def test_a_summary_folded_again_and_again_never_exceeds_its_bound(
    rounds: list[list[str]], max_bytes: int
) -> None:
    summary = ""
    for outputs in rounds:
        summary = summarize_extractive(_prompt(summary, outputs), max_bytes)
        assert utf8(summary) <= max_bytes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(OUTPUTS, min_size=1, max_size=3), max_bytes=st.integers(200, 1500))
def test_a_summary_summarized_alone_again_comes_back_unchanged(
    rounds: list[list[str]], max_bytes: int
) -> None:
    summary = ""
    for outputs in rounds:
        summary = summarize_extractive(_prompt(summary, outputs), max_bytes)
    pair = BodyPair.summarization(summary)
    for messages in (prior(summary), [pair.ai_message, *pair.tool_messages]):
        again = summarize_extractive(summary_request([], messages), max_bytes)
        assert again == summary


def test_a_call_naming_a_code_keeps_its_line_when_its_result_says_little() -> None:
    """In a long history, a call that names a booking reference or an order code comes
    with its result's best line even when that line is plain."""
    quiet = "request accepted\nthe service answered within the usual time"
    folders = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ]
    outputs: list[tuple[str, dict[str, object], str]] = [
        ("bash", {"command": f"ls {name}"}, f"Checked the {name} folder, nothing new in it.")
        for name in folders
    ]
    outputs.append(("get_reservation_details", {"reservation_id": "JG7FMM"}, quiet))
    summary = summarize_extractive(summary_request([], calls(*outputs)), 300)
    # a lone identifier argument is written without its key
    assert "get_reservation_details(JG7FMM)\n  request accepted" in summary


def test_an_earlier_call_naming_a_code_keeps_its_place() -> None:
    text = "\n".join(
        [
            "get_reservation_details(reservation_id=JG7FMM)",
            "  request accepted",
            "bash(ls docs)",
            "  docs/index.md",
        ]
    )
    summary = fold(text, NEW, 200)
    assert summary.startswith("get_reservation_details(reservation_id=JG7FMM)\n  request accepted")


def test_an_earlier_summary_of_the_users_messages_keeps_its_archive_line_as_it_was() -> None:
    """A QA summary of the user's messages is a user message ending with the line naming
    its archived batch; summarized again, that line stays whole and is not written as
    something the user said (``User: [archived: …]``)."""
    earlier = Message.human(
        "User: Deploy the billing service to staging only, never to production.\n"
        "User: Keep the invoice ids as they are (INV-2024-0042 and the rest).\n"
        "[archived: 3f2a9c0d1e4b5a69 77aa01be23cd45ef]"
    )
    new = Message.human("Now also rotate the API key used by the staging deploy job.")
    prompt = summary_request([earlier, new], [])
    for budget in (200, 300, 400):
        summary = summarize_extractive(prompt, budget)
        assert "[archived: 3f2a9c0d1e4b5a69 77aa01be23cd45ef]" in summary.splitlines(), summary
        assert "User: [archived" not in summary
        # A request cut to its share ends between words.
        assert all(not line.endswith(("staging o…", "rotate th…")) for line in summary.splitlines())
    # With room left at the end, the cut request comes back whole: its constraint too.
    assert "staging only, never to production." in summarize_extractive(prompt, 300)
    # A user message holding only the line (its batch's reference, first) keeps it whole.
    refs = " ".join(f"{n:016x}" for n in range(1, 9))
    alone = summary_request([Message.human(f"[archived: {refs}]"), new], [])
    assert f"[archived: {refs}]" in summarize_extractive(alone, 300).splitlines()
