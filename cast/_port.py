"""Port a chain to a provider: the same conversation, in a shape that provider accepts.

``port(messages, target, source=...)`` runs, in order:

0. **content** — blocks kept from one provider (``ProviderPart``) stay only when
   ``source`` is the target and the target speaks that wire format; otherwise a cache
   point or a reasoning item is dropped and any other block becomes a text note saying
   what it was (its text, when it is text with extra fields). Media the target cannot
   hold in a tool result move to a human message right after the tool results; media it
   cannot hold anywhere (or only inline, given by URL) become a text note. Failed tool
   results get an ``[tool error]`` prefix where the wire format has no error flag.
   A provider's compaction block becomes a summary pair (an encrypted one raises, or
   becomes a note, see ``cast._compaction``). Leading tool
   messages are dropped, a placeholder human message opens a chain that starts with an
   AI message, leading system messages are merged into one, and a system message sent
   mid-chain stays where it stands: as it is where the target takes system messages
   anywhere, else as a human message opened by :data:`SYSTEM_IN_TURN_TEXT` (never moved
   ahead of the user's task into the system prompt);
1. **repair** — results that answer no call of the AI message right before them are
   removed, then the chain is parsed with repair (orphan tool messages dropped, a
   fallback result for every unanswered call, consecutive human messages merged);
2. **reasoning** (:mod:`cast._port_reasoning`) — kept only when ``source`` is the
   target (and the target takes reasoning back at all), otherwise dropped; then what
   the target requires is added: ``FAKE_GEMINI_SIGNATURE`` on the first tool call of
   each AI message (Gemini, Vertex), an empty reasoning content on tool-call turns
   (DeepSeek, Kimi);
3. **ids** — only ids the target rejects, and ids repeated in the chain, get new ids
   from the target's template (seeded by the old id, so deterministic); results follow;
4. **arguments** — raw control characters escaped; what is still not a JSON object
   (invalid JSON, ``NaN``, an array, a bare value) becomes ``{}``, since arguments are a
   function's parameters and Anthropic, Bedrock and Gemini take them as an object;
5. **roles** — a placeholder human message where the target needs the conversation to
   open with one, an AI message between a tool result and the next human message where
   the target needs one (Mistral); last, no empty message is left for any target (empty
   ones filled, an empty last AI message dropped).

The steps are the port steps the rules name (:data:`cast._rules.RULES`, each rule's
``fix``) and the normalizations no rule names (arguments), run by stage (the messages,
the parsed chain, the messages back) and position; the parse with repair between the
first two stages is the structure rules' repair.

Every step leaves a chain it already fixed unchanged, so ``port`` is idempotent byte
for byte: a stateless proxy that ports every request keeps a stable prefix for the
providers' prompt caches. The input is never modified.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from cast._compaction import EncryptedCompaction, port_compactions
from cast._fast import (
    trusted_chain,
    trusted_header,
    trusted_message,
    trusted_section,
)
from cast._json import loads_strict
from cast._lint import is_cache_point, is_empty, media_of
from cast._port_reasoning import fix_reasoning  # noqa: F401 (registers the reasoning step)
from cast._rules import (
    FIX_CONTENT,
    FIX_EMPTY,
    FIX_IDS,
    FIX_OPENING,
    FIX_PAIRING,
    FIX_ROLES,
    FIX_SYSTEM,
    RULES,
    Fix,
    PortStage,
    Rule,
    implements,
)
from cast._transforms import (
    map_messages,
    map_tool_call_arguments,
    normalize_tool_call_ids,
    sanitize_arguments,
)
from cast.ast import BodyPair, ChainAST
from cast.ids import IdTemplate
from cast.messages import (
    FIELD_PART_KINDS,
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.parse import parse_chain, to_message
from cast.providers import (
    ProviderProfile,
    resolve_provider,
)

__all__ = [
    "EMPTY_ANSWER_TEXT",
    "MOVED_MEDIA_TEXT",
    "OPENING_HUMAN_TEXT",
    "SYSTEM_IN_TURN_TEXT",
    "TOOL_BRIDGE_TEXT",
    "TOOL_ERROR_PREFIX",
    "open_with_human",
    "port",
]

OPENING_HUMAN_TEXT = "Continue."
"""Text of the human message port adds when a target needs the chain to open with one."""

TOOL_BRIDGE_TEXT = "Tool results received."
"""Text of the AI message port puts between a tool result and the next human message
for targets that reject a human message right after a tool message (Mistral)."""

SYSTEM_IN_TURN_TEXT = "(system message)"
"""Text opening the human message that holds a system message sent mid-chain, in its
place, for targets that take system messages only at the start of the chain."""

MOVED_MEDIA_TEXT = "Attachments returned by the tool calls above:"
"""Text opening the human message that receives media moved out of tool results."""

TOOL_ERROR_PREFIX = "[tool error] "
"""Prefix of a failed tool result's content for targets without an error flag."""

