"""The clearing stage: old tool results become one-line placeholders, with no handler call.

Bulky tool output (file listings, logs, pages read) is most of an agent's chain and the
least of what it needs later. Before anything is summarized, the Compactor replaces the
results of old tool uses (all but the newest ``keep``) with a placeholder naming the
tool, the call id and the original size, and, when a history archive is configured,
the archive reference of the original (the ``recall`` tool brings it back whole)::

    [cleared tool result: "bash" call "toolu_01", 48213 bytes] [archived: 3f9c0a1b2c3d4e5f]
    gist: $ pytest -q | FAILED tests/test_io.py::test_read - OSError: [Errno 5] | 3 failed

The second line is the result's gist (:mod:`csum._gist`): its first line and its most
salient lines (errors, paths, identifiers, numbers) in at most ``GIST_BYTES`` (160), so
the facts that lived only in an old result are not all gone without an archive.
The chain stays valid for every provider: each call keeps its result (same id, same
name), only the content shrinks. Results are cleared oldest first, and only as many as
bring the chain to ``keep_units``, in one pass when the Compactor compacts: between
compactions nothing old changes, so the payload's prefix stays byte-stable for the
provider's prompt cache (:mod:`csum.compactor`).

A placeholder is recognized only when a result's whole content is exactly the text
this module renders for that result's tool name and call id (the gist, a function of
the original, is only checked for its form: one line of at most ``GIST_BYTES``), so a
result can forge one only by being no larger than a placeholder with its gist (and then
there was little to clear).
The options follow the providers' own terms (Anthropic ``clear_tool_uses_20250919``
and ``clear_thinking_20251015``, LangChain ``ClearToolUsesEdit``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from cast import (
    SUMMARIZATION_TOOL_NAME,
    AnyPart,
    Message,
    ProviderPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.internals import utf8_len
from csum._gist import GIST_BYTES, gist
from csum.archive import archive_line, message_reference
from csum.budget import Budget

__all__ = [
    "ARGUMENT_GIST_BYTES",
    "CLEARED_ARGUMENTS_KEY",
    "CLEARED_PREFIX",
    "DEFAULT_CLEARING",
    "DEFAULT_CLEAR_AT_LEAST",
    "DEFAULT_CLEAR_KEEP",
    "DEFAULT_CLEAR_TRIGGER",
    "GIST_PREFIX",
    "Clearing",
    "ClearingPass",
    "clear_evicted",
    "clear_tool_results",
    "is_cleared",
    "placeholder",
]

# -- defaults (one place: the benchmark of issue 25 chooses the final values) -------------

DEFAULT_CLEAR_KEEP: Final = 3
"""Newest tool uses whose results are never cleared (Anthropic's default is 3)."""
DEFAULT_CLEAR_TRIGGER: Final[int | float | None] = None
"""Where clearing starts: None is the Compactor's own trigger."""
DEFAULT_CLEAR_AT_LEAST: Final[int | float] = 0
"""A clearing pass that would free less than this is not applied (0: any)."""

CLEARED_PREFIX: Final = "[cleared tool result: "
"""How every placeholder starts."""
CLEARED_ARGUMENTS_KEY: Final = "cleared_arguments_bytes"
"""The one key of a cleared call's arguments: ``{"cleared_arguments_bytes": 1234}``."""

GIST_PREFIX: Final = "gist: "
"""How a placeholder's second line, the result's gist, starts."""

_PLACEHOLDER_TAIL = re.compile(
    r"(\d{1,19}) bytes\](?: \[archived: [0-9a-f]{16}\])?"
    rf"(?:\n{GIST_PREFIX}[^\n]{{1,{GIST_BYTES}}})?"
)
_CACHE_CONTROL = "cache_control"


@dataclass(frozen=True, slots=True)
class Clearing:
    """The clearing stage's options (``Compactor(clearing=Clearing(...))``).

    ``keep``: the newest tool uses whose results stay whole. ``trigger``: where clearing
    starts, in the budget's unit (int) or as a share of the budget (float in (0, 1]);
    None: the Compactor's trigger. Clearing is always the first stage of a compaction;
    a lower trigger lets it run alone before summaries are due. ``clear_at_least``: a
    clearing pass that would free less (units, or a share of the budget) is not
    applied, so the prompt cache is not broken for little (a pass followed by a
    summary is always applied: the summary changes the prefix anyway).
    ``exclude_tools``: tool names whose results are never cleared.
    ``clear_tool_inputs``: the cleared calls' arguments become
    ``{"cleared_arguments_bytes": N}`` too. ``clear_reasoning``: old AI messages (before
    the newest ``keep`` tool uses) lose their reasoning.
    """

    keep: int = DEFAULT_CLEAR_KEEP
    trigger: int | float | None = DEFAULT_CLEAR_TRIGGER
    clear_at_least: int | float = DEFAULT_CLEAR_AT_LEAST
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    clear_tool_inputs: bool = False
    clear_reasoning: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.keep, bool) or not isinstance(self.keep, int):
            raise TypeError(f"Clearing.keep must be an int, not {self.keep!r}")
        if self.keep < 0:
            raise ValueError(f"Clearing.keep must be >= 0, got {self.keep}")
        _check_amount("trigger", self.trigger, allow_none=True, allow_zero=False)
        _check_amount("clear_at_least", self.clear_at_least, allow_none=False, allow_zero=True)
        tools: object = self.exclude_tools
        if isinstance(tools, str) or not isinstance(tools, Iterable):
            raise TypeError(f"Clearing.exclude_tools must be a set of tool names, not {tools!r}")
        names = frozenset(tools)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"Clearing.exclude_tools holds {name!r}, not a tool name")
        object.__setattr__(self, "exclude_tools", names)
        for flag in ("clear_tool_inputs", "clear_reasoning"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"Clearing.{flag} must be a bool, not {getattr(self, flag)!r}")

    def trigger_units(self, budget: Budget) -> int | None:
        """The trigger in the budget's unit (None: the Compactor's)."""
        return _units(self.trigger, budget) if self.trigger is not None else None

    def at_least_units(self, budget: Budget) -> int:
        """``clear_at_least`` in the budget's unit."""
        return _units(self.clear_at_least, budget) if self.clear_at_least else 0


