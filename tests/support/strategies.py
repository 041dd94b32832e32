"""Hypothesis strategies for chains: valid ones, and valid ones mutilated for repair.

A valid chain has sections (an optional system message first, then a human message per
section), completions and tool-call pairs with parallel calls whose results may come in
any order and spread over several tool messages, reasoning, images, binary data and
non-ASCII text. Tool-call ids come from a small pool, so different pairs reuse ids the
way real agents do (tau-bench).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from cast import (
    SUMMARIZATION_TOOL_NAME,
    BinaryPart,
    ImagePart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)

__all__ = [
    "binary_parts",
    "image_parts",
    "mutilated_chains",
    "reasoning",
    "texts",
    "valid_chains",
]

NON_ASCII_SAMPLES = ("héllo", "😀", "漢字", "naïve café", "Ελληνικά", "🧑‍💻 done")

texts: st.SearchStrategy[str] = st.one_of(
    st.sampled_from(NON_ASCII_SAMPLES),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
)
"""Short texts, often non-ASCII (no lone surrogates: they are not valid UTF-8)."""

reasoning: st.SearchStrategy[Reasoning] = st.builds(
    Reasoning, content=texts, signature=st.binary(max_size=12)
)

_maybe_reasoning = st.none() | reasoning

text_parts = st.builds(TextPart, text=texts, reasoning=_maybe_reasoning)
image_parts = st.builds(
    ImagePart,
    url=st.sampled_from(["https://example.com/a.png", "data:image/png;base64,iVBORw0K"]),
    detail=st.sampled_from(["", "low", "high"]),
)
binary_parts = st.builds(
    BinaryPart,
    mime_type=st.sampled_from(["application/pdf", "audio/wav", "image/png"]),
    data=st.binary(max_size=24),
)

_content_parts = st.lists(text_parts | image_parts | binary_parts, min_size=1, max_size=3)

TOOL_IDS = ("call_1", "call_2", "call_3", "toolu_01", "id-é", "fc_x", "call_1x", "a")
"""The id pool: small, so different pairs reuse ids; some fit common templates."""

TOOL_NAMES = ("get_user", "search_flights", "función", "calc")

_arguments = st.dictionaries(
    st.sampled_from(["user_id", "q", "n", "ключ"]),
    st.integers(-5, 5) | texts,
    max_size=2,
).map(lambda value: json.dumps(value, ensure_ascii=False))


def _human(parts: list[Any]) -> Message:
    return Message(role=Role.HUMAN, parts=parts)


@st.composite
def _completion(draw: st.DrawFn) -> list[Message]:
    parts = draw(st.lists(text_parts | image_parts, min_size=0, max_size=2))
    return [Message(role=Role.AI, parts=parts)]


@st.composite
def _tool_pair(draw: st.DrawFn) -> list[Message]:
    """An AI message with 1-4 parallel calls, then their results in some order, spread
    over one or more tool messages."""
    ids = draw(st.lists(st.sampled_from(TOOL_IDS), min_size=1, max_size=4, unique=True))
    summarization = draw(st.booleans()) and draw(st.booleans())
    calls = []
    for position, call_id in enumerate(ids):
        name = (
            SUMMARIZATION_TOOL_NAME
            if summarization and position == 0
            else draw(st.sampled_from(TOOL_NAMES))
        )
        calls.append(
            ToolCall(
                id=call_id,
                name=name,
                arguments=draw(_arguments),
                reasoning=draw(_maybe_reasoning),
            )
        )
    prefix = draw(st.lists(text_parts, max_size=1))
    ai = Message(role=Role.AI, parts=[*prefix, *calls])
    results = [
        ToolResult(tool_call_id=call.id, name=call.name, content=draw(texts)) for call in calls
    ]
    results = draw(st.permutations(results))
    messages = [ai]
    while results:
        take = draw(st.integers(1, len(results)))
        messages.append(Message(role=Role.TOOL, parts=results[:take]))
        results = results[take:]
    return messages


_body_pair = _completion() | _tool_pair()


@st.composite
def valid_chains(draw: st.DrawFn, min_sections: int = 0, max_sections: int = 4) -> list[Message]:
    """A chain that parses strictly, as its list of messages."""
    count = draw(st.integers(min_sections, max_sections))
    messages: list[Message] = []
    for index in range(count):
        last = index == count - 1
        system = index == 0 and draw(st.booleans())
        if system:
            messages.append(Message(role=Role.SYSTEM, parts=draw(_content_parts)))
        # Only the first section may lack a human message (when it has a system one).
        if not system or draw(st.booleans()):
            messages.append(_human(draw(_content_parts)))
        # Every section but the last needs a body, or the next human message would join
        # this header.
        pairs = draw(st.lists(_body_pair, min_size=0 if last else 1, max_size=3))
        for pair in pairs:
            messages.extend(pair)
    return messages


def _drop_message(chain: list[Message], draw: st.DrawFn) -> None:
    if len(chain) > 1:
        del chain[draw(st.integers(1, len(chain) - 1))]


def _duplicate_message(chain: list[Message], draw: st.DrawFn) -> None:
    source = draw(st.integers(0, len(chain) - 1))
    if chain[source].role is not Role.SYSTEM:
        chain.insert(draw(st.integers(1, len(chain))), chain[source])


def _move_message(chain: list[Message], draw: st.DrawFn) -> None:
    if len(chain) > 2:
        message = chain.pop(draw(st.integers(1, len(chain) - 1)))
        chain.insert(draw(st.integers(1, len(chain))), message)


def _tool_positions(chain: list[Message]) -> list[int]:
    return [i for i, m in enumerate(chain) if m.role is Role.TOOL and m.parts]


def _edit_results(chain: list[Message], draw: st.DrawFn, how: str) -> None:
    positions = _tool_positions(chain)
    if not positions:
        return
    at = draw(st.sampled_from(positions))
    parts = list(chain[at].parts)
    victim = draw(st.integers(0, len(parts) - 1))
    if how == "drop":
        del parts[victim]
    elif how == "duplicate":
        parts.insert(draw(st.integers(0, len(parts))), parts[victim])
    else:  # move the result to another tool message (likely of another pair)
        target = draw(st.sampled_from(positions))
        moved = parts.pop(victim)
        if target == at:
            parts.insert(draw(st.integers(0, len(parts))), moved)
        else:
            other = list(chain[target].parts)
            other.insert(draw(st.integers(0, len(other))), moved)
            chain[target] = Message(role=Role.TOOL, parts=other)
    chain[at] = Message(role=Role.TOOL, parts=parts)


_MUTATIONS = (
    "drop",
    "duplicate",
    "move",
    "drop-result",
    "duplicate-result",
    "move-result",
)


@st.composite
def mutilated_chains(draw: st.DrawFn, max_mutations: int = 5) -> list[Message]:
    """A valid chain with messages and results dropped, duplicated and reordered.

    The first message stays the original system or human message and no system message
    appears later, so ``repair=True`` always succeeds.
    """
    chain = draw(valid_chains(min_sections=1))
    for mutation in draw(st.lists(st.sampled_from(_MUTATIONS), max_size=max_mutations)):
        if mutation == "drop":
            _drop_message(chain, draw)
        elif mutation == "duplicate":
            _duplicate_message(chain, draw)
        elif mutation == "move":
            _move_message(chain, draw)
        else:
            _edit_results(chain, draw, mutation.removesuffix("-result"))
    return chain


def json_garbage(keys: list[str], words: list[str]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-like values built from a codec's own keys and words, to check
    that decoders raise nothing but CodecError on malformed payloads."""
    scalars = (
        st.none() | st.booleans() | st.integers() | st.sampled_from(words) | st.text(max_size=4)
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(keys), inner, max_size=4)
        ),
        max_leaves=12,
    )
