"""The Compactor inside an agent loop, for every provider target.

The loop grows a chain step by step (answers, parallel tool calls, huge results,
reasoning, new questions); the new messages are ported to the target (so the agent
sends what the provider accepts), then the Compactor runs before the next model call
with a random budget in bytes or tokens. After every step the output parses strictly,
lints clean for the target, keeps the newest pair (or the new question) as the very
same messages, fits the budget whenever system prompt + question + newest pair fit (and
says so otherwise), and the input list is never changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st
from test_agent_loop import ANSWER, HUGE, QUESTION, TOOLS, Agent, newest_pair

from cast import ChainAST, Message, Role, lint, port
from cast.providers import PROVIDERS
from csum import Budget, Compactor, EstimatedTokens

TARGETS = sorted(PROVIDERS)
BUDGETS = st.one_of(
    st.builds(Budget.bytes, st.integers(300, 20_000)),
    st.builds(Budget.tokens, st.integers(100, 5000)),
)
STEPS = st.lists(ANSWER | TOOLS | HUGE | QUESTION, min_size=4, max_size=30)


def summary_of(length: int) -> Any:
    async def summarize(prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        return (f"summary of {len(prompt)} bytes; " * length)[:length]

    return summarize


def floor(history: Sequence[Message], measure: Any) -> int:
    """System prompt + current question + newest pair (the question alone when it is
    newer than the last AI message), in the budget's unit."""
    size = measure(history[0]) if history[0].role is Role.SYSTEM else 0
    tail = newest_pair(history)
    if tail:
        start = len(history) - len(tail)
        question = next((m for m in reversed(history[:start]) if m.role is Role.HUMAN), None)
        return size + sum(map(measure, tail)) + (measure(question) if question else 0)
    return size + measure(history[-1])


def tail_of(history: Sequence[Message]) -> list[Message]:
    tail = newest_pair(history)
    return tail if tail else list(history[-1:])


@given(
    steps=STEPS,
    budget=BUDGETS,
    target=st.sampled_from(TARGETS),
    length=st.integers(0, 400),
    target_ratio=st.floats(0.2, 1.0),
    system=st.integers(0, 400),
)
def test_compactor_agent_loop(
    steps: list[tuple[Any, ...]],
    budget: Budget,
    target: str,
    length: int,
    target_ratio: float,
    system: int,
) -> None:
    counter = EstimatedTokens()
    measure = (lambda m: m.size) if budget.unit == "bytes" else counter.count
    compactor = Compactor(
        summary_of(length),
        budget=budget,
        target=target,
        target_ratio=target_ratio,
        counter=counter,
        cooldown_turns=2,
        max_depth=2,
    )

    async def loop() -> None:
        agent = Agent()
        chain = [Message.system("s" * system)] if system else []
        chain.append(Message.human("first question"))
        for step in steps:
            history = port([*chain, *agent.step(chain, step)], target)
            assert lint(history, target) == []
            frozen = [m.model_dump(mode="json") for m in history]
            result = await compactor.run(history)
            out = result.messages
            assert [m.model_dump(mode="json") for m in history] == frozen
            ChainAST.from_messages(out)
            assert lint(out, target) == [], (target, lint(out, target))
            tail = tail_of(history)
            assert out[len(out) - len(tail) :] == tail
            total = sum(map(measure, out))
            if floor(history, measure) <= budget.limit:
                assert total <= budget.limit
                assert not result.over_budget
            else:
                assert result.over_budget == (total > budget.limit)
            chain = out

    anyio.run(loop)