def _check_amount(name: str, value: object, *, allow_none: bool, allow_zero: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"Clearing.{name} must be an int (units) or a float share, not {value!r}")
    if isinstance(value, float):
        if not (0 <= value <= 1 if allow_zero else 0 < value <= 1):
            raise ValueError(f"Clearing.{name} as a share must be within (0, 1], got {value!r}")
    elif value < (0 if allow_zero else 1):
        raise ValueError(f"Clearing.{name} must be {'>= 0' if allow_zero else '>= 1'}, got {value}")


def _units(value: int | float, budget: Budget) -> int:
    return budget.scaled(value) if isinstance(value, float) else value


DEFAULT_CLEARING: Final[Clearing | None] = None
"""The Compactor's default ``clearing=``: none. A compaction keeps the newest part of the
chain verbatim, as forgetting would, and everything older goes into the summary and its
facts (issue 36: clearing blanked tool results inside the kept window that forgetting
keeps whole, and lost more than it saved on the real sessions' needed-later memory).
``Clearing(...)`` turns it on; ``csum.compactor.LOW_COST`` keeps it (keep 10)."""


# -- placeholders ---------------------------------------------------------------------------


def placeholder(
    name: str, call_id: str, size: int, reference: str | None = None, summary: str = ""
) -> str:
    """The text a cleared result holds: a line naming the tool, the call id, the
    original size in UTF-8 bytes and, with an archive, the reference the ``recall`` tool
    takes; then, when ``summary`` (the result's :func:`~csum._gist.gist`) is not empty,
    a second line ``gist: ...`` holding it."""
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
    """With ``references``: a tool message per cleared result, holding the original
    result (and the parts that followed it): what the archive stores, each under its
    placeholder's reference."""

    @property
    def changed(self) -> bool:
        return bool(self.results_cleared or self.inputs_cleared or self.reasoning_cleared)


