"""Transforms of a ChainAST (behind its methods) and helpers for messages: each returns a
new tree or message, sharing every node it does not touch; the receiver is never changed."""

from __future__ import annotations

import json
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from cast.ast import (
    BodyPair,
    ChainAST,
    Section,
    chain_operation,
    trusted_chain,
    trusted_header,
    trusted_pair,
    trusted_section,
)
from cast.errors import ChainError, IdTemplateError
from cast.ids import TemplateLike, as_template
from cast.messages import (
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    trusted_message,
    utf8_len,
    with_field,
)

__all__ = [
    "contains_tool_call_reasoning",
    "extract_reasoning_message",
    "has_reasoning",
    "loads_strict",
    "map_messages",
    "map_section",
    "map_tool_call_arguments",
    "renamed_tool_call_ids",
    "sanitize_arguments",
    "with_empty_reasoning",
    "without_reasoning",
]


def _reject_constant(name: str) -> object:
    # NaN and Infinity are not JSON (RFC 8259 section 6), though Python's parser takes them.
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """``json.loads`` that also rejects ``NaN`` and ``Infinity`` (``ValueError``), as the
    providers read JSON."""
    return json.loads(text, parse_constant=_reject_constant)


def map_messages(ast: ChainAST, change: Callable[[Message], Message | None]) -> ChainAST:
    """Apply ``change`` to every message; ``None`` means unchanged. Shares what stays.

    ``change`` must keep each message's role and tool-call pairing (ids, counts).
    """
    sections = tuple(map_section(section, change) for section in ast.sections)
    return ast if all(map(operator.is_, sections, ast.sections)) else trusted_chain(sections)


def map_section(section: Section, change: Callable[[Message], Message | None]) -> Section:
    """:func:`map_messages` for one section."""
    header = section.header
    old = (header.system_message, header.human_message)
    system, human = (None if m is None else change(m) or m for m in old)
    if system is not old[0] or human is not old[1]:
        header = trusted_header(system, human)
    body = tuple(_map_pair(pair, change) for pair in section.body)
    if header is not section.header or any(map(operator.is_not, body, section.body)):
        return trusted_section(header, body)
    return section


def _map_pair(pair: BodyPair, change: Callable[[Message], Message | None]) -> BodyPair:
    ai = change(pair.ai_message)
    tools = [change(m) for m in pair.tool_messages]
    if ai is None and not any(tools):
        return pair
    new_tools = tuple(n or o for n, o in zip(tools, pair.tool_messages, strict=True))
    return trusted_pair(pair.type, ai or pair.ai_message, new_tools)


# -- tool-call ids -----------------------------------------------------------------------


@chain_operation("normalize_tool_call_ids")
def renamed_tool_call_ids(
    ast: ChainAST, template: TemplateLike, accepts: Callable[[str], bool] | None = None
) -> ChainAST:
    """Give every tool call whose id does not fit ``template`` (or ``accepts``, when
    given: port's target), or repeats an id used earlier in the chain, a new id
    generated from the template; its results follow.

    New ids are seeded by the old id, the function name and how many times that old id
    was replaced before, so appending to a chain never changes the ids already given.
    """
    tmpl = as_template(template)
    calls = [
        part
        for section in ast.sections
        for pair in section.body
        for part in pair.ai_message.parts
        if type(part) is ToolCall
    ]
    # Pass 1: the calls kept (the id fits, {f}: with their name, and is its first use),
    # whose ids the new ones avoid.
    kept_ids: set[str] = set()
    renames: list[bool] = []
    for call in calls:
        fits = tmpl.matches(call.id, call.name) if accepts is None else accepts(call.id)
        renames.append(call.id in kept_ids or not fits)
        if not renames[-1]:
            kept_ids.add(call.id)
    if not any(renames):
        return ast
    # With ``{f}`` each function name has its own ids, so the capacity bounds each name.
    per_name = Counter(call.name or tmpl.DEFAULT_FUNCTION_NAME for call in calls)
    needed = max(per_name.values()) if tmpl.uses_function_name else len(calls)
    capacity = tmpl.capacity
    if capacity is not None and capacity < needed:
        per = " per function name" if tmpl.uses_function_name else ""
        raise IdTemplateError(
            f"id template {tmpl.pattern!r} can produce only {capacity} distinct ids"
            f"{per}, fewer than this chain needs ({needed})"
        )
    replaced: Counter[str] = Counter()  # old id -> how many times it was replaced
    decisions = iter(renames)

    def new_id(old_id: str, name: str) -> str:
        """A new id, never one kept or given before (it joins ``kept_ids``)."""
        seed = f"{old_id}\x1f{name}\x1f{replaced[old_id]}"
        replaced[old_id] += 1
        return tmpl.generate_unused(name, seed=seed, used=kept_ids)

    sections: list[Section] = []
    for section in ast.sections:
        body = tuple(_rename_pair_calls(pair, decisions, new_id) for pair in section.body)
        same = all(map(operator.is_, body, section.body))
        sections.append(section if same else trusted_section(section.header, body))
    return trusted_chain(tuple(sections))


