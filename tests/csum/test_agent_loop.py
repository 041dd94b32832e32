"""The summarizer inside an agent loop: the chain grows step by step (answers, parallel
tool calls, huge tool results, new questions), is summarized after every step with a
random small-budget config, and the output is the chain of the next step.

After every step the output parses strictly, keeps the newest body pair as the very
same messages, leaves every old section with one summary pair, keeps the last sections
within their budgets, and summarizing it again calls the handler zero times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st

from cast import Message, Reasoning, Role, TextPart, ToolCall
from csum import Summarizer, SummarizerConfig
from csum_builders import FakeHandler, check_output, fill, parse
from strategies import valid_chains

CONFIGS = st.builds(
    SummarizerConfig,
    preserve_last=st.booleans(),
    last_section_bytes=st.integers(100, 4000),
    max_body_pair_bytes=st.integers(30, 2000),
    use_qa=st.booleans(),
    max_qa_sections=st.integers(1, 6),
    max_qa_bytes=st.integers(100, 8000),
    summarize_human_in_qa=st.booleans(),
    keep_qa_sections=st.integers(1, 3),
    reserve_percent=st.integers(0, 99),
)

ANSWER = st.tuples(st.just("answer"), st.integers(0, 600))
TOOLS = st.tuples(
    st.just("tools"), st.lists(st.integers(0, 1500), min_size=1, max_size=4), st.booleans()
)
HUGE = st.tuples(st.just("huge"), st.integers(3000, 30_000))
QUESTION = st.tuples(st.just("question"), st.integers(1, 400))
STEPS = st.lists(st.tuples(ANSWER | TOOLS | HUGE | QUESTION, CONFIGS), min_size=6, max_size=30)
START = st.one_of(
    st.tuples(st.none() | st.integers(1, 3000), st.integers(1, 300)),
    valid_chains(min_sections=1, max_sections=3),
)


def summary_answer(length: int) -> Any:
    """A deterministic fake summary of ``length`` characters at most."""
    return lambda prompt: (f"S{len(prompt)}." * length)[:length]


class Agent:
    """Appends the messages of one step to a chain, with fresh tool-call ids."""

    def __init__(self) -> None:
        self.calls = 0

    def step(self, chain: Sequence[Message], step: tuple[Any, ...]) -> list[Message]:
        kind = step[0]
        if kind == "question" and chain[-1].role is not Role.HUMAN:
            return [Message.human(fill(step[1], "q"))]
        if kind in ("answer", "question"):
            return [Message.ai(fill(step[1] or 1, "a"))]
        sizes, reasoning = (step[1],), True
        if kind == "tools":
            sizes, reasoning = step[1], step[2]
        calls = []
        for _ in sizes:
            self.calls += 1
            thought = Reasoning(content=f"why {self.calls}", signature=b"s") if reasoning else None
            calls.append(ToolCall(id=f"agent_{self.calls}", name="run", reasoning=thought))
        text = TextPart(text="let me check", reasoning=Reasoning(content="plan"))
        ai = Message(role=Role.AI, parts=[text, *calls] if reasoning else calls)
        results = [
            Message.tool(call.id, call.name, fill(size, "r"))
            for call, size in zip(calls, sizes, strict=True)
        ]
        return [ai, *results]


def start_chain(start: Any) -> list[Message]:
    if isinstance(start, list):
        return start
    system, human = start
    head = [] if system is None else [Message.system(fill(system, "s"))]
    return [*head, Message.human(fill(human, "h"))]


def newest_pair(chain: Sequence[Message]) -> list[Message]:
    """The messages of the chain's newest body pair, when the chain ends in one."""
    for index in range(len(chain) - 1, -1, -1):
        role = chain[index].role
        if role is Role.AI:
            return list(chain[index:])
        if role is not Role.TOOL:
            return []
    return []


async def summarize_and_check(
    chain: list[Message], config: SummarizerConfig, length: int
) -> list[Message]:
    summarizer = Summarizer(config)
    result = await summarizer.summarize(FakeHandler(answer=summary_answer(length)), chain)
    out = result.messages
    check_output(chain, out, config)
    tail = newest_pair(chain)
    assert all(a is b for a, b in zip(out[len(out) - len(tail) :], tail, strict=True))
    again = FakeHandler(answer=summary_answer(length))
    second = await summarizer.summarize(again, out)
    assert again.calls == 0
    assert second.messages == out
    return out


@given(start=START, steps=STEPS, length=st.integers(1, 300))
def test_agent_loop_keeps_the_invariants(
    start: Any,
    steps: list[tuple[tuple[Any, ...], SummarizerConfig]],
    length: int,
    anyio_backend: str,
) -> None:
    async def loop() -> None:
        agent = Agent()
        chain = start_chain(start)
        parse(chain)
        for step, config in steps:
            chain = await summarize_and_check([*chain, *agent.step(chain, step)], config, length)

    anyio.run(loop, backend=anyio_backend)


@given(chain=valid_chains(), config=CONFIGS, length=st.integers(1, 200))
def test_any_valid_chain_keeps_the_invariants(
    chain: list[Message], config: SummarizerConfig, length: int, anyio_backend: str
) -> None:
    anyio.run(summarize_and_check, chain, config, length, backend=anyio_backend)
