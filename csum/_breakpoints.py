"""Anthropic prompt-cache breakpoints at the end of a compacted chain's stable prefix.

After a compaction, the chain's start (system prompt, the summary, the cleared tool
results) stays byte-identical until the next compaction, so it is what a cache entry
should cover. cast carries Anthropic's ``cache_control`` as a
``ProviderPart(provider="anthropic", kind="cache_control")`` right after the part it
marks (:mod:`cast.codecs.anthropic`); this module adds such parts at the end of chosen
messages, never more than the API's limit of four per request, counting the
caller's own (which are never moved or removed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from cast import ChainAST, Message, ProviderPart, Role
from csum._chain_edits import changed_positions, edited

__all__ = [
    "EPHEMERAL",
    "MAX_BREAKPOINTS",
    "add_breakpoints",
    "breakpoints",
    "is_breakpoint",
    "with_breakpoints",
]

MAX_BREAKPOINTS: Final = 4
"""Anthropic's limit of ``cache_control`` blocks per request."""
EPHEMERAL: Final = '{"type":"ephemeral"}'
_PROVIDER: Final = "anthropic"
_KIND: Final = "cache_control"


def is_breakpoint(part: object) -> bool:
    """Whether ``part`` is an Anthropic cache point."""
    return type(part) is ProviderPart and part.provider == _PROVIDER and part.kind == _KIND


def breakpoints(messages: Sequence[Message]) -> int:
    """How many cache points the chain holds."""
    return sum(1 for m in messages for p in m.parts if is_breakpoint(p))


def add_breakpoints(messages: list[Message], anchors: Sequence[int]) -> tuple[list[Message], int]:
    """``messages`` with a cache point at the end of each anchor message (by index, in
    priority order) that has none there yet, while the chain stays within
    :data:`MAX_BREAKPOINTS`; (chain, how many were added). The input is not changed."""
    room = MAX_BREAKPOINTS - breakpoints(messages)
    out = messages
    added = 0
    seen: set[int] = set()
    for index in anchors:
        if room <= 0:
            break
        if index in seen or not 0 <= index < len(messages):
            continue
        seen.add(index)
        message = out[index]
        if not message.parts or is_breakpoint(message.parts[-1]):
            continue
        if message.role is Role.AI and not _markable_ai(message):
            continue
        if out is messages:
            out = list(messages)
        point = ProviderPart(provider=_PROVIDER, kind=_KIND, data=EPHEMERAL)
        out[index] = Message.from_parts(message.role, (*message.parts, point))
        room -= 1
        added += 1
    return out, added


def _markable_ai(message: Message) -> bool:
    # An AI message whose last part is reasoning alone would put the point on a
    # thinking block, which the API refuses: mark only text or tool calls.
    last = message.parts[-1]
    text = getattr(last, "text", None)
    return text is None or bool(text)


def with_breakpoints(
    ast: ChainAST, anchors: Sequence[int], measure: Callable[[ChainAST], int], limit: int
) -> ChainAST:
    """``ast`` with cache points at the end of the messages at ``anchors`` (positions in
    priority order, as :func:`add_breakpoints` places them); ``ast`` itself when the
    points would push it over ``limit`` (as ``measure`` counts) while it fits."""
    messages = ast.to_messages()
    marked, added = add_breakpoints(messages, anchors)
    if not added:
        return ast
    out = edited(ast, changed_positions(messages, marked))
    if measure(out) > limit >= measure(ast):
        return ast
    return out
