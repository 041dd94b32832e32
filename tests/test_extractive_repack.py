"""The offline handler renders, then packs again with the bytes rendering saved: a path's
directories said once by consecutive lines (grep, linter and compiler output) leave
room for more lines, and the summary still never exceeds its budget."""

from __future__ import annotations

import regex

from test_extractive_long_history import calls, fold
from test_extractive_room import shell

# The directories a line's leading path is in, as the handler reads them.
_LEADING_DIRECTORIES = regex.compile(r"(?:[\w.@+-]{1,100}+/){1,16}+(?=[\w.@+-])")

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


def test_a_directory_said_by_the_line_above_is_written_once() -> None:
    lines = shell("rg -n RetryPolicy services/", MATCHES, 400).splitlines()
    assert lines[1].startswith("services/payments/gateway/adapters/stripe_client.py:12:")
    assert all(line.startswith("…/stripe_client.py:") for line in lines[2:])


def test_only_the_same_directories_are_shared() -> None:
    """``…/`` stands for exactly the directories of the path above: a file in a deeper
    or another directory is written whole."""
    lines = shell("mypy src/billing", MYPY, 2000).splitlines()
    assert lines[1:6] == [
        'src/billing/invoices/rendering/pdf_layout.py:41: error: Argument 1 to "draw_table" '
        'has incompatible type "list[str]"; expected "Table" [arg-type]',
        '…/pdf_layout.py:88: error: Item "None" of "Font | None" has no attribute "size" '
        "[union-attr]",
        '…/fonts.py:17: error: Module "reportlab" has no attribute "ttf" [attr-defined]',
        'src/billing/invoices/models.py:9: error: Name "Decimal" is not defined [name-defined]',
        "src/billing/invoices/rendering/charts/bars.py:30: error: Missing return statement "
        "[return]",
    ]


def test_the_bytes_saved_hold_more_lines() -> None:
    """At 320 bytes the call line and three whole matches (about 100 bytes each) are what
    the cost model sees room for; rendered with the directory said once they take less,
    so packing again keeps a fourth."""
    summary = shell("rg -n RetryPolicy services/", MATCHES, 320)
    assert summary.count("stripe_client.py:") >= 4


def test_every_budget_is_kept() -> None:
    for budget in range(40, 700, 7):
        shell("rg -n RetryPolicy services/", MATCHES, budget)
        shell("mypy src/billing", MYPY, budget)


def test_a_summary_summarized_again_keeps_every_path_whole() -> None:
    """``…/`` stands for the directories of the row above: when an earlier summary is
    packed again and that row is left out, the path is written whole, never ``…/`` under
    a row of another directory or none (the directories would be lost)."""
    checked = 0
    for command, output in (("rg -n RetryPolicy services/", MATCHES), ("mypy src/billing", MYPY)):
        earlier = shell(command, output, 700)
        assert "\n…/" in earlier or "\n  …/" in earlier
        for budget in range(60, 500, 10):
            new = calls(("bash", {"command": "ls"}, "README.md\nsetup.py"))
            rows = fold(earlier, new, budget).splitlines()
            for index, row in enumerate(rows):
                if not row.lstrip().startswith("…/"):
                    continue
                checked += 1
                above = index - 1
                while above >= 0 and rows[above].lstrip().startswith("…/"):
                    above -= 1
                assert above >= 0, rows
                directories = _LEADING_DIRECTORIES.match(rows[above].lstrip())
                assert directories is not None, (budget, rows)
                path = directories.group() + row.lstrip()[2:].split(":")[0]
                assert path in output, (budget, rows)
    assert checked > 20
