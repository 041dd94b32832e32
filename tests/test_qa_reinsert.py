"""csum's QA summarization and the archive's re-inserted lines: a question that QA folds
out of the chain leaves without the archived lines re-insertion put back into it. They
are neither summarized into the human summary nor carried in the folded header, so the
QA section does not fill with old lines fold after fold, and a folded question gives the
same QA prompts (the cache's keys) with or without them. On a real tau-bench chain, a
SQLite archive, the offline extractive handler, asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cast import Message, Role, TextPart
from csum import HistoryArchive, Summarizer, SummarizerConfig
from csum.archive import message_search_text
from csum.handlers import extractive
from csum.prompt import PromptCase, parse_prompt
from csum.reinsert import REINSERTED_HEADER, is_reinserted, own_question, reinserted_part
from test_compactor_archive import long_chain, question_needing_the_archive


def config(human_summary: bool) -> SummarizerConfig:
    """QA on, with limits the long tau-bench chain exceeds at once."""
    return SummarizerConfig(
        last_section_bytes=4096,
        max_body_pair_bytes=2048,
        use_qa=True,
        summarize_human_in_qa=human_summary,
        max_qa_sections=3,
        max_qa_bytes=8192,
    )


class Recording:
    """The extractive handler, keeping every prompt it was given."""

    def __init__(self) -> None:
        self.handler = extractive(2000)
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return await self.handler(prompt)

    def of_case(self, case: PromptCase) -> list[str]:
        return [p for p in self.prompts if parse_prompt(p).case is case]


@pytest.fixture
async def archive(tmp_path: Path) -> AsyncIterator[HistoryArchive]:
    made = HistoryArchive(tmp_path / "archive.sqlite", session="test", reinsert_bytes=1500)
    try:
        yield made
    finally:
        await made.aclose()


async def asked_with_reinsertion(summarizer: Summarizer) -> tuple[list[Message], str, str]:
    """(chain, question, put-back text): the longest tau-bench chain summarized, then a
    question naming what only the archive holds asked on top of it, extended by
    re-insertion."""
    chain = long_chain()
    first = await summarizer.summarize(extractive(2000), chain)
    question, identifier = question_needing_the_archive(chain, first.messages)
    asked = [*first.messages, Message.human(question)]
    second = await summarizer.summarize(extractive(2000), asked)
    parts = second.messages[-1].parts
    added = [p.text for p in parts if isinstance(p, TextPart) and is_reinserted(p)]
    assert len(added) == 1
    assert identifier in added[0]
    return second.messages, question, added[0]


def next_turn(messages: list[Message], turn: int) -> list[Message]:
    return [
        *messages,
        Message.ai(f"Done with step {turn}."),
        Message.human(f"Next, please look at step {turn + 1}."),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("human_summary", [True, False], ids=["human-summary", "human-kept"])
async def test_a_folded_question_leaves_its_reinserted_lines_behind(
    archive: HistoryArchive, human_summary: bool
) -> None:
    summarizer = Summarizer(config(human_summary), archive=archive)
    messages, question, put_back = await asked_with_reinsertion(summarizer)
    extended = messages[-1]
    entries = put_back.splitlines()[1:]  # "(reference) line", made by re-insertion only
    assert entries
    handler = Recording()
    folded_at = None
    for turn in range(6):  # later turns: QA folds the question, then folds again
        messages = (await summarizer.summarize(handler, next_turn(messages, turn))).messages
        if folded_at is None and extended not in messages:
            folded_at = turn
        if folded_at is not None:
            texts = [message_search_text(m) for m in messages]
            assert not any(REINSERTED_HEADER in text for text in texts)
            assert not any(entry in text for entry in entries for text in texts)
    assert folded_at is not None
    assert folded_at < 5  # ... and folded again after
    header = next(m for m in messages if m.role is Role.HUMAN)
    if human_summary:
        # The question's own text was summarized, not what was put back into it.
        asked = handler.of_case(PromptCase.HUMAN_ONLY)
        assert any(question in prompt for prompt in asked)
        assert not any(REINSERTED_HEADER in prompt for prompt in asked)
        assert "User: " + question in header.text
    else:
        assert question in header.text  # carried verbatim, without the lines


@pytest.mark.anyio
async def test_a_folded_question_gives_the_same_qa_prompts_with_or_without_the_lines(
    archive: HistoryArchive,
) -> None:
    """The QA prompts (the summary cache's keys) of a fold do not depend on what
    re-insertion added: only a prompt of the question's own section, where it is still
    in the chain as context, sees the lines."""
    summarizer = Summarizer(config(True), archive=archive)
    messages, _, _ = await asked_with_reinsertion(summarizer)
    extended = messages[-1]
    own = own_question(extended)
    assert own is not None
    assert own != extended
    with_lines, without_lines = Recording(), Recording()
    kept, dropped = messages, [*messages[:-1], own]
    for turn in range(2):  # the second turn folds the question
        kept = (await summarizer.summarize(with_lines, next_turn(kept, turn))).messages
        dropped = (await summarizer.summarize(without_lines, next_turn(dropped, turn))).messages
    assert extended not in kept  # folded
    assert kept[:2] == dropped[:2]  # the same system message and human summary
    qa_human = with_lines.of_case(PromptCase.HUMAN_ONLY)
    assert qa_human
    assert qa_human == without_lines.of_case(PromptCase.HUMAN_ONLY)
    differing = [p for p in with_lines.prompts if p not in without_lines.prompts]
    assert differing  # the summary of the question's own section, while it is there
    for prompt in differing:  # its context is one question: the extended one
        context = parse_prompt(prompt).context
        assert {entry.message_index for entry in context} == {0}
        assert REINSERTED_HEADER in "\n".join(entry.content for entry in context)


def test_own_question_leaves_the_question_as_it_is_and_names_bad_input() -> None:
    asked = Message.from_parts(
        Role.HUMAN,
        (TextPart(text="Where is order W123?"), reinserted_part(["(ab, assistant) x"])),
    )
    own = own_question(asked)
    assert own is not None
    assert [p.text for p in own.parts] == ["Where is order W123?"]
    assert len(asked.parts) == 2  # the caller's message is untouched
    with pytest.raises(TypeError, match=r"cast\.Message, not dict"):
        own_question({"role": "user"})  # type: ignore[arg-type]
