"""The fidelity items and the rule that says whether a summary keeps a fact.

The items are real tool results (with the call that produced them) and real answers from
other projects' agent runs, each with the facts a person needs to carry on the task,
written down by reading it. They are not the project's, so they live in the shared
corpus (``fidelity/``, sources and licenses in its ``SOURCES.md``) and are read from
there (:data:`benchmarks.shared_corpus.FIDELITY`); :func:`load_items` raises
``FileNotFoundError`` naming the file when it is missing. Parts: A and B
(``items.jsonl``, by the CRC-32 of the id), C (``items_heldout.jsonl``), D
(``items_dev.jsonl``, for tuning), E (``items_fresh.jsonl``); :mod:`benchmarks.fidelity`
says what each is for. Summaries are scored by :func:`fact_kept` (rule
:data:`RULE_VERSION`); :mod:`benchmarks.fidelity_bound` uses the same rule.
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import regex

from benchmarks.shared_corpus import FIDELITY
from cast import Message, ToolCall
from csum.prompt import SummaryRequest, summary_request

__all__ = [
    "BESIDE",
    "BUDGETS",
    "DEV_PATH",
    "FRESH_PATH",
    "HELDOUT_PATH",
    "ITEMS_PATH",
    "RULE_VERSION",
    "SHORT",
    "WINDOW",
    "Item",
    "fact_kept",
    "fact_pattern",
    "half",
    "load_items",
    "part_of",
    "plain_form",
]

ITEMS_PATH = FIDELITY / "items.jsonl"
"""Parts A and B: labelled items, split by the CRC-32 of their id (:func:`half`)."""
HELDOUT_PATH = FIDELITY / "items_heldout.jsonl"
"""Part C: fresh items labelled after the handler was tuned on parts A and B."""
DEV_PATH = FIDELITY / "items_dev.jsonl"
"""Part D: a development set of the kinds the handler does worst on, for tuning."""
FRESH_PATH = FIDELITY / "items_fresh.jsonl"
"""Part E: a second fresh held-out set, labelled after all tuning on A, B and D."""
BUDGETS = (0.10, 0.25)
"""Summary budgets as a share of the item's size in UTF-8 bytes."""
RULE_VERSION = 2
"""The counting rule of :func:`fact_kept`. 1 (issues 13-29): a fact's parts within 300
characters of the first, substrings anywhere. 2 (issue 30): parts on the first part's
line or within :data:`WINDOW` characters of it; parts of :data:`SHORT` characters or
fewer only directly beside another part; patterns match whole tokens."""
WINDOW = 80
"""Characters between a fact's first part and another part on another line, at most (on
the same line any distance counts: a flattened JSON record is one line)."""
SHORT = 3
"""A part whose match is this many characters or fewer (a count, a price, an airport
code) counts only directly beside another part of its fact."""
BESIDE = 20
"""Characters between two parts that are directly beside each other, at most (with at
most two words between them: a key such as ``line`` or ``destination``)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One labelled tool result or answer."""

    id: str
    kind: str
    call_name: str | None
    call_arguments: str
    output_role: str
    output: str
    facts: tuple[tuple[str, tuple[str, ...]], ...]
    source: dict[str, str]
    part: str = ""
    """``A``, ``B``, ``C`` or ``D`` as :func:`load_items` assigns it; empty: by :func:`half`."""

    @property
    def text(self) -> str:
        """What a plain cut sees: the call line, then the output."""
        if self.call_name is None:
            return self.output
        return f"{self.call_name}({self.call_arguments})\n{self.output}"

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))

    def prompt(self) -> str:
        """The prompt the summarizer would hand a handler for this item."""
        return self.request().prompt

    def request(self) -> SummaryRequest:
        """The structured request of :meth:`prompt` (its entries beside it)."""
        if self.call_name is None:
            return summary_request([], [Message.ai(self.output)])
        call = ToolCall(id="call_1", name=self.call_name, arguments=self.call_arguments)
        return summary_request(
            [], [Message.ai("", call), Message.tool("call_1", self.call_name, self.output)]
        )


