"""The Compactor on hand-built chains: hysteresis, bounds, layout, depth, events."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from cast import ChainAST, ChainError, Message, Role, ToolCall, lint
from csum import (
    EARLIER_CONVERSATION_TEXT,
    Budget,
    CompactionEvent,
    CompactionReason,
    Compactor,
    EstimatedTokens,
    Stores,
    Summarizer,
    is_summarized,
)
from csum.config import SUMMARY_ONLY
from csum_builders import fill

SUMMARY_STAGE = SUMMARY_ONLY
"""The summary stage alone, at the sizes these tests were written for (no clearing, a
60 % target, summaries up to 1/32 of the budget): given explicitly, so the tests do not
depend on the Compactor's defaults."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Recorder:
    """A handler that records its prompts and answers a fixed-size summary."""

    def __init__(self, size: int = 200) -> None:
        self.size = size
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        self.prompts.append(prompt)
        return f"summary {len(self.prompts)} " + fill(max(0, self.size - 12), "s")


def turn(index: int, result_size: int) -> list[Message]:
    call_id = f"call_{index:04d}"
    return [
        Message.ai("", ToolCall(id=call_id, name="bash", arguments=json.dumps({"i": index}))),
        Message.tool(call_id, "bash", fill(result_size, "r")),
    ]


def loop_chain(turns: int, result_size: int, *, questions_every: int = 0) -> list[Message]:
    chain = [Message.system("you are an agent"), Message.human("first question")]
    for index in range(turns):
        if questions_every and index and index % questions_every == 0:
            chain.append(Message.ai(f"answer {index}"))
            chain.append(Message.human(f"question {index}"))
        chain.extend(turn(index, result_size))
    return chain


def size(messages: list[Message]) -> int:
    return sum(m.size for m in messages)


@pytest.mark.anyio
async def test_below_the_trigger_nothing_changes() -> None:
    handler = Recorder()
    chain = loop_chain(5, 100)
    compactor = Compactor(handler, budget=10_000)
    result = await compactor.run(chain)
    assert result.messages == chain
    assert not result.compacted
    assert not result.events
    assert handler.prompts == []


@pytest.mark.anyio
async def test_over_budget_brings_the_chain_to_the_target_with_one_call() -> None:
    handler = Recorder(200)
    chain = loop_chain(40, 300, questions_every=7)
    events: list[CompactionEvent] = []
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(8000),
        on_event=events.append,
        clearing=SUMMARY_STAGE.clearing,
    )
    before = [m.model_copy() for m in chain]
    result = await compactor.run(chain)
    assert chain == before  # input untouched
    ChainAST.from_messages(result.messages)
    assert result.compacted
    assert len(handler.prompts) == 1
    assert size(result.messages) <= compactor.keep_units
    assert result.messages[-2:] == chain[-2:]  # newest pair verbatim
    assert result.messages[0] == chain[0]  # system prompt
    (event,) = events
    assert event.reason is CompactionReason.OVER_BUDGET
    assert event.bytes_before == size(chain)
    assert event.bytes_after == size(result.messages)
    assert event.handler_calls == 1
    assert event.prompt_bytes > 0
    assert event.summary_bytes > 0
    assert event.depth == 1
    assert not event.over_budget


@pytest.mark.anyio
async def test_hysteresis_next_compaction_comes_turns_later() -> None:
    handler = Recorder(200)
    compactor = Compactor(
        handler, budget=SUMMARY_STAGE.budget(8000), clearing=SUMMARY_STAGE.clearing
    )
    chain = loop_chain(40, 300)
    chain = await compactor.compact(chain)
    calls = len(handler.prompts)
    index = 100
    grown = 0
    while len(handler.prompts) == calls:
        chain = await compactor.compact([*chain, *turn(index, 300)])
        index += 1
        grown += 1
    assert grown >= 5  # (8000 - 4800) / ~340 bytes a turn


@pytest.mark.anyio
async def test_trigger_below_budget_respects_the_cooldown() -> None:
    handler = Recorder(100)
    compactor = Compactor(
        handler,
        budget=Budget.bytes(20_000, trigger=0.3, keep_ratio=0.2, cooldown_turns=3),
        clearing=None,
    )
    chain = loop_chain(30, 300)
    chain = await compactor.compact(chain)
    assert len(handler.prompts) == 1
    for index in range(2):  # within the cooldown: over the trigger, not compacted
        chain = await compactor.compact([*chain, *turn(100 + index, 3000)])
    assert len(handler.prompts) == 1
    chain = await compactor.compact([*chain, *turn(200, 300)])
    assert len(handler.prompts) == 2


