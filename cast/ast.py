"""The chain AST: sections of a header and body pairs, each node sized once when built.

::

    ChainAST
    └── Section*            opened by the system message (first only) or a human message
        ├── Header          system_message?, human_message?
        └── BodyPair*       one AI message and the tool messages that answer its calls
                            COMPLETION | REQUEST_RESPONSE | SUMMARIZATION

Nodes are frozen and hold references to the caller's messages, never copies. Public
constructors check the node's invariants, so any tree that can be built turns back into
a chain that parses strictly; the parser builds nodes through trusted fast paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Self

from cast.constants import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    FAKE_GEMINI_SIGNATURE,
    SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME,
)
from cast.errors import ChainError
from cast.messages import (
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    new_trusted,
    trusted_message,
)

if TYPE_CHECKING:
    from cast.ids import TemplateLike

__all__ = ["BodyPair", "BodyPairType", "ChainAST", "Header", "Section", "pair_type_of"]

_set = object.__setattr__


class BodyPairType(StrEnum):
    """What a body pair holds."""

    COMPLETION = "completion"
    """An AI message without tool calls."""
    REQUEST_RESPONSE = "request_response"
    """An AI message with tool calls, and the tool messages answering them."""
    SUMMARIZATION = "summarization"
    """Like REQUEST_RESPONSE, with ``SUMMARIZATION_TOOL_NAME`` as the first call."""


def pair_type_of(ai_message: Message) -> BodyPairType:
    """The body pair type an AI message opens."""
    for part in ai_message.parts:
        if type(part) is ToolCall:
            if part.name == SUMMARIZATION_TOOL_NAME:
                return BodyPairType.SUMMARIZATION
            return BodyPairType.REQUEST_RESPONSE
    return BodyPairType.COMPLETION


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
        if self.system_message is not None:
            _check_role(self.system_message, Role.SYSTEM, "Header.system_message")
            size += self.system_message.size
        if self.human_message is not None:
            _check_role(self.human_message, Role.HUMAN, "Header.human_message")
            size += self.human_message.size
        _set(self, "size", size)

    @classmethod
    def _trusted(cls, system: Message | None, human: Message | None, size: int) -> Header:
        node = cls.__new__(cls)
        _set(node, "system_message", system)
        _set(node, "human_message", human)
        _set(node, "size", size)
        return node

    def messages(self) -> list[Message]:
        """The header's messages in chain order."""
        return [m for m in (self.system_message, self.human_message) if m is not None]

    def replace(self, **changes: Any) -> Header:
        """A copy with some fields changed (``system_message``, ``human_message``)."""
        return Header(
            changes.get("system_message", self.system_message),
            changes.get("human_message", self.human_message),
        )


def _pairing_problem(ai_message: Message, tool_messages: Sequence[Message]) -> str | None:
    """Why these tool messages cannot answer the AI message's calls, or None.

    Calls still waiting for their result are allowed: an agent loop holds such a pair
    between the model's request and the tools' answers (see ``add_tool_response``).
    """
    pending: dict[str, int] = {}
    for part in ai_message.parts:
        if type(part) is ToolCall:
            pending[part.id] = pending.get(part.id, 0) + 1
    for message in tool_messages:
        for part in message.parts:
            if type(part) is ToolResult:
                left = pending.get(part.tool_call_id, 0)
                if left == 0:
                    return f"tool result {part.tool_call_id!r} answers no call of this pair"
                pending[part.tool_call_id] = left - 1
    return None


