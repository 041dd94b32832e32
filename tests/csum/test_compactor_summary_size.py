"""The Compactor's summary bound grows with the budget (``summary_ratio``): the default
handler's summaries take up to that share of it, a loop over a real Claude Code session
stays within budget on every turn, and a larger share gives larger summaries that keep
more of what was said. On asyncio and trio."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, find_corpus, load_folder
from benchmarks.policies.harness import _floor_size
from cast import Message, Role
from csum import Budget, CompactionEvent, Compactor
from csum.compactor import summary_bytes
from csum.config import DEFAULT_SUMMARY_RATIO, MIN_SUMMARY_BYTES, SUMMARY_ONLY, as_budget

# The summary stage alone (``clearing=None``) at a 60 % target (``SUMMARY_ONLY``'s), the
# summary share each test names: given explicitly, so the sizes measured do not depend
# on the Compactor's defaults.


def test_the_bound_is_a_share_of_the_budget() -> None:
    assert Compactor(budget=Budget.bytes(131072, summary_ratio=1 / 32)).summary_bytes == 4096
    assert (
        Compactor(budget=Budget.bytes(1 << 20, summary_ratio=1 / 32)).summary_bytes == 32768
    )  # ... growing
    assert Compactor(budget=Budget.bytes(131072, summary_ratio=0.25)).summary_bytes == 32768
    # The default is DEFAULT_SUMMARY_RATIO's share.
    for budget in (131072, 1 << 20):
        expected = int(budget * DEFAULT_SUMMARY_RATIO)
        assert Compactor(budget=budget).summary_bytes == max(MIN_SUMMARY_BYTES, expected)
        assert summary_bytes(Budget.bytes(budget)) == max(MIN_SUMMARY_BYTES, expected)
    # A token budget is converted at 4 bytes a token (prose).
    assert summary_bytes(Budget.tokens(100_000), 0.1) == 40_000
    assert Compactor(budget=Budget.tokens(128_000, summary_ratio=1 / 32)).summary_bytes == 16_000
    assert summary_bytes(Budget.bytes(2000)) == MIN_SUMMARY_BYTES  # never below


@pytest.mark.parametrize("ratio", [0.0, -0.1, 0.6, float("nan")])
def test_a_bad_ratio_is_refused(ratio: Any) -> None:
    with pytest.raises(ValueError, match="summary_ratio must be within"):
        Compactor(budget=Budget.bytes(131072, summary_ratio=ratio))


def test_a_ratio_that_is_not_a_number_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="summary_ratio must be a number"):
        Compactor(budget=Budget.bytes(131072, summary_ratio="0.1"))  # type: ignore[arg-type]


def session() -> list[Message]:
    """The largest Claude Code sub-agent chain of the corpus (up to ~190 KB)."""
    corpus = find_corpus(None)
    if corpus is None:
        pytest.skip("shared corpus not found next to the repository")
    chains = [c for c in load_folder(corpus, CLAUDE_CODE_FOLDER) if "sub_agent" in c.name]
    if not chains:
        pytest.skip("no Claude Code sub-agent chain in the corpus")
    return max(chains, key=lambda c: sum(m.size for m in c.messages)).messages


def steps(chain: list[Message]) -> list[list[Message]]:
    """The chain cut before every AI message (where an agent calls its model)."""
    out: list[list[Message]] = [[]]
    for message in chain:
        if message.role is Role.AI and out[-1]:
            out.append([])
        out[-1].append(message)
    return out


async def loop(chain: list[Message], budget: int, ratio: float) -> tuple[int, int, int]:
    """(turns over budget that could fit, largest summary in bytes, compactions) of an
    agent loop. A turn cannot fit when its system prompt, question and newest pair alone
    exceed the budget."""
    events: list[CompactionEvent] = []
    compactor = Compactor(
        budget=as_budget(budget).evolve(summary_ratio=ratio, keep_ratio=SUMMARY_ONLY.keep_ratio),
        on_event=events.append,
        clearing=None,
    )
    history: list[Message] = []
    over = 0
    for step in steps(chain):
        sent = [*history, *step]
        result = await compactor.run(sent)
        over += result.over_budget and _floor_size(sent) <= budget
        assert sum(m.size for m in result.messages) == result.bytes_after
        history = result.messages
    largest = max((e.summary_bytes for e in events), default=0)
    return over, largest, sum(1 for e in events if e.handler_calls)


@pytest.mark.anyio
async def test_a_loop_stays_within_budget_and_uses_the_room_it_is_given() -> None:
    chain = session()
    budget = 48 * 1024
    assert sum(m.size for m in chain) > 2 * budget
    small = await loop(chain, budget, 0.05)
    large = await loop(chain, budget, 0.3)
    for over, _largest, compactions in (small, large):
        assert over == 0
        assert compactions >= 2
    assert small[1] <= summary_bytes(Budget.bytes(budget), 0.05)
    assert large[1] <= summary_bytes(Budget.bytes(budget), 0.3)
    assert large[1] > summary_bytes(Budget.bytes(budget), 0.05)  # the room was used


def summary_texts(messages: list[Message]) -> list[str]:
    """The texts of the summaries in a chain, in order."""
    from cast import BodyPairType, ChainAST
    from csum import SUMMARIZED_CONTENT_PREFIX, is_summarized

    out = []
    for section in ChainAST.from_messages(messages).sections:
        for pair in section.body:
            if not is_summarized(pair):
                continue
            if pair.type is BodyPairType.SUMMARIZATION:
                out.append(pair.tool_messages[0].tool_results[0].content)
            else:
                out.append(pair.ai_message.text.removeprefix(SUMMARIZED_CONTENT_PREFIX))
    return out


def _as_earlier(line: str, earlier: list[str]) -> str:
    """The earlier line ``line`` comes from: itself, or the one it is the cut start of
    (a call line is cut again to the calls' share of the new budget)."""
    if line.endswith("…"):
        start = line[:-1]
        for old in earlier:
            if old.startswith(start):
                return old
    return line


@pytest.mark.anyio
async def test_a_summary_of_a_summary_keeps_the_earlier_one_first() -> None:
    chain = session()
    compactor = Compactor(
        budget=SUMMARY_ONLY.budget(24 * 1024).evolve(max_depth=10), clearing=SUMMARY_ONLY.clearing
    )
    history: list[Message] = []
    folds = 0
    for step in steps(chain):
        before = summary_texts(history) if history else []
        result = await compactor.run([*history, *step])
        history = result.messages
        after = summary_texts(history)
        if not result.events or not result.events[0].handler_calls or not before or not after:
            continue  # no fold, or a newest pair so large that no summary fits beside it
        # The earlier summary was folded into the new one: the lines it keeps of it
        # lead it, in their order (lines that said little may have made room).
        earlier = [line for line in before[-1].splitlines() if line.strip()]
        lines = [_as_earlier(line, earlier) for line in after[-1].splitlines()]
        kept = [line for line in lines if line in earlier]
        assert kept, "nothing of the earlier summary was kept"
        assert lines[: len(kept)] == kept
        assert kept == [line for line in earlier if line in kept]  # in the same order
        folds += 1
    assert folds >= 1


def _facts_chain() -> list[Message]:
    """Forty rounds, each planting one fact in a long tool-free answer."""
    out: list[Message] = [Message.system("You keep notes.")]
    for i in range(40):
        out.append(Message.human(f"round {i}: what did the probe measure?"))
        filler = f"probe {i} reading noted; " * 150
        out.append(Message.ai(f"Fact {i}: sensor {i} reads {1000 + 7 * i} units. {filler}"))
    return out


def test_a_named_extractive_handler_keeps_the_default_summary_size() -> None:
    """``Compactor(extractive())`` used to summarize to a fixed 4 KiB while
    ``Compactor()`` (and every hook) used ``summary_ratio`` of the budget: one default
    now, whether the handler is named or not."""
    from csum.handlers import extractive
    from csum.handlers._extractive import DEFAULT_EXTRACTIVE_BYTES

    chain = _facts_chain()
    for budget in (16_384, 65_536):
        named = Compactor(extractive(), budget=budget)
        default = Compactor(budget=budget)
        assert named.summary_bytes == default.summary_bytes
        out_named = named.compact_sync(chain)
        assert out_named == default.compact_sync(chain)
    # An explicit size is the caller's; used alone, extractive() keeps its 4 KiB.
    assert DEFAULT_EXTRACTIVE_BYTES == 4096
    assert repr(extractive()) == "extractive(4096)"
    assert extractive().max_bytes == 4096
    sized = Compactor(extractive(4096), budget=16_384)
    assert sized.compact_sync(chain) != Compactor(budget=16_384).compact_sync(chain)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("32KiB", Budget.bytes(32 * 1024)),
        ("2MB", Budget.bytes(2_000_000)),
        ("4096", Budget.bytes(4096)),
        ("4000 tokens", Budget.tokens(4000)),
        (5000, Budget.bytes(5000)),
        (Budget.tokens(7), Budget.tokens(7)),
    ],
)
def test_size_strings_are_budgets(given: Any, expected: Budget) -> None:
    """``Compactor(budget="32KiB")`` raised TypeError though the command line takes it."""
    assert Compactor(budget=given).budget == expected


@pytest.mark.parametrize("given", ["lots", "-3KiB", "0", "4.5 tokens", True, 1.5, None])
def test_bad_budgets_are_refused(given: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=r"budget|size"):
        Compactor(budget=given)
