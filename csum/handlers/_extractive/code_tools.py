"""Rules of the extractive handler for code and repository tools' output.

Kept apart from the rest of the package (which calls these hooks) so that each
rule says which real format it reads:

* git's status report (long format): the branch and state lines and each path's entry are
  what the agent needs next; git's ``(use "git add <file>...")`` advice and ``hint:``
  lines are the same in every repository. Entries under a header listing bare paths
  (untracked or ignored files) share one line headed by that header, so each path costs
  only itself and the header says what they are.
* A directory listing's names (``ls``, ``find``, a glob): split out of ``ls``'s columns,
  a directory and a file of code or build configuration above the project's prose and
  package markers, by what they are, not by their place in the alphabet.
* SWE-agent's cursor marks (``<<<<< START CURSOR >>>>>``) are no content.
* Claude Code's ``<system-reminder>`` blocks, which the harness appends to a tool's
  result (a note to the model about the file it read), are not the tool's output.
* A dependency declared with its version requirement in a manifest (``{:ash, "~> 3.0"}``
  in ``mix.exs``, ``"react": "^18.2.0"`` in ``package.json``, ``serde = { version =
  "1.0" }`` in a Rust crate's manifest, ``gem "rails", "~> 7.1"``) is a package pinned to a
  version, as ``numpy==1.26.4`` is.
* A disassembly's instruction bytes repeat its mnemonic.
* A command's first stage that only echoes a fixed text is not what ran.

Every pattern runs on a bounded line (the caller's scan window) with bounded
repetition only.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from csum.handlers._extractive.weights import WEIGHTS

__all__ = [
    "CodeMark",
    "code_lines",
    "declares_dependency",
    "without_echo",
]

# What each rule's lines are worth: the weights named git_status_*, listed_name, focus,
# recipe, disassembly_call and schema_change in :data:`.weights.WEIGHTS`.

# --- git's status report -------------------------------------------------------------------------

# A line git's status report prints first: "On branch main", "HEAD detached at 1a2b3c4", or its
# advice to an entry's header ("  (use "git add <file>..." to include in what ...)").
_STATUS_SIGN = regex.compile(
    r"(?:On[ ]branch[ ]\S{1,200}+|HEAD[ ]detached[ ](?:at|from)[ ]\S{1,200}+)$"
    r"|\s{0,8}+\(use[ ]\"git[ ]"
)
# A section's header: words and a colon at the line's start ("Changes to be committed:").
_STATUS_HEADER = regex.compile(r"[A-Z][a-z]{1,20}+(?:[ ][a-z]{1,20}+){0,6}+:$")
# An entry with its state in lower case words: "\tnew file:   src/a.py", "\tdeleted:    b.py".
_STATUS_ENTRY = regex.compile(
    r"\t(?P<state>[a-z]{3,12}+(?:[ ][a-z]{2,8}+){0,2}+:)[ ]++"
    r"(?P<path>\S.{0,400}+)$"
)
_STATUS_ADVICE = regex.compile(r"\s{0,8}+\(use[ ]\"git[ ][^)]{0,300}+\)$")
_TRAILING_ADVICE = regex.compile(r"[ ]\(use[ ]\"git[ ][^)]{0,300}+\)$")
_GIT_HINT = regex.compile(r"hint:(?:[ ]|$)")
_STATE_LINE = regex.compile(r"\S.{0,160}+")  # unindented, short
_STATE_LINES = 6  # state lines a status report prints at most (branch, upstream, ...)

# --- file viewers -----------------------------------------------------------------------

# SWE-agent's file viewer marks its cursor in the window it shows with lines of their
# own ("<<<<< START CURSOR >>>>>"): a mark, no content.
_CURSOR_MARK = regex.compile(r"<{3,}+[ ]?+(?:START|END)[ ]CURSOR[ ]?+>{3,}+")

# --- directory listings -----------------------------------------------------------------

# A name alone on its line (ls -1, ls -F with its type mark, find, a glob's paths), or
# names in columns (ls to a terminal: two spaces or a tab between them).
_NAME = regex.compile(
    r"(?:~/|\.{1,2}+/|/)?+[\w@+~.,-]{1,200}+(?:/[\w@+~.,-]{1,200}+){0,30}+[*@=|/]?+"
)
_COLUMNS = regex.compile(r"(?:\t|[ ]{2})[\t ]*+")
_LISTING_SHARE = 0.8  # share of an output's lines that are names, for it to be a listing
_FILE_SHARE = 0.5  # ... and share of its names with an extension or a directory's "/"
_EXTENSION = regex.compile(r"\.[A-Za-z]\w{0,7}+[*@=|]?+$")
# What a name's extension says it holds: code or build configuration (what an agent opens
# or runs next), or prose about the project (read once, if ever).
_CODE_EXTENSIONS = frozenset(
    {"py", "pyi", "rs", "go", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rb", "ex", "exs", "erl"}
    | {"hrl", "java", "kt", "kts", "scala", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "php"}
    | {"sh", "bash", "zsh", "lua", "pl", "r", "jl", "dart", "vue", "svelte", "sql", "proto"}
    | {"toml", "ini", "cfg", "yaml", "yml", "json", "lock", "mod", "gradle", "xml", "tf", "nix"}
)
_PROSE_EXTENSIONS = frozenset({"md", "rst", "txt", "adoc"})

# --- commands ---------------------------------------------------------------------------

# A command's first stage that only prints a fixed text ("echo DONE && make", "echo
# '--- tests' ; pytest"): its words are in the output if anywhere; what ran is the rest.
_ECHO_STAGE = regex.compile(
    r"echo[ ]++(?:\"[^\"\n]{0,200}+\"|'[^'\n]{0,200}+'|[\w.:=-]{1,200}+)[ ]*+(?:&&|;)[ ]*+(?=\S)"
)


def without_echo(command: str) -> str:
    """``command`` without a first stage that only echoes a fixed text."""
    return _ECHO_STAGE.sub("", command, count=1) if command.startswith("echo ") else command


# --- disassembly and decompilation -----------------------------------------------------

# An instruction of a disassembly: its address, its bytes, its mnemonic and operands
# (Ghidra ".text:00401136   55   PUSH  RBP", objdump "  401136:\t55\tpush   %rbp"). The
# bytes repeat what the mnemonic says.
_INSTRUCTION = regex.compile(
    r"(?P<address>\s{0,40}+(?:\.?\w{1,16}+:)?+[0-9a-f]{4,16}+:?+)[ \t]++"
    r"(?:[0-9a-f]{2}[ ]?+){1,16}+[ \t]++(?P<rest>[A-Za-z]{2,10}+\b.{0,400}+)"
)

# --- harness notes ----------------------------------------------------------------------

_REMINDER_OPEN = regex.compile(r"\s{0,8}+<system-reminder>")
_REMINDER_CLOSE = "</system-reminder>"


@dataclass(frozen=True, slots=True)
class CodeMark:
    """What a rule here says of one line: score to add, and the record line it joins
    (its header), if any."""

    bonus: float = 0.0
    group: str | None = None
    distinct: bool = False
    """Whether the line counts as no repeat of lines of the same shape (a manifest's
    dependencies all look alike and each says something else)."""
    placeless: bool = False
    """Whether the line's place in the output says nothing of its worth (a listing's
    names, in the order of the alphabet): no bonus for coming early or last."""


_DISTINCT = CodeMark(distinct=True)


def code_lines(lines: list[str]) -> tuple[list[str], dict[str, CodeMark]]:
    """A tool's output lines without the harness's notes, git's status advice made
    short, and the marks its lines earn, by line text."""
    lines = _without_reminders(lines)
    if any("CURSOR" in line for line in lines):
        lines = [line for line in lines if not _CURSOR_MARK.fullmatch(line)]
    if any(_STATUS_SIGN.match(line) for line in lines[:40]):
        return _git_status(lines)
    listed = _listing(lines)
    if listed is not None:
        return listed, {name: _name_mark(name) for name in listed if _NAME.fullmatch(name)}
    lines = _instructions(lines)
    return lines, {line: _DISTINCT for line in lines if declares_dependency(line[:_SCAN])}


def _instructions(lines: list[str]) -> list[str]:
    """A disassembly's instructions without their bytes (``0040069e CALL gets``); other
    lines as they are."""
    out: list[str] = []
    for line in lines:
        instruction = _INSTRUCTION.fullmatch(line[:_SCAN])
        if instruction is None:
            out.append(line)
            continue
        out.append(f"{instruction.group('address').strip()} {instruction.group('rest')}")
    return out


def _listing(lines: list[str]) -> list[str] | None:
    """A directory listing's names, one a line (names in columns split apart); None when
    ``lines`` are not mostly names."""
    rows = [line.strip() for line in lines if line.strip()]
    if not rows:
        return None
    names: list[str] = []
    misses = 0  # rows that are no names
    for row in rows:
        fields = _COLUMNS.split(row[:_SCAN]) if len(row) <= _SCAN else [row]
        if all(_NAME.fullmatch(name) for name in fields):
            names += fields
            continue
        names.append(row)
        misses += _NAME.fullmatch(fields[0]) is None
        if misses > (1 - _LISTING_SHARE) * len(rows):
            return None
    # Mostly names of files (an extension) or directories: not a table's words or ids.
    files = sum(1 for name in names if "/" in name or _EXTENSION.search(name[-12:]))
    return names if len(names) >= 3 and files >= _FILE_SHARE * len(names) else None


def _name_mark(name: str) -> CodeMark:
    """What a listed name is worth: a directory and a file of code or configuration
    most, a project's prose (``README.md``, ``LICENSE``) and a package marker
    (``__init__.py``) least; each name says something else (no repeat)."""
    if name.endswith("/"):
        return CodeMark(WEIGHTS["listed_name"], distinct=True, placeless=True)
    base = name.rstrip("*@=|").rsplit("/", 1)[-1]
    _, dot, extension = base.rpartition(".")
    if base.startswith("__") or (not dot and base.isupper()) or extension in _PROSE_EXTENSIONS:
        return CodeMark(0.0, distinct=True, placeless=True)
    if extension.lower() in _CODE_EXTENSIONS or (not dot and base[:1].isupper()):
        return CodeMark(WEIGHTS["listed_name"], distinct=True, placeless=True)
    return CodeMark(WEIGHTS["listed_name"] / 2, distinct=True, placeless=True)


def _without_reminders(lines: list[str]) -> list[str]:
    """``lines`` without Claude Code's ``<system-reminder>`` blocks."""
    if not any("<system-reminder>" in line for line in lines):
        return lines
    out: list[str] = []
    inside = False
    for line in lines:
        if not inside and _REMINDER_OPEN.match(line):
            inside = _REMINDER_CLOSE not in line
            continue
        if inside:
            inside = _REMINDER_CLOSE not in line
            continue
        out.append(line)
    return out