@dataclass(frozen=True, slots=True)
class BodyPair:
    """An AI message and the tool messages that answer its calls, in chain order."""

    type: BodyPairType
    ai_message: Message
    tool_messages: tuple[Message, ...] = ()
    size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_role(self.ai_message, Role.AI, "BodyPair.ai_message")
        tool_messages: Any = self.tool_messages  # lists are accepted too
        if not isinstance(tool_messages, tuple):
            _set(self, "tool_messages", tuple(tool_messages))
        for message in self.tool_messages:
            _check_role(message, Role.TOOL, "BodyPair.tool_messages[]")
        declared = BodyPairType(self.type)
        _set(self, "type", declared)
        actual = pair_type_of(self.ai_message)
        if declared is not actual:
            raise ChainError(
                f"body pair declared {declared.value} but its AI message makes it {actual.value}"
            )
        if actual is BodyPairType.COMPLETION:
            if self.tool_messages:
                raise ChainError(
                    "a COMPLETION pair has no tool calls, so it takes no tool messages"
                )
        else:
            problem = _pairing_problem(self.ai_message, self.tool_messages)
            if problem is not None:
                raise ChainError(f"invalid body pair: {problem}")
        _set(self, "size", self.ai_message.size + sum(m.size for m in self.tool_messages))

    @classmethod
    def _trusted(
        cls,
        kind: BodyPairType,
        ai_message: Message,
        tool_messages: tuple[Message, ...],
        size: int,
    ) -> BodyPair:
        node = cls.__new__(cls)
        _set(node, "type", kind)
        _set(node, "ai_message", ai_message)
        _set(node, "tool_messages", tool_messages)
        _set(node, "size", size)
        return node

    @classmethod
    def from_messages(cls, ai_message: Message, *tool_messages: Message) -> BodyPair:
        """A pair whose type is read from the AI message."""
        return cls(pair_type_of(ai_message), ai_message, tool_messages)

    @classmethod
    def completion(cls, text: str) -> BodyPair:
        """A COMPLETION pair: one AI message with one text part."""
        message = trusted_message(Role.AI, (TextPart(text=text),))
        return cls._trusted(BodyPairType.COMPLETION, message, (), message.size)

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
        want reasoning before a tool call) followed by the summarization call, which
        carries ``FAKE_GEMINI_SIGNATURE`` when ``fake_signature``. ``seed`` makes the
        generated call id deterministic.
        """
        from cast.ids import as_template

        call_id = as_template(id_template).generate(SUMMARIZATION_TOOL_NAME, seed=seed)
        if not isinstance(text, str):
            raise TypeError(f"summary text must be a str, not {type(text).__name__}")
        reasoning = Reasoning(signature=FAKE_GEMINI_SIGNATURE.encode()) if fake_signature else None
        # Every field is known valid here: built without re-validation (hot in csum).
        call = new_trusted(
            ToolCall,
            {
                "type": "tool_call",
                "id": call_id,
                "name": SUMMARIZATION_TOOL_NAME,
                "arguments": SUMMARIZATION_TOOL_ARGS,
                "reasoning": reasoning,
            },
        )
        prefix: tuple[Any, ...] = ()
        if reasoning_message is not None:
            _check_role(reasoning_message, Role.AI, "reasoning_message")
            prefix = tuple(p for p in reasoning_message.parts if type(p) is not ToolCall)
        ai_message = trusted_message(Role.AI, (*prefix, call))
        result = new_trusted(
            ToolResult,
            {
                "type": "tool_result",
                "tool_call_id": call_id,
                "name": SUMMARIZATION_TOOL_NAME,
                "content": text,
            },
        )
        tool_message = trusted_message(Role.TOOL, (result,))
        return cls._trusted(
            BodyPairType.SUMMARIZATION,
            ai_message,
            (tool_message,),
            ai_message.size + tool_message.size,
        )

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
        header: Any = self.header
        if not isinstance(header, Header):
            raise TypeError(f"Section.header must be a Header, not {type(header).__name__}")
        body: Any = self.body  # lists are accepted too
        if not isinstance(body, tuple):
            _set(self, "body", tuple(body))
        for pair in self.body:
            if not isinstance(pair, BodyPair):
                raise TypeError(f"Section.body holds BodyPair nodes, not {type(pair).__name__}")
        _set(self, "size", self.header.size + sum(p.size for p in self.body))

    @classmethod
    def _trusted(cls, header: Header, body: tuple[BodyPair, ...], size: int) -> Section:
        node = cls.__new__(cls)
        _set(node, "header", header)
        _set(node, "body", body)
        _set(node, "size", size)
        return node

    def messages(self) -> list[Message]:
        """The header's messages, then every body pair's, in chain order."""
        out = self.header.messages()
        for pair in self.body:
            out.append(pair.ai_message)
            out.extend(pair.tool_messages)
        return out

    def replace(self, **changes: Any) -> Section:
        """A copy with ``header`` and/or ``body`` changed."""
        return Section(changes.get("header", self.header), changes.get("body", self.body))


def _check_sections(sections: tuple[Section, ...]) -> None:
    last = len(sections) - 1
    for index, section in enumerate(sections):
        if not isinstance(section, Section):
            raise TypeError(f"ChainAST.sections holds Section nodes, not {type(section).__name__}")
        header = section.header
        if index == 0:
            if header.system_message is None and header.human_message is None:
                raise ChainError("section 0 must open with a system or human message")
        else:
            if header.system_message is not None:
                raise ChainError(
                    f"section {index}: only the first section may hold a system message"
                )
            if header.human_message is None:
                raise ChainError(
                    f"section {index}: every section after the first opens with a human message"
                )
        if index < last and not section.body:
            raise ChainError(
                f"section {index}: only the last section may have an empty body "
                "(two human messages in a row do not parse)"
            )


class ChainAST:
    """A parsed chain: immutable, sized, and convertible back to its messages.

    Build it with :meth:`from_messages`; every transform returns a new tree that shares
    the sections it did not touch.
    """

    __slots__ = ("sections", "size")

    sections: tuple[Section, ...]
    size: int

    def __init__(self, sections: Iterable[Section] = ()) -> None:
        sections = tuple(sections)
        _check_sections(sections)
        _set(self, "sections", sections)
        _set(self, "size", sum(s.size for s in sections))

    @classmethod
    def _trusted(cls, sections: tuple[Section, ...], size: int | None = None) -> ChainAST:
        node = cls.__new__(cls)
        _set(node, "sections", sections)
        _set(node, "size", sum(s.size for s in sections) if size is None else size)
        return node

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ChainAST is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ChainAST is immutable; cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChainAST):
            return NotImplemented
        return self.sections == other.sections

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
        from cast.parse import parse_chain

        ast = parse_chain(messages, repair=repair)
        if cls is not ChainAST:
            return cls._trusted(ast.sections, ast.size)  # type: ignore[return-value]
        return ast  # type: ignore[return-value]

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

    messages = to_messages

    @property
    def message_count(self) -> int:
        """How many messages the chain holds."""
        return sum(
            (section.header.system_message is not None)
            + (section.header.human_message is not None)
            + sum(1 + len(pair.tool_messages) for pair in section.body)
            for section in self.sections
        )

    def replace_sections(self, sections: Iterable[Section]) -> ChainAST:
        """A new chain with these sections (checked like the constructor)."""
        return ChainAST(sections)

    # -- transforms (see cast.transforms) --------------------------------------------

    def normalize_tool_call_ids(self, template: TemplateLike) -> ChainAST:
        """Give every tool call whose id does not fit ``template``, or repeats an id seen
        earlier in the chain, a new id from it; its results follow."""
        from cast.transforms import normalize_tool_call_ids

        return normalize_tool_call_ids(self, template)

    def clear_reasoning(self) -> ChainAST:
        """Drop ``reasoning`` from every text part and tool call."""
        from cast.transforms import clear_reasoning

        return clear_reasoning(self)

    def sanitize_tool_call_arguments(self) -> ChainAST:
        """Escape raw control characters in argument JSON; invalid JSON becomes ``"{}"``."""
        from cast.transforms import sanitize_tool_call_arguments

        return sanitize_tool_call_arguments(self)

    def append_human_message(self, text: str) -> ChainAST:
        """Add human text: a new section, or into the open section's header."""
        from cast.transforms import append_human_message

        return append_human_message(self, text)

    def add_tool_response(self, tool_call_id: str, name: str, content: str) -> ChainAST:
        """Set the result of a tool call, replacing its content or adding it."""
        from cast.transforms import add_tool_response

        return add_tool_response(self, tool_call_id, name, content)

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
