"""The most facts any summary copying from its item could keep: an exact bound, per item
and budget, solved as an integer program (HiGHS, through ``highspy``: a benchmark-only
dependency of the ``bench`` extra; the library never imports it).

Three kinds of copying summary, each a text of pieces of the item's text (the call line,
then the output, as :attr:`benchmarks.fidelity.Item.text`) in their order, one piece a
line of the summary (pieces joined by a line break, one byte each):

* ``lines``: whole lines only;
* ``trimmed``: each line kept trimmed to one piece (a run of its bytes), the call line's
  piece starting with the call name;
* ``spans``: any pieces (several per line allowed).

The program chooses bytes of the text (a line is cut into atoms at the edges of every
candidate match) and, for each fact, one of its *witnesses*: a choice of one match per
part, kept either **together** (the source from the first part to the last copied
verbatim) or, for a fact of parts on different lines (``lines``: on different lines; the
other kinds: anywhere), **apart** (the parts' lines or pieces, with nothing kept
between them, so in the summary they follow each other). Every witness is checked with
:func:`benchmarks.fidelity.fact_kept` on the text it makes before it is offered. The
budget counts each atom's bytes and one byte between pieces.

The candidate set is a simplification in three ways, which can only make the bound lower
than the true most (never higher, since every summary is rebuilt and scored):
* a fact whose parts are kept apart with *some* of the text between them kept is not a
  witness (only all of it, together, or none of it, apart);
* at most :data:`MATCHES_PER_PART` matches of each part are tried (the first ones in the
  text), and at most :data:`WITNESSES_PER_FACT` witnesses of each mode per fact (the
  cheapest in bytes);
* pieces are joined by line breaks, so a summary cannot put two pieces on one line (the
  counting rule's "same line, any distance" cannot be bought by joining everything into
  one line).

Every oracle summary is rebuilt as text from the chosen atoms, checked against its byte
budget and scored with the same :func:`~benchmarks.fidelity.fact_kept` as the handler;
the bound reported is that score (at least the program's count, which a test checks).
Solving every item takes about a minute, so :data:`CACHE_PATH` keeps the bounds, keyed by
item id, budget and counting rule version; ``python -m benchmarks.fidelity_bound``
re-solves what the cache lacks (``--fresh`` re-solves everything).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchmarks.fidelity_items import (
    BUDGETS,
    DEV_PATH,
    FRESH_PATH,
    HELDOUT_PATH,
    RULE_VERSION,
    Item,
    fact_kept,
    fact_pattern,
    load_items,
)
from benchmarks.shared_corpus import FIDELITY, require

__all__ = [
    "CACHE_PATH",
    "VARIANTS",
    "Bound",
    "bound_of",
    "cached_bounds",
    "main",
    "solve",
]

Variant = Literal["lines", "trimmed", "spans"]
VARIANTS: tuple[Variant, ...] = ("lines", "trimmed", "spans")
CACHE_PATH = Path(__file__).resolve().parent / "fidelity" / "bounds.json"
MATCHES_PER_PART = 12
"""Matches of one part tried per fact (the first ones in the text)."""
WITNESSES_PER_FACT = 40
"""Witnesses of one mode offered per fact (the cheapest in bytes)."""


@dataclass(frozen=True)
class Bound:
    """The oracle summary of one item at one budget for one variant."""

    kept: int
    """Facts the rebuilt summary keeps, scored by ``fact_kept``."""
    solved: int
    """Facts the program counted (``kept`` is at least this)."""
    size: int
    """The summary's size in UTF-8 bytes (at most the budget)."""
    summary: str


@dataclass(frozen=True)
class _Witness:
    required: tuple[tuple[int, int], ...]
    """Byte ranges of the text that must be kept."""
    forbidden: tuple[tuple[int, int], ...]
    """Byte ranges of the text that must not be kept (between parts kept apart)."""
    cost: int


@dataclass
class _Atoms:
    """The text cut at every edge a witness needs, line by line."""

    text: bytes
    edges: list[int] = field(default_factory=list)
    line_of: list[int] = field(default_factory=list)
    """For atom i (from ``edges[i]`` to ``edges[i + 1]``), its line's number."""