def clear_tool_results(
    messages: Sequence[Message],
    options: Clearing,
    *,
    measure: Callable[[Message], int],
    goal: int | None,
    pinned: Callable[[int, Message], bool] | None = None,
    references: bool = False,
) -> ClearingPass:
    """Clear old tool results of a valid chain, oldest first, until ``goal`` units are
    freed (None: everything eligible). ``messages`` is never changed.

    Never touched: the newest ``options.keep`` tool uses, the newest body pair (the last
    AI message and what follows it), summaries, excluded tools, messages ``pinned``
    says so of (by index and message), results no larger than their placeholder, and
    results already cleared. ``references``: placeholders name the archive reference
    of the original (the caller archives :attr:`ClearingPass.originals`).
    """
    out = list(messages)
    done = ClearingPass(out)
    protected = _protected_calls(messages, options.keep)
    last_ai = _last_ai(messages)
    if last_ai is None:
        return done
    excluded = options.exclude_tools
    boundary = _boundary(messages, protected, last_ai)
    for index in range(last_ai):
        if goal is not None and done.units_freed >= goal:
            break
        message = messages[index]
        role = message.role
        if role is Role.AI:
            if not (options.clear_tool_inputs or options.clear_reasoning):
                continue
            if pinned is not None and pinned(index, message):
                continue
            new = _clear_ai(message, options, protected, old=index < boundary, done=done)
        elif role is Role.TOOL:
            if pinned is not None and pinned(index, message):
                continue
            new = _clear_results(message, protected, excluded, references, done)
        else:
            continue
        if new is not message:
            done.units_freed += measure(message) - measure(new)
            out[index] = new
    return done


def clear_evicted(messages: Sequence[Message], options: Clearing) -> list[Message]:
    """What a summary replaces, as its handler reads it: every eligible tool result
    (not an excluded tool's, not a summary) as its placeholder with its gist. The
    newest ``keep`` tool uses are protected only while they stay in the chain: once a
    compaction evicts them, the handler sees their placeholders, not their bulk (the
    archive, when configured, still stores them whole). ``messages`` is never changed."""
    done = ClearingPass(list(messages))
    excluded = options.exclude_tools
    out: list[Message] = []
    for message in messages:
        if message.role is Role.TOOL:
            out.append(_clear_results(message, set(), excluded, False, done))
        elif message.role is Role.AI and message.tool_calls:
            out.append(_gist_arguments(message, excluded))
        else:
            out.append(message)
    return out


ARGUMENT_GIST_BYTES: Final = 256
"""Evicted calls' arguments longer than this reach the handler as their gist."""
_SHORT_VALUE: Final = 120  # JSON bytes of an argument value kept whole in a gist


def _gist_arguments(message: Message, excluded: frozenset[str]) -> Message:
    """``message`` with its long tool-call arguments (a file written, an edit's text)
    as their gist: short values whole (paths, commands, ids), long strings as their size
    and :func:`~csum._gist.gist`; still JSON, and never longer than the original."""
    parts: list[AnyPart] = []
    changed = False
    for part in message.parts:
        if type(part) is ToolCall and part.name not in excluded:
            call = part
            text = call.arguments
            if (
                call.name != SUMMARIZATION_TOOL_NAME
                and utf8_len(text) > ARGUMENT_GIST_BYTES
                and not _arguments_cleared(call)
            ):
                short = _arguments_gist(text)
                if utf8_len(short) < utf8_len(text):
                    parts.append(call.evolve(arguments=short))
                    changed = True
                    continue
        parts.append(part)
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


def _last_ai(messages: Sequence[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role is Role.AI:
            return index
    return None


def _protected_calls(messages: Sequence[Message], keep: int) -> set[str]:
    """Ids of the newest ``keep`` tool calls (summary calls do not count)."""
    ids: set[str] = set()
    if keep <= 0:
        return ids
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role is not Role.AI:
            continue
        for part in reversed(message.parts):
            if type(part) is ToolCall and part.name != SUMMARIZATION_TOOL_NAME:
                ids.add(part.id)
                if len(ids) >= keep:
                    return ids
    return ids


def _boundary(messages: Sequence[Message], protected: set[str], last_ai: int) -> int:
    """Index of the oldest AI message holding a protected call (else the last AI
    message): reasoning is cleared only before it."""
    for index in range(last_ai):
        message = messages[index]
        if message.role is Role.AI and any(
            type(p) is ToolCall and p.id in protected for p in message.parts
        ):
            return index
    return last_ai


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
    groups = _result_groups(message.parts)
    parts: list[AnyPart] = []
    changed = False
    for result, rest in groups:
        if result is None:
            parts.extend(rest)
            continue
        size = utf8_len(result.content)
        if rest:
            size += sum(p.size for p in rest)
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
                parts.extend(p for p in rest if _is_cache_point(p))
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


def _is_cache_point(part: AnyPart) -> bool:
    return isinstance(part, ProviderPart) and part.kind == _CACHE_CONTROL
