"""csum's QA summarization and the archive's re-inserted lines: re-insertion puts them
back as a synthetic recall pair after the question (the question stays the user's words
only), and the next run takes that pair out before it summarizes. The lines are neither
summarized into the human summary nor carried in the folded header, so the QA section
does not fill with old lines fold after fold, and the summary prompts (the cache's keys)
are the same with or without them. On a real tau-bench chain, a SQLite archive, the
offline extractive handler, asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cast import Message, Role, TextPart
from csum import HistoryArchive, Stores, Summarizer, SummarizerConfig
from csum.archive import REINSERTED_HEADER, own_question, recalled_text, reinserted_part
from csum.handlers import extractive
from csum.prompt import PromptCase, SummaryRequest
from csum.request import RequestHandler
from csum.store_events import message_search_text
from tests.csum.test_compactor_archive import long_chain, question_needing_the_archive


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


class Recording(RequestHandler):
    """The extractive handler, keeping every request it was given."""

    def __init__(self) -> None:
        self.handler = extractive(2000)
        self.requests: list[SummaryRequest] = []

    async def __call__(self, request: SummaryRequest, /) -> str:
        self.requests.append(request)
        return await self.handler(request)

    @property
    def prompts(self) -> list[str]:
        return [r.prompt for r in self.requests]

    def of_case(self, case: PromptCase) -> list[str]:
        return [r.prompt for r in self.requests if r.case is case]


@pytest.fixture
async def archive(tmp_path: Path) -> AsyncIterator[HistoryArchive]:
    made = HistoryArchive(tmp_path / "archive.sqlite", session="test", reinsert_bytes=1500)
    try:
        yield made
    finally:
        await made.aclose()


async def asked_with_reinsertion(summarizer: Summarizer) -> tuple[list[Message], str, str]:
    """(chain, question, put-back text): the longest tau-bench chain summarized, then a
    question naming what only the archive holds asked on top of it, answered by a
    synthetic recall pair."""
    chain = long_chain()
    first = await summarizer.summarize(extractive(2000), chain)
    question, identifier = question_needing_the_archive(chain, first.messages)
    asked = [*first.messages, Message.human(question)]
    second = await summarizer.summarize(extractive(2000), asked)
    assert second.messages[-3] == Message.human(question)  # the user's words only
    assert [m.role for m in second.messages[-2:]] == [Role.AI, Role.TOOL]
    added = recalled_text(second.messages)
    assert added.count(REINSERTED_HEADER) == 1
    assert identifier in added
    return second.messages, question, added


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
    summarizer = Summarizer(config(human_summary), stores=Stores(archive=archive))
    messages, question, put_back = await asked_with_reinsertion(summarizer)
    extended = messages[-3]
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
async def test_the_summary_prompts_are_the_same_with_or_without_the_lines(
    archive: HistoryArchive,
) -> None:
    """The prompts (the summary cache's keys) of the later turns do not depend on what
    re-insertion added: the recall pair is taken out before anything is summarized."""
    summarizer = Summarizer(config(True), stores=Stores(archive=archive))
    messages, _, _ = await asked_with_reinsertion(summarizer)
    extended = messages[-3]
    with_lines, without_lines = Recording(), Recording()
    kept, dropped = messages, messages[:-2]
    for turn in range(2):  # the second turn folds the question
        kept = (await summarizer.summarize(with_lines, next_turn(kept, turn))).messages
        dropped = (await summarizer.summarize(without_lines, next_turn(dropped, turn))).messages
    assert extended not in kept  # folded
    assert kept == dropped
    assert with_lines.of_case(PromptCase.HUMAN_ONLY)
    assert with_lines.prompts == without_lines.prompts
    assert not any(REINSERTED_HEADER in prompt for prompt in with_lines.prompts)


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
