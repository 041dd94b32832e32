"""The framework-free core of the hooks: putting the framework's own messages back
around a compacted chain, the error policy and the events (asyncio and trio)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import Message
from csum import Compactor, Robustness
from csum.integrations import HistoryHook, HookEvent, SummarizerKeeper, default_keeper
from csum.integrations import _rebuild as rebuild
from strategies import valid_chains


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Group:
    """A stand-in for one framework message: the chaincast messages it decodes to."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = list(messages)


def decode(groups: Sequence[Group]) -> tuple[list[Message], list[int]]:
    return [m for g in groups for m in g.messages], [len(g.messages) for g in groups]


def encode(fresh: list[Message]) -> list[Group]:
    return [Group([m]) for m in fresh]


@st.composite
def grouped_edits(draw: st.DrawFn) -> tuple[list[Group], list[Message], int, int]:
    """Groups of a chain, and the chain with one run of groups replaced by new messages."""
    chain = draw(valid_chains(min_sections=1))
    groups: list[Group] = []
    start = 0
    while start < len(chain):
        size = draw(st.integers(1, 3))
        groups.append(Group(chain[start : start + size]))
        start += size
    lo = draw(st.integers(0, len(groups)))
    hi = draw(st.integers(lo, len(groups)))
    new = [Message.human(f"summary {i}") for i in range(draw(st.integers(0, 2)))]
    output = [m for g in groups[:lo] for m in g.messages] + new
    output += [m for g in groups[hi:] for m in g.messages]
    return groups, output, lo, hi


@given(grouped_edits())
def test_rebuild_keeps_every_untouched_original(
    case: tuple[list[Group], list[Message], int, int],
) -> None:
    groups, output, lo, hi = case
    messages, counts = decode(groups)
    rebuilt = rebuild(groups, counts, messages, output, encode)
    assert decode(rebuilt)[0] == output
    # Every untouched group comes back as an original object (one of equal content
    # may stand in for another: they are the same messages).
    originals = {id(g) for g in groups}
    reused = sum(id(g) in originals for g in rebuilt)
    assert reused >= len(groups[:lo]) + len(groups[hi:])


def test_rebuild_reuses_the_kept_tail_when_an_earlier_group_looks_alike() -> None:
    """A greedy search took an earlier group of equal content for the kept tail's first
    message and lost a reuse (found by Hypothesis); the alignment is the best one."""
    b, a = Message.human("b"), Message.ai("a")
    groups = [Group([b]), Group([a]), Group([b, b]), Group([a]), Group([b, a])]
    messages, counts = decode(groups)
    output = [m for g in groups[2:] for m in g.messages]
    rebuilt = rebuild(groups, counts, messages, output, encode)
    assert decode(rebuilt)[0] == output
    originals = {id(g) for g in groups}
    assert sum(id(g) in originals for g in rebuilt) == 3  # the greedy search reused 2


def test_rebuild_hands_back_the_originals_when_nothing_changed() -> None:
    groups = [Group([Message.human("hi")]), Group([Message.ai("hello")])]
    messages, counts = decode(groups)
    rebuilt = rebuild(groups, counts, messages, messages, encode)
    assert [id(g) for g in rebuilt] == [id(g) for g in groups]


class Broken:
    async def compact(self, messages: list[Message]) -> list[Message]:
        raise RuntimeError("handler down")


class Halves:
    """Keeps the first and last messages only."""

    async def compact(self, messages: list[Message]) -> list[Message]:
        return [messages[0], messages[-1]]


CHAIN = [Message.human("a"), Message.ai("b"), Message.human("c"), Message.ai("d")]


@pytest.mark.anyio
async def test_events_and_policy() -> None:
    events: list[HookEvent] = []
    groups = [Group([m]) for m in CHAIN]
    hook = HistoryHook(Halves(), on_event=events.append)
    out = await hook.compact_history(groups, decode, encode)
    assert [g.messages for g in out] == [[CHAIN[0]], [CHAIN[-1]]]
    assert out[0] is groups[0]
    assert (events[-1].outcome, events[-1].messages_before, events[-1].messages_after) == (
        "compacted",
        4,
        2,
    )
    failing = HistoryHook(Broken(), on_event=events.append)
    assert await failing.compact_history(groups, decode, encode) == groups
    assert events[-1].outcome == "failed"
    assert isinstance(events[-1].error, RuntimeError)
    with pytest.raises(RuntimeError, match="handler down"):
        await HistoryHook(Broken(), on_error="raise").compact_history(groups, decode, encode)