def _rename_pair_calls(
    pair: BodyPair, renames: Iterator[bool], new_id: Callable[[str, str], str]
) -> BodyPair:
    """The pair with the calls ``renames`` flags renamed; their results follow."""
    parts = list(pair.ai_message.parts)
    delta = 0
    final: dict[str, list[str]] = {}  # old id -> the final ids of its calls, in order
    renamed = False
    for position, part in enumerate(parts):
        if type(part) is not ToolCall:
            continue
        new = old_id = part.id
        if next(renames):
            renamed = True
            new = new_id(old_id, part.name)
            parts[position] = with_field(part, "id", new)
            delta += utf8_len(new) - utf8_len(old_id)
        final.setdefault(old_id, []).append(new)
    if not renamed:
        return pair
    new_ai = trusted_message(Role.AI, tuple(parts), pair.ai_message.size + delta)
    tools: list[Message] = []
    for message in pair.tool_messages:
        new_parts: list[Any] | None = None
        step = 0
        for position, part in enumerate(message.parts):
            if type(part) is not ToolResult:
                continue
            ids = final.get(part.tool_call_id)
            if not ids:
                continue
            new = ids.pop(0) if len(ids) > 1 else ids[0]
            if new != part.tool_call_id:
                new_parts = new_parts or list(message.parts)
                new_parts[position] = with_field(part, "tool_call_id", new)
                step += utf8_len(new) - utf8_len(part.tool_call_id)
        if new_parts is not None:
            message = trusted_message(Role.TOOL, tuple(new_parts), message.size + step)  # noqa: PLW2901
        tools.append(message)
    return trusted_pair(pair.type, new_ai, tuple(tools))


# -- reasoning ---------------------------------------------------------------------------


def has_reasoning(part: Any) -> bool:
    """Whether ``part`` is a text part or tool call that carries reasoning."""
    return (type(part) is TextPart or type(part) is ToolCall) and part.reasoning is not None


def without_reasoning(
    message: Message,
    *,
    unsigned_only: bool = False,
    as_text: bool = False,
    keep_empty: bool = False,
) -> Message | None:
    """The message without its (``unsigned_only``: unsigned) reasoning, or None when it
    has none; a text part that only carried reasoning (empty text) goes with it unless
    ``keep_empty``. With ``as_text``, readable reasoning stays as a text part before its
    part."""

    def drops(part: Any) -> bool:
        return has_reasoning(part) and not (unsigned_only and part.reasoning.signature)

    parts: tuple[Any, ...] = message.parts
    if not any(map(drops, parts)):
        return None
    kept: list[Any] = []
    for part in parts:
        if not drops(part):
            kept.append(part)
            continue
        if as_text and part.reasoning.content.strip():
            kept.append(TextPart(text=f"(thinking) {part.reasoning.content}"))
        if keep_empty or type(part) is ToolCall or part.text:
            kept.append(with_field(part, "reasoning", None))
    return trusted_message(message.role, tuple(kept))


@chain_operation("clear_reasoning")
def _clear_reasoning(ast: ChainAST) -> ChainAST:
    """Drop ``reasoning`` from every text part and tool call; everything else is kept."""
    return map_messages(ast, partial(without_reasoning, keep_empty=True))


def contains_tool_call_reasoning(messages: Iterable[Message]) -> bool:
    """Whether any tool call in ``messages`` carries reasoning."""
    return any(
        type(part) is ToolCall and part.reasoning is not None
        for message in messages
        for part in message.parts
    )


def extract_reasoning_message(messages: Iterable[Message]) -> Message | None:
    """The first text part with reasoning in the AI messages, as a new AI message holding
    only that part; None when there is none."""
    for message in messages:
        if message.role is not Role.AI:
            continue
        for part in message.parts:
            if type(part) is TextPart and part.reasoning is not None:
                return trusted_message(Role.AI, (part,))
    return None


# -- arguments ---------------------------------------------------------------------------

_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_control_in_strings(text: str) -> str:
    out: list[str] = []
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            elif char < " ":
                out.append(_CONTROL_ESCAPES.get(char) or f"\\u{ord(char):04x}")
                continue
        elif char == '"':
            in_string = True
        out.append(char)
    return "".join(out)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def sanitize_arguments(arguments: str, accepts: Callable[[str], bool] = _is_json) -> str:
    """Arguments ``accepts`` takes (by default valid JSON text, nested no deeper than
    Python parses): as they are, else with raw control characters inside strings
    escaped, else ``"{}"``."""
    if accepts(arguments):
        return arguments
    fixed = _escape_control_in_strings(arguments)
    return fixed if accepts(fixed) else "{}"


