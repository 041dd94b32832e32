"""Lint a chain for a provider: every problem that provider would reject, in its own
words where known, without changing anything; each check registers for its rules'
``Step`` (:data:`cast._rules.RULES`) with :func:`~cast._rules.implements`."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cast._rules import RULES, Rule, implements
from cast.constants import FAKE_GEMINI_SIGNATURE
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.parse import diagnose, to_message
from cast.providers import ProviderProfile, ReasoningPolicy, ReasoningScope, resolve_provider
from cast.transforms import has_reasoning

__all__ = ["Violation", "lint"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One problem the provider would reject.

    ``index`` is the offending message's position in the input; ``rule`` a
    :class:`~cast.providers.Rule` value; ``message`` the provider's error text for it
    (``verbatim``) or chaincast's when the provider's is not known; ``field`` the part
    inside the message, e.g. ``parts[2].id``.
    """

    index: int | None
    rule: str
    message: str
    provider: str
    field: str = ""
    verbatim: bool = True

    def __str__(self) -> str:
        where = f"message {self.index}" if self.index is not None else "chain"
        if self.field:
            where += f", {self.field}"
        return f"{where}: [{self.provider}:{self.rule}] {self.message}"


@dataclass(slots=True)
class Report:
    """What a lint run found and its checks read; ``add`` keeps only rules the target applies."""

    profile: ProviderProfile
    foreign: bool
    declared: frozenset[str] | None
    thinking: bool = False
    found: list[Violation] = field(default_factory=list)
    applying: frozenset[Rule] = frozenset()  # the target's rules, read once (see lint)

    def add(self, rule: Rule, index: int | None, field: str = "", **values: Any) -> None:
        """Record ``rule`` broken at message ``index`` (``field`` inside it)."""
        if rule not in self.applying:
            return
        verbatim = rule in self.profile.errors
        text = self.profile.errors[rule] if verbatim else RULES[rule].text
        values.setdefault("index", index)
        values.setdefault("max_length", self.profile.max_id_length)
        message = text.format_map(defaultdict(str, values))  # a field not known renders empty
        self.found.append(Violation(index, str(rule), message, self.profile.name, field, verbatim))


@lru_cache(maxsize=64)
def _plan(profile: ProviderProfile) -> tuple[frozenset[Rule], tuple[Callable[..., None], ...]]:
    """The rules that apply to ``profile``, and their checks, each once, in rule order."""
    applying = frozenset(rule for rule, definition in RULES.items() if definition.applies(profile))
    steps = dict.fromkeys(d.check for rule, d in RULES.items() if rule in applying)
    return applying, tuple(step.function() for step in steps)


def lint(
    messages: Iterable[Message | dict[str, Any]],
    target: str | ProviderProfile,
    *,
    source: str | ProviderProfile | None = None,
    tools: Iterable[str] | None = None,
    thinking: bool = False,
) -> list[Violation]:
    """Every problem ``target`` would reject in the chain, in message order: structure
    (the parse rules), tool-call ids, reasoning, roles, media, kept blocks and empty
    messages (docs/providers.md). Each :class:`Violation` holds the provider's own text
    where known (``verbatim``). :func:`cast.port` fixes all but ``tools-not-declared``.

    ``source`` names the provider whose reasoning the chain carries; with it, signatures
    from another provider are reported for targets that verify them. ``tools`` names the
    tools the request declares; with it, tool calls in a request declaring none are
    reported where refused (``tools-not-declared``). ``thinking`` says the request turns
    thinking on: the assistant turn the last tool results answer must open with a
    thinking block (``thinking-not-first``). Raises ``MessageFormatError`` for an item
    that is not a valid message and ``UnknownProviderError`` for an unknown name.
    """
    if not isinstance(thinking, bool):
        raise TypeError(f"thinking must be a bool, not {type(thinking).__name__}")
    profile = resolve_provider(target)
    foreign = source is not None and resolve_provider(source).name != profile.name
    if isinstance(tools, str):
        raise TypeError("tools must be an iterable of tool names, not a str")
    declared = None if tools is None else frozenset(tools)
    items = [to_message(item, i) for i, item in enumerate(messages)]
    applying, checks = _plan(profile)
    report = Report(profile, foreign, declared, thinking, applying=applying)
    for check in checks:
        check(items, report)
    return sorted(report.found, key=lambda v: -1 if v.index is None else v.index)


@implements
def check_tools(items: list[Message], report: Report) -> None:
    """A tool call or result in a request that declares no tools."""
    if report.declared is None or report.declared:
        return
    for index, message in enumerate(items):
        for position, part in enumerate(message.parts):
            if type(part) is ToolCall or type(part) is ToolResult:
                report.add(Rule.TOOLS_NOT_DECLARED, index, f"parts[{position}]")
                return


