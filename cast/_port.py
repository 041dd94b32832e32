"""Port a chain to a provider: the same conversation, in a shape that provider accepts
(docs/providers.md has each step and its evidence)."""

from __future__ import annotations

import itertools
import operator
import warnings
from collections.abc import Iterable
from functools import partial
from typing import Any, Literal

from cast._lint import is_cache_point, is_empty, media_of, pairing_problems
from cast._rules import Rule, implements
from cast.ast import (
    BodyPair,
    BodyPairType,
    ChainAST,
    map_messages,
    map_section,
    renamed_tool_call_ids,
    trusted_chain,
)
from cast.constants import FAKE_GEMINI_SIGNATURE, TOOL_BRIDGE_TEXT
from cast.errors import ChainError
from cast.messages import (
    FIELD_PART_KINDS,
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    trusted_message,
    with_field,
)
from cast.parse import parse_chain, to_message
from cast.providers import ProviderProfile, ReasoningPolicy, ReasoningScope, resolve_provider
from cast.transforms import (
    loads_strict,
    map_tool_call_arguments,
    sanitize_arguments,
    with_empty_reasoning,
    without_reasoning,
)

__all__ = [
    "COMPACTION",
    "EMPTY_ANSWER_TEXT",
    "MOVED_MEDIA_TEXT",
    "OPENING_HUMAN_TEXT",
    "SYSTEM_IN_TURN_TEXT",
    "TOOL_ERROR_PREFIX",
    "EncryptedCompaction",
    "EncryptedCompactionError",
    "LostCompactionWarning",
    "drop_provider_fields",
    "open_with_human",
    "port",
]

OPENING_HUMAN_TEXT = "Continue."
"""Text of the human message port adds when a target needs the chain to open with one."""

SYSTEM_IN_TURN_TEXT = "(system message)"
"""Text opening the human message that holds a system message sent mid-chain, in its
place, for targets that take system messages only at the start of the chain."""

MOVED_MEDIA_TEXT = "Attachments returned by the tool calls above:"
"""Text opening the human message that receives media moved out of tool results."""

TOOL_ERROR_PREFIX = "[tool error] "
"""Prefix of a failed tool result's content for targets without an error flag."""

EMPTY_ANSWER_TEXT = "(no answer)"
"""Text of an empty AI message that is not the last (a refusal, an aborted turn)."""

COMPACTION = "compaction"
"""``ProviderPart.kind`` of a provider's compaction block or item."""

EncryptedCompaction = Literal["raise", "note"]
"""What ``port`` does with an encrypted compaction item it cannot keep."""

_NOTE_LIMIT = 4096  # characters of a kept block quoted in its note
# Dropped for other targets: cache breakpoints, reasoning items (replayed only to their
# own provider), and the call or message fields only their own provider reads.
_DROPPED_KINDS = frozenset({"cache_control", "cachePoint", "reasoning"}) | FIELD_PART_KINDS
_FAKE_SIGNATURE = FAKE_GEMINI_SIGNATURE.encode()
_FAKE_SIGNED = Reasoning(signature=_FAKE_SIGNATURE)


class EncryptedCompactionError(ChainError):
    """An OpenAI encrypted compaction item would be sent to a provider that cannot read
    it (``index`` is the message holding it): the turns it compacted would be lost."""


class LostCompactionWarning(UserWarning):
    """``port(..., encrypted_compaction="note")`` replaced an encrypted compaction item
    by a note: the turns it compacted are not in the ported chain."""


def port(
    messages: Iterable[Message | dict[str, Any]],
    target: str | ProviderProfile,
    *,
    source: str | ProviderProfile | None = None,
    encrypted_compaction: EncryptedCompaction = "raise",
) -> list[Message]:
    """The chain rewritten so that ``target`` accepts it; the input is never modified.

    In order: kept provider blocks, media, tool errors and compaction blocks made
    acceptable; leading tool messages dropped, an opening human message added, system
    messages merged or kept in place; stray results removed and the chain parsed with
    repair; reasoning kept only when ``source`` is the target, then what the target
    requires added; ids the target rejects (or repeated) renamed; arguments made JSON
    objects; the roles the target needs and no empty message. Every step leaves a chain
    it already fixed unchanged, so ``port`` is idempotent byte for byte.

    ``source`` names the provider that produced the chain's reasoning and kept blocks;
    ``None`` means unknown, treated as foreign. Raises ``UnknownProviderError`` for an
    unregistered name and ``MessageFormatError`` for an item that is not a valid
    message. A compaction block becomes a summary pair for other targets; an encrypted
    one (OpenAI) raises ``EncryptedCompactionError``, or with
    ``encrypted_compaction="note"`` becomes a note and a ``LostCompactionWarning``.
    """
    profile = resolve_provider(target)
    same_source = source is not None and resolve_provider(source).name == profile.name
    items = [to_message(item, i) for i, item in enumerate(messages)]
    items = _port_compactions(items, profile, same_source, encrypted_compaction)
    on_messages, on_chain = _STEPS
    for step in on_messages:
        items = step(items, profile, same_source)
    ast = parse_chain(items, repair=True)  # the structure rules' repair
    for chain_step in on_chain:
        ast = chain_step(ast, profile, same_source)
    return fix_empty(ast.to_messages(), profile, same_source)


