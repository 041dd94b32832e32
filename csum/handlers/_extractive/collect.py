"""The prompt's entries as blocks of scored lines: requests, calls and results, answers,
earlier summaries."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from cast import SUMMARIZATION_TOOL_NAME
from csum._pairs import SUMMARIZED_CONTENT_PREFIX
from csum.archive import split_archive_line
from csum.handlers._extractive.calls import (
    _argument_pairs,
    _arguments,
    _call_cap,
    _call_shows,
    _credit_codes,
    _render_call,
    _written_lines,
)
from csum.handlers._extractive.code_tools import (
    focus_line,
)
from csum.handlers._extractive.lines import _body_lines
from csum.handlers._extractive.reading import _first_line
from csum.handlers._extractive.rendering import (
    RESULT_INDENT,
    USER_PREFIX,
    _is_prior_summary,
    _prior_blocks,
    _prior_calls,
)
from csum.handlers._extractive.runs import (
    call_line,
    favour_run_ends,
    outcome_over_call,
)
from csum.handlers._extractive.text import _clip, _clip_whole_words, _utf8_len, _window
from csum.handlers._extractive.units import _Block, _Line
from csum.handlers._extractive.weights import (
    _COMPACT_RATIO,
    _LINE_WINDOW,
    _MIN_WINDOW,
    _PRIOR_SCORE,
    _USER_BONUS,
)
from csum.prompt import CONTEXT_TAG, PromptEntry

_HUMAN_ROLES = frozenset({"human", "user"})


def _collect(
    entries: tuple[PromptEntry, ...], max_bytes: int, check: Callable[[], None]
) -> list[_Block]:
    blocks: list[_Block] = []
    calls: dict[str, str] = {}
    arguments: dict[str, frozenset[str]] = {}
    written: dict[str, frozenset[str]] = {}
    focus: dict[str, int | None] = {}  # the line each call asked to see
    requests = [
        e
        for e in entries
        if e.role in _HUMAN_ROLES and e.kind == "text" and e.section != CONTEXT_TAG
    ]
    request_cap = max(48, min(600, max_bytes * 35 // 100 // max(1, len(requests))))
    call_count = _call_count(entries)
    call_cap = _call_cap(call_count, max_bytes)
    lone_cut = ""  # the line of a prompt's only call, cut to its share
    width = max(_MIN_WINDOW, min(_LINE_WINDOW, max_bytes // 3))
    # Room for less than the prompt says: an answer's long lines in their compact form.
    tight = sum(_utf8_len(e.content) + _utf8_len(e.args) for e in entries) > (
        _COMPACT_RATIO * max_bytes
    )
    for entry in entries:
        check()
        if entry.kind == "tool_call":
            if entry.name != SUMMARIZATION_TOOL_NAME:
                parsed = _arguments(entry.args)
                render = partial(_render_call, entry.name, entry.args, parsed)
                capped = render(call_cap)
                calls[entry.call_id] = call_line(capped, render, max_bytes, call_count)
                lone_cut = capped if call_count == 1 else ""
                arguments[entry.call_id] = _argument_pairs(parsed)
                written[entry.call_id] = _written_lines(parsed)
                focus[entry.call_id] = focus_line(parsed)
            continue
        if _is_prior_summary(entry):
            text = entry.content.removeprefix(SUMMARIZED_CONTENT_PREFIX)
            blocks.extend(_prior_blocks(text, len(blocks), call_cap))
        elif entry.section == CONTEXT_TAG:
            # The user's messages given as context stay in the chain beside the summary
            # (the instructions say not to summarize them): repeating them wastes it.
            continue
        elif entry.kind == "text" and entry.role in _HUMAN_ROLES:
            block = _Block()
            # An earlier summary of the user's messages ends with the line naming their
            # archived batch: it stays as it was and first, as in any earlier summary.
            text, archived = split_archive_line(entry.content.rstrip())
            for item in _body_lines(text, len(blocks), check, tool=False, width=width):
                if not item.text.startswith(USER_PREFIX):  # an earlier summary's line stays
                    item.text = USER_PREFIX + item.text
                item.score += _USER_BONUS  # what the user said: requests, constraints
                block.lines.append(item)
            if block.lines:
                first = min(block.lines, key=lambda ln: ln.order)
                cut = _clip_whole_words(first.text, request_cap) or _clip(first.text, request_cap)
                if cut != first.text:  # whole again if room is left at the end
                    first.text, first.whole = cut, first.text
                first.tier = 0  # the request itself comes first
            if archived:
                last = max((ln.order for ln in block.lines), default=-1) + 1
                block.lines.append(_Line(len(blocks), last, archived, _PRIOR_SCORE, tier=0))
            if block.lines:
                blocks.append(block)
        elif entry.kind == "tool_result":
            head = calls.pop(entry.call_id, "") or _render_call(
                entry.name or "tool", "", {}, call_cap
            )
            block = _Block(head=head, head_score=4.0, indent=RESULT_INDENT)
            block.lines = list(
                _body_lines(
                    entry.content,
                    len(blocks),
                    check,
                    tool=True,
                    width=width,
                    said=frozenset(
                        p for p in arguments.pop(entry.call_id, frozenset()) if _call_shows(head, p)
                    ),
                    written=written.pop(entry.call_id, frozenset()),
                    focus=focus.pop(entry.call_id, None),
                )
            )
            if not block.lines:
                outcome = "(empty)" if not entry.content.strip() else _first_line(entry.content)
                block.lines.append(_Line(len(blocks), 0, _window(outcome, 100), 0.5))
            favour_run_ends(block.lines)
            _credit_codes(block)
            blocks.append(block)
        elif entry.kind in ("text", "reasoning") and entry.content.strip():
            block = _Block()
            weight = 0.4 if entry.kind == "reasoning" else 1.0
            lines = _body_lines(
                entry.content, len(blocks), check, tool=False, width=width, compact=tight
            )
            for item in lines:
                item.score *= weight
                block.lines.append(item)
            blocks.append(block)
    for head in calls.values():  # calls without a result
        blocks.append(
            _Block(
                head=head,
                head_score=3.0,
                indent=RESULT_INDENT,
                lines=[_Line(len(blocks), 0, "(no result)", 3.0)],
            )
        )
    _drop_lone_indent(blocks)
    outcome_over_call(blocks, max_bytes, _utf8_len, lone_cut)
    return blocks


def _drop_lone_indent(blocks: list[_Block]) -> None:
    """A call alone in its summary needs no indent to tell its result lines from other
    blocks' lines: two bytes a line saved for what the result says."""
    if len(blocks) == 1:
        blocks[0].indent = ""


def _call_count(entries: tuple[PromptEntry, ...]) -> int:
    """How many call lines the summary may hold: the prompt's calls and those of the
    earlier summaries in it."""
    calls = sum(1 for e in entries if e.kind == "tool_call")
    return calls + sum(_prior_calls(e.content) for e in entries if _is_prior_summary(e))
