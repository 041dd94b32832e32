"""The summary format: the only code that writes it and the only code that reads it back
(an earlier summary summarized again)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Final

import regex

from cast.internals import clip_utf8
from csum.archive import ARCHIVE_LINE_PREFIX
from csum.handlers._extractive.features import _is_routine_log, _score
from csum.handlers._extractive.text import (
    _CODE,
    _TOKEN,
    _TRAIL,
    _clip,
    _clip_at_word_end,
)
from csum.handlers._extractive.weights import _FILLER_SCORE, _LINE_SCAN, _PRIOR_SCORE, WEIGHTS

_PRIOR_KEEP_SCORE = 4.0  # an earlier summary's line scoring this keeps its place first

_LONE_CALL = regex.compile(r"[A-Za-z_][\w.:-]{0,80}+\(.*(?:\)|…)$")  # "bash(ls -la)"


@dataclass(slots=True)
class _Line:
    text: str
    score: float
    tier: int = 1  # 0: an earlier summary's line, packed before anything else
    taken: bool = False
    group: str | None = None  # a JSON record's path: its fields share one line
    whole: str | None = None  # the line before it was compacted, when it was


@dataclass(slots=True)
class _Block:
    """A unit of the output: an optional head line and its body lines."""

    head: str = ""
    indent: str = ""
    head_taken: bool = False
    lines: list[_Line] = field(default_factory=list)


USER_PREFIX: Final = "User: "
"""Prefix of a request line in the summary."""


RESULT_INDENT: Final = "  "
"""Indent of a tool result's kept lines, under the call that produced them."""


def _request_line(text: str) -> str:
    """A line of what the user said, as the summary writes it (``User: ...``)."""
    return text if text.startswith(USER_PREFIX) else USER_PREFIX + text


def _render_summary(blocks: list[_Block], max_bytes: int) -> str:
    """The summary: each shown block's head and its kept lines; else the best line clipped."""
    out: list[str] = []
    shown = [block for block in blocks if any(line.taken for line in block.lines)]
    for block in shown:  # (a block's lines are in their order: read in it)
        kept = [line for line in block.lines if line.taken]
        indent = "" if len(shown) == 1 else block.indent
        if block.head:
            out.append(block.head)
        out.extend(_render(kept, indent))
    everything = [(block, line) for block in blocks for line in block.lines]
    if not out and everything:
        block, line = min(everything, key=lambda pair: (pair[1].tier, -pair[1].score))
        out.append(_clip_at_word_end(block.head or line.text, max_bytes))
    return clip_utf8("\n".join(out), max_bytes)


def _head_codes(head: str) -> int:
    """How many codes (``JG7FMM``, ``ORD7731QX``) a call line's arguments name."""
    _, _, args = head.partition("(")
    tokens = _TOKEN.finditer(args, endpos=_LINE_SCAN)
    return sum(bool(_CODE.fullmatch(t.group().rpartition("=")[2].strip(_TRAIL))) for t in tokens)


def _prior_calls(text: str) -> int:
    """How many call lines an earlier summary holds (lines with lines indented below)."""
    pairs = pairwise(row for row in text.splitlines() if row.strip())
    return sum(
        not row.startswith(RESULT_INDENT) and below.startswith(RESULT_INDENT)
        for row, below in pairs
    )


def _prior_blocks(text: str, call_cap: int) -> list[_Block]:
    """An earlier summary read back as blocks, its strong lines first (tier 0)."""
    rows = [line.rstrip() for line in text.splitlines() if line.strip()]
    if (
        len(rows) > 1
        and _LONE_CALL.match(rows[0][:_LINE_SCAN]) is not None
        and not any(row.startswith(RESULT_INDENT) for row in rows)
    ):
        # A call alone in its summary is written without indents: indent its lines again.
        rows = [rows[0], *(RESULT_INDENT + row for row in rows[1:])]
    blocks: list[_Block] = []
    for order, row in enumerate(rows):
        indented = row.startswith(RESULT_INDENT)
        if indented and blocks and blocks[-1].head:
            blocks[-1].lines.append(_prior_line(row[2:]))
            continue
        following = rows[order + 1] if order + 1 < len(rows) else ""
        if not indented and following.startswith(RESULT_INDENT):
            # The calls' share may be smaller now: cut at the end, as a call line is.
            blocks.append(_Block(head=_clip(row, call_cap), indent=RESULT_INDENT))
        else:  # consecutive lines with no call above them share a block without a head
            if not blocks or blocks[-1].head:
                blocks.append(_Block())
            blocks[-1].lines.append(_prior_line(row))
    for block in blocks:  # (each holds a line: a call's head is made for the line below it)
        # A call naming codes keeps its first line first, as a new one earns it a place.
        if block.head and _head_codes(block.head):
            block.lines[0].tier, block.lines[0].score = 0, _PRIOR_SCORE
    return blocks


def _prior_line(text: str) -> _Line:
    # The archive line, and a line still holding a strong signal, keep their place first.
    # Another is scored as a new line would be.
    said = text.removeprefix(USER_PREFIX)
    content = _score(said, listing=False, diff=False, routine=_is_routine_log(said))
    if text.startswith(ARCHIVE_LINE_PREFIX) or content >= _PRIOR_KEEP_SCORE:
        return _Line(text, _PRIOR_SCORE, tier=0)
    if text.startswith(USER_PREFIX):
        content += WEIGHTS["user"]
    return _Line(text, content if content > 0 else _FILLER_SCORE)


def _list_item(group: str) -> tuple[str, str] | None:
    """A list's record as its list's path and index (``flights``, ``[3]``); else None."""
    start = group.rfind("[")
    if not group.endswith("]") or start <= 0 or not group[start + 1 : -1].isdigit():
        return None
    return group[:start], group[start:]


def _render(kept: list[_Line], indent: str) -> Iterator[str]:
    """The kept lines in order: a record's fields, and a list's records, on one line."""
    records: dict[str, list[str]] = {}
    lists: dict[str, list[str]] = {}
    for line in kept:
        if line.group is not None:
            if line.group not in records:
                listed = _list_item(line.group)
                if listed is not None:
                    lists.setdefault(listed[0], []).append(line.group)
            records.setdefault(line.group, []).append(line.text)
    for line in kept:
        if line.group is None:
            yield indent + line.text
        elif line.group in records:
            listed = _list_item(line.group)
            if listed is None:
                prefix = f"{line.group}: " if line.group else ""
                yield indent + prefix + " ".join(records.pop(line.group))
                continue
            yield indent + "; ".join(
                f"{group if index == 0 else group[len(listed[0]) :]}: "
                + " ".join(records.pop(group))
                for index, group in enumerate(lists.pop(listed[0]))
            )
