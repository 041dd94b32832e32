"""Fitting an oversized summary to its byte cap without losing its later parts: each
headed part (``Task:``, ``Files:``, ... ``Pending:``) keeps its first lines, then the
parts take their next whole lines in turns, in order."""

from __future__ import annotations

from collections.abc import Sequence

import regex

from cast.internals import clip_utf8, utf8_len

__all__ = ["fit_joined"]

_HEADING = regex.compile(
    r"""^(?:
        \#{1,6}[ ]\S              # a markdown heading: "## Files"
      | \*\*[^*\n]{1,60}\*\*:?\s*$  # a bold line: "**Files**" or "**Files:**"
      | [A-Z][\w /&-]{0,40}:(?:[ ]|$)  # a label: "Files:", "Pending: none"
    )""",
    regex.VERBOSE,
)
"""A line that opens a part of a structured summary."""
_ELLIPSIS = "…"
_MIN_CUT = 16  # bytes below which a cut line says too little to keep


def _cut_line(line: str, room: int) -> str:
    """The start of ``line`` in ``room`` bytes, cut between words, with an ellipsis."""
    mark = utf8_len(_ELLIPSIS)
    if room <= mark:
        return clip_utf8(line, room)
    head = clip_utf8(line, room - mark)
    space = head.rfind(" ")
    if space >= len(head) // 2:
        head = head[:space]
    return head.rstrip() + _ELLIPSIS


def _shares(sizes: list[int], room: int) -> list[int]:
    """Bytes for each of ``sizes`` within ``room``: whole when all fit, else shared equally."""
    if sum(sizes) <= room:
        return sizes
    shares = [0] * len(sizes)
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    left = room
    for rank, index in enumerate(order):
        share = min(sizes[index], left // (len(order) - rank))
        shares[index] = share
        left -= share
    return shares


def fit_joined(summaries: Sequence[str], max_bytes: int) -> str:
    """``summaries`` joined by newlines in at most ``max_bytes`` UTF-8 bytes, every headed
    part keeping its first lines (one first line shared equally when they do not all fit,
    cut between words with an ellipsis); the joined text itself when it fits."""
    text = "\n".join(summaries)
    if utf8_len(text) <= max_bytes:
        return text
    lines: list[str] = []
    parts: list[list[int]] = []
    for summary in summaries:  # line indexes grouped by the heading opening each part
        parts.append([])
        for line in summary.split("\n"):
            if _HEADING.match(line) and parts[-1]:
                parts.append([])
            parts[-1].append(len(lines))
            lines.append(line)
    sizes = [utf8_len(line) for line in lines]
    # The parts' first lines share the room (n lines take n - 1 newlines); a part whose
    # share is too small to say anything is left out.
    firsts = [part[0] for part in parts]
    shares = _shares([sizes[i] for i in firsts], max_bytes - (len(parts) - 1))
    kept: dict[int, str] = {}
    for index, share in zip(firsts, shares, strict=True):
        if share == sizes[index]:
            kept[index] = lines[index]
        elif share >= _MIN_CUT:
            kept[index] = _cut_line(lines[index], share)
    used = sum(utf8_len(line) for line in kept.values()) + len(kept) - 1
    # Then each whole-kept part takes its next line in turns; a part stops at its first
    # line that does not fit (its later lines would read out of context).
    open_parts = [part for part in parts if kept.get(part[0]) == lines[part[0]]]
    depth = 1
    while open_parts:
        still_open = []
        for part in open_parts:
            if depth >= len(part):
                continue
            index = part[depth]
            if used + sizes[index] + 1 <= max_bytes:
                kept[index] = lines[index]
                used += sizes[index] + 1
                still_open.append(part)
        open_parts = still_open
        depth += 1
    return "\n".join(kept[index] for index in sorted(kept)) or _cut_line(text, max_bytes)