def half(item: Item) -> str:
    """``A`` (the half rules were tuned on: CRC-32 of the id even) or ``B`` (held out
    from the first tuning only)."""
    return "A" if zlib.crc32(item.id.encode("utf-8")) % 2 == 0 else "B"


def part_of(item: Item) -> str:
    """The part an item belongs to: ``C`` for the held-out file, ``D`` for the development
    file, ``E`` for the second fresh file, else :func:`half`."""
    return item.part or half(item)


def load_items(
    path: Path = ITEMS_PATH,
    *,
    heldout: Path | None = None,
    dev: Path | None = None,
    fresh: Path | None = None,
) -> list[Item]:
    """Every item of the labelled set at ``path`` (parts A and B, by :func:`half`), then,
    with ``heldout``, every item of that file as part C, then, with ``dev``, every item of
    that file as part D, then, with ``fresh``, every item of that file as part E. Ids must
    be unique across the files."""
    items = _read_items(path, None)
    if heldout is not None:
        items += _read_items(heldout, "C")
    if dev is not None:
        items += _read_items(dev, "D")
    if fresh is not None:
        items += _read_items(fresh, "E")
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            files = ", ".join(str(f) for f in (path, heldout, dev, fresh) if f is not None)
            raise ValueError(f"item id {item.id!r} occurs twice in {files}")
        seen.add(item.id)
    return items


def _read_items(path: Path, part: str | None) -> list[Item]:
    """The items of one file, each with its part: ``part``, or by :func:`half`."""
    items: list[Item] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        call = raw["call"]
        item = Item(
            id=raw["id"],
            kind=raw["kind"],
            call_name=None if call is None else call["name"],
            call_arguments="" if call is None else call["arguments"],
            output_role=raw["output_role"],
            output=raw["output"],
            facts=tuple((f["what"], tuple(f["match"])) for f in raw["facts"]),
            source=raw["source"],
        )
        items.append(replace(item, part=part or half(item)))
    return items


_TOKEN_START = r"(?<!\w)"
_TOKEN_END = r"(?!\w|-\w|\.\d)"


def fact_pattern(text: str) -> regex.Pattern[str]:
    """A fact's pattern: ``re:`` as written; a phrase (white space in it) anywhere; an
    identifier (a path, a number, a name: no white space) only as a whole token: no
    word character before it, and after it no word character, no ``-`` going on with
    one and no ``.`` going on with a digit, so ``spotter-0p7`` is not found in
    ``spotter-0p7.1`` nor ``1.5`` in ``1.5.0``, while ``Repo.Migrations.AddX.up/0``
    still holds ``AddX`` (a qualified name's member)."""
    if text.startswith("re:"):
        return regex.compile(text[3:])
    if _WHITE_SPACE.search(text):
        return regex.compile(regex.escape(text))
    start = _TOKEN_START if _WORD_CHARACTER.match(text) else ""
    end = _TOKEN_END if _WORD_CHARACTER.match(text[-1:]) else ""
    return regex.compile(start + regex.escape(text) + end)


_WORD_CHARACTER = regex.compile(r"\w")


# Formatting a summary may change without changing a fact: quotes, backticks and bold
# marks; a key's separator (": ", " = "); runs of white space (alignment); a run of
# white space holding a line break stays one line break, so lines still count.
_QUOTING = regex.compile(r"[\"'`]|\*\*")
_KEY_SEPARATOR = regex.compile(r"[ \t]*+(?:=|:(?=\s))\s*+")
_WHITE_SPACE = regex.compile(r"\s++")


def _one_space(match: regex.Match[str]) -> str:
    return "\n" if "\n" in match.group() else " "


@lru_cache(maxsize=64)  # one summary is read for each of its item's facts
def plain_form(text: str) -> str:
    """``text`` without the formatting a fact does not need: ``"request_id": "3b2f"``,
    ``request_id=3b2f`` and ``request_id:   3b2f`` all read ``request_id=3b2f``; a
    bold ``**100.0**`` reads ``100.0``; aligned columns read as one space and a run of
    line breaks as one line break (the line a part is on still counts, see
    :func:`fact_kept`). Summaries that flatten JSON to ``key=value`` (as issue 13 asks)
    or collapse white space keep the fact in this form."""
    text = _QUOTING.sub("", text)
    text = _KEY_SEPARATOR.sub("=", text)
    return _WHITE_SPACE.sub(_one_space, text)


