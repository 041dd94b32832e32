"""Code and repository tools' output in the offline handler: ``git status`` (its state
lines and entries, not its advice), Claude Code's ``<system-reminder>`` notes (not the
tool's output), dependencies declared with a version requirement in manifests, and
an edit's new lines (not those it replaced)."""

from __future__ import annotations

import json

import pytest

from cast.messages import ToolCall
from csum.handlers import summarize_extractive
from csum.handlers._extractive.code_tools import (
    code_lines,
    declares_dependency,
    without_echo,
)
from tests.csum.handlers.extractive.test_extractive_room import one_call, shell

# git status, long format, of a repository with staged, unstaged and untracked changes.
GIT_STATUS = """\
On branch feature/rate-limit
Your branch is ahead of 'origin/feature/rate-limit' by 2 commits.
  (use "git push" to publish your local commits)

Changes to be committed:
  (use "git restore --staged <file>..." to unstage)
\tnew file:   api/limits/bucket.go

Changes not staged for commit:
  (use "git add <file>..." to update what will be committed)
  (use "git restore <file>..." to discard changes in working directory)
\tmodified:   api/server.go
\tmodified:   api/server_test.go
\tdeleted:    docs/old-limits.md

Untracked files:
  (use "git add <file>..." to include in what will be committed)
\tapi/limits/bucket_test.go
\tscratch.txt
\tvendor/

"""


def test_git_status_keeps_the_branch_and_entries_not_the_advice() -> None:
    summary = shell("git status", GIT_STATUS, 300)
    assert "On branch feature/rate-limit" in summary
    assert "new file: api/limits/bucket.go" in summary
    assert "modified: api/server.go" in summary
    assert "(use" not in summary


def test_git_status_untracked_paths_share_their_header_line() -> None:
    summary = shell("git status", GIT_STATUS, 320)
    line = next(row for row in summary.splitlines() if row.startswith("Untracked files:"))
    assert "api/limits/bucket_test.go" in line
    assert "scratch.txt" in line
    # Each path is written once, on its header's line, not on a line of its own.
    assert summary.count("scratch.txt") == 1


def test_git_hints_are_left_out() -> None:
    output = (
        "Initialized empty Git repository in /srv/demo/.git/\n"
        "hint: Using 'master' as the name for the initial branch. This default branch name\n"
        "hint: is subject to change. To configure the initial branch name to use in all\n"
        "hint: \n"
        "hint: \tgit config --global init.defaultBranch <name>\n"
        "On branch master\n\nNo commits yet\n\nChanges to be committed:\n"
        '  (use "git rm --cached <file>..." to unstage)\n\tnew file:   README.md\n'
    )
    lines, _ = code_lines(output.splitlines())
    assert not any(line.startswith("hint:") for line in lines)
    assert "new file: README.md" in lines
    summary = shell("git init && git add README.md && git status", output, 400)
    assert "hint" not in summary
    assert "default branch" not in summary
    assert "No commits yet" in summary


def test_output_that_is_not_git_status_is_left_as_it_is() -> None:
    lines = ["Changes:", "\tsrc/a.py", "hint: run with --verbose"]
    assert code_lines(lines) == (lines, {})


# Claude Code appends a note to the model after a file's content.
REMINDER = (
    "\n<system-reminder>\nWhenever you read a file, consider whether it is safe. You MUST "
    "not run it. Never change it without being asked to.\n</system-reminder>\n"
)
TOML = (
    '     1→[package]\n     2→name = "ledger_sync"\n     3→version = "0.4.2"\n'
    '     4→edition = "2021"\n     5→\n     6→[dependencies]\n     7→tokio = "1.37"\n'
)


def test_a_system_reminder_is_not_the_tools_output() -> None:
    call = ToolCall(id="r", name="Read", arguments=json.dumps({"file_path": "/w/Cargo.toml"}))
    summary = summarize_extractive(one_call(call, TOML + REMINDER), 160)
    assert "MUST" not in summary
    assert "Never" not in summary
    assert '4→edition = "2021"' in summary
    assert '7→tokio = "1.37"' in summary


def test_an_unclosed_reminder_drops_only_what_follows_it() -> None:
    lines = ["1→a = 1", "<system-reminder>", "note"]
    assert code_lines(lines)[0] == ["1→a = 1"]


