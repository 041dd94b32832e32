"""The Compactor for a long memory: the questions a compaction takes out of the chain
are summarized (their requests and codes would otherwise be lost), ``max_depth=None``
folds every summary into the next, the reserve follows ``summary_ratio``, and the
``LONG_MEMORY`` preset keeps a real session within budget with one growing summary.
On asyncio and trio, on real corpus chains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.policies.corpus import (
    CLAUDE_CODE_FOLDER,
    OPENAI_FOLDER,
    CorpusChain,
    find_corpus,
    load_folder,
)
from benchmarks.policies.harness import _floor_size
from cast import Message, Role
from csum import (
    Budget,
    CompactionEvent,
    Compactor,
    HistoryArchive,
    Stores,
)
from csum.archive import REINSERTED_HEADER, recalled_text
from csum.config import DEFAULT_RESERVE_RATIO, DEFAULT_SUMMARY_RATIO, LONG_MEMORY
from tests.csum.test_compactor_archive import long_chain, question_needing_the_archive, tight
from tests.csum.test_compactor_summary_size import steps
from tests.csum.test_compactor_summary_size import summary_texts as summaries


def corpus_chain(folder: str, pick: Any) -> CorpusChain:
    corpus = find_corpus(None)
    if corpus is None:
        pytest.skip("shared corpus not found next to the repository")
    chains = load_folder(corpus, folder)
    if not chains:
        pytest.skip(f"no chain in {folder}")
    return pick(chains)  # type: ignore[no-any-return]


def largest(chains: list[CorpusChain]) -> CorpusChain:
    return max(chains, key=lambda c: sum(m.size for m in c.messages))


@pytest.mark.anyio
async def test_questions_that_leave_the_chain_are_summarized() -> None:
    """A tau-bench conversation: the customer gives the reservation code and email in
    messages that a compaction takes out; the summary must say them."""
    chain = corpus_chain(
        OPENAI_FOLDER,
        lambda chains: max(chains, key=lambda c: sum(m.role is Role.HUMAN for m in c.messages)),
    ).messages
    budget = sum(m.size for m in chain) * 3 // 4
    result = await Compactor(budget=budget).run(chain, force=True)
    kept = {id(m) for m in result.messages}
    gone = [m for m in chain if m.role is Role.HUMAN and id(m) not in kept]
    assert len(gone) >= 3
    (summary,) = summaries(result.messages)
    user_lines = [line for line in summary.splitlines() if line.startswith("User: ")]
    assert len(user_lines) >= 3
    for question in gone[:3]:  # each starts a User line (cut to its share when long)
        opening = question.text.strip().splitlines()[0][:20]
        assert any(line.startswith("User: " + opening) for line in user_lines), opening


@pytest.mark.anyio
async def test_the_question_of_a_turn_the_cut_falls_in_stays_and_is_not_repeated() -> None:
    """A Claude Code sub-agent run: one question, many tool turns. The cut falls inside
    that turn, so the question stays in the chain and the summary does not repeat it."""
    chain = corpus_chain(
        CLAUDE_CODE_FOLDER,
        lambda chains: max(
            (c for c in chains if sum(m.role is Role.HUMAN for m in c.messages) == 1),
            key=lambda c: sum(m.size for m in c.messages),
        ),
    ).messages
    question = next(m for m in chain if m.role is Role.HUMAN)
    budget = sum(m.size for m in chain) // 2
    result = await Compactor(budget=budget).run(chain, force=True)
    assert any(m is question or m == question for m in result.messages)
    (summary,) = summaries(result.messages)
    assert not any(line.startswith("User: ") for line in summary.splitlines())


def test_the_reserve_follows_a_larger_summary_share() -> None:
    budget = Budget.bytes(131072)
    default = max(DEFAULT_RESERVE_RATIO, DEFAULT_SUMMARY_RATIO)  # the larger of the two
    assert Compactor(budget=131072).summary_reserve == budget.scaled(default)
    assert Compactor(
        budget=Budget.bytes(131072, summary_ratio=0.375)
    ).summary_reserve == budget.scaled(0.375)
    # a reserve share of its own: the larger of it and the summary's share
    for reserve, share in ((0.4, 0.4), (0.1, 0.375)):
        settings = Budget.bytes(131072, summary_ratio=0.375, summary_reserve=reserve)
        assert Compactor(budget=settings).summary_reserve == budget.scaled(share)
    assert (
        Compactor(budget=LONG_MEMORY.budget(131072), clearing=LONG_MEMORY.clearing).max_depth
        is None
    )


@pytest.mark.parametrize(("depth", "error"), [(0, ValueError), ("3", TypeError), (True, TypeError)])
def test_a_bad_depth_limit_is_refused(depth: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_depth"):
        Compactor(budget=Budget.bytes(131072, max_depth=depth))


@pytest.mark.anyio
async def test_long_memory_keeps_one_growing_summary_within_budget() -> None:
    """The largest Claude Code session replayed turn by turn: within budget on every
    turn that can fit, every compaction folds the one summary again (no depth limit,
    none frozen or dropped), and the summary uses the larger room."""
    chain = corpus_chain(CLAUDE_CODE_FOLDER, largest).messages
    budget = 64 * 1024
    events: list[CompactionEvent] = []
    compactor = Compactor(
        budget=LONG_MEMORY.budget(budget), on_event=events.append, clearing=LONG_MEMORY.clearing
    )
    history: list[Message] = []
    over = 0
    for step in steps(chain):
        sent = [*history, *step]
        result = await compactor.run(sent)
        over += result.over_budget and _floor_size(sent) <= budget
        history = result.messages
        assert len(summaries(history)) <= 1
    folds = [e for e in events if e.handler_calls]
    assert over == 0
    assert len(folds) >= 4
    assert max(e.depth for e in folds) >= 4  # beyond the default limit of 3
    assert all(e.dropped_summaries == 0 for e in events)
    assert max(e.summary_bytes for e in folds) > Compactor(budget=budget).summary_bytes


@pytest.mark.anyio
async def test_lines_put_back_by_reinsertion_are_not_summarized_again(tmp_path: Path) -> None:
    """A question extended with archived lines (re-insertion) is summarized without
    them when it leaves the chain: they are copies of what the archive holds."""
    chain = long_chain()
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test", reinsert_bytes=1500)
    try:
        compactor = Compactor(budget=tight(chain, 2), stores=Stores(archive=archive))
        first = await compactor.run(chain, force=True)
        question, _ = question_needing_the_archive(chain, first.messages)
        second = await compactor.run([*first.messages, Message.human(question)], force=True)
        added = recalled_text(second.messages)
        assert added.startswith(REINSERTED_HEADER)
        extended = next(m for m in second.messages if m == Message.human(question))
        later = [
            *second.messages,
            Message.ai("It was the reservation we changed before."),
            Message.human("Thanks. Please also check the baggage allowance."),
        ]
        small = Compactor(
            budget=chain[0].size + 4000, stores=Stores(archive=archive)
        )  # room for little
        third = await small.run(later, force=True)
        assert not any(m is extended for m in third.messages)  # the question left
        summary = summaries(third.messages)[-1]
        assert "User: " + question in summary  # its own text is summarized ...
        assert REINSERTED_HEADER not in summary  # ... not what was put back into it
        put_back = [line for line in added.splitlines()[1:] if line.strip()]
        assert not any("User: " + line in summary for line in put_back)
    finally:
        await archive.aclose()
