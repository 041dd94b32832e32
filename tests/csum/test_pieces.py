"""Summaries made in pieces (csum.request.summarize_in_pieces): the Compactor never
builds one prompt of a huge evicted part. Every prompt fits ``max_prompt_bytes``,
nothing the prompts should hold is lost, the chain stays valid and within budget with
its newest pair verbatim, failures leave the input untouched, and the memory of a
compaction no longer grows with one prompt of everything (measured with tracemalloc).
On real Claude Code sessions and on built chains, on asyncio and trio."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import (
    FIELD_PART_KINDS,
    ChainAST,
    ImagePart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.chainio import decode_chain
from csum import Compactor, HistoryArchive, Robustness, Stores, SummarizationError, SummaryCache
from csum.archive import REINSERTED_HEADER, archived_references, reinserted_part
from csum.config import SUMMARY_ONLY
from csum.handlers import extractive
from csum.prompt import MAX_FOCUS_BYTES, SummaryRequest, messages_to_prompt
from csum.request import (
    HandlerCalls,
    RequestHandler,
    ledger,
    prompt_bound,
    split_into_pieces,
    summarize_in_pieces,
)
from csum.store_events import message_search_text
from csum.stores import open_store
from tests.conftest import CLAUDE_CODE
from tests.csum.test_cache import corpus_chains

SUMMARY_STAGE = SUMMARY_ONLY
"""The summary stage alone (no clearing, a 60 % target, summaries up to 1/32 of the
budget): these tests are about summarizing in pieces, so they give it explicitly and do
not depend on the Compactor's defaults."""

SESSION = CLAUDE_CODE / "claudecode_spotter_8463c716.json"
"""The largest Claude Code session of the corpus (about 0.7 MB of messages)."""

needs_corpus = pytest.mark.skipif(not SESSION.is_file(), reason="shared corpus not found")


class Recorder(RequestHandler):
    """Records every request (and its prompt) and the most in flight at once; answers
    ``answer``."""

    def __init__(self, answer: str = "the summary", fail_on: int | None = None) -> None:
        self.answer = answer
        self.fail_on = fail_on
        self.requests: list[SummaryRequest] = []
        self.prompts: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def __call__(self, request: SummaryRequest, /) -> str:
        self.requests.append(request)
        self.prompts.append(request.prompt)
        number = len(self.prompts)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await anyio.sleep(0.001)
            if number == self.fail_on:
                raise RuntimeError("the model is down")
            return self.answer
        finally:
            self.in_flight -= 1


def session() -> list[Message]:
    messages, _ = decode_chain(json.loads(SESSION.read_text(encoding="utf-8")))
    return messages


