"""Baseline policies, each written from its source's description and default settings.

* :class:`DropOldest` — drop whole body pairs, oldest first, until under budget.
* :class:`KeepLastSummarize` — seed 001: over 70 % of the window, summarize everything
  but the last 4 messages in one call; the split moves back to a safe point so a tool
  call and its results stay together.
* :class:`FractionPartition` — seed 004: over 85 % of the window, summarize everything
  but the last 6 messages (a plain partition, no safe point); the summary input is
  trimmed to 4000 tokens; ``inline=True`` is its no-LLM fallback, the ``[role]: text``
  lines cut to 15 % of the window.

Both summarizing baselines put the summary in a human message after the system prompt,
as their sources do. When the next kept message is a human message too, the summary
becomes that message's first part: providers merge consecutive user turns anyway, and a
chain with two human messages in a row would not parse.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.policies.policy import MeteredHandler, Policy, PolicyStep
from cast import ChainAST, Message, Role, TextPart
from cast.ast import Header, Section
from cast.messages import utf8_len
from csum.prompt import SummaryRequest, messages_to_prompt, summary_request

__all__ = ["DropOldest", "FractionPartition", "KeepLastSummarize", "message_text"]

CHARS_PER_TOKEN = 4
"""Seed 004 counts tokens as characters / 4; budgets here are bytes, read the same way."""


def message_text(message: Message) -> str:
    """Everything a message says, as plain text (texts, calls, results)."""
    chunks: list[str] = []
    for part in message.parts:
        kind = part.type
        if kind == "text":
            chunks.append(part.text)  # type: ignore[union-attr]
        elif kind == "tool_call":
            chunks.append(f"{part.name}({part.arguments})")  # type: ignore[union-attr]
        elif kind == "tool_result":
            chunks.append(part.content)  # type: ignore[union-attr]
    return "\n".join(chunks)


def _size(messages: Sequence[Message]) -> int:
    return sum(m.size for m in messages)


def _rebuild(system: Message | None, summary: str, recent: Sequence[Message]) -> list[Message]:
    """``system``, the summary as a human message, then ``recent``."""
    out: list[Message] = [system] if system is not None else []
    part = TextPart(text=summary)
    if recent and recent[0].role is Role.HUMAN:
        out.append(Message(role=Role.HUMAN, parts=(part, *recent[0].parts)))
        out.extend(recent[1:])
    else:
        out.append(Message(role=Role.HUMAN, parts=(part,)))
        out.extend(recent)
    return out


class DropOldest(Policy):
    """Drop the oldest body pairs until the chain fits the budget.

    Whole pairs go (an AI message with all its results); a section whose last pair goes
    goes with its human message; the system message and the current section's header
    stay, and so does the newest pair. No handler. With ``target_ratio`` below 1 it has
    the Compactor's hysteresis: past the budget, pairs go until the chain is within
    ``target_ratio`` of it.
    """

    name = "drop-oldest"
    description = "drop oldest body pairs until under budget"
    guarantees_valid = True
    keeps_last_pair = True

    def __init__(
        self, budget: int, handler: MeteredHandler | None = None, *, target_ratio: float = 1.0
    ) -> None:
        super().__init__(budget, handler)
        if not 0 < target_ratio <= 1:
            raise ValueError(f"target_ratio must be within (0, 1], got {target_ratio!r}")
        self.target = int(budget * target_ratio)
        if target_ratio < 1:
            self.name = f"drop-oldest (to {target_ratio:.0%})"
            self.description = f"past the budget, drop oldest body pairs to {target_ratio:.0%}"

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        if _size(messages) <= self.budget:
            return list(messages), self._step(False)
        ast = ChainAST.from_messages(messages, repair=True)
        headers = [s.header for s in ast.sections]
        bodies = [list(s.body) for s in ast.sections]
        system = headers[0].system_message
        size = ast.size
        while size > self.target:
            if len(bodies) > 1:  # the oldest section goes pair by pair, then entirely
                if bodies[0]:
                    size -= bodies[0].pop(0).size
                if not bodies[0]:
                    size -= headers.pop(0).size
                    bodies.pop(0)
                    if system is not None:
                        headers[0] = Header(system, headers[0].human_message)
                        size += system.size
                continue
            if len(bodies[0]) <= 1:  # the newest pair stays, whatever its size
                break
            size -= bodies[0].pop(0).size
        out = ChainAST(Section(h, tuple(b)) for h, b in zip(headers, bodies, strict=True))
        return out.to_messages(), self._step(True)


def _safe_split(messages: Sequence[Message], split: int, start: int) -> int:
    """Move ``split`` back until ``messages[split:]`` opens with no tool message, so
    that no tool call is separated from its results."""
    while split > start and messages[split].role is Role.TOOL:
        split -= 1
    return split


class KeepLastSummarize(Policy):
    """Seed 001: summarize all but the last ``keep`` messages when over ``threshold``."""

    guarantees_valid = True
    keeps_last_pair = True

    def __init__(
        self,
        budget: int,
        handler: MeteredHandler,
        *,
        threshold: float = 0.7,
        keep: int = 4,
    ) -> None:
        super().__init__(budget, handler)
        self.threshold = threshold
        self.keep = keep
        self.name = f"keep-last-{keep} (seed 001)"
        self.description = f"at {threshold:.0%} of budget, summarize all but last {keep}"

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        if _size(messages) < self.threshold * self.budget:
            return list(messages), self._step(False)
        system = messages[0] if messages and messages[0].role is Role.SYSTEM else None
        start = 1 if system is not None else 0
        split = _safe_split(messages, max(len(messages) - self.keep, start), start)
        old, recent = messages[start:split], messages[split:]
        if not old:
            return list(messages), self._step(False)
        summary = await self.handler(summary_request([], old))
        text = (
            f"=== CONVERSATION SUMMARY (previous {len(old)} messages) ===\n"
            f"{summary}\n=== END SUMMARY ==="
        )
        return _rebuild(system, text, recent), self._step(True)


class FractionPartition(Policy):
    """Seed 004: summarize all but the last ``keep`` messages when over ``fraction``.

    The partition is by message count only, as in the source: it may separate a tool
    call from its results. The summary input keeps the newest messages that fit
    ``max_input_tokens``; ``inline`` skips the handler and cuts the ``[role]: text``
    transcript to ``inline_fraction`` of the window.
    """

    def __init__(
        self,
        budget: int,
        handler: MeteredHandler | None,
        *,
        fraction: float = 0.85,
        keep: int = 6,
        max_input_tokens: int = 4000,
        inline: bool = False,
        inline_fraction: float = 0.15,
    ) -> None:
        super().__init__(budget, None if inline else handler)
        self.fraction = fraction
        self.keep = keep
        self.max_input_bytes = max_input_tokens * CHARS_PER_TOKEN
        self.inline = inline
        self.inline_bytes = int(inline_fraction * budget)
        label = "inline" if inline else "LLM"
        self.name = f"fraction-{fraction:g} keep-{keep} {label} (seed 004)"
        self.description = f"at {fraction:.0%} of budget, {label} summary of all but last {keep}"

    def _trimmed_prompt(self, old: Sequence[Message]) -> SummaryRequest:
        low, high = 0, len(old) - 1  # keep old[first:], the newest that fit
        while low < high:
            mid = (low + high) // 2
            if utf8_len(messages_to_prompt([], old[mid:])) <= self.max_input_bytes:
                high = mid
            else:
                low = mid + 1
        return summary_request([], old[low:])

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        if self.handler is not None:
            self.handler.reset()
        if _size(messages) <= self.fraction * self.budget:
            return list(messages), self._step(False)
        system = messages[0] if messages and messages[0].role is Role.SYSTEM else None
        start = 1 if system is not None else 0
        split = max(len(messages) - self.keep, start)
        old, recent = messages[start:split], messages[split:]
        if not old:
            return list(messages), self._step(False)
        if self.handler is None:
            lines = "\n\n".join(f"[{m.role.value}]: {message_text(m)}" for m in old)
            summary = lines.encode("utf-8")[: self.inline_bytes].decode("utf-8", "ignore")
        else:
            summary = await self.handler(self._trimmed_prompt(old))
        text = f"Summary of the conversation so far:\n{summary}"
        return _rebuild(system, text, recent), self._step(True)