class Same:
    """Changes nothing."""

    async def compact(self, messages: list[Message]) -> list[Message]:
        return messages


@pytest.mark.anyio
async def test_a_failing_event_callback_is_not_reported_as_a_failed_call() -> None:
    calls: list[HookEvent] = []

    def on_event(event: HookEvent) -> None:
        calls.append(event)
        raise ValueError("callback bug")

    groups = [Group([m]) for m in CHAIN]
    with pytest.raises(ValueError, match="callback bug"):
        await HistoryHook(Same(), on_event=on_event).compact_history(groups, decode, encode)
    assert [event.outcome for event in calls] == ["unchanged"]


@pytest.mark.anyio
async def test_the_summarizer_behind_the_protocol() -> None:
    from csum import Summarizer, SummarizerConfig
    from csum.handlers import extractive

    long_chain = [
        m for i in range(6) for m in (Message.human(f"q{i} " + "x" * 3000), Message.ai(f"a{i}"))
    ]
    keeper = SummarizerKeeper(
        Summarizer(SummarizerConfig(use_qa=True, max_qa_bytes=8000, summarize_human_in_qa=True)),
        extractive(400),
    )
    hook = HistoryHook(keeper)
    groups = [Group([m]) for m in long_chain]
    out = await hook.compact_history(groups, decode, encode)
    assert hook.events[-1].outcome == "compacted"
    assert hook.events[-1].size_after < hook.events[-1].size_before
    assert out[-1] is groups[-1]


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="on_error"):
        HistoryHook(on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give it to the keeper"):
        HistoryHook(Halves(), budget=1000)
    assert isinstance(default_keeper(), Compactor)
    assert isinstance(HistoryHook(budget=9000).keeper, Compactor)


@pytest.mark.anyio
async def test_the_sync_entry_point_works_inside_a_running_loop() -> None:
    groups = [Group([m]) for m in CHAIN]
    hook = HistoryHook(Halves())
    out = hook.compact_history_sync(groups, decode, encode)  # as a sync framework hook would
    assert [g.messages for g in out] == [[CHAIN[0]], [CHAIN[-1]]]
    assert HistoryHook(Halves()).compact_history_sync(groups[:2], decode, encode)[0] is groups[0]


# -- a newcomer's traps (issue 29) -------------------------------------------------------

LONG = [
    m
    for i in range(8)
    for m in (Message.human(f"question {i}: " + "detail line\n" * 300), Message.ai(f"answer {i}"))
]


@pytest.mark.anyio
async def test_a_handler_is_run_by_the_default_keeper() -> None:
    """``HistoryHook(extractive())`` used to be taken as a keeper and fail on every call
    ('function' object has no attribute 'compact'), leaving the history uncompacted."""
    from csum.handlers import extractive

    groups = [Group([m]) for m in LONG]
    hook = HistoryHook(extractive(), budget=8_000)
    assert isinstance(hook.keeper, Compactor)
    await hook.compact_history(groups, decode, encode)
    event = hook.events[-1]
    assert event.outcome == "compacted", event
    assert event.size_after <= 8_000
    alone = HistoryHook(extractive())
    assert isinstance(alone.keeper, Compactor)


def test_what_is_not_a_keeper_is_refused_with_the_line_to_write() -> None:
    from csum.handlers import extractive

    with pytest.raises(TypeError, match=r"call it, Compactor\(extractive\(\), budget="):
        HistoryHook(extractive)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"HistoryHook\(budget=32_000\)"):
        HistoryHook(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not the hook HistoryHook"):
        HistoryHook(HistoryHook())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"HistoryHook\(Compactor\(handler, budget=\.\.\.\)\)"):
        HistoryHook(Halves(), budget=1000)
    with pytest.raises(ValueError, match="not both"):
        HistoryHook(budget=1000, model="gpt-4o")
    # the same for the public constructors that take a handler
    with pytest.raises(TypeError, match="keeper or hook Compactor"):
        Compactor(Compactor(budget=4096), budget=4096)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="extractive factory"):
        Compactor(extractive, budget=4096)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fallback"):
        Compactor(budget=4096, robustness=Robustness(fallback=Compactor(budget=4096)))  # type: ignore[arg-type]
    from csum import RobustHandler, Summarizer

    with pytest.raises(TypeError, match="keeper or hook Compactor"):
        RobustHandler(Compactor(budget=4096))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fallback is the extractive factory"):
        RobustHandler(extractive(), Robustness(fallback=extractive))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keeper or hook"):
        SummarizerKeeper(Summarizer(), Compactor(budget=4096))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"csum\.Summarizer"):
        SummarizerKeeper(extractive(), extractive())  # type: ignore[arg-type]