_NOTE_LIMIT = 4096  # characters of a kept block quoted in its note
_DROPPED_KINDS = frozenset({"cache_control", "cachePoint", "reasoning"}) | FIELD_PART_KINDS
"""Provider blocks dropped for other targets: cache breakpoints, reasoning items
(reasoning is only ever replayed to the provider that made it), and the fields of a
call or message only their own provider reads (Anthropic ``caller``, Responses
``namespace``, ``caller`` and ``phase``)."""

_AI = Role.AI
_TOOL = Role.TOOL


def port(
    messages: Iterable[Message | dict[str, Any]],
    target: str | ProviderProfile,
    *,
    source: str | ProviderProfile | None = None,
    encrypted_compaction: EncryptedCompaction = "raise",
) -> list[Message]:
    """The chain rewritten so that ``target`` accepts it (see the module docstring).

    ``source`` names the provider that produced the chain's reasoning and kept blocks;
    ``None`` means unknown, and unknown reasoning is treated as foreign. Raises
    ``UnknownProviderError`` for an unregistered name and ``MessageFormatError`` for an
    item that is not a valid message. A provider's compaction block becomes a summary
    pair for other targets; an encrypted one (OpenAI) raises
    ``EncryptedCompactionError``, or with ``encrypted_compaction="note"`` becomes a note
    and a ``LostCompactionWarning`` (see ``cast._compaction``).
    """
    profile = resolve_provider(target)
    same_source = source is not None and resolve_provider(source).name == profile.name
    items = [
        item if type(item) is Message else to_message(item, i) for i, item in enumerate(messages)
    ]
    items = port_compactions(items, profile, same_source, encrypted_compaction)
    steps = _steps()
    for step in steps[PortStage.MESSAGES]:
        items = step(items, profile, same_source)
    ast = parse_chain(items, repair=True)  # the structure rules' repair
    for step in steps[PortStage.CHAIN]:
        ast = step(ast, profile, same_source)
    out = ast.to_messages()
    for step in steps[PortStage.FINAL]:
        out = step(out, profile, same_source)
    return out


_FIX_ARGUMENTS = Fix("arguments", PortStage.CHAIN, 30)
_NORMALIZATIONS = (_FIX_ARGUMENTS,)
"""Port steps that no rule names: what no provider is known to refuse, but what a
codec or a model could not use (arguments that are not a JSON object)."""


@lru_cache(maxsize=1)
def _steps() -> dict[PortStage, tuple[Fix, ...]]:
    """The rules' port steps and the normalizations, each once, by stage and position."""
    fixes = {d.fix for d in RULES.values() if d.fix is not None} | set(_NORMALIZATIONS)
    ordered = sorted(fixes, key=lambda fix: (_STAGES.index(fix.stage), fix.position))
    return {stage: tuple(fix for fix in ordered if fix.stage is stage) for stage in PortStage}


_STAGES = list(PortStage)


def drop_provider_fields(messages: Iterable[Message]) -> list[Message]:
    """The messages without the kept parts that only their own provider reads (cache
    points, reasoning items, Anthropic ``caller``, Responses call and message fields),
    as ``port`` drops them for any other target: for formats with no provider rules
    (langchaingo), which take no kept parts at all."""
    out: list[Message] = []
    for message in messages:
        parts = tuple(
            p for p in message.parts if not (type(p) is ProviderPart and p.kind in _DROPPED_KINDS)
        )
        out.append(
            message if len(parts) == len(message.parts) else trusted_message(message.role, parts)
        )
    return out


EMPTY_ANSWER_TEXT = "(no answer)"
"""Text of an empty AI message that is not the last (a refusal, an aborted turn)."""


@implements(FIX_EMPTY)
def fix_empty(
    messages: list[Message], profile: ProviderProfile, same_source: bool
) -> list[Message]:
    """No empty message reaches any provider: empty human messages get
    :data:`OPENING_HUMAN_TEXT`, empty AI messages :data:`EMPTY_ANSWER_TEXT`, except a
    last one, which is dropped (it says nothing; an AI message without text and calls
    is refused by OpenAI, Mistral, Bedrock and Gemini, see docs/providers.md)."""
    if messages and messages[-1].role is _AI and is_empty(messages[-1]):
        messages.pop()
    for index, message in enumerate(messages):
        role = message.role
        if role is Role.SYSTEM or not is_empty(message):
            continue
        text = EMPTY_ANSWER_TEXT if role is _AI else OPENING_HUMAN_TEXT
        messages[index] = trusted_message(role, (TextPart(text=text),))
    return messages


