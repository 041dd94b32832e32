"""The clearing stage: old tool results become one-line placeholders (tool, call id,
size, archive reference, a gist of salient lines), with no handler call; and the edits
of a parsed chain by message position the Compactor's stages make."""

from __future__ import annotations

import json
import operator
import re
from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import count, islice
from typing import TYPE_CHECKING, Final

import regex

from cast import (
    SUMMARIZATION_TOOL_NAME,
    AnyPart,
    BodyPair,
    ChainAST,
    Message,
    ProviderPart,
    Role,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.internals import map_messages, utf8_len
from csum.archive import HistoryArchive, archive_line, message_reference
from csum.store_events import EventSink

if TYPE_CHECKING:
    from csum.config import Clearing

__all__ = [
    "ANSI",
    "ARGUMENT_GIST_BYTES",
    "CLEARED_ARGUMENTS_KEY",
    "CLEARED_PREFIX",
    "ERROR_LINE",
    "EXCERPT_BYTES",
    "GIST_BYTES",
    "GIST_PREFIX",
    "GIST_SEPARATOR",
    "LINE_CAP",
    "LIST_MARK",
    "WEIGHTS",
    "ClearingPass",
    "clear_chain",
    "clear_evicted",
    "clear_tool_results",
    "edited",
    "error_words",
    "excerpt",
    "gist",
    "is_cleared",
    "placeholder",
    "reads_alike",
    "tokens_of_lines",
]

CLEARED_PREFIX: Final = "[cleared tool result: "
"""How every placeholder starts."""
CLEARED_ARGUMENTS_KEY: Final = "cleared_arguments_bytes"
"""The one key of a cleared call's arguments: ``{"cleared_arguments_bytes": 1234}``."""

GIST_BYTES: Final = 160
"""The most a gist takes, in UTF-8 bytes (separators included)."""
GIST_SEPARATOR: Final = " | "
"""Between the gist's lines (a gist is one line)."""
GIST_PREFIX: Final = "gist: "
"""How a placeholder's second line, the result's gist, starts."""

_PLACEHOLDER_TAIL = re.compile(
    r"(\d{1,19}) bytes\](?: \[archived: [0-9a-f]{16}\])?"
    rf"(?:\n{GIST_PREFIX}[^\n]{{1,{GIST_BYTES}}})?"
)


# -- placeholders ---------------------------------------------------------------------------


def placeholder(
    name: str, call_id: str, size: int, reference: str | None = None, summary: str = ""
) -> str:
    """The text a cleared result holds: a line naming the tool, the call id, the original
    size in UTF-8 bytes and, with an archive, the reference ``recall`` takes; then, when
    ``summary`` (the result's :func:`gist`) is not empty, a line ``gist: ...``."""
    head = f"{CLEARED_PREFIX}{_quoted(name)} call {_quoted(call_id)}, {size} bytes]"
    if reference is not None:
        head = f"{head} {archive_line(reference)}"
    if not summary:
        return head
    if "\n" in summary or utf8_len(summary) > GIST_BYTES:
        raise ValueError(f"a gist is one line of at most {GIST_BYTES} bytes, got {summary!r}")
    return f"{head}\n{GIST_PREFIX}{summary}"


_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f]*')


def _quoted(value: str) -> str:
    # JSON quoting: a name or id holding a newline or a quote stays on one line.
    if _PLAIN.fullmatch(value):
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False)


def is_cleared(result: ToolResult) -> bool:
    """Whether ``result`` holds a placeholder rendered for its own tool and call id."""
    content = result.content
    if not content.startswith(CLEARED_PREFIX):
        return False
    head = f"{CLEARED_PREFIX}{_quoted(result.name)} call {_quoted(result.tool_call_id)}, "
    return content.startswith(head) and _PLACEHOLDER_TAIL.fullmatch(content, len(head)) is not None


def _cleared_arguments(size: int) -> str:
    return json.dumps({CLEARED_ARGUMENTS_KEY: size})


def _arguments_cleared(call: ToolCall) -> bool:
    text = call.arguments
    if not text.startswith('{"' + CLEARED_ARGUMENTS_KEY):
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and list(value) == [CLEARED_ARGUMENTS_KEY]
        and type(value[CLEARED_ARGUMENTS_KEY]) is int
        and text == _cleared_arguments(value[CLEARED_ARGUMENTS_KEY])
    )


