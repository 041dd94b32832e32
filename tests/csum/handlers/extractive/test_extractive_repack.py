"""The offline handler renders, then packs again with the bytes rendering saved (a call
alone in the summary writes its result lines without their indent), and the summary
still never exceeds its budget. Every row names its path whole: a row may be packed
apart from the row above when the summary is summarized again, so it never leans on it
for its directories."""

from __future__ import annotations

from csum.handlers import summarize_extractive
from csum.prompt import summary_request
from tests.csum.handlers.extractive.test_extractive_long_history import calls, fold, utf8
from tests.csum.handlers.extractive.test_extractive_room import shell

MATCHES = "\n".join(
    f"services/payments/gateway/adapters/stripe_client.py:{line}:"
    f"    retry_policy = RetryPolicy(max_attempts={attempts})"
    for line, attempts in ((12, 3), (48, 5), (97, 2), (133, 4), (210, 6), (244, 1))
)
MYPY = """\
src/billing/invoices/rendering/pdf_layout.py:41: error: Argument 1 to "draw_table" has \
incompatible type "list[str]"; expected "Table"  [arg-type]
src/billing/invoices/rendering/pdf_layout.py:88: error: Item "None" of "Font | None" has \
no attribute "size"  [union-attr]
src/billing/invoices/rendering/fonts.py:17: error: Module "reportlab" has no attribute \
"ttf"  [attr-defined]
src/billing/invoices/models.py:9: error: Name "Decimal" is not defined  [name-defined]
src/billing/invoices/rendering/charts/bars.py:30: error: Missing return statement  [return]
Found 5 errors in 4 files (checked 42 source files)"""


def _paths(summary: str) -> list[str]:
    """The path each row of a summary starts with (rows holding ``.py:``)."""
    return [row.lstrip().split(":")[0] for row in summary.splitlines()[1:] if ".py:" in row]


def _named(path: str, output: str) -> bool:
    """Whether ``path`` names a file of ``output`` by itself: whole, or by its last
    directories when a long line leaves no room for the rest (``…/adapters/a.py``)."""
    return f"{path.removeprefix('…')}:" in output


def test_every_row_names_its_path_whole() -> None:
    """Whole when the row fits its window (from 420 bytes the window holds the longest
    row here); by its last directories at most when it does not."""
    for command, output in (("rg -n RetryPolicy services/", MATCHES), ("mypy src/billing", MYPY)):
        for budget in range(120, 2000, 20):
            paths = _paths(shell(command, output, budget))
            assert all(_named(path, output) for path in paths), (budget, paths)
            if budget >= 420:
                assert all(f"\n{path}:" in f"\n{output}" for path in paths), (budget, paths)


def test_a_summary_summarized_again_keeps_every_path_whole() -> None:
    """An earlier summary's rows are packed again one by one: each still names its path
    whole, whichever rows above it were left out."""
    checked = 0
    for command, output in (("rg -n RetryPolicy services/", MATCHES), ("mypy src/billing", MYPY)):
        earlier = shell(command, output, 700)
        for budget in range(60, 500, 10):
            new = calls(("bash", {"command": "ls"}, "README.md\nsetup.py"))
            paths = _paths(fold(earlier, new, budget))
            checked += len(paths)
            assert all(f"\n{path}:" in f"\n{output}" for path in paths), (budget, paths)
    assert checked > 20


def test_the_bytes_saved_hold_more_lines() -> None:
    """Two calls, of which only the first says anything: its result lines are costed
    with their indent, and written without it (the call is alone in the summary); the
    bytes saved that way take one more match when packing again."""
    matches = "\n".join(
        f"services/payments/gateway/adapters/stripe_client.py:{n}:"
        f"    retry_policy = RetryPolicy(max_attempts={n % 7})"
        for n in range(10, 400, 13)
    )
    prompt = summary_request(
        [],
        calls(
            ("bash", {"command": "rg -n RetryPolicy services/"}, matches),
            ("bash", {"command": "true"}, "ok\nok\nok"),
        ),
    )
    summary = summarize_extractive(prompt, 600)
    assert utf8(summary) <= 600
    rows = summary.splitlines()
    assert rows[0] == "bash(rg -n RetryPolicy services/)"
    assert all(row.startswith("services/payments/") for row in rows[1:])  # no indent
    # Costed with their indent, five matches fit in 600 bytes; written without, six.
    assert len(rows) - 1 == 6


def test_every_budget_is_kept() -> None:
    for budget in range(40, 700, 7):
        shell("rg -n RetryPolicy services/", MATCHES, budget)
        shell("mypy src/billing", MYPY, budget)