Span = tuple[int, int]


def _near(text: str, a: Span, b: Span) -> bool:
    """Whether two parts of a fact count together: on the same line, or at most
    :data:`WINDOW` characters apart."""
    low, high = (a, b) if a[0] <= b[0] else (b, a)
    gap = high[0] - low[1]
    return gap <= WINDOW or "\n" not in text[low[1] : high[0]]


_BESIDE_GAP = regex.compile(r"\W*+(?:\w++\W*+){0,2}")


def _beside(text: str, a: Span, b: Span) -> bool:
    """Whether two parts are directly beside each other: at most :data:`BESIDE`
    characters apart, with at most two words between them (a key: ``line``,
    ``destination``; ``(EWR) to Chicago (ORD)``)."""
    low, high = (a, b) if a[0] <= b[0] else (b, a)
    if high[0] <= low[1]:
        return True  # they overlap or touch
    between = text[low[1] : high[0]]
    return len(between) <= BESIDE and _BESIDE_GAP.fullmatch(between) is not None


def _found(text: str, patterns: Sequence[regex.Pattern[str]]) -> bool:
    """Whether one match of each pattern can be chosen so that every part is near the
    first (:func:`_near`) and every part of :data:`SHORT` characters or fewer is beside
    another chosen part (:func:`_beside`); a fact of one part has no subject to be
    beside."""
    spans = [[m.span() for m in p.finditer(text)] for p in patterns]
    if not all(spans):
        return False
    if len(patterns) == 1:
        return True
    for first in spans[0]:
        near = [[first]] + [[s for s in rest if _near(text, first, s)] for rest in spans[1:]]
        near = _pruned(text, near)
        if all(near) and any(
            _all_short_beside(text, chosen) for chosen in itertools.product(*near)
        ):
            return True
    return False


def _is_short(span: Span) -> bool:
    return span[1] - span[0] <= SHORT


def _pruned(text: str, near: list[list[Span]]) -> list[list[Span]]:
    """The candidates worth trying: short ones beside a candidate of another part; long
    ones beside a short candidate of another part, and the first long one (a long part
    needs no partner), so the product stays small on a long line."""

    def others(i: int) -> list[Span]:
        return [s for j, spans in enumerate(near) if j != i for s in spans]

    near = [
        [s for s in spans if not _is_short(s) or any(_beside(text, s, o) for o in others(i))]
        for i, spans in enumerate(near)
    ]
    kept: list[list[Span]] = []
    for i, spans in enumerate(near):
        short_others = [o for o in others(i) if _is_short(o)]
        longs = [s for s in spans if not _is_short(s)]
        partners = [s for s in longs if any(_beside(text, s, o) for o in short_others)]
        if longs and longs[0] not in partners:
            partners.insert(0, longs[0])
        kept.append([s for s in spans if _is_short(s)] + partners)
    return kept


def _all_short_beside(text: str, chosen: Sequence[Span]) -> bool:
    return all(
        end - start > SHORT
        or any(_beside(text, (start, end), other) for j, other in enumerate(chosen) if j != i)
        for i, (start, end) in enumerate(chosen)
    )


def fact_kept(summary: str, patterns: Sequence[str], *, exact_form: bool = False) -> bool:
    """Whether ``summary`` keeps the fact (rule :data:`RULE_VERSION`): every pattern
    found as a whole token (``re:`` patterns as written), every part on the first
    part's line or within :data:`WINDOW` characters of it, and a part of :data:`SHORT`
    characters or fewer (``3``, ``JFK``) directly beside another part (its subject;
    the facts' own patterns tie a value to its key where that matters); as written
    or, unless ``exact_form``, both in :func:`plain_form`."""
    if _found(summary, [fact_pattern(p) for p in patterns]):
        return True
    if exact_form:
        return False
    plain = [p if p.startswith("re:") else plain_form(p) for p in patterns]
    return _found(plain_form(summary), [fact_pattern(p) for p in plain])