@pytest.mark.anyio
async def test_over_budget_ignores_the_cooldown() -> None:
    handler = Recorder(100)
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(8000).evolve(cooldown_turns=100),
        clearing=SUMMARY_STAGE.clearing,
    )
    chain = await compactor.compact(loop_chain(40, 300))
    chain = await compactor.compact([*chain, *turn(99, 7000)])
    assert len(handler.prompts) == 2
    assert size(chain) <= 8000


@pytest.mark.anyio
async def test_unfittable_chain_is_flagged_not_silent() -> None:
    handler = Recorder(100)
    events: list[CompactionEvent] = []
    compactor = Compactor(handler, budget=2000, on_event=events.append)
    chain = [Message.system("s"), Message.human("q"), *turn(1, 5000)]
    result = await compactor.run(chain)
    assert result.over_budget
    assert result.messages == chain
    assert events
    assert events[0].reason is CompactionReason.UNFITTABLE
    assert events[0].over_budget


@pytest.mark.anyio
async def test_fits_budget_when_mandatory_part_fits_but_summary_must_be_cut() -> None:
    handler = Recorder(5000)  # a summary far larger than the room left
    events: list[CompactionEvent] = []
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(6000),
        on_event=events.append,
        clearing=SUMMARY_STAGE.clearing,
    )
    chain = [Message.system("s"), Message.human("q"), *turn(0, 3000), *turn(1, 5500)]
    result = await compactor.run(chain)
    assert size(result.messages) <= 6000
    assert result.messages[-2:] == chain[-2:]
    assert events[0].summary_truncated


@pytest.mark.anyio
async def test_new_question_keeps_the_question_last_and_opens_with_a_human_turn() -> None:
    handler = Recorder(100)
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(6000),
        target="anthropic",
        clearing=SUMMARY_STAGE.clearing,
    )
    chain = [Message.system("s")]
    for index in range(12):  # one pair per question: the cut falls between turns
        chain += [Message.human(f"question {index}"), *turn(index, 900)]
    chain.append(Message.human("next question"))
    out = await compactor.compact(chain)
    assert out[-1] == chain[-1]
    assert out[1].role is Role.HUMAN
    assert out[1].text == EARLIER_CONVERSATION_TEXT
    assert is_summarized(ChainAST.from_messages(out).sections[0].body[-1])
    assert lint(out, "anthropic") == []
    assert size(out) <= 6000


@pytest.mark.anyio
async def test_cut_inside_a_turn_puts_the_summary_after_its_question() -> None:
    handler = Recorder(100)
    compactor = Compactor(
        handler, budget=SUMMARY_STAGE.budget(6000), clearing=SUMMARY_STAGE.clearing
    )
    chain = [*loop_chain(30, 300), Message.ai("done"), Message.human("next question")]
    out = await compactor.compact(chain)
    assert out[:2] == chain[:2]
    assert out[-1] == chain[-1]
    first = ChainAST.from_messages(out).sections[0]
    assert is_summarized(first.body[0])
    assert not is_summarized(first.body[1])


@pytest.mark.anyio
async def test_depth_limit_freezes_old_summaries() -> None:
    handler = Recorder(150)
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(6000).evolve(max_depth=2),
        clearing=SUMMARY_STAGE.clearing,
    )
    chain = loop_chain(30, 300)
    depths: list[int] = []
    compactor.on_event = lambda event: depths.append(event.depth)
    index = 100
    while len(depths) < 5:
        chain = await compactor.compact([*chain, *turn(index, 300)])
        index += 1
    assert max(depths) <= 2
    assert depths[:3] == [1, 2, 1]
    summaries = [
        p for s in ChainAST.from_messages(chain).sections for p in s.body if is_summarized(p)
    ]
    assert len(summaries) >= 2  # the frozen one is kept next to the new one


@pytest.mark.anyio
async def test_token_budget_is_measured_by_the_counter() -> None:
    handler = Recorder(100)
    counter = EstimatedTokens()
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(Budget.tokens(2000)),
        counter=counter,
        clearing=SUMMARY_STAGE.clearing,
    )
    out = await compactor.compact(loop_chain(40, 300))
    assert sum(counter.count(m) for m in out) <= 2000
    assert size(out) > 2000  # bytes, not tokens


def test_compact_sync_and_dict_input() -> None:
    compactor = Compactor(Recorder(100), budget=6000)
    chain: list[Any] = [m.model_dump(mode="json") for m in loop_chain(30, 300)]
    out = compactor.compact_sync(chain)
    assert size(out) <= 6000
    assert all(isinstance(m, Message) for m in out)


