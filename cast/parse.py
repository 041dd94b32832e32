"""Chain → AST, in one pass, with the seven parse rules and their repairs.

1. The first message must be system or human (an error even with repair).
2. A system message opens a section; one after the first section is an error (even with
   repair).
3. A human message opens a new section, except when the current section has no body:
   it joins a header without a human message; right after another human message it is
   an error, or with repair its parts are merged into that message.
4. An AI message opens a new body pair in the current section.
5. Tool messages join the current REQUEST_RESPONSE/SUMMARIZATION pair; with no such
   pair: error, or with repair the tool message is dropped.
6. A tool call with no result when its pair closes: error, or with repair a result
   holding ``FALLBACK_RESPONSE_CONTENT`` is added.
7. A result whose id matches no call of its pair: error, or with repair a call with
   that id is appended to the AI message. A second result for an already answered call
   is an error too, or with repair it is dropped.

Messages are never reordered. The input is only read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from cast.ast import BodyPair, BodyPairType, ChainAST, Header, Section
from cast.constants import FALLBACK_RESPONSE_CONTENT, SUMMARIZATION_TOOL_NAME
from cast.errors import ChainError, MessageFormatError
from cast.messages import Message, Role, ToolCall, ToolResult, trusted_message

__all__ = ["ChainIssue", "diagnose", "parse_chain", "to_message"]

_AI = Role.AI
_TOOL = Role.TOOL
_HUMAN = Role.HUMAN
_SYSTEM = Role.SYSTEM
_COMPLETION = BodyPairType.COMPLETION
_REQUEST_RESPONSE = BodyPairType.REQUEST_RESPONSE
_SUMMARIZATION = BodyPairType.SUMMARIZATION
_FIRST_MESSAGE = "the first message must be a system or human message"


@dataclass(frozen=True, slots=True)
class ChainIssue:
    """One problem found in a chain: where (input index), which rule, and what repair
    does about it (``fatal`` issues cannot be repaired)."""

    index: int | None
    rule: str
    message: str
    fatal: bool = False

    def __str__(self) -> str:
        where = f"message {self.index}" if self.index is not None else "chain"
        return f"{where}: [{self.rule}] {self.message}"


def to_message(item: object, index: int | None = None) -> Message:
    """``item`` as a Message: Messages pass through, dicts are validated."""
    if isinstance(item, Message):
        return item
    if isinstance(item, dict):
        try:
            return Message.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise MessageFormatError(first["msg"], index=index, field=where) from exc
    raise MessageFormatError(
        f"expected a Message or a dict, got {type(item).__name__}", index=index
    )


class _Reporter:
    """Raises on the first problem (strict), or records it and lets the repair go on."""

    __slots__ = ("issues", "repair")

    def __init__(self, repair: bool, issues: list[ChainIssue] | None) -> None:
        self.repair = repair
        self.issues = issues

    def problem(self, index: int | None, rule: str, message: str, repair_note: str) -> None:
        if not self.repair:
            raise ChainError(message, index=index, rule=rule)
        if self.issues is not None:
            self.issues.append(ChainIssue(index, rule, f"{message}; {repair_note}"))

    def fatal(self, index: int, rule: str, message: str) -> None:
        if self.issues is not None:
            self.issues.append(ChainIssue(index, rule, message, fatal=True))
        raise ChainError(message, index=index, rule=rule)


def parse_chain(
    messages: Iterable[Message | dict[str, Any]],
    *,
    repair: bool = False,
    issues: list[ChainIssue] | None = None,
) -> ChainAST:
    """Parse ``messages`` into a :class:`ChainAST` (see the module docstring for rules)."""
    report = _Reporter(repair, issues)
    sections: list[Section] = []

    # The open section.
    system: Message | None = None
    human: Message | None = None
    human_index = 0  # input position of ``human``, for error messages
    body: list[BodyPair] = []
    body_size = 0
    in_section = False

    # The open body pair (REQUEST_RESPONSE / SUMMARIZATION only; completions close at once).
    pair_ai: Message | None = None
    pair_ai_index = 0
    pair_type = _REQUEST_RESPONSE
    pair_tools: list[Message] = []
    pair_size = 0
    pending: dict[str, int] = {}  # call id -> calls not answered yet
    extra_calls: list[ToolCall] = []

    total = 0

    def close_pair() -> None:
        nonlocal pair_ai, body_size, pair_size, pending, pair_tools, extra_calls
        ai = pair_ai
        assert ai is not None
        tools = pair_tools
        if extra_calls:
            ai = trusted_message(_AI, ai.parts + tuple(extra_calls))
            pair_size += ai.size - pair_ai.size  # type: ignore[union-attr]
        if any(pending.values()):
            missing: list[ToolCall] = []
            counts = dict(pending)
            for part in ai.parts:
                if type(part) is ToolCall and counts.get(part.id, 0) > 0:
                    counts[part.id] -= 1
                    missing.append(part)
            ids = ", ".join(repr(c.id) for c in missing)
            report.problem(
                pair_ai_index,
                "missing-tool-result",
                f"tool calls without results: {ids}",
                "repair adds a fallback result for each",
            )
            for call in missing:
                fallback = trusted_message(
                    _TOOL,
                    (
                        ToolResult(
                            tool_call_id=call.id, name=call.name, content=FALLBACK_RESPONSE_CONTENT
                        ),
                    ),
                )
                tools.append(fallback)
                pair_size += fallback.size
        body.append(BodyPair._trusted(pair_type, ai, tuple(tools), pair_size))
        body_size += pair_size
        pair_ai = None
        pair_tools = []
        pending = {}
        extra_calls = []

    def close_section() -> None:
        nonlocal system, human, body, body_size, total, in_section
        header_size = (system.size if system is not None else 0) + (
            human.size if human is not None else 0
        )
        size = header_size + body_size
        sections.append(
            Section._trusted(Header._trusted(system, human, header_size), tuple(body), size)
        )
        total += size
        system = human = None
        body = []
        body_size = 0
        in_section = False

    index = -1
    for index, item in enumerate(messages):
        message = item if type(item) is Message else to_message(item, index)
        role = message.role

        if role is _TOOL:
            if pair_ai is None:
                if not in_section:
                    report.fatal(index, "first-message", _FIRST_MESSAGE)
                orphan_ids = ", ".join(
                    repr(p.tool_call_id) for p in message.parts if type(p) is ToolResult
                )
                report.problem(
                    index,
                    "orphan-tool-message",
                    f"tool message (results for {orphan_ids or 'no id'}) does not follow "
                    "an AI message with tool calls",
                    "repair drops it",
                )
                continue
            duplicates: list[int] = []
            for position, part in enumerate(message.parts):
                if type(part) is not ToolResult:
                    continue
                call_id = part.tool_call_id
                left = pending.get(call_id)
                if left:
                    pending[call_id] = left - 1
                elif left is None:
                    report.problem(
                        index,
                        "unknown-tool-result",
                        f"tool result for id {call_id!r} answers no tool call of the AI message "
                        f"at message {pair_ai_index}",
                        "repair adds a matching tool call to that AI message",
                    )
                    extra_calls.append(ToolCall(id=call_id, name=part.name, arguments="{}"))
                    pending[call_id] = 0
                else:
                    report.problem(
                        index,
                        "duplicate-tool-result",
                        f"second tool result for id {call_id!r}, which is already answered",
                        "repair drops it",
                    )
                    duplicates.append(position)
            if duplicates:
                kept = tuple(p for i, p in enumerate(message.parts) if i not in duplicates)
                if not any(type(p) is ToolResult for p in kept):
                    continue
                message = trusted_message(_TOOL, kept)
            pair_tools.append(message)
            pair_size += message.size
            continue

        if pair_ai is not None:
            close_pair()

        if role is _AI:
            if not in_section:  # only possible for the first message
                report.fatal(index, "first-message", _FIRST_MESSAGE)
            calls = 0
            first_name = ""
            for part in message.parts:
                if type(part) is ToolCall:
                    if not calls:
                        first_name = part.name
                    calls += 1
                    pending[part.id] = pending.get(part.id, 0) + 1
            size = message.size
            if not calls:
                body.append(BodyPair._trusted(_COMPLETION, message, (), size))
                body_size += size
                continue
            pair_ai = message
            pair_ai_index = index
            pair_type = (
                _SUMMARIZATION if first_name == SUMMARIZATION_TOOL_NAME else _REQUEST_RESPONSE
            )
            pair_size = size
            continue

        if role is _HUMAN:
            if in_section and not body:
                if human is None:
                    human = message
                    human_index = index
                    continue
                report.problem(
                    index,
                    "consecutive-human",
                    f"human message right after the human message at message {human_index}",
                    "repair merges its parts into that message",
                )
                human = trusted_message(
                    _HUMAN, human.parts + message.parts, human.size + message.size
                )
                continue
            if in_section:
                close_section()
            human = message
            human_index = index
            in_section = True
            continue

        # System message.
        if index != 0:
            report.fatal(
                index,
                "system-position",
                "a system message may only open the chain (found after the first section began)",
            )
        system = message
        in_section = True

    if index >= 0 and not in_section:
        raise AssertionError("unreachable: a non-empty chain always opens a section")
    if pair_ai is not None:
        close_pair()
    if in_section:
        close_section()
    return ChainAST._trusted(tuple(sections), total)


def diagnose(messages: Iterable[Message | dict[str, Any]]) -> list[ChainIssue]:
    """Every problem a strict parse would raise on, with what repair would do about it.

    Never raises for chain problems: those that repair cannot fix (rules 1 and 2) are
    reported as ``fatal`` issues. Message format errors still raise.
    """
    issues: list[ChainIssue] = []
    try:
        parse_chain(messages, repair=True, issues=issues)
    except MessageFormatError:
        raise
    except ChainError:
        pass
    return issues
