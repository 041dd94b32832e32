"""The chain AST: sections of a header and body pairs, each node sized once when built.

::

    ChainAST
    └── Section*            opened by a system message or a human message
        ├── Header          system_message?, human_message?
        └── BodyPair*       one AI message and the tool messages that answer its calls
                            COMPLETION | REQUEST_RESPONSE | SUMMARIZATION

Nodes are frozen and share the caller's messages. Constructors, ``build`` and ``evolve``
check the node's invariants (any tree that can be built turns back into a chain that
parses strictly); inside ``cast`` the parser, transforms and codecs use the unchecked
``trusted_*`` builders at the end of this module. docs/concepts.md has the model (system
messages sent mid-chain too).
"""

from __future__ import annotations

import contextlib
import gc
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Self

from pydantic import ValidationError

from cast.constants import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    FAKE_GEMINI_SIGNATURE,
    SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME,
)
from cast.errors import ChainError, IdTemplateError, ParseRule, Registry, located_error
from cast.ids import as_template
from cast.messages import (
    MESSAGES_ADAPTER,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    new_trusted,
    trusted_message,
    utf8_len,
    with_field,
)
from cast.transforms import map_tool_call_arguments, sanitize_arguments, without_reasoning

if TYPE_CHECKING:
    from cast.ids import TemplateLike

__all__ = [
    "BodyPair",
    "BodyPairType",
    "ChainAST",
    "Header",
    "Section",
    "chain_operation",
    "collector_paused",
    "map_messages",
    "map_section",
    "renamed_tool_call_ids",
    "trusted_chain",
    "trusted_header",
    "trusted_pair",
    "trusted_section",
]

_set = object.__setattr__


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a bulk build of acyclic objects (parsing
    JSON, validating messages), whose collections would each scan all older objects."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class BodyPairType(StrEnum):
    """What a body pair holds."""

    COMPLETION = "completion"
    """An AI message without tool calls."""
    REQUEST_RESPONSE = "request_response"
    """An AI message with tool calls, and the tool messages answering them."""
    SUMMARIZATION = "summarization"
    """Like REQUEST_RESPONSE, with ``SUMMARIZATION_TOOL_NAME`` as the first call."""


def _check_role(message: object, role: Role, what: str) -> None:
    if not isinstance(message, Message):
        raise TypeError(f"{what} must be a Message, not {type(message).__name__}")
    if message.role is not role:
        raise ChainError(f"{what} must have role {role.value!r}, not {message.role.value!r}")


@dataclass(frozen=True, slots=True)
class Header:
    """The messages that open a section: the system message (first section only) and
    the human message."""

    system_message: Message | None = None
    human_message: Message | None = None
    size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        size = 0
        for message, role in ((self.system_message, Role.SYSTEM), (self.human_message, Role.HUMAN)):
            if message is not None:
                _check_role(message, role, f"Header.{role.value}_message")
                size += message.size
        _set(self, "size", size)

    def messages(self) -> list[Message]:
        """The header's messages in chain order."""
        return [m for m in (self.system_message, self.human_message) if m is not None]

    def evolve(
        self,
        *,
        system_message: Message | EllipsisType | None = ...,
        human_message: Message | EllipsisType | None = ...,
    ) -> Header:
        """A copy with ``system_message`` and/or ``human_message`` changed (checked)."""
        return Header(
            self.system_message if system_message is ... else system_message,
            self.human_message if human_message is ... else human_message,
        )


def _checked_pair(
    ai_message: Message, tool_messages: tuple[Message, ...], declared: BodyPairType | None
) -> tuple[BodyPairType, int]:
    """A pair's type and size, checking roles, the declared type and the pairing."""
    _check_role(ai_message, Role.AI, "BodyPair.ai_message")
    size = ai_message.size
    for message in tool_messages:
        if type(message) is not Message or message.role is not Role.TOOL:
            _check_role(message, Role.TOOL, "BodyPair.tool_messages[]")
        size += message.size
    calls = [part for part in ai_message.parts if type(part) is ToolCall]
    actual = BodyPairType.COMPLETION if not calls else BodyPairType.REQUEST_RESPONSE
    if calls and calls[0].name == SUMMARIZATION_TOOL_NAME:
        actual = BodyPairType.SUMMARIZATION
    if declared is not None and declared is not actual:
        raise ChainError(
            f"body pair declared {declared.value} but its AI message makes it {actual.value}"
        )
    if actual is BodyPairType.COMPLETION and tool_messages:
        raise ChainError("a COMPLETION pair has no tool calls, so it takes no tool messages")
    # Every result answers a call of the pair (calls may still wait: agent loops hold those).
    pending = Counter([call.id for call in calls])
    for part in (part for message in tool_messages for part in message.parts):
        if type(part) is ToolResult:
            if not pending[part.tool_call_id]:
                raise ChainError(
                    f"invalid body pair: tool result {part.tool_call_id!r} answers no call of "
                    "this pair"
                )
            pending[part.tool_call_id] -= 1
    return actual, size