@pytest.mark.parametrize(
    "line",
    [
        '      {:phoenix_live_view, "~> 1.0"},',  # mix.exs
        '    "react": "^18.2.0",',  # package.json
        '    "typescript": ">=5.4 <6",',
        'serde = { version = "1.0", features = ["derive"] }',  # Cargo.toml
        'tokio = "1.37"',
        'gem "rails", "~> 7.1"',  # Gemfile
    ],
)
def test_a_dependency_with_its_version_requirement_is_recognised(line: str) -> None:
    assert declares_dependency(line)


@pytest.mark.parametrize(
    "line",
    ["def deps do", '    "name": "ledger",', "  timeout: 5000,", '  label: "v2 beta"'],
)
def test_lines_without_a_version_requirement_are_not_dependencies(line: str) -> None:
    assert not declares_dependency(line)


MIX_EXS = """\
defmodule Ledger.MixProject do
  use Mix.Project

  def project do
    [app: :ledger, version: "0.3.0", elixir: "~> 1.17", deps: deps()]
  end

  def application do
    [extra_applications: [:logger], mod: {Ledger.Application, []}]
  end

  defp deps do
    [
      {:ecto_sql, "~> 3.11"},
      {:postgrex, ">= 0.0.0"},
      {:jason, "~> 1.4"},
      {:req, "~> 0.5"}
    ]
  end
end
"""


def test_a_manifest_keeps_its_pinned_dependencies_before_its_definitions() -> None:
    listing = "".join(f"{n:6}→{row}\n" for n, row in enumerate(MIX_EXS.splitlines(), 1))
    call = ToolCall(id="m", name="Read", arguments=json.dumps({"file_path": "/w/mix.exs"}))
    summary = summarize_extractive(one_call(call, listing), 200)
    assert '{:ecto_sql, "~> 3.11"}' in summary
    assert '{:jason, "~> 1.4"}' in summary
    assert "def application do" not in summary


def test_a_commented_out_dependency_is_no_dependency() -> None:
    assert not declares_dependency('    43→      # {:dep_from_hexpm, "~> 0.3.0"},')
    assert not declares_dependency('  // "left-pad": "^1.3.0",')
    assert declares_dependency('    12→      {:req, "~> 0.5"},')


PACKAGE_JSON = """\
{
  "name": "ledger-web",
  "private": true,
  "scripts": {
    "dev": "vite",
    "build": "tsc -b && vite build",
    "lint": "eslint .",
    "preview": "vite preview"
  },
  "dependencies": {
    "@tanstack/react-query": "^5.51.1",
    "axios": "^1.7.2",
    "date-fns": "^3.6.0",
    "react": "^18.3.1",
    "react-dom": "^18.3.1",
    "react-router-dom": "^6.25.1",
    "zod": "^3.23.8"
  }
}
"""


def test_a_manifests_dependencies_are_not_repeats_of_one_another() -> None:
    # They all look alike ("name": "^x.y.z"); each names another package, so the last
    # is worth as much as the first.
    listing = "".join(f"{n:6}→{row}\n" for n, row in enumerate(PACKAGE_JSON.splitlines(), 1))
    call = ToolCall(id="p", name="Read", arguments=json.dumps({"file_path": "/w/package.json"}))
    summary = summarize_extractive(one_call(call, listing), 200)
    assert '"zod": "^3.23.8"' in summary
    assert '"react": "^18.3.1"' in summary
    assert "preview" not in summary


def test_an_edit_flag_at_its_default_is_not_in_the_call_line() -> None:
    arguments = {
        "file_path": "/srv/ledger/app/models.py",
        "old_string": "    amount = 0\n    paid = False\n",
        "new_string": "    amount: Decimal = Decimal(0)\n    paid: bool = False\n",
        "replace_all": False,
    }
    call = ToolCall(id="e", name="Edit", arguments=json.dumps(arguments))
    output = "The file /srv/ledger/app/models.py has been updated."
    summary = summarize_extractive(one_call(call, output), 200)
    assert summary.splitlines()[0] == "Edit(/srv/ledger/app/models.py)"