# -- one pass -------------------------------------------------------------------------------


@dataclass
class ClearingPass:
    """What one clearing pass made: the chain, and what it cleared."""

    messages: list[Message]
    results_cleared: int = 0
    inputs_cleared: int = 0
    reasoning_cleared: int = 0
    units_freed: int = 0
    originals: list[Message] = field(default_factory=list)
    """With ``references``: a tool message per cleared result holding the original."""

    @property
    def changed(self) -> bool:
        return bool(self.results_cleared or self.inputs_cleared or self.reasoning_cleared)


def clear_tool_results(
    messages: Sequence[Message],
    options: Clearing,
    *,
    measure: Callable[[Message], int],
    goal: int | None,
    pin: Callable[[Message], bool] | None = None,
    references: bool = False,
) -> ClearingPass:
    """Clear old tool results of a valid chain, oldest first, until ``goal`` units are
    freed (None: everything eligible); ``messages`` is never changed. Never touched: the
    newest ``options.keep`` tool uses, the newest body pair, summaries, excluded tools,
    messages ``pin`` names, results no larger than their placeholder.
    ``references``: placeholders name the archive reference of the original."""
    out = list(messages)
    done = ClearingPass(out)
    protected = _protected_calls(messages, options.keep)
    last_ai = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].role is Role.AI), None
    )
    if last_ai is None:
        return done
    holders = (  # AI messages holding a protected call: reasoning is cleared before the first
        i
        for i in range(last_ai)
        if messages[i].role is Role.AI
        and any(type(p) is ToolCall and p.id in protected for p in messages[i].parts)
    )
    boundary = next(holders, last_ai)
    for index in range(last_ai):
        if goal is not None and done.units_freed >= goal:
            break
        message = messages[index]
        role = message.role
        if role is Role.AI and not (options.clear_tool_inputs or options.clear_reasoning):
            continue
        if role not in (Role.AI, Role.TOOL) or (pin is not None and pin(message)):
            continue
        if role is Role.AI:
            new = _clear_ai(message, options, protected, old=index < boundary, done=done)
        else:
            new = _clear_results(message, protected, options.exclude_tools, references, done)
        if new is not message:
            done.units_freed += measure(message) - measure(new)
            out[index] = new
    return done


async def clear_chain(
    ast: ChainAST,
    options: Clearing,
    *,
    measure: Callable[[Message], int],
    goal: int | None,
    pin: Callable[[Message], bool] | None,
    archive: HistoryArchive | None,
    emit: EventSink,
    at_least: int | None,
) -> tuple[ChainAST, ClearingPass] | None:
    """The clearing stage: ``ast`` with enough old tool results cleared to free ``goal``
    units, and the pass; None when it frees nothing, or less than ``at_least``. With an
    archive, the originals are archived first and the placeholders name them."""
    messages = ast.to_messages()
    run = partial(clear_tool_results, messages, options, measure=measure, goal=goal, pin=pin)
    done = run(references=archive is not None)
    if not done.changed or (at_least is not None and done.units_freed < at_least):
        return None
    if archive is not None and done.originals:
        line = await archive.add_summarized(done.originals, emit)
        if line is None:  # the store failed: placeholders without references
            done = run(references=False)
    changed = zip(messages, done.messages, strict=True)
    return edited(ast, {i: new for i, (old, new) in enumerate(changed) if new is not old}), done


def clear_evicted(messages: Sequence[Message], options: Clearing) -> list[Message]:
    """What a summary replaces, as its handler reads it: every eligible tool result (the
    newest ``keep`` too: they leave the chain) as its placeholder with its gist, long
    call arguments as their gist. ``messages`` is never changed."""
    done, excluded = ClearingPass([]), options.exclude_tools
    return [
        _clear_results(message, set(), excluded, False, done)
        if message.role is Role.TOOL
        else _gist_arguments(message, excluded)
        if message.role is Role.AI and message.tool_calls
        else message
        for message in messages
    ]


ARGUMENT_GIST_BYTES: Final = 256
"""Evicted calls' arguments longer than this reach the handler as their gist."""
_SHORT_VALUE: Final = 120  # JSON bytes of an argument value kept whole in a gist


