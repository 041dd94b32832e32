"""One reader and one writer of the content blocks Anthropic, Bedrock Converse and Gemini
write in three shapes (text, media, tool calls and results, signed reasoning, blocks kept
whole): each codec fills a :class:`Blocks` table of its shapes; the loops are here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cast.codecs._common import (
    MISSING,
    AiParts,
    args_object,
    body_items,
    dumps_compact,
    ensure,
    fail,
    get_str,
    get_typed,
    split_user_turn,
)
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    trusted_message,
)

__all__ = ["CALL", "RESULT", "TEXT", "THINK", "Blocks", "read_call", "read_chain", "write_blocks"]

_HUMAN, _AI = Role.HUMAN, Role.AI

# What a block is to the readers; None: anything else (media, or a block kept whole).
TEXT, CALL, THINK, RESULT = "text", "call", "think", "result"

Parts = list[Any]
Block = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Blocks:
    """One format's key names and the readers and writers of its block shapes."""

    key: str  # the list of turns in a request body
    content: str  # a turn's list of blocks
    ai_role: str
    turn: str  # what a turn is, for errors
    system: Callable[[dict[str, Any]], Message | None]  # the body's system prompt
    classify: Callable[[Any, str, int], tuple[str | None, Any, Any]]  # (role, kind, value)
    result: Callable[[Any, str, int, int, Any], Message]
    other: Callable[[Any, Any, str, int, Parts], None]  # (value, kind): media or kept
    write_call: Callable[[ToolCall, Block], Block]
    write_media: Callable[[ImagePart | BinaryPart, str, int], Block]
    write_kept: Callable[[list[Block], ProviderPart, str, int], None]
    write_think: Callable[[list[Block], Block, Reasoning, bool], Block | None]
    call: Callable[[Any, str, int, Any, AiParts], None] | None = None  # appends the call
    think: Callable[[str, Any, str, int], Reasoning] | None = None  # (None: ai_turn's own)
    tagged: bool = False  # a block's kind is its "type" (else its one key)
    marks: Callable[[Any, Parts], None] | None = None  # parts after a text or call block
    user_other: Callable[[Any, Any, str, int, Parts], None] | None = None  # else other
    ai_turn: Callable[[list[Any], int, Any], Message] | None = None  # else read_ai
    system_turn: Callable[[object, str, int], Message] | None = None  # a system role
    default_role: str | None = None
    strings: bool = False  # a turn's content may be a string (one text)
    content_default: Any = MISSING  # a turn's content when absent (else an error)
    who: Callable[[Role], str] = lambda role: f"a {role.value}"


def read_chain(payload: object, b: Blocks, new_state: Callable[[], Any]) -> list[Message]:
    """The messages of a request body (or of its bare turns); a ``new_state()`` pairs
    results with calls."""
    items, body = body_items(payload, b.key)
    system = b.system(body)
    out: list[Message] = [] if system is None else [system]
    state = new_state()
    for i, item in enumerate(items):
        where = f"{b.key}[{i}]"
        ensure(item, dict, where, b.turn, i)
        if b.content_default is MISSING:
            content = item.get(b.content, MISSING)
            if content is MISSING:
                fail(f"{where}.{b.content}", "the message has no content", index=i)
            if not b.strings:
                content = ensure(
                    content, list, f"{where}.{b.content}", "an array of content blocks", i
                )
        else:
            content = get_typed(item, b.content, list, "an array of parts", where, i, [])
        role = item.get("role", b.default_role)
        if role == "system" and b.system_turn is not None:
            # Accepted inside ``messages`` by the Messages API (instructions mid-chain).
            out.append(b.system_turn(content, f"{where}.{b.content}", i))
            continue
        ai = role == b.ai_role
        if not ai and role != "user":
            fail(f"{where}.role", f"expected user or {b.ai_role}, got {role!r}", index=i)
        if isinstance(content, str):
            out.append(trusted_message(_AI if ai else _HUMAN, (TextPart(text=content),)))
        elif not isinstance(content, list):
            expected = "a string or an array of content blocks"
            fail(f"{where}.{b.content}", expected, content, i)
        elif not ai:
            read_user(b, content, i, state, out)
        elif b.ai_turn is not None:
            out.append(b.ai_turn(content, i, state))
        else:
            out.append(read_ai(b, content, i, state))
    return out