# ls -F to a terminal: names in columns, directories marked "/".
LS_COLUMNS = (
    "CHANGELOG.md\tDockerfile\t  README.md\tdocs/\t\tledger/\t   pyproject.toml\n"
    "LICENSE\t\tMakefile\t  conftest.py\tmigrations/\tmanage.py  tests/\n"
)
LS_ONE_PER_LINE = """\
CHANGELOG.md
CODE_OF_CONDUCT.md
CONTRIBUTING.md
LICENSE
NOTICE
README.md
SECURITY.md
__init__.py
docs/
ledger/
manage.py
tests/
"""


def test_names_in_columns_are_split_one_a_line() -> None:
    lines, marks = code_lines(LS_COLUMNS.splitlines())
    assert "migrations/" in lines
    assert "pyproject.toml" in lines
    assert len(lines) == 12
    assert all(mark.distinct for mark in marks.values())


def test_a_listing_ranks_directories_and_code_above_prose() -> None:
    _, marks = code_lines(LS_ONE_PER_LINE.splitlines())
    assert marks["ledger/"].bonus > marks["README.md"].bonus
    assert marks["manage.py"].bonus > marks["LICENSE"].bonus
    assert marks["manage.py"].bonus > marks["__init__.py"].bonus
    # The alphabet puts the project's prose first: its place says nothing.
    summary = shell("ls -F", LS_ONE_PER_LINE, 40)
    assert "ledger/" in summary
    assert "tests/" in summary
    assert "CODE_OF_CONDUCT.md" not in summary


def test_a_listing_keeps_a_line_that_is_no_name_as_it_is() -> None:
    lines = ["a.py", "b.py", "c.py", "d.py", "ls: cannot open directory 'e': Permission denied"]
    listed, marks = code_lines(lines)
    assert listed == lines
    assert lines[-1] not in marks


def test_a_table_is_no_listing() -> None:
    table = ["NAME      READY   STATUS    AGE", "api-7d9   1/1     Running   5d"]
    table += ["web-5c2   0/1     Pending   2m"]
    assert code_lines(table) == (table, {})


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo DONE && git diff --cached", "git diff --cached"),
        ("echo '--- unit tests' ; pytest -q tests/unit", "pytest -q tests/unit"),
        ('echo "step 2" && make build', "make build"),
        ("echo $PATH", "echo $PATH"),  # the echo is all that ran
        ("echo hello > out.txt && cat out.txt", "echo hello > out.txt && cat out.txt"),
        ("git log && echo DONE", "git log && echo DONE"),
    ],
)
def test_a_first_stage_that_only_echoes_is_left_out(command: str, expected: str) -> None:
    assert without_echo(command) == expected


def test_the_call_line_names_what_ran_after_an_echo() -> None:
    diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n"
    summary = shell("echo SUBMITTING_THE_PATCH_NOW && git add -A && git diff --cached", diff, 120)
    assert summary.splitlines()[0] == "Bash(git add -A && git diff --cached)"


# Ghidra's listing of a small function (its address, bytes, mnemonic and operands).
DISASSEMBLY = """\
                             check_pin:
.text:00401136   55                   PUSH        RBP
.text:00401137   4889e5               MOV         RBP,RSP
.text:0040113a   4883ec20             SUB         RSP,0x20
.text:0040113e   48897de8             MOV         qword ptr [RBP + local_20],RDI
.text:00401142   488b45e8             MOV         RAX,qword ptr [RBP + local_20]
.text:00401146   4889c7               MOV         RDI,RAX
.text:00401149   e8e2feffff           CALL        <EXTERNAL>::strlen    ; size_t strlen(char *)
.text:0040114e   4883f804             CMP         RAX,0x4
.text:00401152   7507                 JNZ         LAB_0040115b
.text:00401154   b801000000           MOV         EAX,0x1
.text:00401159   eb05                 JMP         LAB_00401160
.text:0040115b   b800000000           MOV         EAX,0x0
.text:00401160   c9                   LEAVE
.text:00401161   c3                   RET
"""


def test_a_disassembly_is_read_without_its_instruction_bytes() -> None:
    lines, _ = code_lines(DISASSEMBLY.splitlines())
    assert ".text:00401136 PUSH        RBP" in lines
    assert not any("e8e2feffff" in line for line in lines)
    assert "e8e2feffff" not in shell("disassemble check_pin", DISASSEMBLY, 150)


def numbered(text: str) -> str:
    """``text`` as a file read shows it (Claude Code's Read: ``     3→line``)."""
    return "".join(f"{n:6}→{row}\n" for n, row in enumerate(text.splitlines(), 1))
