"""Rules of the extractive handler for code and repository tools' output and command
runs: git's status report, directory listings, SWE-agent's cursor marks, Claude Code's
``<system-reminder>`` blocks, manifests' dependencies, disassemblies, an echoing first
stage of a command; what test runners, build tools and terminals print (colour codes,
banner rules, zero counts, a verdict with its counts), made compact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import regex

from csum.handlers._extractive.text import _ELLIPSIS, _NUMBERED
from csum.handlers._extractive.weights import _LINE_SCAN, WEIGHTS

# A line git's status report prints first ("On branch main"), or its advice ("  (use "git).
_STATUS_SIGN = regex.compile(
    r"(?:On[ ]branch[ ]\S{1,200}+|HEAD[ ]detached[ ](?:at|from)[ ]\S{1,200}+)$"
    r"|\s{0,8}+\(use[ ]\"git[ ]"
)
# A section's header ("Changes to be committed:"); an entry ("\tnew file:   src/a.py").
_STATUS_HEADER = regex.compile(r"[A-Z][a-z]{1,20}+(?:[ ][a-z]{1,20}+){0,6}+:$")
_STATUS_ENTRY = regex.compile(
    r"\t(?P<state>[a-z]{3,12}+(?:[ ][a-z]{2,8}+){0,2}+:)[ ]++"
    r"(?P<path>\S.{0,400}+)$"
)
_STATUS_ADVICE = regex.compile(r"\s{0,8}+\(use[ ]\"git[ ][^)]{0,300}+\)$")
_TRAILING_ADVICE = regex.compile(r"[ ]\(use[ ]\"git[ ][^)]{0,300}+\)$")
_GIT_HINT = regex.compile(r"hint:(?:[ ]|$)")
_STATE_LINE = regex.compile(r"\S.{0,160}+")  # unindented, short
_STATE_LINES = 6  # state lines a status report prints at most (branch, upstream, ...)

# SWE-agent's file viewer's cursor marks ("<<<<< START CURSOR >>>>>"): no content.
_CURSOR_MARK = regex.compile(r"<{3,}+[ ]?+(?:START|END)[ ]CURSOR[ ]?+>{3,}+")

# A name alone on its line (ls -1, ls -F, find, a glob), or names in columns (ls).
_NAME = regex.compile(
    r"(?:~/|\.{1,2}+/|/)?+[\w@+~.,-]{1,200}+(?:/[\w@+~.,-]{1,200}+){0,30}+[*@=|/]?+"
)
_COLUMNS = regex.compile(r"(?:\t|[ ]{2})[\t ]*+")
_LISTING_SHARE = 0.8  # share of an output's lines that are names, for it to be a listing
_FILE_SHARE = 0.5  # ... and share of its names with an extension or a directory's "/"
_EXTENSION = regex.compile(r"\.[A-Za-z]\w{0,7}+[*@=|]?+$")
# Extensions of code or build configuration (opened or run next), and of prose.
_CODE_EXTENSIONS = frozenset(
    {"py", "pyi", "rs", "go", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rb", "ex", "exs", "erl"}
    | {"hrl", "java", "kt", "kts", "scala", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "php"}
    | {"sh", "bash", "zsh", "lua", "pl", "r", "jl", "dart", "vue", "svelte", "sql", "proto"}
    | {"toml", "ini", "cfg", "yaml", "yml", "json", "lock", "mod", "gradle", "xml", "tf", "nix"}
)
_PROSE_EXTENSIONS = frozenset({"md", "rst", "txt", "adoc"})

# A command's first stage that only prints a fixed text ("echo DONE && make").
_ECHO_STAGE = regex.compile(
    r"echo[ ]++(?:\"[^\"\n]{0,200}+\"|'[^'\n]{0,200}+'|[\w.:=-]{1,200}+)[ ]*+(?:&&|;)[ ]*+(?=\S)"
)


def without_echo(command: str) -> str:
    """``command`` without a first stage that only echoes a fixed text."""
    return _ECHO_STAGE.sub("", command, count=1) if command.startswith("echo ") else command


# A disassembly's instruction: address, bytes (repeating the mnemonic), mnemonic, operands.
_INSTRUCTION = regex.compile(
    r"(?P<address>\s{0,40}+(?:\.?\w{1,16}+:)?+[0-9a-f]{4,16}+:?+)[ \t]++"
    r"(?:[0-9a-f]{2}[ ]?+){1,16}+[ \t]++(?P<rest>[A-Za-z]{2,10}+\b.{0,400}+)"
)

_REMINDER_OPEN = regex.compile(r"\s{0,8}+<system-reminder>")
_REMINDER_CLOSE = "</system-reminder>"


@dataclass(frozen=True, slots=True)
class CodeMark:
    """What a rule here says of one line: score to add, the record line it joins."""

    bonus: float = 0.0
    group: str | None = None
    distinct: bool = False  # no repeat of lines of its shape (a manifest's dependencies)
    placeless: bool = False  # its place earns nothing (a listing's names, alphabetical)


def code_lines(lines: list[str]) -> tuple[list[str], dict[str, CodeMark]]:
    """A tool's output lines cleaned by the rules here, and the marks they earn, by text."""
    lines = _without_reminders(lines)
    if any("CURSOR" in line for line in lines):
        lines = [line for line in lines if not _CURSOR_MARK.fullmatch(line)]
    if any(_STATUS_SIGN.match(line) for line in lines[:40]):
        return _git_status(lines)
    listed = _listing(lines)
    if listed is not None:
        return listed, {name: _name_mark(name) for name in listed if _NAME.fullmatch(name)}
    # A disassembly's instructions without their bytes (``0040069e CALL gets``).
    lines = [
        line
        if (found := _INSTRUCTION.fullmatch(line[:_LINE_SCAN])) is None
        else f"{found.group('address').strip()} {found.group('rest')}"
        for line in lines
    ]
    return lines, {
        line: CodeMark(distinct=True) for line in lines if declares_dependency(line[:_LINE_SCAN])
    }


