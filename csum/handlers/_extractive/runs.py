"""Command runs for the extractive handler: what test runners, build tools and terminals
print (colour codes, banner rules, zero counts, a verdict with its counts), made compact."""

from __future__ import annotations

from typing import Final

import regex

from csum.handlers._extractive.text import _ELLIPSIS

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
    if len(command) <= room:
        return command
    match = _CD_PREFIX.match(command)
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
