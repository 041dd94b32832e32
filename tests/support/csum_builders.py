"""Chain builders, fake handlers and invariant checks for the csum tests.

Sizes here are exact UTF-8 byte counts, so tests can sit a pair right on a budget
boundary. Builders return plain lists of messages; ``section`` joins them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from cast import (
    BodyPair,
    ChainAST,
    Message,
    Reasoning,
    Role,
    Section,
    TextPart,
    ToolCall,
)
from csum import SummarizerConfig, is_summarized

TOOL = "t"
"""Name of the fake tool in built pairs (one byte, so sizes are easy to count)."""


def fill(size: int, char: str = "x") -> str:
    """A string of exactly ``size`` UTF-8 bytes (``char`` must be ASCII)."""
    if size < 0:
        raise ValueError(f"cannot fill {size} bytes")
    return char * size


def completion(size: int, char: str = "a") -> list[Message]:
    """A COMPLETION pair whose AI message is exactly ``size`` bytes."""
    return [Message.ai(fill(size, char))]


def request(
    call_id: str,
    size: int,
    *,
    name: str = TOOL,
    text: str = "",
    reasoning: str | None = None,
    text_reasoning: str | None = None,
) -> list[Message]:
    """A REQUEST_RESPONSE pair of exactly ``size`` bytes: an AI message with one call
    (and optional text, reasoning on the call, reasoning on the text) and its result."""
    parts: list[Any] = []
    if text or text_reasoning is not None:
        parts.append(
            TextPart(
                text=text,
                reasoning=None if text_reasoning is None else Reasoning(content=text_reasoning),
            )
        )
    parts.append(
        ToolCall(
            id=call_id,
            name=name,
            arguments="{}",
            reasoning=None if reasoning is None else Reasoning(content=reasoning, signature=b"sig"),
        )
    )
    ai = Message(role=Role.AI, parts=parts)
    overhead = ai.size + len(call_id.encode()) + len(name.encode())
    return [ai, Message.tool(call_id, name, fill(size - overhead, "r"))]


def parallel(call_ids: Sequence[str], result_size: int, *, name: str = TOOL) -> list[Message]:
    """One AI message calling every id at once, then one tool message per call."""
    calls = [ToolCall(id=call_id, name=name) for call_id in call_ids]
    ai = Message(role=Role.AI, parts=calls)
    return [ai, *(Message.tool(c, name, fill(result_size, "p")) for c in call_ids)]


def section(human: str | None, *pairs: list[Message], system: str | None = None) -> list[Message]:
    """A section: optional system and human messages, then the pairs' messages."""
    out: list[Message] = []
    if system is not None:
        out.append(Message.system(system))
    if human is not None:
        out.append(Message.human(human))
    for pair in pairs:
        out.extend(pair)
    return out


def sections_chain(count: int, *, pairs: int = 2, system: str | None = "sys") -> list[Message]:
    """``count`` sections of ``pairs`` small completions each (the first one with the
    system message), texts unique per pair."""
    out: list[Message] = []
    for index in range(count):
        answers = [[Message.ai(f"answer {index}.{p}")] for p in range(pairs)]
        out += section(f"question {index}", *answers, system=system if index == 0 else None)
    return out