def _listing(lines: list[str]) -> list[str] | None:
    """A directory listing's names, one a line; None when ``lines`` are not mostly names."""
    rows = [line.strip() for line in lines if line.strip()]
    names: list[str] = []
    misses = 0  # rows that are no names
    for row in rows:
        fields = _COLUMNS.split(row[:_LINE_SCAN]) if len(row) <= _LINE_SCAN else [row]
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
    """A listed name's mark: a directory or code most, prose and ``__init__.py`` least."""
    weight = WEIGHTS["listed_name"]
    if not name.endswith("/"):
        base = name.rstrip("*@=|").rsplit("/", 1)[-1]
        _, dot, extension = base.rpartition(".")
        if base.startswith("__") or (not dot and base.isupper()) or extension in _PROSE_EXTENSIONS:
            weight = 0.0
        elif extension.lower() not in _CODE_EXTENSIONS and not (not dot and base[:1].isupper()):
            weight /= 2
    return CodeMark(weight, distinct=True, placeless=True)


def _without_reminders(lines: list[str]) -> list[str]:
    """``lines`` without Claude Code's ``<system-reminder>`` blocks."""
    if not any("<system-reminder>" in line for line in lines):
        return lines
    out: list[str] = []
    inside = False
    for line in lines:
        if inside or _REMINDER_OPEN.match(line):
            inside = _REMINDER_CLOSE not in line
        else:
            out.append(line)
    return out


def _git_status(lines: list[str]) -> tuple[list[str], dict[str, CodeMark]]:
    """git's long status report: advice dropped, bare paths joined to their header's line."""
    out: list[str] = []
    marks: dict[str, CodeMark] = {}
    header: str | None = None
    # The report's own state lines follow its first line ("On branch main") and are short.
    states = -1
    for line in lines:
        if states < 0 and _STATUS_SIGN.match(line):
            states = _STATE_LINES
        if _STATUS_ADVICE.fullmatch(line) or _GIT_HINT.match(line):
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
        header = line[:-1] if _STATUS_HEADER.fullmatch(line) else None
        if header is None and states > 0 and _STATE_LINE.fullmatch(line):
            out.append(_TRAILING_ADVICE.sub("", line))
            states -= 1
            continue
        out.append(line)
    # A header whose paths share its line is said there.
    grouped = {f"{mark.group}:" for mark in marks.values() if mark.group is not None}
    return [line for line in out if line not in grouped], marks


