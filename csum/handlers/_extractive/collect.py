"""The prompt's entries as blocks of scored lines: requests, calls (their line,
``name(arguments)``) and results, answers, earlier summaries."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import regex

from cast import SUMMARIZATION_TOOL_NAME
from cast.internals import utf8_len
from csum.handlers._extractive.code_tools import fit_command, without_echo
from csum.handlers._extractive.reading import _body_lines
from csum.handlers._extractive.rendering import (
    RESULT_INDENT,
    _Block,
    _head_codes,
    _Line,
    _prior_blocks,
    _prior_calls,
    _request_line,
)
from csum.handlers._extractive.text import (
    _ELLIPSIS,
    _HOME,
    _clip,
    _clip_middle,
    _clip_whole_words,
    _identifiers,
    _one_line,
    _scalar,
    _window,
)
from csum.handlers._extractive.weights import (
    _COMPACT_RATIO,
    _IDENT_CAP,
    _LINE_WINDOW,
    _PRIOR_SCORE,
    SHARES,
    WEIGHTS,
)
from csum.plan import SUMMARIZED_CONTENT_PREFIX
from csum.prompt import CONTEXT_TAG, PromptEntry

_REQUEST_PERCENT = 35  # percent of the budget the requests' first lines share ...
_MIN_REQUEST = 48  # ... each at least this many bytes ...
_MAX_REQUEST = 600  # ... and at most this many
_LONE_HEAD = 3.0  # score of a call's "(no result)" line
_EMPTY_RESULT = 0.5  # score of an empty result's "(empty)" or first line
_MIN_WINDOW = 80  # a line's window under a small budget: never below this

_HUMAN_ROLES = frozenset({"human", "user"})


class _Collector:
    """Reads the entries one by one into blocks: a call waits for its result."""

    def __init__(
        self, entries: tuple[PromptEntry, ...], max_bytes: int, check: Callable[[], None]
    ) -> None:
        self.entries, self.max_bytes, self.check = entries, max_bytes, check
        self.blocks: list[_Block] = []
        self.calls: dict[str, tuple[str, frozenset[str]]] = {}  # id: line, ``key=value``s
        requests = sum(
            e.role in _HUMAN_ROLES and e.kind == "text" and e.section != CONTEXT_TAG
            for e in entries
        )
        share = max_bytes * _REQUEST_PERCENT // 100 // max(1, requests)
        self.request_cap = max(_MIN_REQUEST, min(_MAX_REQUEST, share))
        # Call lines the summary may hold: the prompt's and its earlier summaries'.
        self.call_count = sum(e.kind == "tool_call" for e in entries) + sum(
            _prior_calls(e.content) for e in entries if e.earlier_summary
        )
        self.call_cap = _call_cap(self.call_count, max_bytes)
        self.lone_cut = ""  # the line of a prompt's only call, cut to its share
        self.width = max(_MIN_WINDOW, min(_LINE_WINDOW, max_bytes // 3))
        # Room for less than the prompt says: an answer's long lines in their compact form.
        self.tight = sum(utf8_len(e.content) + utf8_len(e.args) for e in entries) > (
            _COMPACT_RATIO * max_bytes
        )

    def _add(self, entry: PromptEntry) -> None:
        """One entry; the user's messages kept as context beside the summary are not repeated."""
        if entry.kind == "tool_call":
            if entry.name != SUMMARIZATION_TOOL_NAME:
                self._call(entry)
        elif entry.earlier_summary:
            text = entry.content.removeprefix(SUMMARIZED_CONTENT_PREFIX)
            self.blocks.extend(_prior_blocks(text, self.call_cap))
        elif entry.section == CONTEXT_TAG:
            return
        elif entry.kind == "text" and entry.role in _HUMAN_ROLES:
            self._request(entry)
        elif entry.kind == "tool_result":
            self._result(entry)
        elif entry.kind == "text" and entry.content.strip():
            # (never reasoning: the model's thinking is not copied into plain text)
            self._answer(entry)

    def _call(self, entry: PromptEntry) -> None:
        parsed = _arguments(entry.args)
        render = partial(_render_call, entry.name, entry.args, parsed)
        head = capped = render(self.call_cap)
        if self.call_count == 1 and _ELLIPSIS in capped:
            # A command cut in its middle names none: whole when that fits its share.
            whole = render(_UNCAPPED)
            if utf8_len(whole) <= int(self.max_bytes * _WHOLE_CALL_SHARE):
                head = whole
        self.lone_cut = capped if self.call_count == 1 else ""
        # Its scalar arguments as ``key=value``, as its flattened result writes them.
        items = parsed.items() if parsed is not None else ()
        said = frozenset(f"{k}={_scalar(v)}" for k, v in items if not isinstance(v, dict | list))
        self.calls[entry.call_id] = (head, said)

    def _request(self, entry: PromptEntry) -> None:
        """What the user said, its first line first; an earlier batch's archive line kept first."""
        block, archived = _Block(), entry.archive_ref
        for item in _body_lines(entry.body, self.check, tool=False, width=self.width):
            item.text = _request_line(item.text)
            item.score += WEIGHTS["user"]
            block.lines.append(item)
        if block.lines:
            first, cap = block.lines[0], self.request_cap
            cut = _clip_whole_words(first.text, cap) or _clip(first.text, cap)
            if cut != first.text:  # whole again if room is left at the end
                first.text, first.whole = cut, first.text
            first.tier = 0
        if archived:
            block.lines.append(_Line(archived, _PRIOR_SCORE, tier=0))
        if block.lines:
            self.blocks.append(block)

    def _result(self, entry: PromptEntry) -> None:
        """A tool's result under its call's line (its name when the call is not in the prompt)."""
        head, said = self.calls.pop(entry.call_id, ("", frozenset()))
        head = head or _render_call(entry.name or "tool", "", {}, self.call_cap)
        said = frozenset(p for p in said if _call_shows(head, p))
        lines = _body_lines(entry.content, self.check, tool=True, width=self.width, said=said)
        block = _Block(head=head, indent=RESULT_INDENT, lines=list(lines))
        if not block.lines:
            rows = entry.content.splitlines()
            outcome = next((_one_line(row) for row in rows if row.strip()), "(empty)")
            block.lines.append(_Line(_window(outcome, 100), _EMPTY_RESULT))
        if codes := _head_codes(head):  # lifts the best result line: the call line comes with it
            best = max(block.lines, key=lambda line: line.score)
            best.score += min(_IDENT_CAP, WEIGHTS["codes_in_call"] * codes)
        self.blocks.append(block)

    def _answer(self, entry: PromptEntry) -> None:
        """An agent's answer, compact when room is tight."""
        lines = _body_lines(
            entry.content, self.check, tool=False, width=self.width, compact=self.tight
        )
        self.blocks.append(_Block(lines=list(lines)))

    def collect(self) -> list[_Block]:
        """The entries as blocks of scored lines in order, then the calls that got no result."""
        for entry in self.entries:
            self.check()
            self._add(entry)
        for head, _ in self.calls.values():
            lines = [_Line("(no result)", _LONE_HEAD)]
            self.blocks.append(_Block(head=head, indent=RESULT_INDENT, lines=lines))
        if len(self.blocks) == 1:  # a lone call's result lines need no indent: bytes saved
            self.blocks[0].indent = ""
        _outcome_over_call(self.blocks, self.max_bytes, self.lone_cut)
        return self.blocks


