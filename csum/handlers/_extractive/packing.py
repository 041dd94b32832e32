"""Packing the scored lines into the budget: earlier summaries and requests first, then by
score per byte."""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache, partial

from cast.internals import utf8_len
from csum.handlers._extractive.features import _score
from csum.handlers._extractive.rendering import (
    USER_PREFIX,
    _Block,
    _Line,
    _list_item,
    _render_summary,
)
from csum.handlers._extractive.text import _clip_whole_words
from csum.handlers._extractive.weights import _FILLER_MAX, _PRIOR_SCORE, SHARES

_FIRST_TIER_BONUS = 8.0  # score per byte's numerator added to a first-tier line left over
_COST_BASE = 48  # bytes added to every line's cost when ranking: favours full lines a little
_FIELD_COST_BASE = 8  # ... and to a JSON field's: the fields of an open record come cheap
_CUT_SHARE = 0.9  # a line that does not fit is cut to the room if this share of it fits
_MIN_PIECE = 16  # below this many bytes of room, a cut line says too little
_OPENER_SHARE = 0.75  # a field opens its record's line if worth this share of the best
_REPACKS = 3  # packings again with the bytes rendering saved

_LIST_KEY = "\0"  # marks a list's path among the open records' paths
_NUMBER = re.compile(
    r"(?<![\w.])\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?![\w:])"  # a time of day
    r"|(?<![\w.:])\d+(?:[.,]\d+)*(?![\w:])"  # a count (not a path's line number)
)
_REPEATED = 8  # lines of one shape beyond this many are a log's repetition, not facts
_Pair = tuple[_Block, _Line]


def _shape(line: _Line) -> str:
    """A line with its standalone numbers masked (``test_2`` is no number)."""
    return _masked(_dedup_key(line))


_masked = lru_cache(maxsize=4096)(partial(_NUMBER.sub, "#"))


def _dedup_key(line: _Line) -> str:
    return line.text if line.group is None else f"{line.group}\0{line.text}"


def _opener(group: list[tuple[int, _Line]]) -> int:
    """The field opening its record's line: of those near the best, the most score per byte."""
    best = max(line.score for _, line in group)
    near = [(index, line) for index, line in group if line.score >= _OPENER_SHARE * best]
    return max(near, key=lambda pair: pair[1].score / (utf8_len(pair[1].text) + 8))[0]


def _pack(blocks: list[_Block], max_bytes: int) -> str:
    """Earlier summaries and requests first, then by score per byte, while lines add something."""
    packer = _Packer(blocks, max_bytes)
    firsts = packer.take_firsts()
    ranked = packer.take_by_score()
    packer.fill_cut(ranked)
    packer.widen([*firsts, *ranked])
    packer.fill_empty(ranked)
    return _render_summary(blocks, max_bytes)