def _lines(data: bytes) -> list[tuple[int, int]]:
    """The byte ranges of the text's lines (line breaks left out)."""
    ranges, start = [], 0
    for index, byte in enumerate(data):
        if byte == 0x0A:
            ranges.append((start, index))
            start = index + 1
    ranges.append((start, len(data)))
    return ranges


def _byte_offsets(text: str) -> list[int]:
    """The byte offset of every character position (and of the end)."""
    offsets, total = [0], 0
    for char in text:
        total += len(char.encode("utf-8"))
        offsets.append(total)
    return offsets


def _matches(item: Item, pattern: str, offsets: list[int]) -> list[tuple[int, int]]:
    """The byte ranges where a part matches the text (as a whole token, as
    :func:`fact_kept` reads it), the first :data:`MATCHES_PER_PART`."""
    found = []
    for match in fact_pattern(pattern).finditer(item.text):
        found.append((offsets[match.start()], offsets[match.end()]))
        if len(found) == MATCHES_PER_PART:
            break
    return found


def _witnesses(
    item: Item, patterns: Sequence[str], variant: Variant, budget: int, offsets: list[int]
) -> list[_Witness]:
    """The witnesses of one fact, each checked by ``fact_kept`` on the text it makes."""
    data = item.text.encode("utf-8")
    lines = _lines(data)
    per_part = [_matches(item, p, offsets) for p in patterns]
    together: dict[tuple[int, int], _Witness] = {}
    apart: dict[tuple[tuple[int, int], ...], _Witness] = {}
    for combo in itertools.product(*per_part):
        start, end = min(s for s, _ in combo), max(e for _, e in combo)
        if variant == "lines":
            start, end = _line_start(lines, start), _line_end(lines, end)
        if end - start <= budget and (start, end) not in together:
            # a piece at either end of the summary has no line break beyond it
            block = data[start:end].strip(b"\n").decode("utf-8", "ignore")
            if fact_kept(block, patterns):
                together[(start, end)] = _Witness(((start, end),), (), end - start)
        if len(combo) > 1:
            witness = _apart(data, lines, combo, variant, patterns, budget)
            if witness is not None:
                apart.setdefault(witness.required, witness)
    chosen = sorted(together.values(), key=lambda w: w.cost)[:WITNESSES_PER_FACT]
    chosen += sorted(apart.values(), key=lambda w: w.cost)[:WITNESSES_PER_FACT]
    return chosen


def _line_start(lines: list[tuple[int, int]], offset: int) -> int:
    return next(s for s, e in lines if s <= offset <= e)


def _line_end(lines: list[tuple[int, int]], offset: int) -> int:
    return next(e for s, e in lines if s <= offset <= e)


def _apart(
    data: bytes,
    lines: list[tuple[int, int]],
    combo: Sequence[tuple[int, int]],
    variant: Variant,
    patterns: Sequence[str],
    budget: int,
) -> _Witness | None:
    """The parts kept apart: their pieces (``lines``: their lines) with nothing between."""
    pieces = sorted(set(combo))
    if variant == "lines":
        pieces = sorted({(_line_start(lines, s), _line_end(lines, e)) for s, e in pieces})
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    if len(merged) < 2:
        return None  # one piece: the together witness
    if variant == "trimmed":
        line_numbers = [_line_number(lines, s) for s, _ in merged]
        if len(set(line_numbers)) < len(line_numbers):
            return None  # two pieces on one line: not a trimmed summary
    if any(_line_number(lines, s) != _line_number(lines, e) for s, e in merged):
        return None
    cost = sum(e - s for s, e in merged) + len(merged) - 1
    if cost > budget:
        return None
    text = "\n".join(data[s:e].decode("utf-8", "ignore") for s, e in merged)
    if not fact_kept(text, patterns):
        return None
    between = tuple((a[1], b[0]) for a, b in itertools.pairwise(merged) if b[0] > a[1])
    return _Witness(tuple(merged), between, cost)


def _line_number(lines: list[tuple[int, int]], offset: int) -> int:
    return next(i for i, (s, e) in enumerate(lines) if s <= offset <= e)


