"""The units the extractive handler ranks: lines and the blocks (a call and its result)
that hold them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _Line:
    block: int
    order: int
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
    head_score: float = 0.0
    indent: str = ""
    head_taken: bool = False
    lines: list[_Line] = field(default_factory=list)