@pytest.mark.anyio
async def test_compact_sync_inside_a_running_loop() -> None:
    # A notebook cell: the thread runs a loop already, compact_sync runs one in a worker.
    chain = loop_chain(30, 300)
    out = Compactor(Recorder(100), budget=6000).compact_sync(chain)
    assert out == await Compactor(Recorder(100), budget=6000).compact(chain)
    assert size(out) <= 6000


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"budget": 0}, ValueError),
        ({"budget": True}, TypeError),
        ({"budget": 100, "settings": {"trigger": 1.5}}, ValueError),
        ({"budget": 100, "settings": {"trigger": 200}}, ValueError),
        ({"budget": 100, "settings": {"keep_ratio": 0}}, ValueError),
        ({"budget": 100, "settings": {"max_depth": 0}}, ValueError),
        ({"budget": 100, "target": "nope"}, ValueError),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], error: type[Exception]) -> None:
    def build() -> Compactor:
        options = dict(kwargs)
        settings = options.pop("settings", None)
        if settings is not None:
            options["budget"] = Budget(options["budget"], **settings)
        return Compactor(Recorder(), **options)

    with pytest.raises(error):
        build()


@pytest.mark.anyio
async def test_cache_serves_a_replayed_compaction() -> None:
    from csum import SummaryCache

    cache = SummaryCache(handler_id="recorder")
    chain = loop_chain(40, 300)
    first_handler, second_handler = Recorder(200), Recorder(200)
    first: list[CompactionEvent] = []
    second: list[CompactionEvent] = []
    out1 = await Compactor(
        first_handler,
        budget=SUMMARY_STAGE.budget(8000),
        on_event=first.append,
        clearing=SUMMARY_STAGE.clearing,
        stores=Stores(cache=cache),
    ).compact(chain)
    out2 = await Compactor(
        second_handler,
        budget=SUMMARY_STAGE.budget(8000),
        on_event=second.append,
        clearing=SUMMARY_STAGE.clearing,
        stores=Stores(cache=cache),
    ).compact(chain)
    assert out1 == out2
    assert len(first_handler.prompts) == 1
    assert second_handler.prompts == []
    assert (first[0].cache_hits, second[0].cache_hits) == (0, 1)


@pytest.mark.parametrize("name", ["keep_ratio", "trigger", "pin", "clearing", "target", "handler"])
def test_settings_are_fixed_once_made(name: str) -> None:
    # The stages read the settings once: a later assignment would be ignored, so it raises.
    compactor = Compactor(budget=4000)
    before = getattr(compactor, name)
    with pytest.raises(AttributeError, match=f"Compactor.{name} is fixed"):
        setattr(compactor, name, None)
    assert getattr(compactor, name) is before
    compactor.on_event = print  # the event callback and the turn count stay assignable
    compactor.turns = 3


def test_cache_must_be_a_summary_cache() -> None:
    with pytest.raises(TypeError, match="SummaryCache"):
        Compactor(Recorder(), budget=100, stores=Stores(cache={}))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_summaries_at_the_depth_limit_do_not_fill_the_budget() -> None:
    """With every summary frozen at once (max_depth=1), frozen summaries stay within a
    quarter of the target, so compactions stay many turns apart."""
    handler = Recorder(600)
    events: list[CompactionEvent] = []
    compactor = Compactor(
        handler,
        budget=SUMMARY_STAGE.budget(20_000).evolve(max_depth=1),
        on_event=events.append,
        clearing=SUMMARY_STAGE.clearing,
    )
    chain = loop_chain(10, 300)
    for index in range(400):
        chain = await compactor.compact([*chain, *turn(1000 + index, 300)])
    frozen = sum(
        pair.size
        for section in ChainAST.from_messages(chain).sections
        for pair in section.body
        if is_summarized(pair)
    )
    assert frozen <= compactor.keep_units // 4 + 1200  # the cap, plus the newest summary
    assert len(events) <= 400 // 10  # about (20000 - 12000) / 340 turns apart
    assert sum(e.dropped_summaries for e in events) > 0


@pytest.mark.anyio
async def test_a_replay_opening_with_an_ai_message_is_compacted() -> None:
    """A stored chain replayed from an AI turn gets a placeholder question and compacts;
    the bare Summarizer keeps the contract's parse rule 1 (ChainError)."""
    chain = [Message.ai("earlier answer " * 200), Message.human("next?"), Message.ai("ok")]
    with pytest.raises(ChainError):
        await Summarizer().summarize_chain(Recorder(100), chain)
    handler = Recorder(100)
    out = await Compactor(
        handler, budget=SUMMARY_STAGE.budget(600), clearing=SUMMARY_STAGE.clearing
    ).compact(chain)
    ChainAST.from_messages(out)
    assert out[-2:] == chain[-2:]
    assert size(out) <= 600
    assert len(handler.prompts) == 1