def _atoms(data: bytes, witnesses: Sequence[_Witness], variant: Variant, name_end: int) -> _Atoms:
    lines = _lines(data)
    cuts = {0, len(data), name_end}
    for start, end in lines:
        cuts |= {start, end}
    if variant != "lines":
        for witness in witnesses:
            for start, end in (*witness.required, *witness.forbidden):
                cuts |= {start, end}
    atoms = _Atoms(data)
    ordered = sorted(cuts)
    line = 0
    for start, end in itertools.pairwise(ordered):
        while start >= lines[line][1] + 1 and line + 1 < len(lines):
            line += 1
        if start == lines[line][1] and end == start + 1:
            continue  # the line break itself: paid as a separator
        atoms.edges.append(start)
        atoms.line_of.append(line)
    return atoms


def _atoms_in(atoms: _Atoms, start: int, end: int, ends: list[int]) -> Iterator[int]:
    for index, left in enumerate(atoms.edges):
        if left >= start and ends[index] <= end and ends[index] > left:
            yield index


def solve(item: Item, budget: int, variant: Variant) -> Bound:
    """The oracle summary of ``item`` within ``budget`` bytes for ``variant``, rebuilt and
    scored (see the module's docstring)."""
    data = item.text.encode("utf-8")
    offsets = _byte_offsets(item.text)
    facts = [_witnesses(item, patterns, variant, budget, offsets) for _, patterns in item.facts]
    name_end = 0
    if variant == "trimmed" and item.call_name is not None:
        name_end = len(item.call_name.encode("utf-8"))
    atoms = _atoms(data, [w for ws in facts for w in ws], variant, name_end)
    ends = [*atoms.edges[1:], len(data)]
    ends = [min(end, _lines(data)[atoms.line_of[i]][1]) for i, end in enumerate(ends)]
    sizes = [end - start for start, end in zip(atoms.edges, ends, strict=True)]

    h = _quiet_highs()
    h.setOptionValue("time_limit", 60.0)
    eps = 0.5 / (budget + len(sizes) + 2)
    keep = [
        h.addBinary(obj=-eps * (size + 1) if variant == "lines" else -eps * size) for size in sizes
    ]
    starts = keep if variant == "lines" else [h.addVariable(0, 1, obj=-eps) for _ in sizes]
    if variant != "lines":
        for index, start_var in enumerate(starts):
            before = index - 1
            if before >= 0 and atoms.line_of[before] == atoms.line_of[index]:
                h.addConstr(start_var - keep[index] + keep[before] >= 0)
            else:
                h.addConstr(start_var - keep[index] >= 0)
    if variant == "trimmed":
        by_line: dict[int, list[int]] = {}
        for index, line in enumerate(atoms.line_of):
            by_line.setdefault(line, []).append(index)
        for members in by_line.values():
            h.addConstr(sum(starts[i] for i in members) <= 1)
        if name_end:
            for index in _atoms_in(atoms, 0, name_end, ends):
                h.addConstr(keep[index] >= 1)
    h.addConstr(
        sum(size * var for size, var in zip(sizes, keep, strict=True)) + sum(starts) <= budget + 1
    )
    objective = []
    for witnesses in facts:
        if not witnesses:
            continue
        fact = h.addBinary(obj=-1.0)
        chosen = [h.addBinary() for _ in witnesses]
        h.addConstr(fact - sum(chosen) <= 0)
        for var, witness in zip(chosen, witnesses, strict=True):
            for start, end in witness.required:
                for index in _atoms_in(atoms, start, end, ends):
                    h.addConstr(var - keep[index] <= 0)
            for start, end in witness.forbidden:
                for index in _atoms_in(atoms, start, end, ends):
                    h.addConstr(var + keep[index] <= 1)
        objective.append(fact)
    h.run()
    values = h.getSolution().col_value
    solved = round(sum(values[v.index] for v in objective)) if objective else 0
    chosen_atoms = [i for i, var in enumerate(keep) if values[var.index] > 0.5]
    summary = _rebuild(data, atoms, ends, chosen_atoms)
    kept = sum(fact_kept(summary, patterns) for _, patterns in item.facts)
    size = len(summary.encode("utf-8"))
    if size > budget or kept < solved:
        raise RuntimeError(
            f"{item.id} at {budget} B ({variant}): the rebuilt summary takes {size} B and "
            f"keeps {kept} facts where the program counted {solved}"
        )
    return Bound(kept, solved, size, summary)


