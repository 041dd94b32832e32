"""The phases of csum.summarizer on their own: pair helpers, the keep/summarize split
with its reserve (exact byte boundaries), section and QA budgets, one-section phases,
and the concurrency helpers (HandlerCalls, gather)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    FAKE_GEMINI_SIGNATURE,
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    ChainAST,
    Header,
    IdTemplate,
    ImagePart,
    Message,
    Role,
    Section,
    TextPart,
)
from csum import SUMMARIZED_CONTENT_PREFIX, SummarizationError, SummarizerConfig
from csum.assemble import SummaryStyle, summary_kind
from csum.plan import is_summarized, messages_of
from csum.request import HandlerCalls, gather
from csum.summarizer import (
    _needs_summary,
    _recent_sections_to_keep,
    _rotate_section,
    _split_last_section_pairs,
    _summarize_qa,
    _summarize_section,
)
from csum_builders import (
    FakeHandler,
    completion,
    fill,
    label,
    request,
    summary_call,
    summary_text,
)

TEMPLATE = IdTemplate(DEFAULT_TOOL_CALL_ID_TEMPLATE)
STYLE = SummaryStyle(TEMPLATE)


def pair(messages: list[Message]) -> BodyPair:
    return BodyPair.build(messages[0], messages[1:])


def completion_pair(size: int, char: str = "a") -> BodyPair:
    return pair(completion(size, char))


def make_section(header_bytes: int, *pairs: BodyPair) -> Section:
    """A non-first section whose human message is ``header_bytes`` bytes."""
    return Section(Header(human_message=Message.human(fill(header_bytes, "h"))), pairs)


def sized_section(header_bytes: int, *sizes: int) -> Section:
    # Distinct letters so each pair is recognisable in prompts and outputs.
    letters = "abcdefghijklmnopqrstuvwxyz"
    pairs = (completion_pair(size, letters[i]) for i, size in enumerate(sizes))
    return make_section(header_bytes, *pairs)


# -- pair helpers ------------------------------------------------------------------------


SUMMARY_COMPLETION = BodyPair.completion(SUMMARIZED_CONTENT_PREFIX + "done")


@pytest.mark.parametrize(
    ("body_pair", "expected"),
    [
        pytest.param(BodyPair.summarization("sum"), True, id="summarization-pair"),
        pytest.param(SUMMARY_COMPLETION, True, id="prefixed-completion"),
        pytest.param(BodyPair.completion("plain answer"), False, id="plain-completion"),
        pytest.param(
            BodyPair.completion("note: " + SUMMARIZED_CONTENT_PREFIX + "x"),
            False,
            id="prefix-not-at-start",
        ),
        pytest.param(
            BodyPair.completion(SUMMARIZED_CONTENT_PREFIX.strip()),
            False,
            id="prefix-without-newline",
        ),
        pytest.param(
            pair(
                [
                    Message(
                        role=Role.AI,
                        parts=[
                            ImagePart(url="https://x/y.png"),
                            TextPart(text=SUMMARIZED_CONTENT_PREFIX + "x"),
                        ],
                    )
                ]
            ),
            False,
            id="prefix-in-second-part",
        ),
        pytest.param(pair(request("c1", 40)), False, id="request-response"),
        pytest.param(
            pair(request("c1", 120, name=SUMMARIZATION_TOOL_NAME)),
            False,
            id="lookalike-summary-tool-call",
        ),
        pytest.param(
            pair(BodyPair.summarization("x" * 120, seed="s").messages()),
            True,
            id="parsed-summarization-pair",
        ),
        pytest.param(
            pair(
                [
                    Message.ai(SUMMARIZED_CONTENT_PREFIX + "x"),
                ]
            ),
            True,
            id="prefixed-completion",
        ),
        pytest.param(
            pair(
                [
                    Message(
                        role=Role.AI,
                        parts=[
                            TextPart(text=SUMMARIZED_CONTENT_PREFIX + "x"),
                            TextPart(text="and a second part"),
                        ],
                    )
                ]
            ),
            False,
            id="prefixed-text-then-more",
        ),
    ],
)
def test_is_summarized(body_pair: BodyPair, expected: bool) -> None:
    assert is_summarized(body_pair) is expected


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        pytest.param(
            [completion_pair(3), completion_pair(4)], BodyPairType.COMPLETION, id="completions"
        ),
        pytest.param([SUMMARY_COMPLETION], BodyPairType.COMPLETION, id="summary-completion"),
        pytest.param(
            [completion_pair(3), pair(request("c1", 30))],
            BodyPairType.SUMMARIZATION,
            id="one-request",
        ),
        pytest.param(
            [BodyPair.summarization("s"), completion_pair(3)],
            BodyPairType.SUMMARIZATION,
            id="one-summarization",
        ),
    ],
)
def test_summary_kind(pairs: list[BodyPair], expected: BodyPairType) -> None:
    assert summary_kind(messages_of(pairs)) is expected


@pytest.mark.parametrize(
    ("sec", "expected"),
    [
        pytest.param(make_section(3), False, id="empty-body"),
        pytest.param(make_section(3, SUMMARY_COMPLETION), False, id="one-summary"),
        pytest.param(make_section(3, BodyPair.summarization("s")), False, id="one-summarization"),
        pytest.param(make_section(3, completion_pair(5)), True, id="one-plain-pair"),
        pytest.param(
            make_section(3, SUMMARY_COMPLETION, completion_pair(5)), True, id="summary-and-more"
        ),
        pytest.param(
            make_section(3, BodyPair.summarization("a"), BodyPair.summarization("b")),
            True,
            id="two-summaries",
        ),
    ],
)
def test_needs_section_summary(sec: Section, expected: bool) -> None:
    assert _needs_summary(sec.body) is expected


# -- the keep/summarize split of a last section -------------------------------------------


@pytest.mark.parametrize(
    ("sec", "max_bytes", "reserve", "kept", "summarized"),
    [
        # 1000 bytes less 25% = 750: header 10 + last 300 + 440 is exactly 750.
        pytest.param(sized_section(10, 400, 440, 300), 1000, 25, 2, 1, id="fits-exactly"),
        pytest.param(sized_section(10, 400, 441, 300), 1000, 25, 1, 2, id="one-byte-over"),
        pytest.param(sized_section(10, 400, 439, 300), 1000, 25, 2, 1, id="one-byte-under"),
        pytest.param(sized_section(10, 200, 240, 300), 1000, 25, 3, 0, id="everything-fits"),
        pytest.param(sized_section(10, 500, 490, 500), 1000, 0, 2, 1, id="no-reserve-exact"),
        pytest.param(sized_section(10, 500, 491, 500), 1000, 0, 1, 2, id="no-reserve-over"),
        # 1001 * 0.75 = 750.75: 750 bytes fit, 751 do not.
        pytest.param(sized_section(10, 400, 440, 300), 1001, 25, 2, 1, id="fraction-fits"),
        pytest.param(sized_section(10, 400, 441, 300), 1001, 25, 1, 2, id="fraction-over"),
        # 999 * 0.75 = 749.25: 750 bytes no longer fit.
        pytest.param(sized_section(10, 400, 440, 300), 999, 25, 1, 2, id="fraction-under"),
        pytest.param(sized_section(10, 5, 900), 1000, 25, 1, 1, id="huge-last-pair-kept"),
        pytest.param(sized_section(800, 5, 5), 1000, 25, 1, 1, id="huge-header"),
        # Kept pairs are a suffix: a small old pair behind a big one is summarized.
        pytest.param(sized_section(10, 10, 500, 300), 1000, 25, 1, 2, id="suffix-only"),
        pytest.param(sized_section(10, 100, 100, 100, 100, 100), 500, 50, 2, 3, id="many"),
        pytest.param(sized_section(10), 1000, 25, 0, 0, id="empty-body"),
        pytest.param(sized_section(10, 5000), 1000, 25, 1, 0, id="single-pair"),
    ],
)
def test_split_last_section_pairs(
    sec: Section, max_bytes: int, reserve: int, kept: int, summarized: int
) -> None:
    keep, summarize = _split_last_section_pairs(sec, max_bytes, reserve)
    assert (len(keep), len(summarize)) == (kept, summarized)
    # Oldest pairs are summarized, newest kept, nothing lost or reordered.
    assert summarize + keep == sec.body


def test_split_does_not_summarize_a_lone_summary_again() -> None:
    summary = BodyPair.summarization(fill(900))
    sec = make_section(10, summary, completion_pair(440), completion_pair(300))
    keep, summarize = _split_last_section_pairs(sec, 1000, 25)
    assert (keep, summarize) == (sec.body, ())


def test_split_folds_a_summary_with_the_pairs_after_it() -> None:
    summary = BodyPair.summarization(fill(900))
    sec = make_section(10, summary, completion_pair(441), completion_pair(300))
    keep, summarize = _split_last_section_pairs(sec, 1000, 25)
    assert summarize == sec.body[:2]
    assert keep == sec.body[2:]


# -- QA budgets ----------------------------------------------------------------------------


def qa_chain(*sizes: int) -> ChainAST:
    """Sections of the given sizes: a 1-byte human message and one completion each."""
    return ChainAST(
        Section(Header(human_message=Message.human(str(i % 10))), (completion_pair(size - 1),))
        for i, size in enumerate(sizes)
    )


@pytest.mark.parametrize(
    ("ast", "changes", "expected"),
    [
        pytest.param(qa_chain(*[100] * 6), {"max_qa_bytes": 400}, 4, id="bytes-exact"),
        pytest.param(
            qa_chain(100, 100, 101, 100, 100, 100), {"max_qa_bytes": 400}, 3, id="bytes-one-over"
        ),
        pytest.param(
            qa_chain(*[100] * 6), {"max_qa_bytes": 500, "reserve_percent": 20}, 4, id="reserve"
        ),
        pytest.param(
            qa_chain(*[100] * 6), {"max_qa_bytes": 500, "reserve_percent": 21}, 3, id="reserve-more"
        ),
        pytest.param(qa_chain(*[10] * 6), {"max_qa_sections": 3}, 2, id="count-leaves-one-slot"),
        pytest.param(qa_chain(*[10] * 6), {"max_qa_sections": 1}, 1, id="count-one"),
        pytest.param(
            qa_chain(*[500] * 5),
            {"max_qa_bytes": 400, "keep_qa_sections": 3},
            3,
            id="keep-forced-over-budget",
        ),
        pytest.param(qa_chain(*[10] * 3), {"keep_qa_sections": 9}, 3, id="keep-more-than-all"),
        pytest.param(qa_chain(10, 10, 390, 100), {"max_qa_bytes": 400}, 1, id="newest-suffix-only"),
    ],
)
def test_recent_sections_to_keep(ast: ChainAST, changes: dict[str, Any], expected: int) -> None:
    config = SummarizerConfig(**{"reserve_percent": 0, **changes})
    assert _recent_sections_to_keep(ast, config) == expected


@pytest.mark.parametrize(
    ("ast", "changes", "expected"),
    [
        pytest.param(qa_chain(100, 100), {"max_qa_bytes": 200}, False, id="bytes-at-limit"),
        pytest.param(qa_chain(100, 101), {"max_qa_bytes": 200}, True, id="bytes-over"),
        pytest.param(qa_chain(*[1 + 1] * 3), {"max_qa_sections": 3}, False, id="count-at-limit"),
        pytest.param(qa_chain(*[1 + 1] * 4), {"max_qa_sections": 3}, True, id="count-over"),
    ],
)
@pytest.mark.anyio
async def test_qa_folds_only_over_its_limits(
    ast: ChainAST, changes: dict[str, Any], expected: bool
) -> None:
    handler = FakeHandler()
    out = await _summarize_qa(HandlerCalls(handler), ast, SummarizerConfig(**changes), STYLE)
    assert (out is not ast, handler.calls > 0) == (expected, expected)


# -- one phase on one section ----------------------------------------------------------------


@pytest.mark.anyio
async def test_summarize_section_of_completions_gives_a_prefixed_completion() -> None:
    handler = FakeHandler()
    calls = HandlerCalls(handler)
    sec = make_section(5, completion_pair(20, "a"), completion_pair(30, "b"))
    out = await _summarize_section(calls, sec, 3, STYLE)
    assert out.header is sec.header
    assert len(out.body) == 1
    (summary,) = out.body
    assert summary.type is BodyPairType.COMPLETION
    assert summary.ai_message.text == SUMMARIZED_CONTENT_PREFIX + label(handler.prompts[0])
    assert out.size == sec.header.size + summary.size
    (prompt,) = handler.prompts
    for text in ("hhhhh", fill(20, "a"), fill(30, "b")):
        assert text in prompt
    assert (calls.calls, calls.input_bytes) == (1, len(prompt))
    assert calls.output_bytes == len(label(prompt))


@pytest.mark.anyio
async def test_summarize_section_with_tool_calls_drops_reasoning() -> None:
    handler = FakeHandler()
    sec = make_section(
        5,
        pair(request("c1", 80, text="look", text_reasoning="thinking", reasoning="why")),
        completion_pair(10),
    )
    out = await _summarize_section(HandlerCalls(handler), sec, 1, STYLE)
    (summary,) = out.body
    assert summary.type is BodyPairType.SUMMARIZATION
    # Not a last section: no fake signature and no reasoning part in front of the call.
    assert len(summary.ai_message.parts) == 1
    (call,) = summary.tool_calls
    assert call.name == SUMMARIZATION_TOOL_NAME
    assert call.reasoning is None
    assert TEMPLATE.matches(call.id)
    assert summary_text(summary) == label(handler.prompts[0])


def rotation_config(**changes: Any) -> SummarizerConfig:
    return SummarizerConfig(**{"last_section_bytes": 1000, "max_body_pair_bytes": 500, **changes})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("sizes", "oversized"),
    [
        pytest.param((500, 500, 20), (), id="at-limit-kept"),
        pytest.param((501, 500, 20), (0,), id="one-byte-over"),
        pytest.param((501, 10, 600, 20), (0, 2), id="two-oversized"),
        pytest.param((10, 20, 5000), (), id="huge-last-pair-untouched"),
    ],
)
async def test_rotate_section_summarizes_oversized_pairs_alone(
    sizes: tuple[int, ...], oversized: tuple[int, ...]
) -> None:
    handler = FakeHandler()
    sec = sized_section(5, *sizes)
    config = rotation_config(last_section_bytes=100_000)
    out = await _rotate_section(HandlerCalls(handler), sec, 2, config, STYLE)
    assert handler.calls == len(oversized)
    assert len(out.body) == len(sec.body)
    for index, (old, new) in enumerate(zip(sec.body, out.body, strict=True)):
        if index in oversized:
            assert new.type is BodyPairType.COMPLETION
            assert new.ai_message.text.startswith(SUMMARIZED_CONTENT_PREFIX)
        else:
            assert new is old
    # Each oversized pair got its own call, with only its own messages.
    for prompt in handler.prompts:
        assert sum(fill(sizes[i], "abcdefgh"[i]) in prompt for i in range(len(sizes))) == 1


@pytest.mark.anyio
async def test_rotate_section_skips_an_oversized_summary() -> None:
    handler = FakeHandler()
    big_summary = BodyPair.completion(SUMMARIZED_CONTENT_PREFIX + fill(800))
    sec = make_section(5, big_summary, completion_pair(20))
    out = await _rotate_section(HandlerCalls(handler), sec, 0, rotation_config(), STYLE)
    assert out is sec
    assert handler.calls == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("last_section_bytes", "folded"),
    [
        pytest.param(1005, False, id="section-at-budget"),
        pytest.param(1004, True, id="section-one-byte-over"),
    ],
)
async def test_rotate_section_folds_only_over_budget(last_section_bytes: int, folded: bool) -> None:
    handler = FakeHandler()
    sec = sized_section(5, 400, 400, 200)
    config = rotation_config(last_section_bytes=last_section_bytes, reserve_percent=0)
    out = await _rotate_section(HandlerCalls(handler), sec, 0, config, STYLE)
    if folded:
        # 1004 bytes, no reserve: 5 + 200 + 400 fit, the oldest 400 are folded.
        assert handler.calls == 1
        assert out.body[1:] == sec.body[1:]
        assert out.body[0].ai_message.text == SUMMARIZED_CONTENT_PREFIX + label(handler.prompts[0])
    else:
        assert handler.calls == 0
        assert out is sec


@pytest.mark.anyio
async def test_rotate_section_keeps_reasoning_in_front_of_the_fake_signature() -> None:
    handler = FakeHandler()
    sec = make_section(
        5,
        pair(request("c1", 300, text="a", text_reasoning="first thought", reasoning="r1")),
        pair(request("c2", 300, text="b", text_reasoning="second thought", reasoning="r2")),
        completion_pair(20),
    )
    config = rotation_config(last_section_bytes=400, max_body_pair_bytes=10_000)
    out = await _rotate_section(HandlerCalls(handler), sec, 0, config, STYLE)
    summary = out.body[0]
    assert out.body[1:] == sec.body[2:]
    reasoning_part, _ = summary.ai_message.parts
    call = summary_call(summary)
    assert reasoning_part == sec.body[0].ai_message.parts[0]
    assert call.name == SUMMARIZATION_TOOL_NAME
    assert call.reasoning is not None
    assert call.reasoning.signature == FAKE_GEMINI_SIGNATURE.encode()
    assert call.reasoning.content == ""


@pytest.mark.anyio
async def test_summarize_qa_leaves_a_chain_within_limits_alone() -> None:
    handler = FakeHandler()
    ast = qa_chain(10, 10, 10)
    config = SummarizerConfig(use_qa=True, max_qa_sections=3, max_qa_bytes=30)
    assert await _summarize_qa(HandlerCalls(handler), ast, config, STYLE) is ast
    assert handler.calls == 0


@pytest.mark.anyio
async def test_summarize_qa_does_not_refold_a_lone_summary_section() -> None:
    handler = FakeHandler()
    summary = Section(Header(human_message=Message.human("q")), (SUMMARY_COMPLETION,))
    rest = qa_chain(10, 10).sections
    ast = ChainAST((summary, *rest))
    config = SummarizerConfig(use_qa=True, max_qa_sections=2, keep_qa_sections=2)
    assert await _summarize_qa(HandlerCalls(handler), ast, config, STYLE) is ast
    assert handler.calls == 0


# -- HandlerCalls and gather ---------------------------------------------------------------


@pytest.mark.anyio
async def test_handler_calls_books_and_progress() -> None:
    seen: list[tuple[int, int]] = []
    calls = HandlerCalls(FakeHandler(answer=lambda _p: "ünï"), on_call=lambda *a: seen.append(a))
    human = [Message.human("q")]
    first = await calls.summarize(human, [Message.ai("a")], phase="p", section=0)
    await calls.summarize([], [Message.ai("b")], phase="p", section=1)
    assert first == "ünï"
    assert calls.calls == 2
    assert calls.output_bytes == 2 * len("ünï".encode())
    assert seen[0][0] == 1
    assert seen[1] == (2, calls.input_bytes)
    assert seen[0][1] < seen[1][1]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "result",
    [
        pytest.param(None, id="none"),
        pytest.param(b"bytes summary", id="bytes"),
        pytest.param(42, id="int"),
        pytest.param(["a"], id="list"),
    ],
)
async def test_handler_calls_rejects_non_str_results(result: object) -> None:
    calls = HandlerCalls(FakeHandler(answer=lambda _p: result))
    with pytest.raises(SummarizationError, match=type(result).__name__) as caught:
        await calls.summarize([], [Message.ai("a")], phase="section summary", section=4)
    assert caught.value.section == 4
    assert caught.value.phase == "section summary"
    assert "section summary, section 4" in str(caught.value)


@pytest.mark.anyio
async def test_handler_calls_chains_the_handler_exception() -> None:
    error = ConnectionError("provider down")
    calls = HandlerCalls(FakeHandler(fail=lambda _p: error))
    with pytest.raises(SummarizationError, match="provider down") as caught:
        await calls.summarize([], [Message.ai("a")], phase="QA summary", section=0)
    assert caught.value.__cause__ is error


def sleeper(value: int, seconds: float) -> Callable[[], Awaitable[int]]:
    async def job() -> int:
        await anyio.sleep(seconds)
        return value

    return job


@pytest.mark.anyio
async def test_gather_places_results_by_index() -> None:
    # The first job finishes last.
    jobs = [sleeper(i, 0.005 * (5 - i)) for i in range(5)]
    assert await gather(jobs) == [0, 1, 2, 3, 4]


@pytest.mark.anyio
async def test_gather_single_job() -> None:
    assert await gather([sleeper(7, 0)]) == [7]


@pytest.mark.anyio
async def test_gather_cancels_the_rest_on_failure() -> None:
    handler = FakeHandler(
        delay=lambda p: 0 if "boom" in p else 60,
        fail=lambda p: KeyError("boom") if "boom" in p else None,
    )
    calls = HandlerCalls(handler)

    def job(text: str) -> Callable[[], Awaitable[str]]:
        return lambda: calls.summarize([], [Message.ai(text)], phase="p", section=0)

    with anyio.fail_after(5), pytest.raises(SummarizationError) as caught:
        await gather([job("slow 1"), job("boom"), job("slow 2")])
    assert isinstance(caught.value.__cause__, KeyError)
    assert handler.cancelled == 2
    assert handler.in_flight == 0


@pytest.mark.anyio
async def test_gather_chains_every_failure() -> None:
    errors = {f"job {i}": ValueError(f"job {i}") for i in range(3)}

    def failing(text: str) -> Callable[[], Awaitable[str]]:
        async def job() -> str:
            raise SummarizationError(text) from errors[text]

        return job

    with pytest.raises(SummarizationError) as caught:
        await gather([failing(text) for text in errors])
    cause = caught.value.__cause__
    # A failure cancels the jobs not started yet, so one or several may have failed.
    if isinstance(cause, ExceptionGroup):
        assert len(cause.exceptions) >= 2
        assert all(exc in errors.values() for exc in cause.exceptions)
    else:
        assert cause in errors.values()


@pytest.mark.anyio
async def test_qa_keeps_late_system_messages_in_their_place() -> None:
    """A repaired chain whose later section opens with a system message (OpenAI and
    Anthropic accept instructions mid-chain): folding that section keeps the message
    verbatim after the summary, before the kept question, never in the system prompt
    ahead of the user's task (issue 40)."""
    from csum import Summarizer

    chain = [
        Message.system("be brief"),
        Message.human("q1"),
        Message.ai("a1 " * 200),
        Message.system("answer in French from now on"),
        Message.human("q2"),
        Message.ai("a2 " * 200),
        Message.human("q3"),
        Message.ai("a3"),
    ]
    config = SummarizerConfig(use_qa=True, max_qa_sections=2, keep_qa_sections=1)
    out = await Summarizer(config).summarize_chain(FakeHandler(), chain)
    assert out[0] == chain[0]
    assert [m for m in out if m.role is Role.SYSTEM] == [chain[0], chain[3]]
    assert out[1].role is Role.HUMAN
    assert out[1].text.startswith("q1")
    assert out[-3:] == [chain[3], *chain[-2:]]