# -- content --------------------------------------------------------------------------------


def open_with_human(messages: Iterable[Message | dict[str, Any]]) -> list[Message]:
    """The chain in a shape the parser takes (parse rule 1): tool messages that open it
    dropped (they answer nothing), and a human message holding
    :data:`OPENING_HUMAN_TEXT` before an AI message that would open it (replays of
    earlier turns). Other chains come back unchanged."""
    items = [
        item if type(item) is Message else to_message(item, i) for i, item in enumerate(messages)
    ]
    start = 0
    while start < len(items) and items[start].role is _TOOL:
        start += 1
    out = items[start:]
    if out and out[0].role is _AI:
        out.insert(0, trusted_message(Role.HUMAN, (TextPart(text=OPENING_HUMAN_TEXT),)))
    return out


@implements(FIX_OPENING)
def fix_opening(items: list[Message], profile: ProviderProfile, same_source: bool) -> list[Message]:
    """Port's step for ``first-message``: :func:`open_with_human`."""
    return open_with_human(items)


@implements(FIX_SYSTEM)
def fix_system(items: list[Message], profile: ProviderProfile, same_source: bool) -> list[Message]:
    """Leading system messages merged into one; a later one kept in its place: as it is
    where the target takes system messages anywhere, else as a human message opened by
    :data:`SYSTEM_IN_TURN_TEXT` (the parse with repair then joins it to a human message
    next to it). Moving it into the system prompt would put it ahead of the user's task
    and of everything said before it."""
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


@implements(FIX_CONTENT)
def fix_content(items: list[Message], profile: ProviderProfile, same_source: bool) -> list[Message]:
    """Kept blocks, media, tool errors and empty messages made acceptable to the target
    (see the module docstring); messages that need nothing are passed through."""
    out: list[Message] = []
    moved: list[Any] = []  # media leaving the current run of tool messages
    for message in items:
        role = message.role
        if role is not _TOOL and moved:
            out.append(trusted_message(Role.HUMAN, (TextPart(text=MOVED_MEDIA_TEXT), *moved)))
            moved = []
        parts = _port_parts(message, profile, same_source, moved)
        out.append(message if parts is None else trusted_message(role, parts))
    if moved:
        out.append(trusted_message(Role.HUMAN, (TextPart(text=MOVED_MEDIA_TEXT), *moved)))
    return out


def _port_parts(
    message: Message, profile: ProviderProfile, same_source: bool, moved: list[Any]
) -> tuple[Any, ...] | None:
    """The message's parts for the target, or None when they all stay as they are."""
    place = message.role.value
    new: list[Any] = []
    changed = False
    for part in message.parts:
        if isinstance(part, ProviderPart):
            if (
                same_source
                and part.provider == profile.wire_format
                and not (not new and is_cache_point(part))
            ):
                new.append(part)
                continue
            changed = True
            if part.kind not in _DROPPED_KINDS:
                new.append(_note_for(part, profile))
        elif isinstance(part, ImagePart | BinaryPart):
            mime, url = media_of(part)
            problem = profile.media_problem(mime, url=url, place=place)
            if problem is None:
                new.append(part)
                continue
            changed = True
            what = _describe(part, mime, url)
            if problem is Rule.MEDIA_IN_TOOL_RESULT:
                moved.append(part)
                new.append(TextPart(text=f"[{what}: moved to the next user message]"))
            elif problem is Rule.MEDIA_BY_URL:
                new.append(TextPart(text=f"[{what} omitted: {profile.name} takes it inline only]"))
            else:
                new.append(
                    TextPart(
                        text=f"[{what} omitted: {profile.name} takes none in a {place} message]"
                    )
                )
        elif isinstance(part, ToolResult) and part.is_error and not profile.tool_error_flag:
            changed = True
            content = part.content
            if not content.startswith(TOOL_ERROR_PREFIX):
                content = TOOL_ERROR_PREFIX + content
            new.append(ToolResult(tool_call_id=part.tool_call_id, name=part.name, content=content))
        else:
            new.append(part)
    return tuple(new) if changed else None


def _describe(part: ImagePart | BinaryPart, mime: str, url: bool) -> str:
    if isinstance(part, ImagePart):
        return f"{mime} at {part.url}" if url else f"{mime} attachment ({len(part.url)} bytes)"
    name = f" {part.filename}" if part.filename else ""
    return f"{mime}{name} attachment ({len(part.data)} bytes)"


def _note_for(part: ProviderPart, profile: ProviderProfile) -> TextPart:
    """A kept block as text for another target: its own text when it is text with
    extra fields (citations, cache control), else a note quoting the block."""
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