def drop_provider_fields(messages: Iterable[Message]) -> list[Message]:
    """The messages without the kept parts only their own provider reads, as ``port``
    drops them for other targets: for formats with no provider rules (langchaingo)."""
    out: list[Message] = []
    for message in messages:
        parts = tuple(
            p for p in message.parts if not (type(p) is ProviderPart and p.kind in _DROPPED_KINDS)
        )
        out.append(
            message if len(parts) == len(message.parts) else trusted_message(message.role, parts)
        )
    return out


# -- compaction: Anthropic readable summaries, OpenAI encrypted items ------------------------


def _port_compactions(
    items: list[Message], profile: ProviderProfile, same_source: bool, encrypted: str
) -> list[Message]:
    """``items`` with every compaction block the target does not keep made portable."""
    if encrypted not in ("raise", "note"):
        raise ValueError(f"encrypted_compaction must be 'raise' or 'note', not {encrypted!r}")
    out: list[Message] = []
    for index, message in enumerate(items):
        blocks = [p for p in message.parts if type(p) is ProviderPart and p.kind == COMPACTION]
        if not blocks or (same_source and all(p.provider == profile.wire_format for p in blocks)):
            out.append(message)
            continue
        rest: list[Any] = []
        for part in message.parts:
            if not (type(part) is ProviderPart and part.kind == COMPACTION):
                rest.append(part)
                continue
            summary = _readable_summary(part)
            if summary is not None:
                _flush(rest, message.role, out)
                # The csum summary pair, its call id derived from the text (idempotent).
                seed = f"compaction\x1f{summary}"
                out.extend(BodyPair.summarization(summary, seed=seed).messages())
                continue
            if encrypted == "raise":
                raise EncryptedCompactionError(
                    f"an encrypted {part.provider} compaction item "
                    f"cannot be sent to {profile.name}: only its own provider can read the "
                    "turns it compacted; port with encrypted_compaction='note' to replace "
                    "it by a note (the turns are then lost), or restore them from an archive",
                    index=index,
                )
            note = (
                f"[{part.provider} compaction item omitted: its content is encrypted, "
                f"so the earlier turns it compacted are not available to {profile.name}]"
            )
            warnings.warn(f"message {index}: {note}", LostCompactionWarning, stacklevel=3)
            rest.append(TextPart(text=note))
        _flush(rest, message.role, out)
    return out