_WHOLE_CALL_SHARE = 0.8  # of the budget a lone call's line may take to be whole
_UNCAPPED = 1 << 20
_OUTCOME_SCORE = 6.0  # a result line outranking its call's line (an error, a test count)


def _outcome_over_call(blocks: list[_Block], budget: int, cut: str) -> None:
    """A lone call's strong result line kept over its call line (or ``cut``) if both do not fit."""
    if len(blocks) != 1 or not blocks[0].head or not blocks[0].lines:
        return
    block = blocks[0]
    if any(line.tier == 0 for line in block.lines):
        return  # an earlier summary's lines keep their place, under their call line
    best = max(block.lines, key=lambda line: line.score)
    need = utf8_len(best.text) + 1  # as the packer counts: with its line break
    size = utf8_len(block.head)
    if best.score < _OUTCOME_SCORE or need + size <= budget or need - 1 > budget:
        return
    block.head = cut if cut and need + utf8_len(cut) <= budget else ""


# --- a call's line and what its arguments tell about its result ---------------------------

_ARG_CAP = 200  # bytes a call line takes at most
_MIN_CALL = 24  # ... but never less than this many bytes
_MIN_SHARED_CALL = 48  # ... nor, for each of several calls sharing a quarter, than this

_STDERR_REDIRECT = regex.compile(r"[ ]?+(?:2>&1|2>[ ]?+/dev/null|&>[ ]?+/dev/null)(?=[ ;|)&]|$)")
# A pipeline's last stage that only shortens the output: "| head -20", "| tail -n 50".
_OUTPUT_LIMIT = regex.compile(r"[ ]?+\|[ ]?+(?:head|tail)(?:[ ]++-[nc]?+[ ]?+\d{1,9}+)?+[ ]*+$")
_HEREDOC = regex.compile(r"<<-?+[ ]?+['\"]?+\w{1,40}+['\"]?+[ ]*+$")  # "cat <<'EOF'" ending a line

_COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell", "bash", "commandline", "query"})
_QUIET_KEYS = frozenset(
    {"description", "timeout", "run_in_background", "dangerouslydisablesandbox", "replace_all"}
)
_FLAGS = frozenset({"true", "false", "null", "none", "True", "False", "None"})


def _arguments(args: str) -> dict[str, Any] | None:
    """A call's arguments as a JSON object (empty text: none); None when not one."""
    try:
        value = json.loads(args) if args.strip() else {}
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _render_call(name: str, args: str, value: dict[str, Any] | None, cap: int) -> str:
    """``name(command)``, ``name(key=value, ...)``, or ``name(value)`` for one telling argument."""
    if value is None:
        return _clip(f"{name}({_one_line(args)})", cap)
    first: list[str] = []
    keyed: list[str] = []
    bare: list[str] = []
    room = cap - len(name) - 4  # the parentheses, and the ellipsis's two extra bytes
    for key, item in value.items():
        text = _HOME.sub("~/", _one_line(item)) if isinstance(item, str) else _scalar_or_json(item)
        lowered = str(key).lower()
        if lowered in _COMMAND_KEYS and isinstance(item, str):
            command = fit_command(_compact_command(item), room)
            first.insert(0, _clip_middle(command, room, head_share=0.75))
        elif isinstance(item, str) and "\n" in item.strip() and len(value) > 1:
            # A multi-line text beside other arguments (an edit's text) is not what names it.
            continue
        elif lowered not in _QUIET_KEYS:
            keyed.append(f"{key}={_clip_middle(text, room)}")
            # A value that names itself without its key (an id, a path; no number) goes bare.
            telling = len(text) >= 5 and not any(c.isspace() for c in text)
            telling = telling and any(c.isalpha() for c in text) and text not in _FLAGS
            bare.append(_clip_middle(text, room) if telling else keyed[-1])
    line = f"{name}({', '.join(first + keyed)})"
    if len(line) > cap or (not first and len(bare) == 1):
        # Too long with its keys, or a lone argument: without their keys, the values densest
        # in identifiers first (a cut at the end loses the prose).
        bare.sort(key=lambda value: -_identifiers(value) / (len(value) + 8))
        line = f"{name}({', '.join(first + bare)})"
    return _clip(line, cap)


def _compact_command(command: str) -> str:
    """A shell command by what ran: no ``2>&1``, no last ``| head -20``, its first line."""
    lines = [line.strip() for line in command.strip().splitlines()[:3]]
    if len(lines) > 1:
        # Its first line says what ran, with the next when the first opens a quote or heredoc.
        head = lines[0]
        if lines[1] and (_HEREDOC.search(head) or head.count('"') % 2 or head.count("'") % 2):
            head = f"{head} {lines[1]}"
        command = head + _ELLIPSIS
    command = _HOME.sub("~/", _STDERR_REDIRECT.sub("", _one_line(without_echo(command)))).strip()
    for _ in range(4):  # "| tail -50 | head -5" at most: bounded work
        match = _OUTPUT_LIMIT.search(command)
        if match is None or match.start() == 0:
            break
        command = command[: match.start()].rstrip()
    return command


def _call_shows(head: str, pair: str) -> bool:
    """Whether the call line ``head`` shows the argument ``pair`` (``key=value``), keyed or not."""
    value = pair.split("=", 1)[1]
    if pair in head or head.endswith(f"({value})"):
        return True
    # A first argument of several, keyless: words (a query) only; a code needs its key.
    return " " in value and f"({value}, " in head


def _call_cap(calls: int, max_bytes: int) -> int:
    """Bytes a call line may take: half the budget for one call, a shared quarter for several."""
    cap = min(_ARG_CAP, int(max_bytes * SHARES["call"]))
    if calls > 1:
        return max(_MIN_SHARED_CALL, min(cap, int(max_bytes * SHARES["calls"]) // calls))
    return max(_MIN_CALL, cap)


def _scalar_or_json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return "…"
