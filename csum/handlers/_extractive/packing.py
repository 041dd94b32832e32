"""Packing the scored lines into the budget: earlier summaries and requests first, then by
score per byte."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from functools import partial

from csum.handlers._extractive.features import _score
from csum.handlers._extractive.rendering import USER_PREFIX, _list_item, _render, _take_prior_rest
from csum.handlers._extractive.text import (
    _clip_at_word_end,
    _clip_bytes,
    _clip_whole_words,
    _utf8_len,
)
from csum.handlers._extractive.units import _Block, _Line
from csum.handlers._extractive.weights import (
    _COST_BASE,
    _CUT_SHARE,
    _FIELD_COST_BASE,
    _FILLER_MAX,
    _MIN_PIECE,
    _OPENER_SHARE,
    _PRIOR_SHARE,
    _REPACKS,
)

_LIST_KEY = "\0"  # marks a list's path among the open records' paths


def _cost(block: _Block, line: _Line, opened: set[tuple[int, str]]) -> int:
    """Bytes ``line`` adds to the summary: with its block's head and indent, or, for a
    field of a record whose line is already open, only a space and itself."""
    cost = _utf8_len(line.text) + 1
    if line.group is None or (line.block, line.group) not in opened:
        listed = _list_item(line.group) if line.group else None
        if listed is not None and (line.block, _LIST_KEY + listed[0]) in opened:
            cost += _utf8_len(listed[1]) + 3  # "; [3]: " after its list's other records
        else:
            cost += _utf8_len(block.indent) + (_utf8_len(line.group) + 2 if line.group else 0)
    if block.head and not block.head_taken:
        cost += _utf8_len(block.head) + 1
    return cost


def _widen(ranked: list[tuple[_Block, _Line]], room: int) -> int:
    """Compacted lines taken back to their whole form, the best first, while ``room``
    bytes allow; the bytes that took."""
    spent = 0
    for _, line in ranked:
        if not line.taken or line.whole is None:
            continue
        extra = _utf8_len(line.whole) - _utf8_len(line.text)
        if extra <= room - spent:
            line.text = line.whole
            spent += extra
    return spent


def _dedup_key(line: _Line) -> str:
    return line.text if line.group is None else f"{line.group}\0{line.text}"


def _opener(group: list[tuple[int, _Line]]) -> int:
    """The field that opens its record's line: of the fields worth nearly as much as the
    best one (an id, a code, a name), the one with the most score per byte."""
    best = max(line.score for _, line in group)
    near = [(index, line) for index, line in group if line.score >= _OPENER_SHARE * best]
    return max(near, key=lambda pair: pair[1].score / (_utf8_len(pair[1].text) + 8))[0]


def _pack(blocks: list[_Block], max_bytes: int) -> str:
    """Earlier summaries and requests first, then lines by score per byte; the budget is
    filled with a cut line when a whole one no longer fits."""
    used = -1  # each line is counted with its newline; the last one has none
    opened: set[tuple[int, str]] = set()

    def take(block: _Block, line: _Line) -> None:
        nonlocal used
        used += _cost(block, line, opened)
        line.taken = True
        block.head_taken = block.head_taken or bool(block.head)
        if line.group is not None:
            opened.add((line.block, line.group))
            listed = _list_item(line.group)
            if listed is not None:
                opened.add((line.block, _LIST_KEY + listed[0]))

    prior_room = int(max_bytes * _PRIOR_SHARE)
    everything = [(block, line) for block in blocks for line in block.lines]
    firsts = [(b, ln) for b, ln in everything if ln.tier == 0]
    for block, line in firsts:  # in order, up to their share of the budget
        cost = _cost(block, line, opened)
        if used + cost <= prior_room or (
            line.text.startswith(USER_PREFIX) and used + cost <= max_bytes
        ):
            take(block, line)
    _take_prior_rest(firsts, max_bytes - used, partial(_cost, opened=opened), take)

    def priority(block: _Block, line: _Line) -> float:
        base = _COST_BASE if line.group is None else _FIELD_COST_BASE
        bonus = 8.0 if line.tier == 0 else 0.0
        # A line's head counts as unpaid (a static order); a field's head not at all, so
        # that an opened record's fields, which cost only themselves, come next.
        head = _utf8_len(block.head) + 1 if block.head else 0
        if line.group is not None or not block.head_taken:
            head = 0
        cost = _cost(block, line, opened) + head
        if line.group is not None and block.head and not block.head_taken:
            cost -= _utf8_len(block.head) + 1
        return (line.score + bonus) / (cost + base)

    candidates = [(b, ln) for b, ln in everything if not ln.taken]
    by_group: dict[tuple[int, str], list[int]] = {}
    by_list: dict[tuple[int, str], list[int]] = {}
    for index, (_, line) in enumerate(candidates):
        if line.group is not None:
            by_group.setdefault((line.block, line.group), []).append(index)
            listed = _list_item(line.group)
            if listed is not None:
                by_list.setdefault((line.block, listed[0]), []).append(index)
    # A record's line starts with its best field (its id, its name): another field waits
    # until that one is in, so no line holds a price without what it is the price of.
    openers = {_opener([(i, candidates[i][1]) for i in indices]) for indices in by_group.values()}
    heap = [
        (-priority(b, ln), ln.block, ln.order, index) for index, (b, ln) in enumerate(candidates)
    ]
    heapq.heapify(heap)
    said = {_dedup_key(line) for _, line in firsts if line.taken}
    ranked: list[tuple[_Block, _Line]] = []
    while heap:
        negative, _, _, index = heapq.heappop(heap)
        block, line = candidates[index]
        if line.taken or -negative < priority(block, line) - 1e-12:
            continue  # taken, or a fresher entry (its record's line is open) is queued
        waiting = (
            line.group is not None
            and (line.block, line.group) not in opened
            and index not in openers
        )
        if waiting:
            continue  # queued again when its record's line opens
        ranked.append((block, line))
        if _dedup_key(line) in said or line.score <= _FILLER_MAX:
            continue  # said already, or a filler: only for what is left at the end
        cost = _cost(block, line, opened)
        if used + cost > max_bytes:
            # Most of a better line says more than a worse one whole: cut it to the room.
            room = max_bytes - used - (cost - _utf8_len(line.text))
            if line.group is not None or room < max(_MIN_PIECE, _CUT_SHARE * _utf8_len(line.text)):
                continue
            piece = _clip_whole_words(line.text, room)
            if not piece or _score(piece, listing=False, diff=False) <= 0:
                continue  # what fits of it says nothing ("Total Cost…" of "Total Cost: $105")
            line.text = piece
        said.add(_dedup_key(line))
        newly_open = line.group is not None and (line.block, line.group) not in opened
        listed = _list_item(line.group) if line.group else None
        list_opens = listed is not None and (line.block, _LIST_KEY + listed[0]) not in opened
        take(block, line)
        if newly_open:
            # The rest of this record's fields now cost only themselves: queue them again.
            assert line.group is not None
            requeue = list(by_group[(line.block, line.group)])
            if list_opens:
                # ... and the other records of its list no longer need their path.
                assert listed is not None
                requeue += by_list.get((line.block, listed[0]), [])
            for other in requeue:
                b, ln = candidates[other]
                if not ln.taken:
                    heapq.heappush(heap, (-priority(b, ln), ln.block, ln.order, other))
    # Fill what is left with the best lines that did not fit, cut to the room.
    for block, line in ranked:
        if line.taken or line.group is not None or _dedup_key(line) in said:
            continue  # a field cut in its value says nothing
        if line.score <= _FILLER_MAX:
            continue
        cost = _cost(block, line, opened)
        room = max_bytes - used - (cost - _utf8_len(line.text))
        if room < _MIN_PIECE:
            continue
        piece = _clip_whole_words(line.text, room)
        if not piece or _score(piece, listing=False, diff=False) <= 0:
            continue  # what fits of it says nothing
        line.text = piece
        said.add(_dedup_key(line))
        take(block, line)
        if max_bytes - used < _MIN_PIECE:
            break
    used += _widen([*firsts, *ranked], max_bytes - used)
    # Then lines with nothing in them, whole, so that the budget is used.
    for block, line in ranked:
        if line.taken or line.score > _FILLER_MAX or _dedup_key(line) in said:
            continue
        if used + _cost(block, line, opened) <= max_bytes:
            said.add(_dedup_key(line))
            take(block, line)
    out: list[str] = []
    shown = [block for block in blocks if any(line.taken for line in block.lines)]
    for block in shown:
        kept = sorted((line for line in block.lines if line.taken), key=lambda ln: ln.order)
        # A call alone in the summary (the others' lines were all repeats or left out):
        # its result lines need no indent. The bytes were counted with it: only shorter.
        indent = "" if len(shown) == 1 else block.indent
        if block.head:
            out.append(block.head)
        out.extend(_render(block, kept, indent))
    if not out and blocks:
        # Not even one line fits: as much of the most important one as fits.
        block, line = min(everything, key=lambda pair: (pair[1].tier, -pair[1].score))
        text = block.head or line.text
        out.append(_clip_at_word_end(text, max_bytes))
    return _clip_bytes("\n".join(out), max_bytes)


def _pack_to_fill(blocks: list[_Block], max_bytes: int, check: Callable[[], None]) -> str:
    """:func:`_pack`, again with a larger virtual budget while rendering saved bytes the
    cost model cannot see (a call alone in the summary writes its lines without their
    indent), halving the step back when a packing comes out too long: the best summary
    within ``max_bytes``, never more."""
    texts = [(line, line.text) for block in blocks for line in block.lines]
    best = _pack(blocks, max_bytes)
    fits, over = max_bytes, 0  # the largest virtual budget that fitted; the least that did not
    for _ in range(_REPACKS):
        left = max_bytes - _utf8_len(best)
        virtual = fits + left if not over else (fits + over) // 2
        if (not over and left < _MIN_PIECE) or virtual <= fits:
            break
        check()
        for line, text in texts:  # undo the last packing: nothing taken, nothing cut
            line.text = text
            line.taken = False
        for block in blocks:
            block.head_taken = False
        candidate = _pack(blocks, virtual)
        if _utf8_len(candidate) > max_bytes:
            over = virtual
        else:
            fits = virtual
            if _utf8_len(candidate) >= _utf8_len(best):
                best = candidate
    return best