# -- structure ------------------------------------------------------------------------------

_PAIRING_RULES = (Rule.UNKNOWN_TOOL_RESULT, Rule.DUPLICATE_TOOL_RESULT)


@implements
def check_structure(items: list[Message], report: Report) -> None:
    """What the parser's diagnosis finds, with the ids and parts the texts name."""
    issues = diagnose(items)
    if not issues:
        return
    missing, stray = pairing_problems(items)
    for issue in issues:
        rule = Rule(issue.rule)
        index = issue.index
        if rule is Rule.MISSING_TOOL_RESULT and index is not None:
            ids = missing.get(index, [])
            report.add(rule, index, ids=", ".join(ids), id=ids[0] if ids else "")
        elif rule in _PAIRING_RULES and index is not None and stray.get(index):
            call_id, position = stray[index].pop(0)
            report.add(rule, index, f"parts[{position}]", id=call_id, position=position)
        elif rule is Rule.ORPHAN_TOOL_MESSAGE and index is not None:
            results = items[index].tool_results
            report.add(rule, index, id=results[0].tool_call_id if results else "", position=0)
        else:
            report.add(rule, index)


def pairing_problems(
    items: list[Message],
) -> tuple[dict[int, list[str]], dict[int, list[tuple[str, int]]]]:
    """Per AI message, its unanswered calls; per tool message, its stray results (id, part)."""
    missing: dict[int, list[str]] = {}
    stray: dict[int, list[tuple[str, int]]] = {}
    for index, message in enumerate(items):
        if message.role is not Role.AI:
            continue
        calls = message.tool_calls
        pending = Counter(call.id for call in calls)
        after = index + 1
        while after < len(items) and items[after].role is Role.TOOL:
            for position, part in enumerate(items[after].parts):
                if type(part) is not ToolResult:
                    continue
                if pending[part.tool_call_id]:
                    pending[part.tool_call_id] -= 1
                else:
                    stray.setdefault(after, []).append((part.tool_call_id, position))
            after += 1
        unanswered = []
        for call in calls:
            if pending[call.id]:
                pending[call.id] -= 1
                unanswered.append(call.id)
        if unanswered:
            missing[index] = unanswered
    return missing, stray


# -- ids ------------------------------------------------------------------------------------


@implements
def check_ids(items: list[Message], report: Report) -> None:
    """Ids the provider rejects, and ids an earlier tool call used."""
    profile = report.profile
    seen: set[str] = set()
    for index, message in enumerate(items):
        if message.role is not Role.AI:
            continue
        calls = [(at, part) for at, part in enumerate(message.parts) if type(part) is ToolCall]
        for call_number, (position, part) in enumerate(calls):
            call_id = part.id
            field = f"parts[{position}].id"
            values = {"id": call_id, "position": position, "call": call_number}
            problem = profile.id_problem(call_id)
            if problem is not None:
                report.add(problem, index, field, length=len(call_id), **values)
            if call_id in seen:
                report.add(Rule.DUPLICATE_TOOL_CALL_ID, index, field, **values)
            seen.add(call_id)


# -- reasoning ------------------------------------------------------------------------------


@implements
def check_reasoning(items: list[Message], report: Report) -> None:
    """What the target's reasoning policy forbids or requires (each rule applies to one
    policy, or to the signed ones: the report keeps those of the target's)."""
    profile = report.profile
    # Signatures not checked: none, and the placeholder a thought-signature target takes.
    fake_ok = profile.reasoning is ReasoningPolicy.THOUGHT_SIGNATURE
    unchecked = (b"", FAKE_GEMINI_SIGNATURE.encode() if fake_ok else b"")
    # A turn is counted by the human messages so far; with TOOL_CALL_TURNS, every AI
    # message of a turn in which one calls a tool needs reasoning content.
    turn_of = list(itertools.accumulate(m.role is Role.HUMAN for m in items))
    turns = profile.reasoning_scope is ReasoningScope.TOOL_CALL_TURNS
    turn_calls = {
        turn_of[i] for i, m in enumerate(items) if turns and m.role is Role.AI and m.tool_calls
    }
    for index, message in enumerate(items):
        if message.role is not Role.AI:
            continue
        parts = message.parts
        calls = [at for at, part in enumerate(parts) if type(part) is ToolCall]
        reasoned = [at for at, part in enumerate(parts) if has_reasoning(part)]
        for position in reasoned:
            signature = parts[position].reasoning.signature  # type: ignore[union-attr]
            field = f"parts[{position}].reasoning"
            report.add(Rule.UNSUPPORTED_REASONING, index, field, position=position)
            if not signature:
                report.add(Rule.UNSIGNED_REASONING, index, field, position=position)
            elif report.foreign and signature not in unchecked:
                report.add(Rule.FOREIGN_SIGNATURE, index, field, position=position)
        first: ToolCall | None = parts[calls[0]] if calls else None  # type: ignore[assignment]
        if first is not None and not (first.reasoning and first.reasoning.signature):
            field = f"parts[{calls[0]}].reasoning"
            report.add(
                Rule.MISSING_THOUGHT_SIGNATURE, index, field, name=first.name, position=calls[0]
            )
        if not reasoned and (calls or turn_of[index] in turn_calls):
            report.add(Rule.MISSING_REASONING_CONTENT, index)


