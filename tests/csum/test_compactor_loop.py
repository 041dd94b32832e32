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

import tempfile
from collections.abc import Sequence
from typing import Any

import anyio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from archive_recall import recall_all
from cast import SUMMARIZATION_TOOL_NAME, ChainAST, Message, Role, lint, port
from cast.providers import PROVIDERS
from csum import Budget, Compactor, EstimatedTokens, HistoryArchive, Stores
from csum.archive import REINSERTED_HEADER, recalled_text, without_recalled
from csum.config import as_budget
from tests.csum.test_agent_loop import ANSWER, HUGE, QUESTION, TOOLS, Agent, newest_pair

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
    length=st.integers(1, 400),  # an empty summary is a SummarizationError
    keep_ratio=st.floats(0.2, 1.0),
    system=st.integers(0, 400),
)
@example(  # a summary call kept in a turn of plain answers broke DeepSeek's reasoning rule
    steps=[("huge", 3000), ("question", 1), ("answer", 0), ("answer", 125)],
    budget=Budget.bytes(336),
    target="deepseek",
    length=1,
    keep_ratio=0.5,
    system=0,
)
def test_compactor_agent_loop(
    steps: list[tuple[Any, ...]],
    budget: Budget,
    target: str,
    length: int,
    keep_ratio: float,
    system: int,
) -> None:
    counter = EstimatedTokens()
    measure = (lambda m: m.size) if budget.unit == "bytes" else counter.count
    compactor = Compactor(
        summary_of(length),
        budget=as_budget(budget).evolve(keep_ratio=keep_ratio, cooldown_turns=2, max_depth=2),
        target=target,
        counter=counter,
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


def pinned(message: Message) -> bool:
    """A pin on some of the agent's calls and plain answers (by their ids and length;
    summaries are never pinned: a pin keeps messages from being summarized)."""
    text = str(message)
    if message.role is not Role.AI or SUMMARIZATION_TOOL_NAME in text or "summarized" in text:
        return False
    if message.tool_calls:
        return any(call.id[-1] in "02468ace" for call in message.tool_calls)
    return len(text) % 3 == 0


@given(
    steps=STEPS,
    budget=BUDGETS,
    target=st.sampled_from(TARGETS),
    length=st.integers(1, 400),
    keep_ratio=st.floats(0.2, 1.0),
)
@example(  # a pinned call of turn 1 kept in turn 2, of plain answers (DeepSeek)
    steps=[("huge", 3000), ("tools", [262], False), ("question", 1), ("answer", 0), ("answer", 0)],
    budget=Budget.bytes(300),
    target="deepseek",
    length=1,
    keep_ratio=1.0,
)
@example(  # a pinned plain answer in the summary's turn, which calls (DeepSeek)
    steps=[("tools", [10], False), ("question", 1), ("answer", 98), ("question", 156)],
    budget=Budget.bytes(300),
    target="deepseek",
    length=1,
    keep_ratio=0.5,
)
@example(  # pinned results ending the summary's turn, before a question (Mistral)
    steps=[("answer", 0), ("tools", [0, 235], False), ("question", 1), ("answer", 0)],
    budget=Budget.bytes(300),
    target="mistral",
    length=1,
    keep_ratio=0.25,
)
def test_compactor_agent_loop_with_pins(
    steps: list[tuple[Any, ...]], budget: Budget, target: str, length: int, keep_ratio: float
) -> None:
    """The loop above with pinned calls and answers, which stay whatever the turn they
    land in: the output still parses, lints clean and keeps the newest pair, and says
    whether it is over the budget (pins may not fit)."""
    counter = EstimatedTokens()
    measure = (lambda m: m.size) if budget.unit == "bytes" else counter.count
    compactor = Compactor(
        summary_of(length),
        budget=as_budget(budget).evolve(keep_ratio=keep_ratio, cooldown_turns=2, max_depth=2),
        target=target,
        counter=counter,
        pin=pinned,
    )

    async def loop() -> None:
        agent = Agent()
        chain = [Message.human("first question")]
        for step in steps:
            history = port([*chain, *agent.step(chain, step)], target)
            result = await compactor.run(history)
            out = result.messages
            ChainAST.from_messages(out)
            assert lint(out, target) == [], (target, lint(out, target))
            tail = tail_of(history)
            assert out[len(out) - len(tail) :] == tail
            assert result.over_budget == (sum(map(measure, out)) > budget.limit)
            pins = [m for m in history if pinned(m)]
            kept = [m for m in out if m.role is Role.AI]
            for message in pins:  # kept, at most with the empty reasoning the target wants
                assert any(m == message or m.tool_calls == message.tool_calls for m in kept)
            chain = out

    anyio.run(loop)


def tagged(messages: list[Message], first: int) -> list[Message]:
    """``messages`` with each tool result opening with an identifier of its own
    (``order_N``), so later questions can ask for what was summarized away."""
    out: list[Message] = []
    for message in messages:
        if message.role is Role.TOOL:
            (result,) = message.tool_results
            first += 1
            text = f"order_{first} {result.content}"
            out.append(Message.tool(result.tool_call_id, result.name, text))
        else:
            out.append(message)
    return out


ROOMY = st.one_of(
    st.builds(Budget.bytes, st.integers(4000, 40_000)),
    st.builds(Budget.tokens, st.integers(1000, 10_000)),
)


@settings(max_examples=40, deadline=None)
@given(
    steps=STEPS,
    budget=ROOMY,
    length=st.integers(1, 200),
    reinsert=st.sampled_from([0, 64, 600, 5000]),
    asks=st.lists(st.integers(1, 40), min_size=30, max_size=30),
)
def test_compactor_loop_with_archive(
    steps: list[tuple[Any, ...]],
    budget: Budget,
    length: int,
    reinsert: int,
    asks: list[int],
) -> None:
    """With a history archive (SQLite file) and re-insertion, the loop keeps the same
    laws (the question may carry re-inserted lines), and every tool result summarized
    away is recalled by the references in the chain."""
    counter = EstimatedTokens()
    measure = (lambda m: m.size) if budget.unit == "bytes" else counter.count

    async def loop(folder: str) -> None:
        archive = HistoryArchive(
            f"{folder}/archive.sqlite", session="test", reinsert_bytes=reinsert
        )
        compactor = Compactor(
            summary_of(length),
            budget=as_budget(budget).evolve(cooldown_turns=2),
            counter=counter,
            stores=Stores(archive=archive),
        )
        agent = Agent()
        chain = [Message.human("first question")]
        results: list[Message] = []
        whole = True  # no summary was cut or left out for want of room
        try:
            for step, ask in zip(steps, asks, strict=False):
                new = tagged(agent.step(chain, step), len(results))
                results.extend(m for m in new if m.role is Role.TOOL)
                if new[0].role is Role.HUMAN and results:
                    new = [Message.human(f"what did order_{1 + ask % len(results)} say?")]
                history = [*chain, *new]
                result = await compactor.run(history)
                out = result.messages
                whole &= not any(e.summary_truncated or e.dropped_summaries for e in result.events)
                ChainAST.from_messages(out)
                tail = tail_of(history)
                sent = without_recalled(out)  # a recall pair may follow the question
                assert sent[len(sent) - len(tail) :] == tail
                assert all(m in sent or m in added(out) for m in out)
                if floor(history, measure) <= budget.limit:
                    assert sum(map(measure, out)) <= budget.limit
                    assert not result.over_budget
                chain = out
            if not whole:  # a summary too large for the budget may lose its line
                return
            reachable = set(await recall_all(archive, chain))
            kept = set(without_recalled(chain))
            assert all(m in reachable for m in results if m not in kept)
        finally:
            await archive.aclose()

    with tempfile.TemporaryDirectory() as folder:
        anyio.run(loop, folder)


def added(messages: list[Message]) -> list[Message]:
    """The messages re-insertion added: recall pairs, each right after a question (an
    earlier question's pair stays until a compaction takes it out)."""
    kept = without_recalled(messages)
    extra = [m for m in messages if m not in kept]
    for index, message in enumerate(messages):
        if message in extra and message.role is Role.AI:
            assert messages[index - 1].role is Role.HUMAN
            assert REINSERTED_HEADER in recalled_text(messages[index : index + 2])
    return extra