def map_tool_call_arguments(message: Message, fix: Callable[[str], str]) -> Message | None:
    """The AI message with each tool call's arguments replaced by ``fix(arguments)``;
    ``None`` when ``fix`` changes none of them (or the message is not an AI message)."""
    if message.role is not Role.AI:
        return None

    def fixed(part: Any) -> Any:
        if type(part) is not ToolCall:
            return part
        arguments = fix(part.arguments)
        return part if arguments == part.arguments else with_field(part, "arguments", arguments)

    parts = tuple(map(fixed, message.parts))
    return None if all(map(operator.is_, parts, message.parts)) else trusted_message(Role.AI, parts)


@chain_operation("sanitize_tool_call_arguments")
def _sanitize_tool_call_arguments(ast: ChainAST) -> ChainAST:
    """Control characters in argument strings escaped; arguments still not JSON become ``{}``."""
    return map_messages(ast, partial(map_tool_call_arguments, fix=sanitize_arguments))


# -- editing ----------------------------------------------------------------------------


@chain_operation("append_human_message")
def _append_human_message(ast: ChainAST, text: str) -> ChainAST:
    """Human text: a new section after a body, else into the open section's header."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    part = TextPart(text=text)
    sections = ast.sections
    if not sections or sections[-1].body:
        human = trusted_message(Role.HUMAN, (part,))
        return trusted_chain((*sections, trusted_section(trusted_header(None, human), ())))
    last = sections[-1]
    system, old = last.header.system_message, last.header.human_message
    human = trusted_message(Role.HUMAN, (part,) if old is None else (*old.parts, part))
    return trusted_chain(
        (*sections[:-1], trusted_section(trusted_header(system, human), last.body))
    )


@chain_operation("add_tool_response")
def _add_tool_response(ast: ChainAST, tool_call_id: str, name: str, content: str) -> ChainAST:
    """The latest call with this id gets its result's content replaced or its result added."""
    sections = ast.sections
    for s_index in range(len(sections) - 1, -1, -1):
        section = sections[s_index]
        for p_index in range(len(section.body) - 1, -1, -1):
            pair = section.body[p_index]
            if not any(type(p) is ToolCall and p.id == tool_call_id for p in pair.ai_message.parts):
                continue
            new_pair = _set_result(pair, tool_call_id, name, content)
            body = (*section.body[:p_index], new_pair, *section.body[p_index + 1 :])
            new_sections = list(sections)
            new_sections[s_index] = trusted_section(section.header, body)
            return trusted_chain(tuple(new_sections))
    raise ChainError(
        f"no tool call with id {tool_call_id!r} in the chain", rule="unknown-tool-call"
    )


def _set_result(pair: BodyPair, tool_call_id: str, name: str, content: str) -> BodyPair:
    tools = list(pair.tool_messages)
    for m_index, message in enumerate(tools):
        for position, part in enumerate(message.parts):
            if type(part) is ToolResult and part.tool_call_id == tool_call_id:
                parts = list(message.parts)
                parts[position] = ToolResult(
                    tool_call_id=tool_call_id, name=part.name, content=content
                )
                tools[m_index] = trusted_message(Role.TOOL, tuple(parts))
                return trusted_pair(pair.type, pair.ai_message, tuple(tools))
    result = ToolResult(tool_call_id=tool_call_id, name=name, content=content)
    tools.append(trusted_message(Role.TOOL, (result,)))
    return trusted_pair(pair.type, pair.ai_message, tuple(tools))


_EMPTY_REASONING = Reasoning()


def with_empty_reasoning(message: Message, *, whole_turn: bool = False) -> Message | None:
    """Empty reasoning on an AI message that calls tools (or any, ``whole_turn``) and
    carries none, where the OpenAI codec reads it back from: the first non-empty text,
    else the first tool call, else a new empty text part; None when nothing changes
    (DeepSeek and Kimi want it: port adds it, and so does the Compactor where it
    brings a call into a turn)."""
    parts = message.parts
    if message.role is not Role.AI or any(map(has_reasoning, parts)):
        return None
    texts = [at for at, part in enumerate(parts) if type(part) is TextPart and part.text]
    calls = [at for at, part in enumerate(parts) if type(part) is ToolCall]
    if not (whole_turn or calls):
        return None
    if not (texts or calls):
        return trusted_message(Role.AI, (TextPart(text="", reasoning=_EMPTY_REASONING), *parts))
    target = (texts or calls)[0]
    new_parts = list(parts)
    new_parts[target] = with_field(parts[target], "reasoning", _EMPTY_REASONING)
    return trusted_message(Role.AI, tuple(new_parts))
