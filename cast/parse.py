"""Chain → AST, in one pass, with the seven parse rules and their repairs.

1. The first message must be system or human (an error even with repair).
2. A system message opens a section; one after the first message is an error, or with
   repair: right after a system message that opens a section (several leading system
   messages) its parts are merged into that message; anywhere else it opens a new
   section (instructions sent mid-chain, which OpenAI and Anthropic accept).
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from pydantic import ValidationError

from cast.ast import (
    BodyPair,
    BodyPairType,
    ChainAST,
    Section,
    chain_operation,
    collector_paused,
    trusted_chain,
    trusted_header,
    trusted_pair,
    trusted_section,
)
from cast.constants import FALLBACK_RESPONSE_CONTENT, SUMMARIZATION_TOOL_NAME
from cast.errors import ChainError, MessageFormatError, ParseRule, located_error
from cast.messages import Message, Role, ToolCall, ToolResult, trusted_message

__all__ = ["ChainIssue", "diagnose", "parse_chain", "to_message"]

_AI = Role.AI
_TOOL = Role.TOOL
_HUMAN = Role.HUMAN
_COMPLETION = BodyPairType.COMPLETION
_REQUEST_RESPONSE = BodyPairType.REQUEST_RESPONSE
_SUMMARIZATION = BodyPairType.SUMMARIZATION
_FIRST_MESSAGE = "the first message must be a system or human message"


@dataclass(frozen=True, slots=True)
class ChainIssue:
    """One problem found in a chain: where (input index), which rule, and what repair
    does about it (``fatal`` issues cannot be repaired)."""

    index: int | None
    rule: ParseRule
    message: str
    fatal: bool = False

    def __str__(self) -> str:
        where = f"message {self.index}" if self.index is not None else "chain"
        return f"{where}: [{self.rule}] {self.message}"


def to_message(item: object, index: int | None = None, *, codec: bool = False) -> Message:
    """``item`` as a Message: Messages pass through, dicts are validated (a bad one raises
    :func:`~cast.errors.located_error`'s error, a :class:`CodecError` with ``codec``)."""
    if isinstance(item, Message):
        return item
    if isinstance(item, dict):
        try:
            return Message.model_validate(item)
        except ValidationError as exc:
            raise located_error(exc, index, codec=codec) from exc
    raise MessageFormatError(
        f"expected a Message or a dict, got {type(item).__name__}", index=index
    )


class _ChainBuilder:
    """Builds the AST a message at a time; a problem raises, or with repair goes to ``issues``."""

    __slots__ = (
        "body",
        "body_size",
        "extra_calls",
        "human",
        "human_index",
        "in_section",
        "issues",
        "pair_ai",
        "pair_ai_index",
        "pair_size",
        "pair_tools",
        "pair_type",
        "pending",
        "repair",
        "sections",
        "system",
        "total",
        "unanswered",
    )

    def __init__(self, repair: bool, issues: list[ChainIssue] | None) -> None:
        self.repair = repair
        self.issues = issues
        self.sections: list[Section] = []
        self.total = 0
        # The open section.
        self.in_section = False
        self.system: Message | None = None
        self.human: Message | None = None
        self.human_index = 0  # input position of ``human``, for error messages
        self.body: list[BodyPair] = []
        self.body_size = 0
        # The open REQUEST_RESPONSE / SUMMARIZATION pair (completions close at once).
        self.pair_ai: Message | None = None
        self.pair_ai_index = 0
        self.pair_type = _REQUEST_RESPONSE
        self.pair_tools: list[Message] = []
        self.pair_size = 0
        self.pending: dict[str, int] = {}  # call id -> calls not answered yet
        self.unanswered = 0  # the sum of ``pending``
        self.extra_calls: list[ToolCall] = []

    def problem(self, index: int | None, rule: ParseRule, message: str, repair_note: str) -> None:
        if not self.repair:
            raise ChainError(message, index=index, rule=rule)
        if self.issues is not None:
            self.issues.append(ChainIssue(index, rule, f"{message}; {repair_note}"))

    def fatal(self, index: int, rule: ParseRule, message: str) -> None:
        if self.issues is not None:
            self.issues.append(ChainIssue(index, rule, message, fatal=True))
        raise ChainError(message, index=index, rule=rule)

    # -- one method per role ------------------------------------------------------------

    def tool(self, index: int, message: Message, fields: dict[str, Any]) -> None:
        """Rule 5 (the pair to join) and rule 7 (results matching its calls)."""
        if self.pair_ai is None:
            if not self.in_section:
                self.fatal(index, ParseRule.FIRST_MESSAGE, _FIRST_MESSAGE)
            orphan_ids = ", ".join(
                repr(p.tool_call_id) for p in message.parts if type(p) is ToolResult
            )
            self.problem(
                index,
                ParseRule.ORPHAN_TOOL_MESSAGE,
                f"tool message (results for {orphan_ids or 'no id'}) does not follow "
                "an AI message with tool calls",
                "repair drops it",
            )
            return
        pending = self.pending
        duplicates: list[int] | None = None
        for position, part in enumerate(fields["parts"]):
            if type(part) is not ToolResult:
                continue
            call_id = part.tool_call_id
            left = pending.get(call_id)
            if left:
                pending[call_id] = left - 1
                self.unanswered -= 1
            elif left is None:
                self._unknown_result(index, part)
            else:
                self.problem(
                    index,
                    ParseRule.DUPLICATE_TOOL_RESULT,
                    f"second tool result for id {call_id!r}, which is already answered",
                    "repair drops it",
                )
                duplicates = [*(duplicates or ()), position]
        if duplicates:
            kept = tuple(p for i, p in enumerate(message.parts) if i not in duplicates)
            if not any(type(p) is ToolResult for p in kept):
                return
            message = trusted_message(_TOOL, kept)
            fields = message.__dict__
        self.pair_tools.append(message)
        self.pair_size += fields.get("size") or message.size

    def ai(self, index: int, message: Message, fields: dict[str, Any]) -> None:
        """Rule 4: a completion closes at once, a pair with calls stays open."""
        if not self.in_section:  # only possible for the first message
            self.fatal(index, ParseRule.FIRST_MESSAGE, _FIRST_MESSAGE)
        pending = self.pending
        calls = 0
        first_name = ""
        for part in fields["parts"]:
            if type(part) is ToolCall:
                if not calls:
                    first_name = part.name
                calls += 1
                call_id = part.id
                pending[call_id] = pending.get(call_id, 0) + 1
        size = fields.get("size") or message.size
        if not calls:
            self.body.append(trusted_pair(_COMPLETION, message, (), size))
            self.body_size += size
            return
        self.unanswered = calls
        self.pair_ai = message
        self.pair_ai_index = index
        self.pair_type = (
            _SUMMARIZATION if first_name == SUMMARIZATION_TOOL_NAME else _REQUEST_RESPONSE
        )
        self.pair_size = size

    def human_message(self, index: int, message: Message) -> None:
        """Rule 3: a new section, or the header of one without a body yet."""
        if self.in_section and not self.body:
            human = self.human
            if human is None:
                self.human = message
                self.human_index = index
                return
            self.problem(
                index,
                ParseRule.CONSECUTIVE_HUMAN,
                f"human message right after the human message at message {self.human_index}",
                "repair merges its parts into that message",
            )
            self.human = trusted_message(
                _HUMAN, human.parts + message.parts, human.size + message.size
            )
            return
        if self.in_section:
            self.close_section()
        self.human = message
        self.human_index = index
        self.in_section = True

    def system_message(self, index: int, message: Message) -> None:
        """Rule 2: the first message; with repair, merged into a leading one or a new section."""
        text = "a system message may only open the chain (found after the first section began)"
        system = self.system
        if system is not None and self.human is None and not self.body:
            self.problem(
                index,
                ParseRule.SYSTEM_POSITION,
                text,
                "repair merges its parts into the system message before it",
            )
            self.system = trusted_message(
                Role.SYSTEM, system.parts + message.parts, system.size + message.size
            )
            return
        if index:
            self.problem(index, ParseRule.SYSTEM_POSITION, text, "repair opens a section with it")
        if self.in_section:
            self.close_section()
        self.system = message
        self.in_section = True

    # -- closing nodes -------------------------------------------------------------------

    def _unknown_result(self, index: int, result: ToolResult) -> None:
        """Rule 7: repair adds a call for a result that answers none."""
        call_id = result.tool_call_id
        self.problem(
            index,
            ParseRule.UNKNOWN_TOOL_RESULT,
            f"tool result for id {call_id!r} answers no tool call of the AI message "
            f"at message {self.pair_ai_index}",
            "repair adds a matching tool call to that AI message",
        )
        self.extra_calls.append(ToolCall(id=call_id, name=result.name, arguments="{}"))
        self.pending[call_id] = 0

    def close_pair(self) -> None:
        """Rule 6: calls still pending get fallback results."""
        ai = self.pair_ai
        assert ai is not None
        size = self.pair_size
        if self.extra_calls:
            grown = trusted_message(_AI, ai.parts + tuple(self.extra_calls))
            size += grown.size - ai.size
            ai = grown
            self.extra_calls = []
        tools = self.pair_tools
        if self.unanswered:
            for fallback in self._fallback_results(ai):
                tools.append(fallback)
                size += fallback.size
        self.body.append(trusted_pair(self.pair_type, ai, tuple(tools), size))
        self.body_size += size
        self.pair_ai = None
        self.pair_tools = []
        self.pending = {}

    def _fallback_results(self, ai: Message) -> list[Message]:
        missing: list[ToolCall] = []
        counts = dict(self.pending)
        for part in ai.parts:
            if type(part) is ToolCall and counts.get(part.id, 0) > 0:
                counts[part.id] -= 1
                missing.append(part)
        self.problem(
            self.pair_ai_index,
            ParseRule.MISSING_TOOL_RESULT,
            f"tool calls without results: {', '.join(repr(c.id) for c in missing)}",
            "repair adds a fallback result for each",
        )
        return [Message.tool(call.id, call.name, FALLBACK_RESPONSE_CONTENT) for call in missing]

    def close_section(self) -> None:
        self.total += _close_section(
            self.sections, self.system, self.human, self.body, self.body_size
        )
        self.system = self.human = None
        self.body = []
        self.body_size = 0
        self.in_section = False

    def finish(self) -> ChainAST:
        if self.pair_ai is not None:
            self.close_pair()
        if self.in_section:
            self.close_section()
        return trusted_chain(tuple(self.sections), self.total)


@chain_operation("parse_chain")
def parse_chain(
    messages: Iterable[Message | dict[str, Any]],
    *,
    repair: bool = False,
    issues: list[ChainIssue] | None = None,
) -> ChainAST:
    """Parse ``messages`` into a :class:`ChainAST` (see the module docstring for rules).

    Strict by default: the first broken rule raises :class:`ChainError`. With
    ``repair`` the repairs are made and, when ``issues`` is a list, recorded in it.
    """
    items = messages if type(messages) is list or type(messages) is tuple else list(messages)
    builder = _ChainBuilder(repair, issues)
    with collector_paused():  # the tree is acyclic: no collection while it grows
        return _built(items, builder, _well_formed(items, builder))


def _built(
    items: Sequence[Message | dict[str, Any]], builder: _ChainBuilder, start: int = 0
) -> ChainAST:
    """The AST by the builder, which knows every rule and repair, from ``items[start]``."""
    tool, ai, human = builder.tool, builder.ai, builder.human_message
    for index, item in enumerate(islice(items, start, None), start):
        message = item if type(item) is Message else to_message(item, index)
        fields = message.__dict__  # one pydantic attribute read instead of three
        role = fields["role"]
        if role is _TOOL:
            tool(index, message, fields)
            continue
        if builder.pair_ai is not None:
            builder.close_pair()
        if role is _AI:
            ai(index, message, fields)
        elif role is _HUMAN:
            human(index, message)
        else:
            builder.system_message(index, message)
    return builder.finish()


def _well_formed(items: Sequence[object], builder: _ChainBuilder) -> int:
    """Read ``items`` while they are Messages breaking no rule (the common case), in one
    loop on local state, a sixth less time than the builder; hand that state to
    ``builder`` and return the index of the first item it must read itself (a dict, a
    broken rule; ``len(items)`` when none). Open nodes are left for the builder to close."""
    sections: list[Section] = []
    body: list[BodyPair] = []
    tools: list[Message] = []
    pending: dict[str, int] = {}
    system = human = pair_ai = None
    total = body_size = pair_size = unanswered = human_index = pair_index = 0
    pair_type = _REQUEST_RESPONSE
    for index, message in enumerate(items):
        if type(message) is not Message:
            break
        fields = message.__dict__
        role, size = fields["role"], fields.get("size") or message.size
        if role is _TOOL:
            if pair_ai is None:
                break
            parts = fields["parts"]
            for position, part in enumerate(parts):
                if type(part) is ToolResult:
                    call_id = part.tool_call_id
                    left = pending.get(call_id)
                    if not left:  # answers no call, or one already answered
                        for earlier in parts[:position]:  # undo this message's matches
                            if type(earlier) is ToolResult:
                                pending[earlier.tool_call_id] += 1
                                unanswered += 1
                        break
                    pending[call_id] = left - 1
                    unanswered -= 1
            else:
                tools.append(message)
                pair_size += size
                continue
            break
        if pair_ai is not None:
            if unanswered:
                break
            body.append(trusted_pair(pair_type, pair_ai, tuple(tools), pair_size))
            body_size += pair_size
            pair_ai = None
        if role is _AI:
            if not index:
                break
            pending, calls, first_name = {}, 0, ""
            for part in fields["parts"]:
                if type(part) is ToolCall:
                    if not calls:
                        first_name = part.name
                    calls += 1
                    call_id = part.id  # a pydantic attribute read costs as much as a call
                    pending[call_id] = pending.get(call_id, 0) + 1
            if calls:
                pair_ai, tools, pair_size, unanswered, pair_index = message, [], size, calls, index
                summarization = first_name == SUMMARIZATION_TOOL_NAME
                pair_type = _SUMMARIZATION if summarization else _REQUEST_RESPONSE
            else:
                body.append(trusted_pair(_COMPLETION, message, (), size))
                body_size += size
        elif role is _HUMAN:
            if index and not body:  # joins a header without a human message
                if human is not None:
                    break
            elif index:
                total += _close_section(sections, system, human, body, body_size)
                system, body, body_size = None, [], 0
            human, human_index = message, index
        elif index:
            break
        else:
            system = message
    else:
        index = len(items)
    b = builder
    b.sections, b.total, b.in_section = sections, total, index > 0
    b.system, b.human, b.human_index = system, human, human_index
    b.body, b.body_size = body, body_size
    if pair_ai is not None:  # an open pair (the builder forgets a closed one's calls)
        b.pair_ai, b.pair_ai_index, b.pair_type = pair_ai, pair_index, pair_type
        b.pair_tools, b.pair_size, b.unanswered, b.pending = tools, pair_size, unanswered, pending
    return index


def _close_section(
    sections: list[Section],
    system: Message | None,
    human: Message | None,
    body: list[BodyPair],
    body_size: int,
) -> int:
    """Append the section of these nodes; its size."""
    header = trusted_header(system, human)
    size = header.size + body_size
    sections.append(trusted_section(header, tuple(body), size))
    return size


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