@dataclass(frozen=True, slots=True)
class BodyPair:
    """An AI message and the tool messages that answer its calls, in chain order."""

    type: BodyPairType
    ai_message: Message
    tool_messages: tuple[Message, ...] = ()
    size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "tool_messages", tuple(self.tool_messages))  # lists are accepted too
        declared = BodyPairType(self.type)
        _set(self, "type", declared)
        _set(self, "size", _checked_pair(self.ai_message, self.tool_messages, declared)[1])

    @classmethod
    def build(cls, ai_message: Message, tool_messages: Iterable[Message] = ()) -> BodyPair:
        """A pair whose type is read from the AI message, checked like the constructor
        (roles, and every result answering a call of the pair)."""
        tools = tool_messages if type(tool_messages) is tuple else tuple(tool_messages)
        kind, size = _checked_pair(ai_message, tools, None)
        return trusted_pair(kind, ai_message, tools, size)

    def evolve(
        self,
        *,
        ai_message: Message | None = None,
        tool_messages: Iterable[Message] | None = None,
    ) -> BodyPair:
        """A copy with the AI message and/or the tool messages changed; the type follows
        the AI message (checked like :meth:`build`)."""
        return BodyPair.build(
            self.ai_message if ai_message is None else ai_message,
            self.tool_messages if tool_messages is None else tool_messages,
        )

    @classmethod
    def completion(cls, text: str) -> BodyPair:
        """A COMPLETION pair: one AI message with one text part."""
        message = trusted_message(Role.AI, (TextPart(text=text),))
        return trusted_pair(BodyPairType.COMPLETION, message, (), message.size)

    @classmethod
    def summarization(
        cls,
        text: str,
        *,
        id_template: TemplateLike = DEFAULT_TOOL_CALL_ID_TEMPLATE,
        fake_signature: bool = False,
        reasoning_message: Message | None = None,
        seed: object = None,
    ) -> BodyPair:
        """A SUMMARIZATION pair: a fake tool call and its result holding ``text``.

        The AI message is the parts of ``reasoning_message`` (providers such as Kimi
        want reasoning before a tool call), then the call, signed with
        ``FAKE_GEMINI_SIGNATURE`` when ``fake_signature``; ``seed`` fixes the call id.
        """
        call_id = as_template(id_template).generate(SUMMARIZATION_TOOL_NAME, seed=seed)
        if not isinstance(text, str):
            raise TypeError(f"summary text must be a str, not {type(text).__name__}")
        reasoning = Reasoning(signature=FAKE_GEMINI_SIGNATURE.encode()) if fake_signature else None
        # Every field is known valid here: built without re-validation (hot in csum).
        name, arguments = SUMMARIZATION_TOOL_NAME, SUMMARIZATION_TOOL_ARGS
        fields = {"id": call_id, "name": name, "arguments": arguments, "reasoning": reasoning}
        call = new_trusted(ToolCall, fields)
        prefix: tuple[Any, ...] = ()
        if reasoning_message is not None:
            _check_role(reasoning_message, Role.AI, "reasoning_message")
            prefix = tuple(p for p in reasoning_message.parts if type(p) is not ToolCall)
        ai_message = trusted_message(Role.AI, (*prefix, call))
        fields = {"tool_call_id": call_id, "name": name, "content": text}
        tool_message = trusted_message(Role.TOOL, (new_trusted(ToolResult, fields),))
        size = ai_message.size + tool_message.size
        return trusted_pair(BodyPairType.SUMMARIZATION, ai_message, (tool_message,), size)

    def messages(self) -> list[Message]:
        """The AI message, then its tool messages."""
        return [self.ai_message, *self.tool_messages]

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls of the AI message, in order."""
        return self.ai_message.tool_calls


@dataclass(frozen=True, slots=True)
class Section:
    """A header and the body pairs that follow it."""

    header: Header
    body: tuple[BodyPair, ...] = ()
    size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "body", tuple(self.body))  # lists are accepted too
        if not isinstance(self.header, Header):
            raise TypeError(f"Section.header must be a Header, not {type(self.header).__name__}")
        size = self.header.size
        for pair in self.body:
            if type(pair) is not BodyPair and not isinstance(pair, BodyPair):
                raise TypeError(f"Section.body holds BodyPair nodes, not {type(pair).__name__}")
            size += pair.size
        _set(self, "size", size)

    def evolve(
        self, *, header: Header | None = None, body: Iterable[BodyPair] | None = None
    ) -> Section:
        """A copy with ``header`` and/or ``body`` changed (checked like the constructor)."""
        return Section(
            self.header if header is None else header, tuple(self.body if body is None else body)
        )

    @classmethod
    def opened_by(
        cls,
        systems: Sequence[Message],
        human_message: Message | None,
        body: Iterable[BodyPair] = (),
    ) -> tuple[Section, ...]:
        """The sections that hold ``systems`` in order, then ``human_message`` and
        ``body``: each system message but the last opens a section of its own (as one
        sent mid-chain does when parsed), the last opens that of ``human_message``."""
        last = systems[-1] if systems else None
        alone = tuple(cls(Header(system, None)) for system in systems[:-1])
        return (*alone, cls(Header(last, human_message), tuple(body)))

    def messages(self) -> list[Message]:
        """The header's messages, then every body pair's, in chain order."""
        out = self.header.messages()
        for pair in self.body:
            out.append(pair.ai_message)
            out.extend(pair.tool_messages)
        return out


def _check_sections(sections: tuple[Section, ...]) -> None:
    """Each section has an opener; only the last, or one before a system one, may lack a body."""
    last = len(sections) - 1
    for index, section in enumerate(sections):
        if not isinstance(section, Section):
            raise TypeError(f"ChainAST.sections holds Section nodes, not {type(section).__name__}")
        header = section.header
        if header.system_message is None and header.human_message is None:
            if index == 0:
                raise ChainError("section 0 must open with a system or human message")
            raise ChainError(
                f"section {index}: every section after the first opens with a human message "
                "(or a system message)"
            )
        if index < last and not section.body and sections[index + 1].header.system_message is None:
            raise ChainError(
                f"section {index}: only the last section may have an empty body "
                "(two human messages in a row do not parse)"
            )


@dataclass(frozen=True, slots=True, init=False, eq=False, repr=False)
class ChainAST:
    """A parsed chain: immutable, sized, and convertible back to its messages.

    Build it with :meth:`from_messages`; every transform returns a new tree that shares
    the sections it did not touch.
    """

    sections: tuple[Section, ...]
    size: int

    def __init__(self, sections: Iterable[Section] = ()) -> None:
        sections = tuple(sections)
        _check_sections(sections)
        _set(self, "sections", sections)
        _set(self, "size", sum(s.size for s in sections))

    def __eq__(self, other: object) -> bool:
        return self.sections == other.sections if isinstance(other, ChainAST) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.sections)

    def __repr__(self) -> str:
        return f"ChainAST(sections={len(self.sections)}, size={self.size})"

    def __len__(self) -> int:
        return len(self.sections)

    def __iter__(self) -> Iterator[Section]:
        return iter(self.sections)

    # -- building and reading ---------------------------------------------------------

    @classmethod
    def from_messages(
        cls, messages: Iterable[Message | dict[str, Any]], *, repair: bool = False
    ) -> Self:
        """Parse a chain of messages (or their dicts).

        Raises :class:`ChainError` (with the offending message's ``index``) when the chain
        breaks a parse rule, unless ``repair`` is true; repair still raises when the
        first message is not system/human or a system message comes later.
        """
        ast = _OPERATIONS["parse_chain"](messages, repair=repair)
        return ast if cls is ChainAST else cls(ast.sections)  # type: ignore[return-value]

    @classmethod
    def from_json(cls, data: str | bytes | bytearray, *, repair: bool = False) -> Self:
        """Parse chaincast's JSON form of a message list (a JSON array of each message's
        ``model_dump(mode="json")``) straight into an AST, faster than ``json.loads``
        then :meth:`from_messages`. Raises :class:`MessageFormatError` naming the message
        index and field for an invalid message list, :class:`ChainError` like
        :meth:`from_messages`.
        """
        with collector_paused():
            try:
                messages = MESSAGES_ADAPTER.validate_json(data)
            except ValidationError as exc:
                raise located_error(exc) from exc
            return cls.from_messages(messages, repair=repair)

    def to_messages(self) -> list[Message]:
        """The chain as a list of messages, in order."""
        out: list[Message] = []
        append, extend = out.append, out.extend
        for section in self.sections:
            header = section.header
            if header.system_message is not None:
                append(header.system_message)
            if header.human_message is not None:
                append(header.human_message)
            for pair in section.body:
                append(pair.ai_message)
                extend(pair.tool_messages)
        return out

    @property
    def message_count(self) -> int:
        """How many messages the chain holds."""
        return len(self.to_messages())

    def system_messages(self) -> tuple[Message, ...]:
        """Every system message of the chain in order: the system prompt and those sent
        mid-chain, each the opener of its section."""
        systems = (section.header.system_message for section in self.sections)
        return tuple(system for system in systems if system is not None)

    @property
    def current_section(self) -> int:
        """The index of the section holding the current question: the last one but
        sections holding a system message alone (aider's reminders); -1 when empty."""
        index = len(self.sections) - 1
        while index > 0:
            section = self.sections[index]
            if section.body or section.header.human_message is not None:
                break
            index -= 1
        return index

    def evolve(self, *, sections: Iterable[Section]) -> ChainAST:
        """A copy with other sections (checked like the constructor)."""
        return ChainAST(sections)

    # -- transforms ----------------------------------------------------------------------

    def normalize_tool_call_ids(self, template: TemplateLike) -> ChainAST:
        """Give every tool call whose id does not fit ``template``, or repeats an id seen
        earlier in the chain, a new id from it; its results follow."""
        return renamed_tool_call_ids(self, template)

    def clear_reasoning(self) -> ChainAST:
        """Drop ``reasoning`` from every text part and tool call."""
        return map_messages(self, partial(without_reasoning, keep_empty=True))

    def sanitize_tool_call_arguments(self) -> ChainAST:
        """Escape raw control characters in argument JSON; invalid JSON becomes ``"{}"``."""
        return map_messages(self, partial(map_tool_call_arguments, fix=sanitize_arguments))

    def append_human_message(self, text: str) -> ChainAST:
        """Add human text: a new section after a body, else into the open section's header."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        part = TextPart(text=text)
        sections = self.sections
        if not sections or sections[-1].body:
            human = trusted_message(Role.HUMAN, (part,))
            return trusted_chain((*sections, trusted_section(trusted_header(None, human), ())))
        last = sections[-1]
        system, old = last.header.system_message, last.header.human_message
        human = trusted_message(Role.HUMAN, (part,) if old is None else (*old.parts, part))
        return trusted_chain(
            (*sections[:-1], trusted_section(trusted_header(system, human), last.body))
        )

    def add_tool_response(self, tool_call_id: str, name: str, content: str) -> ChainAST:
        """Set the result of the latest tool call with this id, replacing its content or
        adding it."""
        sections = self.sections
        for s_index in range(len(sections) - 1, -1, -1):
            section = sections[s_index]
            for p_index in range(len(section.body) - 1, -1, -1):
                pair = section.body[p_index]
                if any(call.id == tool_call_id for call in pair.tool_calls):
                    new_pair = _set_result(pair, tool_call_id, name, content)
                    body = (*section.body[:p_index], new_pair, *section.body[p_index + 1 :])
                    new_sections = list(sections)
                    new_sections[s_index] = trusted_section(section.header, body)
                    return trusted_chain(tuple(new_sections))
        raise ChainError(
            f"no tool call with id {tool_call_id!r} in the chain", rule=ParseRule.UNKNOWN_TOOL_CALL
        )

    def find_tool_call_responses(self, tool_call_id: str) -> list[ToolResult]:
        """Every result answering ``tool_call_id``, in chain order."""
        return [
            part
            for section in self.sections
            for pair in section.body
            for message in pair.tool_messages
            for part in message.parts
            if type(part) is ToolResult and part.tool_call_id == tool_call_id
        ]


# -- the transforms' tree walks ------------------------------------------------------------


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


@collector_paused()  # it builds many nodes
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
    new_ids: list[str | None] = []  # per call, None when kept; each new id joins kept_ids
    for call, rename in zip(calls, renames, strict=True):
        seed = f"{call.id}\x1f{call.name}\x1f{replaced[call.id]}"
        replaced[call.id] += rename
        new = tmpl.generate_unused(call.name, seed=seed, used=kept_ids) if rename else None
        new_ids.append(new)
    decisions = iter(new_ids)
    sections: list[Section] = []
    for section in ast.sections:
        body = tuple(_rename_pair_calls(pair, decisions) for pair in section.body)
        same = all(map(operator.is_, body, section.body))
        sections.append(section if same else trusted_section(section.header, body))
    return trusted_chain(tuple(sections))


def _rename_pair_calls(pair: BodyPair, new_ids: Iterator[str | None]) -> BodyPair:
    """The pair with its calls given the ids ``new_ids`` holds (None: kept); results follow."""
    parts = list(pair.ai_message.parts)
    delta = 0
    final: dict[str, list[str]] = {}  # old id -> the final ids of its calls, in order
    renamed = False
    for position, part in enumerate(parts):
        if type(part) is not ToolCall:
            continue
        old_id, new = part.id, next(new_ids)
        if new is None:
            new = old_id
        else:
            renamed = True
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
    tools.append(Message.tool(tool_call_id, name, content))
    return trusted_pair(pair.type, pair.ai_message, tuple(tools))


# -- the parser behind from_messages --------------------------------------------------------

# cast.parse registers it with chain_operation: it imports this module, not the reverse.
_OPERATIONS: Registry[ChainAST] = Registry()
chain_operation = _OPERATIONS.register
"""Register the decorated function as the one behind the ``ChainAST`` method of that
name (``"parse_chain"`` for :meth:`ChainAST.from_messages`)."""


# -- unchecked builders: the fast path of the parser, the transforms and the codecs ---------------


def _mutable_twin(cls: type) -> Any:
    """A mutable class of ``cls``'s slots, made a ``cls`` once filled (fast build)."""
    return type(f"_Mutable{cls.__name__}", (), {"__slots__": cls.__dict__["__slots__"]})


_MutableHeader = _mutable_twin(Header)
_MutablePair = _mutable_twin(BodyPair)
_MutableSection = _mutable_twin(Section)
_MutableChain = _mutable_twin(ChainAST)


def trusted_header(
    system: Message | None, human: Message | None, size: int | None = None
) -> Header:
    """A header; its size is computed from the messages unless given."""
    node = _MutableHeader()
    node.system_message = system
    node.human_message = human
    if size is None:
        size = (system.size if system else 0) + (human.size if human else 0)
    node.size = size
    node.__class__ = Header
    return node  # type: ignore[no-any-return]


def trusted_pair(
    kind: BodyPairType,
    ai_message: Message,
    tool_messages: tuple[Message, ...],
    size: int | None = None,
) -> BodyPair:
    """A body pair; its size is computed from the messages unless given."""
    node = _MutablePair()
    node.type = kind
    node.ai_message = ai_message
    node.tool_messages = tool_messages
    node.size = ai_message.size + sum(m.size for m in tool_messages) if size is None else size
    node.__class__ = BodyPair
    return node  # type: ignore[no-any-return]


def trusted_section(header: Header, body: tuple[BodyPair, ...], size: int | None = None) -> Section:
    """A section; its size is computed from the children unless given."""
    node = _MutableSection()
    node.header = header
    node.body = body
    node.size = header.size + sum(pair.size for pair in body) if size is None else size
    node.__class__ = Section
    return node  # type: ignore[no-any-return]


def trusted_chain(sections: tuple[Section, ...], size: int | None = None) -> ChainAST:
    """A chain; its size is computed from the sections unless given."""
    node = _MutableChain()
    node.sections = sections
    node.size = sum(s.size for s in sections) if size is None else size
    node.__class__ = ChainAST
    return node  # type: ignore[no-any-return]