def _git_status(lines: list[str]) -> tuple[list[str], dict[str, CodeMark]]:
    """git's status report, long format: state lines and entries marked, its advice dropped,
    bare paths under a header joined to that header's line."""
    out: list[str] = []
    marks: dict[str, CodeMark] = {}
    header: str | None = None
    # The report's own state lines follow its first line ("On branch main") and are
    # short; other commands' lines in the same output earn nothing here.
    states = -1
    for line in lines:
        if states < 0 and _STATUS_SIGN.match(line):
            states = _STATE_LINES
        if _STATUS_ADVICE.fullmatch(line):
            continue
        entry = _STATUS_ENTRY.fullmatch(line)
        if entry is not None:
            out.append(f"{entry.group('state')} {entry.group('path').strip()}")
            continue
        if line.startswith("\t") and header is not None and line.strip():
            # A bare path under its header: one of the header's list.
            text = line.strip()
            marks[text] = CodeMark(group=header)
            out.append(text)
            continue
        if _GIT_HINT.match(line):
            continue
        header = line[:-1] if _STATUS_HEADER.fullmatch(line) else None
        if header is None and states > 0 and _STATE_LINE.fullmatch(line):
            out.append(_TRAILING_ADVICE.sub("", line))
            states -= 1
            continue
        out.append(line)
    # A header whose paths share its line is said there.
    grouped = {f"{mark.group}:" for mark in marks.values() if mark.group is not None}
    return [line for line in out if line not in grouped], marks