def _quiet_highs() -> Any:
    """A HiGHS model with its output off; its banner (written by the C library to file
    descriptor 1 when the first model is made) is sent to /dev/null, so the report's
    standard output stays the report."""
    import highspy  # a benchmark-only dependency (the `bench` extra)

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def _rebuild(data: bytes, atoms: _Atoms, ends: list[int], chosen: list[int]) -> str:
    """The summary the chosen atoms make: runs of atoms on one line are one piece,
    pieces joined by line breaks."""
    pieces: list[bytes] = []
    previous = -2
    for index in chosen:
        piece = data[atoms.edges[index] : ends[index]]
        if pieces and previous == index - 1 and atoms.line_of[previous] == atoms.line_of[index]:
            pieces[-1] += piece
        else:
            pieces.append(piece)
        previous = index
    return b"\n".join(pieces).decode("utf-8", "ignore")


def _key(item: Item, budget: int) -> str:
    """The cache key: item id, budget and counting rule version, and a checksum of the
    item's text and labels (a relabelled item is solved again)."""
    digest = zlib.crc32(json.dumps([item.text, item.facts]).encode("utf-8"))
    return f"{item.id}@{budget}@rule{RULE_VERSION}@{digest:08x}"


def _budget(item: Item, fraction: float) -> int:
    return max(1, round(fraction * item.size))


def cached_bounds(
    items: Sequence[Item], *, path: Path = CACHE_PATH, refresh: bool = False
) -> dict[str, dict[Variant, int]]:
    """Facts the oracle keeps, by :func:`_key` and variant, from the cache at ``path``;
    what it lacks (or everything, with ``refresh``) is solved and written back."""
    cache: dict[str, dict[Variant, int]] = {}
    if path.exists() and not refresh:
        cache = json.loads(path.read_text(encoding="utf-8"))
    missing = [
        (item, _budget(item, f))
        for item in items
        for f in BUDGETS
        if _key(item, _budget(item, f)) not in cache
    ]
    for item, budget in missing:
        cache[_key(item, budget)] = {v: solve(item, budget, v).kept for v in VARIANTS}
    if missing:
        path.write_text(json.dumps(cache, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return cache


def bound_of(
    cache: dict[str, dict[Variant, int]], item: Item, fraction: float
) -> dict[Variant, int]:
    """The cached bounds of ``item`` at ``fraction`` of its size."""
    return cache[_key(item, _budget(item, fraction))]


def main(argv: Sequence[str] | None = None) -> int:
    """Solve the bounds the cache lacks (all of them with ``--fresh``) and print totals."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity_bound")
    parser.add_argument("--fresh", action="store_true", help="re-solve every bound")
    parser.add_argument("--show", help="print the oracle summaries of the item with this id")
    args = parser.parse_args(argv)
    require(FIDELITY)
    items = load_items(heldout=HELDOUT_PATH, dev=DEV_PATH, fresh=FRESH_PATH)
    if args.show:
        item = next((i for i in items if i.id == args.show), None)
        if item is None:
            parser.error(f"no item with id {args.show!r}")
        for fraction in BUDGETS:
            for variant in VARIANTS:
                bound = solve(item, _budget(item, fraction), variant)
                print(f"--- {variant} at {_budget(item, fraction)} B: kept {bound.kept}")
                print(bound.summary)
        return 0
    cache = cached_bounds(items, refresh=args.fresh)
    facts = sum(len(i.facts) for i in items)
    for fraction in BUDGETS:
        cells = [f"{v} {sum(bound_of(cache, i, fraction)[v] for i in items)}" for v in VARIANTS]
        print(f"at {fraction:.0%}: {', '.join(cells)} of {facts} facts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