def _readable_summary(part: ProviderPart) -> str | None:
    """The summary text of a compaction block, or None when it is encrypted."""
    try:
        block = loads_strict(part.data)
    except ValueError:
        return None
    content = block.get("content") if isinstance(block, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # text blocks
        texts = [b.get("text") for b in content if isinstance(b, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n\n".join(texts)  # type: ignore[arg-type]
    return None


def _flush(rest: list[Any], role: Role, out: list[Message]) -> None:
    if rest:
        out.append(trusted_message(role, tuple(rest)))
        rest.clear()


# -- content --------------------------------------------------------------------------------


def open_with_human(messages: Iterable[Message | dict[str, Any]]) -> list[Message]:
    """The chain in a shape the parser takes (parse rule 1): tool messages that open it
    dropped (they answer nothing), and a human message holding
    :data:`OPENING_HUMAN_TEXT` before an AI message that would open it (replays of
    earlier turns). Other chains come back unchanged."""
    items = [to_message(item, i) for i, item in enumerate(messages)]
    out = list(itertools.dropwhile(lambda message: message.role is Role.TOOL, items))
    if out and out[0].role is Role.AI:
        out.insert(0, trusted_message(Role.HUMAN, (TextPart(text=OPENING_HUMAN_TEXT),)))
    return out


@implements
def fix_opening(items: list[Message], profile: ProviderProfile, same: bool) -> list[Message]:
    return open_with_human(items)


@implements
def fix_system(items: list[Message], profile: ProviderProfile, same: bool) -> list[Message]:
    """Leading system messages merged into one; a later one kept in its place, as a
    human message opened by :data:`SYSTEM_IN_TURN_TEXT` where the target takes system
    messages only first (never moved ahead of the user's task into the system prompt)."""
    out: list[Message] = []
    for index, message in enumerate(items):
        if message.role is not Role.SYSTEM:
            out.append(message)
            continue
        leading = all(m.role is Role.SYSTEM for m in items[:index])
        if leading and out:
            out[0] = trusted_message(Role.SYSTEM, (*out[0].parts, *message.parts))
        elif leading or profile.system_anywhere:
            out.append(message)
        else:
            parts = (TextPart(text=SYSTEM_IN_TURN_TEXT), *message.parts)
            out.append(trusted_message(Role.HUMAN, parts))
    return out


@implements
def fix_content(items: list[Message], profile: ProviderProfile, same: bool) -> list[Message]:
    """Kept blocks, media and tool errors made acceptable; media a result cannot hold moved."""
    out: list[Message] = []
    moved: list[Any] = []  # media leaving the current run of tool messages
    for message in [*items, None]:
        if moved and (message is None or message.role is not Role.TOOL):
            out.append(trusted_message(Role.HUMAN, (TextPart(text=MOVED_MEDIA_TEXT), *moved)))
            moved = []
        if message is not None:
            parts = _port_parts(message, profile, same, moved)
            out.append(message if parts is None else trusted_message(message.role, parts))
    return out


def _port_parts(
    message: Message, profile: ProviderProfile, same_source: bool, moved: list[Any]
) -> tuple[Any, ...] | None:
    """The message's parts for the target, or None when they all stay as they are."""
    place = message.role.value
    new: list[Any] = []
    for part in message.parts:
        if isinstance(part, ProviderPart):
            # A cache breakpoint with nothing kept before it to mark goes.
            own = same_source and part.provider == profile.wire_format
            if own and (new or not is_cache_point(part)):
                new.append(part)
                continue
            if part.kind not in _DROPPED_KINDS:
                new.append(_note_for(part, profile))
        elif isinstance(part, ImagePart | BinaryPart):
            mime, url = media_of(part)
            problem = profile.media_problem(mime, url=url, place=place)
            if problem is None:
                new.append(part)
                continue
            what = _describe(part, mime, url)
            if problem is Rule.MEDIA_IN_TOOL_RESULT:
                moved.append(part)
                note = f"{what}: moved to the next user message"
            elif problem is Rule.MEDIA_BY_URL:
                note = f"{what} omitted: {profile.name} takes it inline only"
            else:
                note = f"{what} omitted: {profile.name} takes none in a {place} message"
            new.append(TextPart(text=f"[{note}]"))
        elif isinstance(part, ToolResult) and part.is_error and not profile.tool_error_flag:
            content = TOOL_ERROR_PREFIX + part.content.removeprefix(TOOL_ERROR_PREFIX)
            new.append(ToolResult(tool_call_id=part.tool_call_id, name=part.name, content=content))
        else:
            new.append(part)
    if len(new) == len(message.parts) and all(map(operator.is_, new, message.parts)):
        return None
    return tuple(new)


def _describe(part: ImagePart | BinaryPart, mime: str, url: bool) -> str:
    if isinstance(part, ImagePart):
        return f"{mime} at {part.url}" if url else f"{mime} attachment ({len(part.url)} bytes)"
    name = f" {part.filename}" if part.filename else ""
    return f"{mime}{name} attachment ({len(part.data)} bytes)"


def _note_for(part: ProviderPart, profile: ProviderProfile) -> TextPart:
    """A kept block as text: a text block's own text, else a note quoting the block."""
    try:
        block = loads_strict(part.data)
    except ValueError:
        block = None
    if isinstance(block, dict) and isinstance(block.get("text"), str) and part.kind == "text":
        return TextPart(text=block["text"])
    data = part.data
    if len(data) > _NOTE_LIMIT:
        data = f"{data[:_NOTE_LIMIT]}... ({len(part.data) - _NOTE_LIMIT} more characters cut)"
    return TextPart(
        text=f"[{part.provider} {part.kind} block, which {profile.name} does not take: {data}]"
    )


# -- repair ---------------------------------------------------------------------------------


@implements
def fix_pairing(items: list[Message], profile: ProviderProfile, same: bool) -> list[Message]:
    """Stray results (and tool messages left without one) removed before the repairing parse."""
    _, stray = pairing_problems(items)
    out: list[Message] = []
    after_calls = False  # in the run of tool messages after an AI message
    for index, message in enumerate(items):
        if message.role is Role.TOOL and after_calls:
            drop = {position for _, position in stray.get(index, ())}
            kept = tuple(p for at, p in enumerate(message.parts) if at not in drop)
            if not any(type(p) is ToolResult for p in kept):
                continue
            if drop:
                message = trusted_message(Role.TOOL, kept)  # noqa: PLW2901
        else:
            after_calls = message.role is Role.AI
        out.append(message)
    return out


# -- arguments and ids ----------------------------------------------------------------------


def fix_arguments(ast: ChainAST, profile: ProviderProfile, same: bool) -> ChainAST:
    """Arguments made JSON objects, which no rule asks for but a codec or a model needs."""
    fix = partial(sanitize_arguments, objects_only=True)
    return map_messages(ast, partial(map_tool_call_arguments, fix=fix))


@implements
def fix_ids(ast: ChainAST, profile: ProviderProfile, same: bool) -> ChainAST:
    return renamed_tool_call_ids(ast, profile.id_template, profile.accepts_id)


# -- roles ----------------------------------------------------------------------------------


@implements
def fix_roles(ast: ChainAST, profile: ProviderProfile, same: bool) -> ChainAST:
    """An opening human message, and an AI one between a tool and a human message, as needed."""
    sections = list(ast.sections)
    if profile.needs_human_first and sections:
        first = sections[0]
        if first.header.human_message is None and first.body:
            human = trusted_message(Role.HUMAN, (TextPart(text=OPENING_HUMAN_TEXT),))
            sections[0] = first.evolve(header=first.header.evolve(human_message=human))
    if profile.needs_ai_between_tool_and_human:
        # Every section after the first opens with a human message.
        for index in range(len(sections) - 1):
            section = sections[index]
            if section.body and section.body[-1].tool_messages:
                bridge = BodyPair.completion(TOOL_BRIDGE_TEXT)
                sections[index] = section.evolve(body=(*section.body, bridge))
    return ast if all(map(operator.is_, sections, ast.sections)) else trusted_chain(tuple(sections))


@implements
def fix_empty(messages: list[Message], profile: ProviderProfile, same: bool) -> list[Message]:
    """No empty message: human and AI ones get a text, but a last empty AI message goes."""
    if messages and messages[-1].role is Role.AI and is_empty(messages[-1]):
        messages.pop()
    for index, message in enumerate(messages):
        role = message.role
        if role is Role.SYSTEM or not is_empty(message):
            continue
        text = EMPTY_ANSWER_TEXT if role is Role.AI else OPENING_HUMAN_TEXT
        messages[index] = trusted_message(role, (TextPart(text=text),))
    return messages


# -- reasoning ------------------------------------------------------------------------------


@implements
def fix_reasoning(ast: ChainAST, profile: ProviderProfile, same: bool) -> ChainAST:
    """Reasoning kept only where the target takes it from this source, then what its policy adds."""
    policy = profile.reasoning
    if not same or policy is ReasoningPolicy.STRIP:
        ast = map_messages(ast, without_reasoning)
    elif policy is ReasoningPolicy.NATIVE_SIGNATURES:
        ast = map_messages(ast, partial(without_reasoning, unsigned_only=True))
    if policy is ReasoningPolicy.THOUGHT_SIGNATURE:
        return map_messages(ast, _with_thought_signature)
    if policy is not ReasoningPolicy.REASONING_CONTENT_REQUIRED:
        return ast
    if profile.reasoning_scope is ReasoningScope.TOOL_CALL_MESSAGES:
        return map_messages(ast, with_empty_reasoning)
    # Every AI message of a section (a turn) in which one calls tools.
    change = partial(with_empty_reasoning, whole_turn=True)
    sections = tuple(
        map_section(s, change) if any(p.type is not BodyPairType.COMPLETION for p in s.body) else s
        for s in ast.sections
    )
    return ast if all(map(operator.is_, sections, ast.sections)) else trusted_chain(sections)


def _with_thought_signature(message: Message) -> Message | None:
    """The first tool call signed (with the placeholder Gemini accepts) when it is not."""
    if message.role is not Role.AI:
        return None
    parts = message.parts
    for position, part in enumerate(parts):
        if type(part) is not ToolCall:
            continue
        reasoning = part.reasoning
        if reasoning is not None and reasoning.signature:
            return None
        content = reasoning.content if reasoning is not None else ""
        # One shared (frozen) signature for the common case: a copy per call costs
        # a few hundred bytes each, a third of the file on a 100 MB chain.
        signed = Reasoning(content=content, signature=_FAKE_SIGNATURE) if content else _FAKE_SIGNED
        new_parts = list(parts)
        new_parts[position] = with_field(part, "reasoning", signed)
        return trusted_message(Role.AI, tuple(new_parts))
    return None


# The steps in the order port runs them, each ``step(x, profile, same_source)``: on the
# messages as given, on the chain parsed with repair (fix_empty last, on its messages).
_STEPS = (
    (fix_content, fix_opening, fix_system, fix_pairing),
    (fix_reasoning, fix_ids, fix_arguments, fix_roles),
)