def dump(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Deep snapshot of messages, to compare before/after."""
    return [m.model_dump(mode="json") for m in messages]


def parse(messages: Iterable[Message]) -> ChainAST:
    """Strict parse: the output of the summarizer must never need repair."""
    return ChainAST.from_messages(messages)


def shape(messages: Iterable[Message]) -> list[tuple[str, ...]]:
    """Per section: ``S``/``H`` for its header messages, then one letter per pair:
    ``c`` completion, ``r`` request/response, ``C`` summary completion, ``R`` summary
    (SUMMARIZATION) pair."""
    out: list[tuple[str, ...]] = []
    for sec in parse(messages).sections:
        head: tuple[str, ...] = ("S",) if sec.header.system_message else ()
        head += ("H",) if sec.header.human_message else ()
        out.append(head + tuple(pair_letter(p) for p in sec.body))
    return out


def pair_letter(pair: BodyPair) -> str:
    """One letter for a pair's kind (see :func:`shape`)."""
    letter = "c" if pair.type.value == "completion" else "r"
    return letter.upper() if is_summarized(pair) else letter


def summary_call(pair: BodyPair) -> ToolCall:
    """The fake call of a SUMMARIZATION pair: the last part of its AI message."""
    call = pair.ai_message.parts[-1]
    assert isinstance(call, ToolCall), f"{type(call).__name__} is not a tool call"
    return call


def summary_text(pair: BodyPair) -> str:
    """The summary a summary pair holds (completion text or tool result content)."""
    if pair.tool_messages:
        return pair.tool_messages[0].tool_results[0].content
    return pair.ai_message.text


# -- handlers ------------------------------------------------------------------------------


def label(prompt: str) -> str:
    """The deterministic fake summary of a prompt."""
    return f"S{len(prompt)}"


@dataclass
class FakeHandler:
    """A deterministic async handler: records prompts, counts calls in flight.

    ``delay(prompt)`` gives seconds to sleep before answering; ``answer(prompt)`` the
    summary (default :func:`label`); ``fail(prompt)`` an exception to raise, or None.
    """

    answer: Callable[[str], Any] = label
    delay: Callable[[str], float] | None = None
    fail: Callable[[str], BaseException | None] | None = None
    prompts: list[str] = field(default_factory=list)
    in_flight: int = 0
    peak: int = 0
    cancelled: int = 0
    finished: int = 0

    @property
    def calls(self) -> int:
        return len(self.prompts)

    async def __call__(self, prompt: str) -> Any:
        self.prompts.append(prompt)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay is not None:
                await anyio.sleep(self.delay(prompt))
            if self.fail is not None:
                error = self.fail(prompt)
                if error is not None:
                    raise error
            result = self.answer(prompt)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1
        self.finished += 1
        return result


def random_delays(seed: int, top: float = 0.01) -> Callable[[str], float]:
    """Per-call random sleeps from a seeded generator (order of calls decides)."""
    rng = random.Random(seed)
    return lambda _prompt: rng.uniform(0, top)


# -- invariants ----------------------------------------------------------------------------


def kept_count(config: SummarizerConfig, sections: int) -> int:
    """How many newest sections keep their pairs."""
    return min(config.keep_qa_sections, sections)


def threshold(config: SummarizerConfig) -> int:
    """The byte budget of the pairs kept by a rotation, header included."""
    return math.floor(config.last_section_bytes * (100 - config.reserve_percent) / 100)


def check_output(
    before: Sequence[Message], after: Sequence[Message], config: SummarizerConfig
) -> None:
    """The invariants every summarizer output keeps (``before`` is a valid chain).

    * the output parses strictly;
    * every section but the last ``keep_qa_sections`` holds exactly one summary pair;
    * in each of the last ``keep_qa_sections`` sections of the input, the last body pair
      is kept as the very same message objects;
    * with ``preserve_last``, each of the last sections is within budget, or opens with
      a summary pair followed by pairs that fit the budget less the reserve (or by the
      last pair alone), and only its last pair may be over ``max_body_pair_bytes``;
    * with ``use_qa``, the section count is within the QA limit (or the forced minimum).
    """
    ast_before = parse(before)
    ast_after = parse(after)
    out = ast_after.sections
    kept = kept_count(config, len(out))
    for index, sec in enumerate(out[: len(out) - kept]):
        assert len(sec.body) == 1, f"section {index} keeps {len(sec.body)} pairs"
        assert is_summarized(sec.body[0]), f"section {index} holds an unsummarized pair"

    tail_before = ast_before.sections[
        len(ast_before.sections) - kept_count(config, len(ast_before.sections)) :
    ]
    tail_after = out[len(out) - len(tail_before) :]
    for old, new in zip(tail_before, tail_after, strict=True):
        if old.body:
            assert new.body, "a kept section lost its body"
            assert new.body[-1].ai_message is old.body[-1].ai_message
            assert len(new.body[-1].tool_messages) == len(old.body[-1].tool_messages)
            for a, b in zip(new.body[-1].tool_messages, old.body[-1].tool_messages, strict=True):
                assert a is b
        assert new.header.human_message is old.header.human_message

    if config.preserve_last:
        for sec in out[len(out) - kept :]:
            check_rotated(sec, config)
    if config.use_qa:
        assert len(out) <= max(config.max_qa_sections, config.keep_qa_sections + 1)


def check_rotated(sec: Section, config: SummarizerConfig) -> None:
    """A last section after rotation (see :func:`check_output`)."""
    body = sec.body
    for pair in body[:-1]:
        assert pair.size <= config.max_body_pair_bytes or is_summarized(pair)
    if sec.size <= config.last_section_bytes or len(body) <= 1:
        return
    assert is_summarized(body[0]), "an oversized section does not open with a summary"
    rest = sec.header.size + sum(p.size for p in body[1:])
    assert len(body) == 2 or rest <= threshold(config), (rest, threshold(config))