class _Packer:
    """What is taken so far: bytes used, records whose line is open, lines said."""

    def __init__(self, blocks: list[_Block], max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = -1  # each line is counted with its newline; the last one has none
        self.opened: set[tuple[int, str]] = set()
        self.said: set[str] = set()
        self.shapes: set[str] = set()  # repeated shapes said
        self.everything = [(block, line) for block in blocks for line in block.lines]
        counts = Counter(_shape(line) for _, line in self.everything)
        # Shapes of a log's repeated lines: once one is taken, the next adds nothing.
        self.repeated = {shape for shape, count in counts.items() if count > _REPEATED}

    def is_said(self, line: _Line) -> bool:
        """Whether ``line`` is said already, or is a repeated line of a shape said."""
        return _dedup_key(line) in self.said or (bool(self.shapes) and _shape(line) in self.shapes)

    def body_cost(self, block: _Block, line: _Line) -> int:
        """Bytes ``line`` adds but its block's head (an open record's field: itself and a space)."""
        cost = utf8_len(line.text) + 1
        if line.group is None or (id(block), line.group) not in self.opened:
            listed = _list_item(line.group) if line.group else None
            if listed is not None and (id(block), _LIST_KEY + listed[0]) in self.opened:
                cost += utf8_len(listed[1]) + 3  # "; [3]: " after its list's other records
            else:
                cost += utf8_len(block.indent) + (utf8_len(line.group) + 2 if line.group else 0)
        return cost

    def cost(self, block: _Block, line: _Line) -> int:
        head = utf8_len(block.head) + 1 if block.head and not block.head_taken else 0
        return self.body_cost(block, line) + head

    def take(self, block: _Block, line: _Line) -> None:
        self.used += self.cost(block, line)
        line.taken = True
        block.head_taken = block.head_taken or bool(block.head)
        if line.group is not None:
            self.opened.add((id(block), line.group))
            listed = _list_item(line.group)
            if listed is not None:
                self.opened.add((id(block), _LIST_KEY + listed[0]))
        self.said.add(_dedup_key(line))
        if self.repeated and (shape := _shape(line)) in self.repeated:
            self.shapes.add(shape)

    def take_firsts(self) -> list[_Pair]:
        """The first tier in order up to its share (a request: the budget), then what fits."""
        prior_room = int(self.max_bytes * SHARES["prior"])
        firsts = [(b, ln) for b, ln in self.everything if ln.tier == 0]
        for block, line in firsts:
            room = self.max_bytes if line.text.startswith(USER_PREFIX) else prior_room
            if self.used + self.cost(block, line) <= room:
                self.take(block, line)
        for block, line in firsts:
            fits = self.used + self.cost(block, line) <= self.max_bytes
            if not line.taken and line.score >= _PRIOR_SCORE and fits:
                self.take(block, line)
        return firsts

    def priority(self, block: _Block, line: _Line) -> float:
        """Score per byte: a line's head counted as unpaid, a field's not at all (static order)."""
        base = _COST_BASE if line.group is None else _FIELD_COST_BASE
        bonus = _FIRST_TIER_BONUS if line.tier == 0 else 0.0
        head = utf8_len(block.head) + 1 if block.head and line.group is None else 0
        return (line.score + bonus) / (self.body_cost(block, line) + head + base)

    def take_by_score(self) -> list[_Pair]:
        """The other lines by score per byte while they fit; every line in its ranked order.
        A record's other fields wait for its best, then come cheaper (queued again)."""
        candidates = [(b, ln) for b, ln in self.everything if not ln.taken]
        by_group: dict[tuple[int, str], list[int]] = {}
        by_list: dict[tuple[int, str], list[int]] = {}
        for index, (block, line) in enumerate(candidates):
            if line.group is not None:
                by_group.setdefault((id(block), line.group), []).append(index)
                listed = _list_item(line.group)
                if listed is not None:
                    by_list.setdefault((id(block), listed[0]), []).append(index)
        openers = {_opener([(i, candidates[i][1]) for i in group]) for group in by_group.values()}
        heap = [(-self.priority(b, ln), i) for i, (b, ln) in enumerate(candidates)]
        heapq.heapify(heap)
        ranked: list[_Pair] = []
        while heap:
            negative, index = heapq.heappop(heap)
            block, line = candidates[index]
            if line.taken or -negative < self.priority(block, line) - 1e-12:
                continue  # taken, or a fresher entry (its record's line is open) is queued
            group, opened = line.group, self.opened
            if group is not None and (id(block), group) not in opened and index not in openers:
                continue  # queued again when its record's line opens
            ranked.append((block, line))
            # Said already, a filler (only for what is left at the end), or too long.
            if line.score <= _FILLER_MAX or self.is_said(line) or not self._fits(block, line):
                continue
            listed = _list_item(group) if group else None
            list_opens = listed is not None and (id(block), _LIST_KEY + listed[0]) not in opened
            newly_open = group is not None and (id(block), group) not in opened
            self.take(block, line)
            if group is None or not newly_open:
                continue
            # The record's line it opens queues its record's and list's others again.
            requeue = list(by_group[(id(block), group)])
            if listed is not None and list_opens:
                requeue += by_list.get((id(block), listed[0]), [])
            for other in requeue:
                b, ln = candidates[other]
                if not ln.taken:
                    heapq.heappush(heap, (-self.priority(b, ln), other))
        return ranked

    def _fits(self, block: _Block, line: _Line) -> bool:
        """Whether ``line`` fits, cut to the room when most of it does."""
        cost = self.cost(block, line)
        if self.used + cost <= self.max_bytes:
            return True
        room = self.max_bytes - self.used - (cost - utf8_len(line.text))
        if line.group is not None or room < max(_MIN_PIECE, _CUT_SHARE * utf8_len(line.text)):
            return False
        return self._cut_to(line, room)

    def _cut_to(self, line: _Line, room: int) -> bool:
        """``line`` cut to ``room`` bytes between words, unless what fits says nothing."""
        piece = _clip_whole_words(line.text, room)
        if not piece or _score(piece, listing=False, diff=False) <= 0:
            return False
        line.text = piece
        return True

    def fill_cut(self, ranked: list[_Pair]) -> None:
        """What is left filled with the best lines that did not fit, cut (not a field)."""
        for block, line in ranked:
            if line.taken or line.group is not None or line.score <= _FILLER_MAX:
                continue
            room = self.max_bytes - self.used - (self.cost(block, line) - utf8_len(line.text))
            if self.is_said(line) or room < _MIN_PIECE or not self._cut_to(line, room):
                continue
            self.take(block, line)
            if self.max_bytes - self.used < _MIN_PIECE:
                break

    def widen(self, ranked: list[_Pair]) -> None:
        """Compacted lines taken back to their whole form, the best first, while they fit."""
        for _, line in ranked:
            if line.taken and line.whole is not None:
                extra = utf8_len(line.whole) - utf8_len(line.text)
                if extra <= self.max_bytes - self.used:
                    line.text = line.whole
                    self.used += extra

    def fill_empty(self, ranked: list[_Pair]) -> None:
        """Then lines with little in them, whole, while they fit, one line of a shape."""
        for block, line in ranked:
            if line.taken or line.score > _FILLER_MAX or self.is_said(line):
                continue
            if self.used + self.cost(block, line) <= self.max_bytes:
                self.take(block, line)


def _pack_to_fill(blocks: list[_Block], max_bytes: int, check: Callable[[], None]) -> str:
    """:func:`_pack` again with a larger virtual budget while rendering saved bytes, never over."""
    texts = [(line, line.text) for block in blocks for line in block.lines]
    best = _pack(blocks, max_bytes)
    fits, over = max_bytes, 0  # the largest virtual budget that fitted; the least that did not
    for _ in range(_REPACKS):
        left = max_bytes - utf8_len(best)
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
        if utf8_len(candidate) > max_bytes:
            over = virtual
        else:
            fits = virtual
            if utf8_len(candidate) <= utf8_len(best) and not over:
                break  # more room took nothing more: the summary said all it has
            best = candidate
    return best