def read_ai(b: Blocks, content: list[Any], i: int, state: Any) -> Message:
    """An AI turn: a reasoning block is the reasoning of the text or call after it."""
    parts = AiParts()
    classify, marks, call, think = b.classify, b.marks, b.call, b.think
    assert call is not None and think is not None  # else the format reads its own AI turns
    for j, block in enumerate(content):
        where = f"{b.key}[{i}].{b.content}[{j}]"
        role, kind, value = classify(block, where, i)
        if role is TEXT:
            if not isinstance(value, str):
                fail(f"{where}.text", "a string", value, i)
            parts.text(value)
            if marks is not None:
                marks(block, parts)
        elif role is CALL:
            call(value, where, i, state, parts)
            if marks is not None:
                marks(block, parts)
        elif role is THINK:
            parts.think(think(kind, value, where, i))
        else:
            parts.settle()
            b.other(value, kind, where, i, parts)
    return parts.message()


def read_user(b: Blocks, content: list[Any], i: int, state: Any, out: list[Message]) -> None:
    """Each tool result a TOOL message, each run of other blocks a HUMAN message."""
    classify, marks, other = b.classify, b.marks, b.user_other or b.other

    def read(j: int, block: object, human: Parts) -> Message | None:
        where = f"{b.key}[{i}].{b.content}[{j}]"
        role, kind, value = classify(block, where, i)
        if role is RESULT:
            return b.result(value, where, i, j, state)
        if role is TEXT:
            if not isinstance(value, str):
                fail(f"{where}.text", "a string", value, i)
            human.append(TextPart(text=value))
            if marks is not None:
                marks(block, human)
        else:
            other(value, kind, where, i, human)
        return None

    split_user_turn(content, out, read)


def read_call(  # noqa: PLR0917 (a Blocks.call)
    obj: dict[str, Any],
    where: str,
    i: int,
    names: dict[str, str],
    parts: AiParts,
    id_key: str = "id",
) -> None:
    """A tool call of ``id_key``, ``name`` and an ``input`` object, taking the waiting
    reasoning; ``names`` maps its id to its name (for the results)."""
    call_id = get_str(obj, id_key, where, i)
    name = get_str(obj, "name", where, i)
    arguments = dumps_compact(get_typed(obj, "input", dict, "an object", where, i))
    names[call_id] = name
    parts.append(ToolCall(id=call_id, name=name, arguments=arguments, reasoning=parts.take()))


def read_signed(obj: dict[str, Any], key: str, where: str, i: int) -> Reasoning:
    """Reasoning text at ``key`` with its optional ``signature``."""
    text = get_str(obj, key, where, i)
    return Reasoning(content=text, signature=get_str(obj, "signature", where, i, "").encode())


def think_before(think: Callable[[Reasoning], Block]) -> Callable[..., Block | None]:
    """A ``write_think`` putting ``think``'s block before the part's (alone: instead)."""

    def write(blocks: list[Block], block: Block, reasoning: Reasoning, alone: bool) -> Any:
        blocks.append(think(reasoning))
        return None if alone else block

    return write


def write_blocks(message: Message, i: int, b: Blocks) -> list[Block]:
    """A message's content blocks; an AI part's reasoning as ``write_think`` places it."""
    ai = message.role is _AI
    blocks: list[Block] = []
    for j, part in enumerate(message.parts):
        where = f"messages[{i}].parts[{j}]"
        if isinstance(part, TextPart):
            block = {"type": "text", "text": part.text} if b.tagged else {"text": part.text}
        elif isinstance(part, ToolCall) and ai:
            block = b.write_call(part, args_object(part.arguments, f"{where}.arguments", i))
        elif isinstance(part, ImagePart | BinaryPart):
            blocks.append(b.write_media(part, where, i))
            continue
        elif isinstance(part, ProviderPart):
            b.write_kept(blocks, part, where, i)
            continue
        else:
            fail(where, f"{b.who(message.role)} message cannot carry a {part.type} part", index=i)
        reasoning = part.reasoning if ai else None
        if reasoning is not None:
            alone = type(part) is TextPart and not part.text
            written = b.write_think(blocks, block, reasoning, alone)
            if written is None:
                continue
            block = written
        blocks.append(block)
    return blocks
