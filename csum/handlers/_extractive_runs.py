"""Command runs for the extractive handler: what test runners, build tools, linters and
terminal programs print, made compact before it is scored.

Each rule here follows a format real tools print: terminal colour codes (``ESC[31m``),
which only colour; the rules of ``=`` or ``-`` that frame a test runner's banner lines
(pytest's ``===== 3 passed in 0.12s =====``, cargo's ``---- tests::x stdout ----``);
a verdict followed by its counts on one line (cargo's ``test result: FAILED. 3 passed;
1 failed``), which is one statement, not two sentences.
"""

from __future__ import annotations

from typing import Final

import regex

__all__ = ["count_follows", "strip_banner", "strip_colours"]

# A terminal's control sequences (colours, cursor moves: ``ESC[38;21m``, ``ESC[0m``,
# ``ESC[2K``) say nothing a summary keeps: the text between them does.
_CONTROL: Final = regex.compile(r"\x1b\[[0-9;?]{0,32}+[A-Za-z]|\x1b[()][A-Z0-9]")
# A banner's rule: three or more of one rule character at a line's start or end, framing
# what it says (``===== 2 failed, 5 passed in 1.2s =====``, ``---- a::b stdout ----``,
# ``_____ test_login _____``).
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
    """A line without the rules framing it (``=== 4 passed in 0.01s ===``: ``4 passed in
    0.01s``); the line itself when nothing frames it. The rules cost more bytes than
    the verdict they frame, and a rule alone says nothing."""
    if len(line) < 8 or (line[0] not in "=-_*~#" and line[-1] not in "=-_*~#"):
        return line
    return _BANNER_END.sub("", _BANNER_START.sub("", line, count=1), count=1)


def count_follows(rest: str) -> bool:
    """Whether what follows a sentence's end is a count (``31 passed; 0 failed``): then
    the sentence before it (``test result: ok.``) is the verdict the count belongs to,
    one statement, not to be split."""
    return _LEADING_COUNT.match(rest) is not None