# --- manifests --------------------------------------------------------------------------

# A name, its separator and a quoted version requirement (an operator, then a version):
# mix.exs {:ash, "~> 3.0"}, package.json "react": "^18.2.0", a crate's serde = "1.0" or
# serde = { version = "1.0", ... }, Gemfile gem "rails", "~> 7.1", pyproject "x>=1.2".
_NUMBERED = regex.compile(r"\s{0,8}+\d{1,7}+(?:→|:|\t)")  # a file listing's line number
_COMMENT = regex.compile(r"\s*+(?:#|//|--|;|%|/\*)")  # a line commented out
_SCAN = 2048  # characters of a line examined
_DEPENDENCY = regex.compile(
    r"(?<![\w.-])[:@]?+[A-Za-z][\w@/.-]{0,80}+[\"']?+[ ]{0,3}+[,:=][ ]{0,3}+"
    r"(?:\{[ ]{0,3}+version[ ]{0,3}+=[ ]{0,3}+)?+[\"'](?:[~^<>=!][>=]?+[ ]{0,2}+)?+"
    r"v?+\d{1,6}+(?:\.(?:\d{1,6}+|[x*])){1,3}+(?=[\"'][ ,}]|[\"']?$|[ ]?+[<,|][ ]?+\d)"
)

_DEPENDENCY_NEEDS = regex.compile(r"\d\.[\dx*]")


def declares_dependency(scan: str) -> bool:
    """Whether a line declares a package with its version requirement (manifests), not
    in a comment."""
    if '"' not in scan and "'" not in scan:
        return False  # a requirement is quoted
    if _DEPENDENCY_NEEDS.search(scan) is None:
        return False  # every requirement holds a version: a digit, a dot, a digit or x or *
    match = _DEPENDENCY.search(scan)
    if match is None:
        return False
    numbered = _NUMBERED.match(scan)
    start = numbered.end() if numbered is not None else 0
    return _COMMENT.match(scan, start, match.start()) is None
