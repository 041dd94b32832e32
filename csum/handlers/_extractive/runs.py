"""Command runs for the extractive handler: what test runners, build tools, linters and
terminal programs print, made compact before it is scored.

Each rule here follows a format real tools print: terminal colour codes (``ESC[31m``),
which only colour; the rules of ``=`` or ``-`` that frame a test runner's banner lines
(pytest's ``===== 3 passed in 0.12s =====``, cargo's ``---- tests::x stdout ----``);
a verdict followed by its counts on one line (cargo's ``test result: FAILED. 3 passed;
1 failed``), which is one statement, not two sentences.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Protocol

import regex

__all__ = [
    "call_line",
    "count_follows",
    "drop_zero_counts",
    "fit_command",
    "outcome_over_call",
    "strip_banner",
    "strip_colours",
]

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
    """A line without the rules framing it (``=== 4 passed ===``: ``4 passed``)."""
    if len(line) < 8 or (line[0] not in "=-_*~#" and line[-1] not in "=-_*~#"):
        return line
    return _BANNER_END.sub("", _BANNER_START.sub("", line, count=1), count=1)


def count_follows(rest: str) -> bool:
    """Whether a count follows a sentence's end (``ok. 31 passed``): one statement, not split."""
    return _LEADING_COUNT.match(rest) is not None


WHOLE_CALL_SHARE: Final = 0.8
"""Share of the budget a lone call's line may take when it fits whole: a command cut in
its middle (``rsync -az … backup/``) names no command one could run again, so the
few more bytes that keep it whole are worth more than they cost; a command that does
not fit even so is cut to the usual share, not to this one."""
_UNCAPPED: Final = 1 << 20
_ELLIPSIS: Final = "…"


def call_line(line: str, render: Callable[[int], str], budget: int, calls: int) -> str:
    """A lone call's line whole when its capped form cut it and the whole fits its share."""
    if calls != 1 or _ELLIPSIS not in line:
        return line
    whole = render(_UNCAPPED)
    return whole if len(whole.encode("utf-8")) <= int(budget * WHOLE_CALL_SHARE) else line


class _LineLike(Protocol):
    @property
    def score(self) -> float: ...
    @property
    def text(self) -> str: ...
    @property
    def tier(self) -> int: ...


class _BlockLike(Protocol):
    head: str

    @property
    def lines(self) -> Sequence[_LineLike]: ...


OUTCOME_SCORE: Final = 6.0
"""Score from which a result line outranks its call's line when the budget holds only
one of them: a strict error signal (the handler's error score), a count of tests."""


def outcome_over_call(
    blocks: Sequence[_BlockLike], budget: int, size: Callable[[str], int], cut: str = ""
) -> None:
    """A lone call's strong result line kept over its call line when both do not fit."""
    if len(blocks) != 1 or not blocks[0].head or not blocks[0].lines:
        return
    block = blocks[0]
    if any(line.tier == 0 for line in block.lines):
        return  # an earlier summary's lines keep their place, under their call line
    best = max(block.lines, key=lambda line: line.score)
    # As the packer counts: each line with its line break but the last.
    need = size(best.text) + 1
    if best.score < OUTCOME_SCORE or need + size(block.head) <= budget or need - 1 > budget:
        return
    block.head = cut if cut and need + size(cut) <= budget else ""


# A zero count of a secondary outcome in a runner's counts line: cargo's "; 0 ignored;
# 0 measured; 0 filtered out", dotnet's ", Skipped: 0". What passed and what failed are
# kept even when zero ("0 failed" is the verdict); nothing ignored says nothing.
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