@implements(FIX_PAIRING)
def fix_pairing(
    messages: list[Message], profile: ProviderProfile, same_source: bool
) -> list[Message]:
    """The messages with every result that answers no call of the AI message before it
    (or answers one a second time) removed, and tool messages left without results.

    Tool messages that follow no AI message are left for the parser, which drops them
    (or refuses a chain that opens with one): port parses the messages with repair
    after this step, which also adds a fallback result for every unanswered call and
    merges consecutive human messages.
    """
    out: list[Message] = []
    pending: dict[str, int] | None = None  # unanswered calls of the current AI message
    for index, item in enumerate(messages):
        message = item if type(item) is Message else to_message(item, index)
        role = message.role
        if role is _TOOL and pending is not None:
            kept: list[Any] = []
            answers = False
            for part in message.parts:
                if type(part) is ToolResult:
                    left = pending.get(part.tool_call_id, 0)
                    if not left:
                        continue
                    pending[part.tool_call_id] = left - 1
                    answers = True
                kept.append(part)
            if not answers:
                continue
            if len(kept) != len(message.parts):
                message = trusted_message(_TOOL, tuple(kept))
        elif role is _AI:
            pending = {}
            for part in message.parts:
                if type(part) is ToolCall:
                    pending[part.id] = pending.get(part.id, 0) + 1
        elif role is not _TOOL:
            pending = None
        out.append(message)
    return out


# -- arguments ------------------------------------------------------------------------------


@implements(_FIX_ARGUMENTS)
def fix_arguments(ast: ChainAST, profile: ProviderProfile, same_source: bool) -> ChainAST:
    """Every tool call's arguments a JSON object (a normalization: see the module
    docstring)."""
    return map_messages(ast, _with_object_arguments)


def _with_object_arguments(message: Message) -> Message | None:
    return map_tool_call_arguments(message, _object_arguments)


def _object_arguments(arguments: str) -> str:
    """``arguments`` when it is a JSON object, else its sanitized form when that is one,
    else ``"{}"``."""
    if _is_object(arguments):
        return arguments
    try:
        fixed = sanitize_arguments(arguments)
    except RecursionError:  # nesting deeper than the JSON parser goes
        return "{}"
    return fixed if fixed != arguments and _is_object(fixed) else "{}"


def _is_object(text: str) -> bool:
    try:
        return isinstance(loads_strict(text), dict)
    except (ValueError, RecursionError):
        return False


# -- ids ------------------------------------------------------------------------------------


class _AcceptedIds(IdTemplate):
    """The target's template for new ids, matching what the target accepts: so
    ``normalize_tool_call_ids`` renames exactly the ids the target would reject."""

    __slots__ = ("_profile",)

    _profile: ProviderProfile

    def __init__(self, profile: ProviderProfile) -> None:  # the template is copied, not parsed
        for name in IdTemplate.__slots__:
            object.__setattr__(self, name, getattr(profile.id_template, name))
        object.__setattr__(self, "_profile", profile)

    def matches(self, value: str, function_name: str | None = None) -> bool:
        """Whether the target accepts ``value`` (the function name plays no part)."""
        return self._profile.accepts_id(value)


@lru_cache(maxsize=64)
def _accepted_ids(profile: ProviderProfile) -> IdTemplate:
    return _AcceptedIds(profile)


@implements(FIX_IDS)
def fix_ids(ast: ChainAST, profile: ProviderProfile, same_source: bool) -> ChainAST:
    """New ids for those the target rejects and those used twice; results follow."""
    return normalize_tool_call_ids(ast, _accepted_ids(profile))


# -- roles ----------------------------------------------------------------------------------


@implements(FIX_ROLES)
def fix_roles(ast: ChainAST, profile: ProviderProfile, same_source: bool) -> ChainAST:
    """An opening human message where the target needs one, and an AI message between
    a tool result and the next human message where the target needs one."""
    sections = list(ast.sections)
    changed = False
    if profile.needs_human_first and sections:
        first = sections[0]
        if first.header.human_message is None and first.body:
            human = trusted_message(Role.HUMAN, (TextPart(text=OPENING_HUMAN_TEXT),))
            system = first.header.system_message
            header = trusted_header(system, human, first.header.size + human.size)
            sections[0] = trusted_section(header, first.body, first.size + human.size)
            changed = True
    if profile.needs_ai_between_tool_and_human:
        # Every section after the first opens with a human message.
        for index in range(len(sections) - 1):
            section = sections[index]
            if section.body and section.body[-1].tool_messages:
                bridge = BodyPair.completion(TOOL_BRIDGE_TEXT)
                body = (*section.body, bridge)
                sections[index] = trusted_section(section.header, body, section.size + bridge.size)
                changed = True
    return trusted_chain(tuple(sections)) if changed else ast
