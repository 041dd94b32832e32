"""``summarize_chain(target=...)`` over every provider profile: the output breaks no
``cast.lint`` rule of the target that the input did not break, a chain ported to the
target stays lint-clean once summarized, and the output is never larger than the input.
"""

from __future__ import annotations

import anyio
from hypothesis import given
from hypothesis import strategies as st

from cast import ChainAST, Message, lint, port
from cast.providers import PROVIDERS
from csum import Summarizer, SummarizerConfig
from strategies import valid_chains

TARGETS = sorted(PROVIDERS)

CONFIGS = st.builds(
    SummarizerConfig,
    last_section_bytes=st.integers(20, 400),
    max_body_pair_bytes=st.integers(10, 200),
    use_qa=st.booleans(),
    max_qa_sections=st.integers(1, 4),
    max_qa_bytes=st.integers(20, 800),
    summarize_human_in_qa=st.booleans(),
    keep_qa_sections=st.integers(1, 2),
    reserve_percent=st.integers(0, 60),
)


def answer(length: int) -> object:
    """A handler answering ``length`` characters (short or longer than its input)."""

    async def summarize(prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        return ("summary é " * length)[:length]

    return summarize


def rules(messages: list[Message], target: str) -> set[str]:
    return {v.rule for v in lint(messages, target)}


def summarize(
    chain: list[Message], config: SummarizerConfig, target: str, length: int
) -> list[Message]:
    summarizer = Summarizer(config)
    return anyio.run(
        lambda: summarizer.summarize_chain(answer(length), chain, target=target)  # type: ignore[arg-type]
    )


@given(
    chain=valid_chains(min_sections=1, max_sections=4),
    config=CONFIGS,
    target=st.sampled_from(TARGETS),
    length=st.integers(1, 300),  # an empty summary is a SummarizationError
)
def test_summary_adds_no_violation_for_its_target(
    chain: list[Message], config: SummarizerConfig, target: str, length: int
) -> None:
    out = summarize(chain, config, target, length)
    ChainAST.from_messages(out)
    assert rules(out, target) <= rules(chain, target)
    assert sum(m.size for m in out) <= sum(m.size for m in chain)


@given(
    chain=valid_chains(min_sections=1, max_sections=4),
    config=CONFIGS,
    target=st.sampled_from(TARGETS),
    length=st.integers(1, 300),  # an empty summary is a SummarizationError
)
def test_ported_chain_stays_lint_clean_once_summarized(
    chain: list[Message], config: SummarizerConfig, target: str, length: int
) -> None:
    ported = port(chain, target)
    assert lint(ported, target) == []
    out = summarize(ported, config, target, length)
    assert lint(out, target) == []