_COMMENT = regex.compile(r"\s*+(?:#|//|--|;|%|/\*)")  # a line commented out
# A quoted version requirement: {:ash, "~> 3.0"}, "react": "^18.2.0", gem "rails", "~> 7.1".
_DEPENDENCY = regex.compile(
    r"(?<![\w.-])[:@]?+[A-Za-z][\w@/.-]{0,80}+[\"']?+[ ]{0,3}+[,:=][ ]{0,3}+"
    r"(?:\{[ ]{0,3}+version[ ]{0,3}+=[ ]{0,3}+)?+[\"'](?:[~^<>=!][>=]?+[ ]{0,2}+)?+"
    r"v?+\d{1,6}+(?:\.(?:\d{1,6}+|[x*])){1,3}+(?=[\"'][ ,}]|[\"']?$|[ ]?+[<,|][ ]?+\d)"
)
_DEPENDENCY_NEEDS = regex.compile(r"\d\.[\dx*]")  # what every requirement holds


def declares_dependency(scan: str) -> bool:
    """Whether a line declares a package with its version requirement, not in a comment."""
    if ('"' not in scan and "'" not in scan) or _DEPENDENCY_NEEDS.search(scan) is None:
        return False  # a requirement is quoted and holds a version
    match = _DEPENDENCY.search(scan)
    if match is None:
        return False
    numbered = _NUMBERED.match(scan)
    start = numbered.end() if numbered is not None else 0
    return _COMMENT.match(scan, start, match.start()) is None


# --- command runs: test runners, build tools, terminals ------------------------------------

# A terminal's control sequences (colours, cursor moves): the text between them says it.
_CONTROL: Final = regex.compile(r"\x1b\[[0-9;?]{0,32}+[A-Za-z]|\x1b[()][A-Z0-9]")
# A banner's rule framing a line: ``===== 2 failed in 1.2s =====``, ``---- a::b ----``.
_BANNER_START: Final = regex.compile(r"^([=\-_*~#])\1{2,}+[ ]++(?=\S)")
_BANNER_END: Final = regex.compile(r"(?<=\S)[ ]++([=\-_*~#])\1{2,}+$")
# A count opening a sentence: "31 passed", "0 failed; 1 ignored".
_LEADING_COUNT: Final = regex.compile(
    r"\d{1,9}+[ ](?i:passed|failed|failures?|errors?|tests?|ignored|skipped|warnings?)\b"
)


def strip_colours(text: str) -> str:
    """``text`` without terminal control sequences (colour codes, cursor moves)."""
    if "\x1b" not in text:
        return text
    return _CONTROL.sub("", text)


def strip_banner(line: str) -> str:
    """A line without the rules framing it (``=== 4 passed ===``: ``4 passed``)."""
    if len(line) < 8 or (line[0] not in "=-_*~#" and line[-1] not in "=-_*~#"):
        return line
    return _BANNER_END.sub("", _BANNER_START.sub("", line, count=1), count=1)


def count_follows(rest: str) -> bool:
    """Whether a count follows a sentence's end (``ok. 31 passed``): one statement, not split."""
    return _LEADING_COUNT.match(rest) is not None


# A zero count of a secondary outcome (``; 0 ignored``, ``, Skipped: 0``); "0 failed" stays.
_ZERO_COUNT: Final = regex.compile(
    r"[;,][ ](?:0[ ](?:ignored|measured|filtered[ ]out|skipped|deselected|xfailed|xpassed"
    r"|pending|todo|excluded)|(?:Skipped|Ignored|Pending):[ ]++0)\b"
)


def drop_zero_counts(line: str) -> str:
    """A counts line without zero counts of secondary outcomes (``0 ignored``)."""
    if " 0 " not in line and ": 0" not in line:
        return line
    return _ZERO_COUNT.sub("", line[:2048]) + line[2048:]


# A command run in another directory: "cd ~/projects/shop/assets && npm install x".
_CD_PREFIX: Final = regex.compile(r"cd[ ]++(?P<dir>[^\s;&|]{1,400}+)[ ]*+&&[ ]*+(?=\S)")


def fit_command(command: str, room: int) -> str:
    """``command`` within ``room``: a leading ``cd DIR &&`` shortened, then dropped."""
    match = _CD_PREFIX.match(command) if len(command) > room else None
    if match is None:
        return command
    rest = command[match.end() :]
    directory = match.group("dir").rstrip("/")
    last = directory.rsplit("/", 1)[-1]
    if last != directory:
        shorter = f"cd {_ELLIPSIS}/{last} && {rest}"
        if len(shorter) <= room:
            return shorter
    return rest