def built_chain(turns: int, result_bytes: int, *, astral: bool = False) -> list[Message]:
    """A tool loop with a question every 5 turns; ``astral`` puts one character beyond
    the BMP in every result (then a Python string of them takes 4 bytes a character)."""
    chain = [Message.system("you are an agent"), Message.human("first question")]
    for index in range(turns):
        if index and index % 5 == 0:
            chain += [Message.ai(f"answer {index}"), Message.human(f"question {index}")]
        call = f"call_{index:05d}"
        body = f"line {index} of the result\n" * (result_bytes // 24)
        if astral:
            body = "\U0001f600 " + body
        chain += [
            Message.ai("", ToolCall(id=call, name="bash", arguments=json.dumps({"i": index}))),
            Message.tool(call, "bash", body),
        ]
    return chain


def turns_of(messages: Sequence[Message]) -> list[tuple[Message | None, list[Message]]]:
    ast = ChainAST.from_messages(messages, repair=True)
    return [
        (section.header.human_message, [m for pair in section.body for m in pair.messages()])
        for section in ast.sections
    ]


def snapshot(messages: Sequence[Message]) -> list[object]:
    return [m.model_dump(mode="json") for m in messages]


# -- the pieces ---------------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("max_bytes", [4096, 20_000, 100_000])
def test_pieces_of_a_real_session_fit_and_lose_nothing(max_bytes: int) -> None:
    turns = turns_of(session())
    pieces = split_into_pieces(turns, max_bytes)
    prompts = [piece.request(max_bytes // 4).prompt for piece in pieces]
    assert len(prompts) > 1
    assert all(len(prompt.encode("utf-8", "surrogatepass")) <= max_bytes for prompt in prompts)
    # Every message summarized (the questions in their place) appears in order, whole or
    # cut into consecutive pieces.
    summarized = in_place(turns)
    rendered = [m for piece in pieces for m in piece.messages]
    assert _texts(rendered) == _texts(summarized)
    # Each request holds its piece verbatim (its entries).
    for piece in pieces:
        parsed = piece.request(max_bytes // 4)
        prompt = parsed.prompt
        entries = [e for e in parsed.summarized if e.kind != "reasoning"]
        # Fields of the part before (an Anthropic caller) are not content: left out.
        content = [
            p
            for m in piece.messages
            for p in m.parts
            if p.type != "provider" or p.kind not in FIELD_PART_KINDS
        ]
        assert len(entries) == len(content)
        for message in piece.messages:
            for part in message.parts:
                if isinstance(part, ToolCall):
                    assert part.arguments in prompt
                elif isinstance(part, ToolResult):
                    assert part.content in prompt
                elif isinstance(part, TextPart):
                    assert part.text in prompt


def in_place(turns: Sequence[tuple[Message | None, Sequence[Message]]]) -> list[Message]:
    """The messages of ``turns`` in chain order, each question before its turn's."""
    return [m for asked, messages in turns for m in ([asked] if asked else []) + list(messages)]


def _texts(messages: Sequence[Message]) -> str:
    """The data of ``messages`` as the prompt pieces keep it (a cut call is text)."""
    out: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolResult):
                out.append(part.content)
            elif isinstance(part, ToolCall):
                out.append(f"{part.name}({part.arguments})")
            elif hasattr(part, "text"):
                out.append(part.text)
    return "".join(out)


def test_a_message_too_large_alone_is_cut_inside_its_text() -> None:
    big = Message.tool("call_1", "cat", "é" * 50_000 + "\n" + "x" * 50_000)
    turns = [(Message.human("read it"), [Message.ai("", ToolCall(id="call_1", name="cat")), big])]
    pieces = split_into_pieces(turns, 8192)
    assert len(pieces) > 10
    for piece in pieces:
        prompt = piece.request(8192 // 4).prompt
        assert len(prompt.encode()) <= 8192
        assert "read it" in prompt  # the question is every piece's context
    results = [p for piece in pieces for m in piece.messages for p in m.parts]
    cut = "".join(p.content for p in results if isinstance(p, ToolResult))
    assert cut == big.parts[0].content  # type: ignore[union-attr]
    assert {p.tool_call_id for p in results if isinstance(p, ToolResult)} == {"call_1"}


def test_a_message_cut_keeps_its_thinking_and_its_images_placeholders() -> None:
    """A cut message loses nothing a prompt shows: its thinking is cut like its text
    (it was dropped), an image too large for a piece stays whole, its prompt naming it
    (it became an empty text)."""
    thinking = "".join(f"step {i} of the plan\n" for i in range(3000))
    answer = Message.from_parts(
        Role.AI, (TextPart(text="x" * 30_000, reasoning=Reasoning(content=thinking)),)
    )
    image = ImagePart(url="data:image/png;base64," + "A" * 200_000)
    asked = Message.from_parts(Role.HUMAN, (TextPart(text="what is this?"), image))
    pieces = split_into_pieces([(asked, [answer])], 16_384)
    parts = [p for piece in pieces for m in piece.messages for p in m.parts]
    kept = "".join(p.reasoning.content for p in parts if isinstance(p, TextPart) and p.reasoning)
    assert kept == thinking
    assert image in parts
    prompts = [piece.request(16_384 // 4).prompt for piece in pieces]
    assert all(len(prompt.encode()) <= 16_384 for prompt in prompts)
    assert sum("[image data:image/png, 150000 bytes]" in prompt for prompt in prompts) == 1


def test_pieces_fit_with_the_longest_focus_and_a_long_staying_question() -> None:
    """The focus block counts: with a focus of MAX_FOCUS_BYTES and a staying question
    filling its quarter, every prompt still fits (it was over by 1.2 KB at 8 KB)."""
    focus = "keep the file names " * (MAX_FOCUS_BYTES // 20)
    big = Message.tool("call_1", "cat", "line of the file\n" * 6000)
    turns = [(Message.human("read it"), [Message.ai("", ToolCall(id="call_1", name="cat")), big])]
    staying = Message.human("the question that stays " * 400)
    pieces = split_into_pieces(turns, 8192, context=[staying], focus=focus)
    assert len(pieces) > 10
    for piece in pieces:
        assert len(piece.request(8192 // 4, focus).prompt.encode()) <= 8192


def test_only_questions_are_summarized_themselves() -> None:
    turns: list[tuple[Message | None, list[Message]]] = [
        (Message.human(f"question {i}: " + "q" * 3000), []) for i in range(10)
    ]
    pieces = split_into_pieces(turns, 8192)
    assert len(pieces) > 1
    assert all(not piece.context for piece in pieces)
    assert [m for piece in pieces for m in piece.messages] == [t[0] for t in turns]
    for piece in pieces:
        assert len(piece.request(2048).prompt.encode()) <= 8192


def test_questions_are_summarized_in_place_and_the_staying_one_is_context() -> None:
    """As in one prompt of it all: a question that leaves the chain is summarized before
    its turn's messages; the one that stays is every piece's context, and a piece that
    starts inside a turn has that turn's question as context too."""
    turns = turns_of(built_chain(60, 2000))
    staying = Message.human("the question that stays")
    pieces = split_into_pieces(turns, 16_384, context=[staying])
    assert len(pieces) > 3
    assert [m for piece in pieces for m in piece.messages] == in_place(turns)
    questions = {id(asked) for asked, _ in turns if asked is not None}
    for piece in pieces:
        assert piece.context[-1] is staying
        own = piece.context[:-1]
        assert all(id(m) in questions for m in own)
        first = piece.messages[0]
        # Context besides the staying question: the question of a turn begun before.
        assert len(own) == (0 if first.role is Role.HUMAN else 1)
        prompt = piece.request(16_384 // 4)
        assert "the question that stays" in [e.content for e in prompt.context]


@given(
    sizes=st.lists(st.integers(0, 30_000), min_size=1, max_size=40),
    max_bytes=st.integers(4096, 40_000),
    questions=st.lists(st.booleans(), min_size=1, max_size=40),
)
def test_every_piece_fits_and_keeps_the_order(
    sizes: list[int], max_bytes: int, questions: list[bool]
) -> None:
    turns: list[tuple[Message | None, list[Message]]] = []
    for index, size in enumerate(sizes):
        asked = (
            Message.human(f"q{index} " + "h" * (size % 500))
            if questions[index % len(questions)]
            else None
        )
        call = f"c{index}"
        messages = [
            Message.ai(f"thinking {index}", ToolCall(id=call, name="run", arguments="{}")),
            Message.tool(call, "run", "ü" * (size // 2) + "\U0001f600" * (size % 7)),
        ]
        turns.append((asked, messages))
    pieces = split_into_pieces(turns, max_bytes)
    for piece in pieces:
        assert len(piece.request(max_bytes // 4).prompt.encode("utf-8")) <= max_bytes
    assert _texts([m for piece in pieces for m in piece.messages]) == _texts(in_place(turns))


def test_prompt_bound_is_an_upper_bound() -> None:
    odd = Message.ai("x", ToolCall(id='a"&>' * 20, name="n", arguments='{"a": 1}'))
    for message in [*built_chain(6, 300), odd, Message.tool('i"d', "n", "ü" * 99)]:
        rendered = messages_to_prompt([], [message])
        empty = messages_to_prompt([], [Message.ai("")])
        assert len(rendered.encode()) - len(empty.encode()) <= prompt_bound(message)


# -- summarize_in_pieces --------------------------------------------------------------


@pytest.mark.anyio
async def test_summaries_are_merged_in_rounds_until_one_is_left() -> None:
    handler = Recorder(answer="s" * 1500)  # large summaries: a merge holds only a few
    calls = HandlerCalls(handler)
    turns = turns_of(built_chain(120, 900))
    with ledger() as books:
        text = await summarize_in_pieces(
            calls, turns, max_bytes=8192, concurrency=3, phase="compaction", section=0
        )
    assert text == "s" * 1500
    assert books.merges >= 2  # more than one round
    assert calls.calls == len(handler.prompts)
    assert all(len(p.encode()) <= 8192 for p in handler.prompts)
    assert handler.most_in_flight <= 3


@pytest.mark.anyio
async def test_summaries_too_large_to_merge_are_cut_to_the_bound() -> None:
    handler = Recorder(answer="s" * 7000)  # no two fit one prompt
    calls = HandlerCalls(handler)
    with ledger() as books:
        text = await summarize_in_pieces(
            calls,
            turns_of(built_chain(40, 900)),
            max_bytes=8192,
            concurrency=2,
            phase="compaction",
            section=0,
        )
    assert books.truncated == 1
    assert len(text.encode()) <= 8192


# -- the Compactor ------------------------------------------------------------------------


@pytest.mark.anyio
@needs_corpus
async def test_compactor_on_a_real_session_sends_bounded_prompts() -> None:
    chain = session()
    before = snapshot(chain)
    handler = Recorder()
    events: list[object] = []
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(50 * 1024),
        on_event=events.append,
        clearing=SUMMARY_STAGE.clearing,
        robustness=Robustness(max_prompt_bytes=64 * 1024),
    )
    result = await compactor.run(chain)
    assert snapshot(chain) == before
    assert len(handler.prompts) > 3
    assert all(len(p.encode("utf-8", "surrogatepass")) <= 64 * 1024 for p in handler.prompts)
    assert handler.most_in_flight <= 4
    out = result.messages
    ChainAST.from_messages(out)  # valid without repair
    assert result.bytes_after <= 50 * 1024
    assert out[-2:] == chain[-2:] or out[-1] == chain[-1]  # the newest pair, verbatim
    assert result.events[0].chunks > 1


def _blocks(requests: Sequence[SummaryRequest]) -> tuple[list[str], list[str]]:
    """(context entries, summarized entries) of the requests that summarize messages."""
    context: list[str] = []
    summarized: list[str] = []
    for parsed in requests:
        context += [e.content for e in parsed.context]
        summarized += [e.content for e in parsed.summarized if e.role == Role.HUMAN.value]
    return context, summarized


@pytest.mark.anyio
async def test_compactor_in_pieces_summarizes_the_questions_that_leave_in_place() -> None:
    """As with one prompt: every question a compaction in pieces takes out of the chain
    is summarized (in a piece's <messages>, its text whole or cut at a piece's end),
    not only shown as context; a question extended by re-insertion is summarized
    without the archived lines. On the tau-bench chain with the most questions."""
    chain = max(corpus_chains(40), key=lambda c: sum(m.role is Role.HUMAN for m in c))
    asked = [i for i, m in enumerate(chain) if m.role is Role.HUMAN and m.text.strip()]
    early = asked[1]
    lines = [m.text[:120] for m in chain[early + 1 : early + 40] if m.role is Role.AI and m.text]
    assert lines
    put_back = reinserted_part([f"(ref, assistant) {' '.join(x.split())}" for x in lines])
    chain[early] = Message.from_parts(Role.HUMAN, (*chain[early].parts, put_back))
    handler = Recorder()
    budget = chain[0].size + sum(m.size for m in chain[1:]) // 4
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(budget),
        clearing=SUMMARY_STAGE.clearing,
        robustness=Robustness(max_prompt_bytes=4096),
    )
    result = await compactor.run(chain)
    assert result.events[0].chunks > 1
    kept = set(result.messages)
    left = [chain[i] for i in asked if chain[i] not in kept]
    assert len(left) > 3
    assert chain[early] in left
    _, summarized = _blocks(handler.requests)
    for question in left:
        for part in question.parts:
            if isinstance(part, TextPart) and part is not put_back:
                head = part.text[:200]
                assert any(entry.startswith(head) or head in entry for entry in summarized)
    assert not any(REINSERTED_HEADER in prompt for prompt in handler.prompts)


@pytest.mark.anyio
async def test_compactor_keeps_the_newest_pair_and_the_question_verbatim() -> None:
    chain = built_chain(200, 2000)
    handler = Recorder()
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(20_000),
        clearing=SUMMARY_STAGE.clearing,
        robustness=Robustness(max_prompt_bytes=16_384, max_concurrency=2),
    )
    out = await compactor.compact(chain)
    ChainAST.from_messages(out)
    assert sum(m.size for m in out) <= 20_000
    assert out[-2:] == chain[-2:]
    assert out[0] == chain[0]
    last_question = [m for m in chain if m.role is Role.HUMAN][-1]
    assert last_question in out
    assert handler.most_in_flight <= 2
    # The summarized data was all sent: every result line appears in some prompt.
    sent = "".join(handler.prompts)
    for message in chain[:-40]:
        if message.role is Role.TOOL:
            assert message.parts[0].content.splitlines()[0] in sent  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_failing_piece_raises_and_leaves_the_input_untouched() -> None:
    chain = built_chain(120, 2000)
    before = snapshot(chain)
    handler = Recorder(fail_on=3)
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(20_000),
        clearing=SUMMARY_STAGE.clearing,
        robustness=Robustness(max_prompt_bytes=16_384),
    )
    with pytest.raises(SummarizationError) as info:
        await compactor.compact(chain)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert snapshot(chain) == before
    # The same Compactor succeeds on the next call with a working handler.
    compactor.handler.handler = Recorder()
    out = await compactor.compact(chain)
    assert sum(m.size for m in out) <= 20_000


@pytest.mark.anyio
async def test_small_evictions_still_make_one_call() -> None:
    chain = built_chain(40, 300)
    handler = Recorder()
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(8000),
        clearing=SUMMARY_STAGE.clearing,
        robustness=Robustness(max_prompt_bytes=1 << 20),
    )
    await compactor.compact(chain)
    assert len(handler.prompts) == 1


@pytest.mark.anyio
async def test_the_extractive_handler_in_pieces_gives_a_valid_chain() -> None:
    chain = built_chain(150, 3000, astral=True)
    compactor = Compactor(
        extractive(),
        budget=SUMMARY_STAGE.budget(30_000),
        clearing=SUMMARY_STAGE.clearing,
        robustness=Robustness(max_prompt_bytes=64 * 1024),
    )
    result = await compactor.run(chain)
    ChainAST.from_messages(result.messages)
    assert result.bytes_after <= 30_000
    assert result.messages[-2:] == chain[-2:]
    assert result.events[0].chunks > 1


def test_compaction_memory_does_not_hold_one_prompt_of_everything() -> None:
    """The peak memory a compaction adds stays a fraction of the chain's, where one
    prompt of it all took 4x (every result holds a character beyond the BMP)."""
    chain = built_chain(400, 8000, astral=True)  # ~3.2 MB of UTF-8
    chain_bytes = sum(m.size for m in chain)

    async def summarize(prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        return "summary of " + str(len(prompt))

    def peak(max_prompt_bytes: int | None) -> int:
        compactor = Compactor(
            summarize,
            budget=SUMMARY_STAGE.budget(20_000),
            clearing=SUMMARY_STAGE.clearing,
            robustness=Robustness(max_prompt_bytes=max_prompt_bytes),
        )
        tracemalloc.start()
        try:
            anyio.run(compactor.compact, chain)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole = peak(None)
    pieces = peak(64 * 1024)
    assert whole > 4 * chain_bytes  # the measure sees the single prompt ...
    assert pieces < chain_bytes / 2  # ... and pieces hold a fraction of it


@pytest.mark.anyio
async def test_pieces_archive_one_batch_and_are_cached_one_by_one(tmp_path: Path) -> None:
    """With an archive the whole evicted part is one batch named once by the final
    summary; with a cache each piece and merge is stored under its own prompt, so the
    same compaction again makes no handler call (SQLite files, both real)."""
    chain = built_chain(150, 2000)
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="test")
    cache = SummaryCache(open_store(str(tmp_path / "cache.sqlite")), handler_id="recorder")
    handler = Recorder()

    def compactor() -> Compactor:
        return Compactor(
            handler,
            budget=SUMMARY_STAGE.budget(20_000),
            clearing=SUMMARY_STAGE.clearing,
            stores=Stores(archive=archive, cache=cache),
            robustness=Robustness(max_prompt_bytes=16_384),
        )

    first = await compactor().run(chain)
    calls = len(handler.prompts)
    assert calls > 3
    (event,) = first.events
    summaries = [m for m in first.messages if "[archived: " in message_search_text(m)]
    assert len(summaries) == 1
    (reference,) = archived_references(message_search_text(summaries[0]))
    recalled = await archive.recall(reference)
    assert len(recalled) == event.archived_messages
    assert all(message in chain for message in recalled)
    second = await compactor().run(chain)
    assert len(handler.prompts) == calls  # every piece and merge came from the cache
    assert second.events[0].cache_hits == calls
    ChainAST.from_messages(second.messages)
    await cache.aclose()
    await archive.aclose()