def _gist_arguments(message: Message, excluded: frozenset[str]) -> Message:
    """``message`` with long call arguments as JSON gists (short values whole)."""
    parts = [
        part.evolve(arguments=short)
        if type(part) is ToolCall
        and part.name not in excluded
        and part.name != SUMMARIZATION_TOOL_NAME
        and utf8_len(part.arguments) > ARGUMENT_GIST_BYTES
        and not _arguments_cleared(part)
        and utf8_len(short := _arguments_gist(part.arguments)) < utf8_len(part.arguments)
        else part
        for part in message.parts
    ]
    changed = any(map(operator.is_not, parts, message.parts))
    return Message.from_parts(Role.AI, parts) if changed else message


def _arguments_gist(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if not isinstance(value, dict):
        return json.dumps({CLEARED_ARGUMENTS_KEY: utf8_len(text), "gist": gist(text)})
    out: dict[str, object] = {}
    for key, item in value.items():
        whole = json.dumps(item, ensure_ascii=False)
        if utf8_len(whole) <= _SHORT_VALUE:
            out[key] = item
        else:
            source = item if isinstance(item, str) else whole
            out[key] = f"[{utf8_len(whole)} bytes] {gist(source)}"
    return json.dumps(out, ensure_ascii=False)


def _protected_calls(messages: Sequence[Message], keep: int) -> set[str]:
    """Ids of the newest ``keep`` tool calls (summary calls do not count)."""
    ids: set[str] = set()
    if keep <= 0:
        return ids
    for message in reversed(messages):
        if message.role is not Role.AI:
            continue
        for part in reversed(message.parts):
            if type(part) is ToolCall and part.name != SUMMARIZATION_TOOL_NAME:
                ids.add(part.id)
                if len(ids) >= keep:
                    return ids
    return ids


def _clear_ai(
    message: Message, options: Clearing, protected: set[str], *, old: bool, done: ClearingPass
) -> Message:
    excluded = options.exclude_tools
    parts: list[AnyPart] = []
    changed = False
    reasoning_cleared = inputs_cleared = 0  # counted only if the message is replaced
    for part in message.parts:
        kind = type(part)
        if kind is ToolCall:
            call: ToolCall = part  # type: ignore[assignment]
            if old and options.clear_reasoning and call.reasoning is not None:
                call = call.evolve(reasoning=None)
                reasoning_cleared += 1
            if (
                options.clear_tool_inputs
                and call.id not in protected
                and call.name not in excluded
                and call.name != SUMMARIZATION_TOOL_NAME
                and not _arguments_cleared(call)
            ):
                size = len(call.arguments.encode("utf-8", "surrogatepass"))
                replacement = _cleared_arguments(size)
                if len(replacement) < size:
                    call = call.evolve(arguments=replacement)
                    inputs_cleared += 1
            changed |= call is not part
            parts.append(call)
        elif kind is TextPart and old and options.clear_reasoning:
            text: TextPart = part  # type: ignore[assignment]
            if text.reasoning is None:
                parts.append(text)
                continue
            changed = True
            reasoning_cleared += 1
            if text.text:
                parts.append(text.evolve(reasoning=None))
        else:
            parts.append(part)
    if not changed or not parts:  # a reasoning-only message: an AI message needs a part
        return message
    done.reasoning_cleared += reasoning_cleared
    done.inputs_cleared += inputs_cleared
    return Message.from_parts(Role.AI, parts)


def _clear_results(
    message: Message,
    protected: set[str],
    excluded: frozenset[str],
    references: bool,
    done: ClearingPass,
) -> Message:
    """The tool message with its eligible results cleared (itself when none is)."""
    parts: list[AnyPart] = []
    changed = False
    for result, rest in _result_groups(message.parts):
        if result is None:
            parts.extend(rest)
            continue
        size = utf8_len(result.content) + sum(p.size for p in rest)
        eligible = (
            result.tool_call_id not in protected
            and result.name not in excluded
            and result.name != SUMMARIZATION_TOOL_NAME
            and not is_cleared(result)
        )
        if eligible and size > len(CLEARED_PREFIX):
            original = Message.from_parts(Role.TOOL, (result, *rest)) if references else None
            reference = message_reference(original) if original is not None else None
            text = placeholder(result.name, result.tool_call_id, size, reference)
            if utf8_len(text) < size:  # else its gist, a second line, cannot make it smaller
                text = placeholder(
                    result.name, result.tool_call_id, size, reference, gist(result.content)
                )
            if utf8_len(text) < size:
                parts.append(result.evolve(content=text))
                parts.extend(
                    p for p in rest if type(p) is ProviderPart and p.kind == "cache_control"
                )
                done.results_cleared += 1
                if original is not None:
                    done.originals.append(original)
                changed = True
                continue
        parts.append(result)
        parts.extend(rest)
    return Message.from_parts(Role.TOOL, parts) if changed else message


def _result_groups(
    parts: Sequence[AnyPart],
) -> list[tuple[ToolResult | None, list[AnyPart]]]:
    """Each result with the parts that follow it (its images, text, cache points)."""
    groups: list[tuple[ToolResult | None, list[AnyPart]]] = []
    for part in parts:
        if type(part) is ToolResult:
            groups.append((part, []))
        elif groups:
            groups[-1][1].append(part)
        else:
            groups.append((None, [part]))
    return groups


# -- the gist of a result ----------------------------------------------------------------

_MAX_LINES: Final = 4000  # lines of a result that are read from its start ...
_HEAD_CHARS: Final = 32_768  # ... within its first characters, of a result longer than
_TAIL_CHARS: Final = 8_192  # these two, with the lines of its end (a log's outcome)
_PIECE: Final = 72  # bytes of one line, at most (longer lines: the words around a fact)


def gist(text: str, limit: int = GIST_BYTES) -> str:
    """The gist of ``text`` in at most ``limit`` UTF-8 bytes ("" when nothing fits)."""
    if limit <= 0:
        return ""
    lines: list[str] = []
    seen: set[str] = set()
    for raw in _read(text):
        start = raw[:LINE_CAP]
        if "[" in start:  # every colour code holds one
            start = ANSI.sub("", start)
        line = " ".join(LIST_MARK.sub("", start).split())
        if line and line not in seen:
            seen.add(line)
            lines.append(line)
    if not lines:
        return ""
    facts = tokens_of_lines(lines)  # read once: ranking and trimming use them
    errors = error_words(lines)
    weights = [
        (WEIGHTS["error"] if error is not None else 0.0) + sum(WEIGHTS[kind] for _, kind in found)
        for found, error in zip(facts, errors, strict=True)
    ]
    ranked = sorted((i for i in range(1, len(lines)) if weights[i] > 0), key=lambda i: -weights[i])
    chosen: dict[int, str] = {}
    used = 0
    for index in (0, *ranked):
        if chosen and limit - used <= len(GIST_SEPARATOR):
            break  # full: no piece (at least one byte) fits after a separator
        piece = _piece(lines[index], facts[index], errors[index])
        cost = utf8_len(piece) + (len(GIST_SEPARATOR) if chosen else 0)
        if used + cost > limit:
            continue
        chosen[index] = piece
        used += cost
    return GIST_SEPARATOR.join(chosen[i] for i in sorted(chosen))


def _read(text: str) -> list[str]:
    """The lines the gist reads: of a huge result its first and its last ones."""
    if len(text) <= _HEAD_CHARS + _TAIL_CHARS:
        return list(islice(text.splitlines(), _MAX_LINES))
    head = text[:_HEAD_CHARS].splitlines()[:-1]  # the last one may be cut
    tail = text[-_TAIL_CHARS:].splitlines()[1:]  # the first one may be cut
    return head[:_MAX_LINES] + tail


def _piece(line: str, found: list[tuple[str, str]], error: str | None) -> str:
    """``line`` within :data:`_PIECE` bytes: whole, or around its first error word or fact."""
    if utf8_len(line) <= _PIECE:
        return line
    token = error if error is not None else found[0][0] if found else line.split(maxsplit=1)[0]
    piece = excerpt(line, token)[:_PIECE]
    while utf8_len(piece) > _PIECE:
        piece = piece[:-1]
    return piece


# -- salience: the facts on a line (shared with the fact guard) ----------------------------

LINE_CAP: Final = 2000
"""Characters of a line that are read (longer lines: their start)."""
EXCERPT_BYTES: Final = 72
"""Bytes of an excerpt around a fact, at most."""

_URL = regex.compile(r"https?://[^\s<>\"'`)\]]{3,200}")
_PATH = regex.compile(
    r"(?<![\w/.-])(?:[\w.~-]{0,60}/){1,12}[\w.-]{1,80}(?::\d{1,6}){0,2}"
    r"|(?<![\w/.-])[\w-]{1,60}\.[A-Za-z][A-Za-z0-9]{0,6}(?::\d{1,6}){1,2}"
)
_MIXED = regex.compile(r"(?<![\w.-])(?=[\w.-]{0,80}\d)(?=[\w.-]{0,80}[A-Za-z])\w[\w.-]{2,80}")
_VERSION = regex.compile(r"(?<![\w.])v?\d{1,4}(?:\.\d{1,6}){1,3}(?![\w.])")
_HASH = regex.compile(r"(?<!\w)[0-9a-f]{7,64}(?!\w)")
_NAMED_NUMBER = regex.compile(
    r"(?<![\w.])(?:[A-Za-z_][\w-]{1,40}[ \t]{0,3}[:=][ \t]{0,3}\"?-?\$?\d[\d,.]{0,20}"
    r"|-?\$?\d[\d,.]{0,20}[ \t]?(?:%|[A-Za-z]{1,12}))(?![\w.])"
)
_DIGIT = regex.compile(r"\d")  # the same \d as the patterns' (any decimal digit)
ERROR_LINE: Final = regex.compile(
    r"\b(?:[A-Z]\w{0,40}(?:Error|Exception)|Traceback|FAILED|FAIL|ERROR|[Ee]rror|failed|"
    r"fatal|panic|denied|refused|[Nn]o such file|not found|[Cc]annot)\b"
)
"""A line that reports a failure."""
ANSI: Final = regex.compile(r"\x1b?\[[0-9;]{0,12}m")
"""Colour codes, with or without ESC."""
LIST_MARK: Final = regex.compile(r"^\s{0,8}(?:[-*+•]|\d{1,3}[.)])\s{1,4}")
"""A list item's mark at the start of a line."""
_TRAILING = ".,;:!?\"')]}"

WEIGHTS: Final = {"error": 3.0, "path": 2.5, "url": 2.0, "id": 2.0, "number": 1.5}
"""What a fact of each kind weighs."""


def _needed(text: str, fast: bool = False) -> tuple[tuple[str, Pattern, bool], ...]:
    """Each kind's pattern (``fast``: the ``re`` twins) and whether ``text`` can match it."""
    digit = _DIGIT.search(text) is not None
    return (
        ("url", _URL, "://" in text),
        ("path", _FAST_PATH if fast else _PATH, "/" in text or (digit and ":" in text)),
        ("number", _FAST_NAMED_NUMBER if fast else _NAMED_NUMBER, digit),
        ("id", _VERSION, digit),
        ("id", _FAST_HASH if fast else _HASH, True),
        ("id", _FAST_MIXED if fast else _MIXED, digit),
    )


Pattern = regex.Pattern[str] | re.Pattern[str]

# The standard library's engine runs these patterns about twice as fast. Their syntax
# means the same in both (possessive and look-around forms, no flags); what may differ is
# which characters \w and \d take in (``re``: str.isalnum and "_", str.isdecimal;
# ``regex``: Unicode's word and digit properties, e.g. combining marks). So a twin reads
# a text only when both engines class every character of it alike (reads_alike).
_FAST_PATH = re.compile(_PATH.pattern)
_FAST_NAMED_NUMBER = re.compile(_NAMED_NUMBER.pattern)
_FAST_HASH = re.compile(_HASH.pattern)
_FAST_MIXED = re.compile(_MIXED.pattern)
_WORD, _FAST_WORD = regex.compile(r"\w"), re.compile(r"\w")
_FAST_DIGIT = re.compile(r"\d")
_ALIKE: dict[str, bool] = {}


def _alike(char: str) -> bool:
    same = _ALIKE.get(char)
    if same is None:
        same = (_WORD.match(char) is None) == (_FAST_WORD.match(char) is None) and (
            _DIGIT.match(char) is None
        ) == (_FAST_DIGIT.match(char) is None)
        if len(_ALIKE) < 65_536:
            _ALIKE[char] = same
    return same


def reads_alike(text: str) -> bool:
    """Whether ``re`` and ``regex`` class every character of ``text`` alike as a word
    character and as a digit (then the patterns match the same in both)."""
    return text.isascii() or all(map(_alike, set(text)))


def tokens_of_lines(lines: Sequence[str]) -> list[list[tuple[str, str]]]:
    """(token, kind) of each of ``lines`` (lines holding no whitespace but single spaces)
    in their order, a token found inside an earlier kind's left out (kinds tried: url,
    path, number, then ids: version, hash, mixed; a kind only when the text holds what
    its matches need), in one pass per pattern over the lines joined by newlines (no
    match holds or looks across a newline)."""
    text, starts = _joined(lines)
    found: list[list[tuple[int, int, str]]] = [[] for _ in lines]
    for kind, pattern, needed in _needed(text, reads_alike(text)):
        if not needed:
            continue  # what no line holds, no pattern skipped would find
        for match in pattern.finditer(text):
            start, end = match.span()
            while end > start and text[end - 1] in _TRAILING:
                end -= 1
            if end - start < 3:
                continue
            line_found = found[bisect_right(starts, start) - 1]
            for s, e, _ in line_found:
                if s <= start and end <= e:
                    break
            else:
                line_found.append((start, end, kind))
    return [[(text[s:e], kind) for s, e, kind in sorted(line_found)] for line_found in found]


def error_words(lines: Sequence[str]) -> list[str | None]:
    """The first error word of each line (:data:`ERROR_LINE`), None for a line without
    one; lines as :func:`tokens_of_lines` takes them, read in one pass."""
    text, starts = _joined(lines)
    words: list[str | None] = [None] * len(lines)
    for match in ERROR_LINE.finditer(text):
        number = bisect_right(starts, match.start()) - 1
        if words[number] is None:
            words[number] = match.group()
    return words


def _joined(lines: Sequence[str]) -> tuple[str, list[int]]:
    """``lines`` joined by newlines, and where each starts."""
    starts: list[int] = []
    at = 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return "\n".join(lines), starts


def excerpt(line: str, token: str) -> str:
    """``token`` with the words around it on ``line``, at most :data:`EXCERPT_BYTES`
    (the token alone when it is longer), cut between words."""
    line = " ".join(line.split())
    if utf8_len(line) <= EXCERPT_BYTES:
        return line
    at = line.find(token)
    if at < 0 or utf8_len(token) >= EXCERPT_BYTES:
        return token
    room = EXCERPT_BYTES - utf8_len(token)
    before = line[max(0, at - (room * 2) // 3) : at]
    if " " in before and at - len(before) > 0:
        before = before[before.index(" ") + 1 :]
    after_room = room - utf8_len(before)
    after = line[at + len(token) : at + len(token) + max(0, after_room)]
    if " " in after and at + len(token) + len(after) < len(line):
        after = after[: after.rindex(" ")]
    text = (before + token + after).strip()
    while utf8_len(text) > EXCERPT_BYTES:
        text = text[:-1]
    return text


# -- edits of a parsed chain by message position ---------------------------------------------


def edited(
    ast: ChainAST,
    replaced: Mapping[int, Message],
    dropped: Collection[int] = (),
    added: tuple[int, BodyPair] | None = None,
) -> ChainAST:
    """``ast`` with the messages at the positions of ``replaced`` replaced (same role),
    the body pairs whose AI message is at a position of ``dropped`` left out, and
    ``added`` (position, pair) put in the body of the section whose body spans that
    position (at the end of a body rather than before the next section's header;
    ``ValueError`` when no body spans it)."""
    if replaced:  # map_messages visits the messages in their order
        positions = count()
        ast = map_messages(ast, lambda _: replaced.get(next(positions)))
    if not dropped and added is None:
        return ast
    sections: list[Section] = []
    position = 0
    for section in ast.sections:
        header = section.header
        position += (header.system_message is not None) + (header.human_message is not None)
        opens = position
        body: list[BodyPair] = []
        for pair in section.body:
            if added is not None and opens <= added[0] <= position:
                body.append(added[1])
                added = None
            at = position
            position += 1 + len(pair.tool_messages)
            if at not in dropped:
                body.append(pair)
        if added is not None and opens <= added[0] <= position:
            body.append(added[1])
            added = None
        same = len(body) == len(section.body) and all(map(operator.is_, body, section.body))
        sections.append(section if same else Section(header, tuple(body)))
    if added is not None:
        raise ValueError(f"position {added[0]} is in no section's body")
    return ChainAST(sections)