@implements
def check_thinking(items: list[Message], report: Report) -> None:
    """With thinking on: the assistant turn the last tool results answer must open with thinking."""
    if not report.thinking:
        return
    index = len(items) - 1
    while index >= 0 and items[index].role is Role.HUMAN:
        index -= 1  # text after the results is part of the same user turn
    results = index
    while index >= 0 and items[index].role is Role.TOOL:
        index -= 1
    if index == results or index < 0 or items[index].role is not Role.AI:
        return  # no tool results in the last user turn: earlier thinking may go
    while index > 0 and items[index - 1].role is Role.AI:
        index -= 1
    parts = items[index].parts
    if not (parts and has_reasoning(parts[0])):
        report.add(Rule.THINKING_NOT_FIRST, index, "parts[0]")


# -- roles ----------------------------------------------------------------------------------


@implements
def check_roles(items: list[Message], report: Report) -> None:
    """A system prompt followed by an AI message; a human message right after a tool message."""
    if items and items[0].role is Role.SYSTEM:
        # (A chain that opens with an AI or tool message is a first-message problem.)
        opener = next((i for i, m in enumerate(items) if m.role in (Role.HUMAN, Role.AI)), -1)
        if opener >= 0 and items[opener].role is Role.AI:
            report.add(Rule.FIRST_TURN_NOT_HUMAN, opener)
    for index in range(1, len(items)):
        if items[index].role is Role.HUMAN and items[index - 1].role is Role.TOOL:
            report.add(Rule.TOOL_THEN_HUMAN, index)


# -- content --------------------------------------------------------------------------------


def media_of(part: ImagePart | BinaryPart) -> tuple[str, bool]:
    """A media part's type (``image/*`` for an untyped image URL) and whether it is by URL."""
    if isinstance(part, BinaryPart):
        if part.mime_type.startswith("text/"):
            try:
                part.data.decode("utf-8")
            except UnicodeDecodeError:  # mislabeled: no text provider reads it
                return "application/octet-stream", False
        return part.mime_type, False
    url = part.url
    if url.startswith("data:"):
        return url[5:].partition(";")[0].partition(",")[0], False
    return part.mime_type or "image/*", True


def is_cache_point(part: ProviderPart) -> bool:
    """An Anthropic ``cache_control`` breakpoint: it marks the block before it."""
    return part.kind == "cache_control" and part.provider == "anthropic"


def is_empty(message: Message) -> bool:
    """No parts, or only empty text without reasoning."""
    return all(type(p) is TextPart and not p.text and p.reasoning is None for p in message.parts)


@implements
def check_content(items: list[Message], report: Report) -> None:
    """Media the target cannot take where it stands, other providers' blocks, empty messages."""
    profile = report.profile
    last = len(items) - 1
    for index, message in enumerate(items):
        role = message.role
        final_ok = role is Role.AI and index == last and profile.empty_final_ai_ok
        if role is not Role.SYSTEM and not final_ok and is_empty(message):
            report.add(Rule.EMPTY_MESSAGE, index)
        place = role.value
        for position, part in enumerate(message.parts):
            field = f"parts[{position}]"
            if isinstance(part, ProviderPart):
                if position == 0 and is_cache_point(part):
                    report.add(Rule.MISPLACED_PROVIDER_PART, index, field, position=position)
                elif part.provider != profile.wire_format:
                    block = {"provider": part.provider, "kind": part.kind, "position": position}
                    report.add(Rule.FOREIGN_PROVIDER_PART, index, field, **block)
            elif isinstance(part, ImagePart | BinaryPart):
                mime, url = media_of(part)
                problem = profile.media_problem(mime, url=url, place=place)
                if problem is not None:
                    media = f"{mime} by URL" if url else mime
                    report.add(problem, index, field, media=media, role=place, position=position)