def test_budgets_as_size_strings_and_from_a_model_name() -> None:
    from csum import Budget

    assert HistoryHook(budget="32KiB").keeper.budget == Budget.bytes(32 * 1024)  # type: ignore[attr-defined]
    assert HistoryHook(budget="4000 tokens").keeper.budget == Budget.tokens(4000)  # type: ignore[attr-defined]
    hook = HistoryHook(model="anthropic:claude-sonnet-4-5")
    assert hook.keeper.budget == Budget.tokens(100_000)  # type: ignore[attr-defined]
    assert hook.keeper.target == "anthropic"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"windows=\{'my-model': 128_000\}"):
        HistoryHook(model="acme:my-model")
    with pytest.raises(ValueError, match="invalid size"):
        HistoryHook(budget="lots")


def test_the_agents_model_gives_the_default_budget(caplog: pytest.LogCaptureFixture) -> None:
    from csum import Budget

    hook = HistoryHook()
    assert hook.keeper.budget == Budget.bytes(65536)  # type: ignore[attr-defined]
    hook.learn_model("us.anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock")
    assert hook.keeper.budget == Budget.tokens(100_000)  # type: ignore[attr-defined]
    assert hook.keeper.target == "bedrock"  # type: ignore[attr-defined]
    given = HistoryHook(budget=9000)
    given.learn_model("gpt-4o")
    assert given.keeper.budget == Budget.bytes(9000)  # type: ignore[attr-defined]
    unknown = HistoryHook()
    unknown.learn_model("function:model")
    assert unknown.keeper.budget == Budget.bytes(65536)  # type: ignore[attr-defined]
    assert "no known context window" in caplog.text


@pytest.mark.anyio
async def test_events_state_unit_budget_and_over_budget() -> None:
    """With a token budget the newest pair alone does not fit: the event used to say
    'compacted' in bytes only; it now says tokens, the budget and over_budget."""
    from csum import Budget

    big_pair = [
        Message.human("run it"),
        Message.ai("done: " + "output line of the tool\n" * 900),
    ]
    groups = [Group([m]) for m in [*LONG, *big_pair]]
    hook = HistoryHook(budget=Budget.tokens(4000))
    await hook.compact_history(groups, decode, encode)
    event = hook.events[-1]
    assert (event.unit, event.budget, event.over_budget) == ("tokens", 4000, True)
    assert event.size_after > 4000
    assert event.bytes_after > event.size_after  # bytes and tokens both given
    assert "STILL OVER BUDGET" in str(event)
    fits = HistoryHook(budget=Budget.tokens(4000))
    await fits.compact_history([Group([m]) for m in LONG], decode, encode)
    assert (fits.events[-1].outcome, fits.events[-1].over_budget) == ("compacted", False)
    assert fits.events[-1].size_after <= 4000
    plain = HistoryHook(Halves())
    await plain.compact_history([Group([m]) for m in CHAIN], decode, encode)
    assert (plain.events[-1].unit, plain.events[-1].budget) == ("bytes", None)


@pytest.mark.anyio
async def test_hook_events_are_bounded() -> None:
    from csum.integrations import DEFAULT_MAX_EVENTS

    groups = [Group([m]) for m in CHAIN]
    seen: list[HookEvent] = []
    hook = HistoryHook(Same(), max_events=3, on_event=seen.append)
    for _ in range(10):
        await hook.compact_history(groups, decode, encode)
    assert len(hook.events) == 3
    assert len(seen) == 10
    assert HistoryHook().events.maxlen == DEFAULT_MAX_EVENTS
    quiet = HistoryHook(Same(), max_events=0)
    await quiet.compact_history(groups, decode, encode)
    assert len(quiet.events) == 0
    assert quiet.last_event is not None
