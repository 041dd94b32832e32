"""Summarizer end to end: the seed algorithm's scenarios, phase by phase and combined,
with exact byte boundaries, reasoning preservation, QA headers, idempotence,
concurrency, determinism and the tau-bench corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from cast import (
    FAKE_GEMINI_SIGNATURE,
    SUMMARIZATION_TOOL_NAME,
    BodyPair,
    BodyPairType,
    ChainError,
    IdTemplate,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
)
from corpus_openai import load_openai_chain
from csum import (
    SUMMARIZED_CONTENT_PREFIX,
    Summarizer,
    SummarizerConfig,
    SummaryResult,
    messages_to_prompt,
)
from csum_builders import (
    FakeHandler,
    check_output,
    completion,
    dump,
    label,
    parallel,
    parse,
    random_delays,
    request,
    section,
    sections_chain,
    shape,
    summary_call,
    summary_text,
)
from tests.conftest import TAUBENCH, corpus_files

TAUBENCH_FILES = corpus_files(TAUBENCH)


async def run(
    messages: list[Message] | list[dict[str, Any]],
    handler: FakeHandler | None = None,
    *,
    max_concurrency: int | None = None,
    max_summary_bytes: int | None = None,
    **config: Any,
) -> SummaryResult:
    summarizer = Summarizer(
        SummarizerConfig(**config),
        max_concurrency=max_concurrency,
        max_summary_bytes=max_summary_bytes,
    )
    return await summarizer.summarize(handler or FakeHandler(), messages)


def big_config(**changes: Any) -> dict[str, Any]:
    """Budgets no test chain reaches, so only the phase under test acts."""
    return {"last_section_bytes": 10**6, "max_body_pair_bytes": 10**6, **changes}


# -- chains that need nothing --------------------------------------------------------------


ALREADY_SUMMARIZED = [
    Message.system("sys"),
    Message.human("q0"),
    Message.ai(SUMMARIZED_CONTENT_PREFIX + "old work"),
    Message.human("q1"),
    *BodyPair.summarization("s" * 120, seed="old").messages(),
    Message.human("q2"),
    *completion(30),
    *request("c2", 40),
]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("messages", "config"),
    [
        pytest.param([], {}, id="empty"),
        pytest.param([Message.human("hi")], {}, id="only-a-question"),
        pytest.param(section("q", completion(10), request("c1", 50), system="s"), {}, id="one"),
        pytest.param(
            section("q", *[completion(100)] * 9), {"last_section_bytes": 901}, id="one-at-budget"
        ),
        pytest.param(ALREADY_SUMMARIZED, {}, id="old-sections-summarized"),
        pytest.param(
            ALREADY_SUMMARIZED,
            {"use_qa": True, "max_qa_sections": 3, "max_qa_bytes": 10**4},
            id="qa-at-limits",
        ),
        pytest.param(sections_chain(4), {"keep_qa_sections": 4}, id="all-sections-kept"),
        pytest.param(sections_chain(3), {"keep_qa_sections": 9}, id="keep-more-than-all"),
    ],
)
async def test_chain_within_limits_comes_back_equal_without_calls(
    messages: list[Message], config: dict[str, Any]
) -> None:
    handler = FakeHandler()
    result = await run(messages, handler, **config)
    assert result.messages == messages
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert handler.calls == 0
    assert result.handler_calls == 0
    assert result.size_before == result.size_after
    assert not result.changed


# -- phase 1: section summarization ------------------------------------------------------


@pytest.mark.anyio
async def test_every_section_but_the_last_is_summarized_on_its_own() -> None:
    messages = sections_chain(4)
    handler = FakeHandler()
    result = await run(messages, handler)
    assert shape(result.messages) == [("S", "H", "C"), ("H", "C"), ("H", "C"), ("H", "c", "c")]
    sections = parse(messages).sections
    expected_prompts = [
        messages_to_prompt(s.header.messages()[-1:], [m for p in s.body for m in p.messages()])
        for s in sections[:3]
    ]
    assert sorted(handler.prompts) == sorted(expected_prompts)
    out = parse(result.messages).sections
    for old, new, prompt in zip(sections, out, expected_prompts, strict=False):
        # Each summary lands in the section it summarizes, whatever the call order.
        assert new.header == old.header
        assert new.header.human_message is old.header.human_message
        assert new.body[0].ai_message.text == SUMMARIZED_CONTENT_PREFIX + label(prompt)
    assert out[3] == sections[3]
    assert result.messages[-2:] == messages[-2:]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("pairs", "letter"),
    [
        pytest.param([completion(5), completion(6)], "C", id="completions"),
        pytest.param([completion(5), request("c1", 40)], "R", id="with-request"),
        pytest.param([request("c1", 40), request("c2", 40)], "R", id="requests"),
        pytest.param([parallel(["c1", "c2", "c3"], 10)], "R", id="parallel-calls"),
        pytest.param([request("c1", 40)], "R", id="single-request"),
        pytest.param([completion(5)], "C", id="single-completion"),
        pytest.param(
            [[Message.ai(SUMMARIZED_CONTENT_PREFIX + "x")], completion(6)],
            "C",
            id="summary-and-more",
        ),
        pytest.param(
            [request("c0", 120, name=SUMMARIZATION_TOOL_NAME), completion(6)],
            "R",
            id="summarization-and-more",
        ),
    ],
)
async def test_section_summary_type(pairs: list[list[Message]], letter: str) -> None:
    messages = section("old question", *pairs) + section("new question", completion(5))
    handler = FakeHandler()
    result = await run(messages, handler)
    assert shape(result.messages) == [("H", letter), ("H", "c")]
    assert handler.calls == 1
    summary = parse(result.messages).sections[0].body[0]
    assert summary_text(summary).endswith(label(handler.prompts[0]))
    if letter == "R":
        (call,) = summary.tool_calls
        assert call.name == SUMMARIZATION_TOOL_NAME
        assert IdTemplate("call_{r:24:x}").matches(call.id)
        assert summary.tool_messages[0].tool_results[0].tool_call_id == call.id


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        pytest.param(1, [("S", "H", "C"), ("H", "C"), ("H", "C"), ("H", "c", "c")], id="1"),
        pytest.param(2, [("S", "H", "C"), ("H", "C"), ("H", "c", "c"), ("H", "c", "c")], id="2"),
        pytest.param(3, [("S", "H", "C"), *[("H", "c", "c")] * 3], id="3"),
    ],
)
async def test_keep_qa_sections_keeps_the_newest_sections(
    keep: int, expected: list[tuple[str, ...]]
) -> None:
    handler = FakeHandler()
    result = await run(sections_chain(4), handler, keep_qa_sections=keep)
    assert shape(result.messages) == expected
    assert handler.calls == 4 - keep


@pytest.mark.anyio
async def test_section_ending_in_a_question_summarizes_the_previous_one() -> None:
    # The last section has no body yet: the one before is not kept (keep_qa_sections=1).
    messages = [*sections_chain(2), Message.human("next?")]
    result = await run(messages)
    assert shape(result.messages) == [("S", "H", "C"), ("H", "C"), ("H",)]
    assert result.messages[-1] is messages[-1]


# -- phase 2: last-section rotation ------------------------------------------------------


def rotation_chain(*sizes: int, header: int = 10) -> list[Message]:
    letters = "abcdefgh"
    return section("h" * header, *(completion(s, letters[i]) for i, s in enumerate(sizes)))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("sizes", "config", "expected"),
    [
        # 1000 bytes less the 25% reserve = 750 = header 10 + 440 + 300: kept exactly.
        pytest.param((400, 440, 300), {}, ("H", "C", "c", "c"), id="pair-fits-exactly"),
        pytest.param((400, 441, 300), {}, ("H", "C", "c"), id="one-byte-more"),
        pytest.param((400, 439, 300), {}, ("H", "C", "c", "c"), id="one-byte-less"),
        pytest.param(
            (400, 490, 500), {"reserve_percent": 0}, ("H", "C", "c", "c"), id="no-reserve-exact"
        ),
        pytest.param(
            (400, 491, 500), {"reserve_percent": 0}, ("H", "C", "c"), id="no-reserve-over"
        ),
        pytest.param(
            (200, 200, 200, 200, 200), {"reserve_percent": 50}, ("H", "C", "c", "c"), id="half"
        ),
        # Section at its budget: no rotation at all; one byte over: rotation.
        pytest.param((490, 500), {}, ("H", "c", "c"), id="section-at-budget"),
        pytest.param((491, 500), {}, ("H", "C", "c"), id="section-one-byte-over"),
        pytest.param((100, 5000), {}, ("H", "C", "c"), id="huge-last-pair"),
        pytest.param((5000,), {}, ("H", "c"), id="single-huge-pair"),
        pytest.param((400, 441, 300), {"preserve_last": False}, ("H", "c", "c", "c"), id="off"),
    ],
)
async def test_last_section_rotation_boundaries(
    sizes: tuple[int, ...], config: dict[str, Any], expected: tuple[str, ...]
) -> None:
    messages = rotation_chain(*sizes)
    handler = FakeHandler()
    result = await run(messages, handler, last_section_bytes=1000, **config)
    assert shape(result.messages) == [expected]
    assert handler.calls == (1 if "C" in expected else 0)
    kept = len(expected) - 1 - ("C" in expected)
    # The kept pairs are the newest ones, the very same messages.
    assert all(a is b for a, b in zip(result.messages[-kept:], messages[-kept:], strict=True))
    if handler.calls:
        folded = messages[1 : len(messages) - kept]
        assert handler.prompts == [messages_to_prompt([messages[0]], folded)]


@pytest.mark.anyio
async def test_rotation_summary_type_follows_the_folded_pairs() -> None:
    messages = section("h", request("c1", 400), completion(400), request("c2", 300))
    result = await run(messages, last_section_bytes=1000)
    assert shape(result.messages) == [("H", "R", "c", "r")]
    messages = section("h", completion(400), completion(400), request("c2", 300))
    result = await run(messages, last_section_bytes=1000)
    assert shape(result.messages) == [("H", "C", "c", "r")]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        pytest.param((300, 300, 20), ("H", "c", "c", "c"), id="at-limit"),
        pytest.param((301, 300, 20), ("H", "C", "c", "c"), id="one-byte-over"),
        pytest.param((301, 10, 301, 20), ("H", "C", "c", "C", "c"), id="two"),
        pytest.param((10, 10, 90_000), ("H", "c", "c", "c"), id="huge-last-pair-untouched"),
        pytest.param((301, 90_000), ("H", "C", "c"), id="oversized-and-huge-last"),
    ],
)
async def test_oversized_pairs_are_summarized_alone(
    sizes: tuple[int, ...], expected: tuple[str, ...]
) -> None:
    messages = rotation_chain(*sizes)
    handler = FakeHandler()
    result = await run(messages, handler, max_body_pair_bytes=300, last_section_bytes=10**6)
    assert shape(result.messages) == [expected]
    oversized = [s for s in sizes[:-1] if s > 300]
    assert handler.calls == len(oversized)
    assert result.messages[-1] is messages[-1]


@pytest.mark.anyio
async def test_oversized_pairs_are_summarized_concurrently() -> None:
    messages = rotation_chain(400, 400, 400, 400, 10)
    handler = FakeHandler(delay=lambda _p: 0.2)  # long enough for all to start
    result = await run(messages, handler, max_body_pair_bytes=300, last_section_bytes=10**6)
    assert handler.calls == 4
    assert handler.peak == 4
    assert shape(result.messages) == [("H", "C", "C", "C", "C", "c")]


@pytest.mark.anyio
async def test_oversized_pairs_first_then_fold() -> None:
    # After the two oversized pairs are summarized the section is still over budget:
    # the oldest pairs are folded, keeping what fits in 750 bytes with the header
    # (10 + 400 + 300 + the small summary of the second oversized pair).
    messages = rotation_chain(2000, 300, 2000, 300, 400)
    handler = FakeHandler()
    result = await run(messages, handler, max_body_pair_bytes=1000, last_section_bytes=1000)
    assert shape(result.messages) == [("H", "C", "C", "c", "c")]
    assert handler.calls == 3
    fold_prompt = handler.prompts[-1]
    # The fold summarizes the summary of the first oversized pair, not its content.
    assert "a" * 2000 not in fold_prompt
    assert "b" * 300 in fold_prompt
    assert "d" * 300 not in fold_prompt
    assert result.messages[-2:] == messages[-2:]


@pytest.mark.anyio
async def test_rotation_covers_each_of_the_last_sections() -> None:
    messages = rotation_chain(600, 700, 100) * 3
    handler = FakeHandler()
    result = await run(messages, handler, last_section_bytes=1000, keep_qa_sections=2)
    assert shape(result.messages) == [("H", "C"), ("H", "C", "c"), ("H", "C", "c")]
    assert handler.calls == 3


@pytest.mark.anyio
async def test_rotated_section_keeps_system_message_in_header_budget() -> None:
    # The header counts: with a 700-byte system message only the last pair fits.
    messages = section("q", completion(10), completion(10), completion(30), system="s" * 700)
    result = await run(messages, last_section_bytes=740)
    assert shape(result.messages) == [("S", "H", "C", "c")]
    assert result.messages[0] is messages[0]


# -- reasoning ------------------------------------------------------------------------------


def reasoning_pairs() -> list[list[Message]]:
    return [
        request("c1", 400, text="plan", reasoning="call thought 1"),
        request("c2", 400, text="act", text_reasoning="text thought 2", reasoning="call 2"),
        request("c3", 400, text="more", text_reasoning="text thought 3", reasoning="call 3"),
    ]


@pytest.mark.anyio
async def test_rotation_summary_keeps_reasoning_and_fake_signature() -> None:
    messages = section("q", *reasoning_pairs(), completion(20))
    result = await run(messages, last_section_bytes=500)
    summary, *kept = parse(result.messages).sections[0].body
    assert [p.type for p in kept] == [BodyPairType.COMPLETION]
    reasoning_part, _ = summary.ai_message.parts
    call = summary_call(summary)
    # The first text part with reasoning found, in chain order (pair c2's).
    assert reasoning_part is messages[3].parts[0]
    assert isinstance(reasoning_part, TextPart)
    assert reasoning_part.reasoning is not None
    assert reasoning_part.reasoning.content == "text thought 2"
    assert call.name == SUMMARIZATION_TOOL_NAME
    assert call.reasoning is not None
    assert call.reasoning.signature == FAKE_GEMINI_SIGNATURE.encode()


@pytest.mark.anyio
async def test_oversized_summary_keeps_reasoning_and_fake_signature() -> None:
    messages = section("q", *reasoning_pairs()[1:], completion(20))
    result = await run(messages, max_body_pair_bytes=300, last_section_bytes=10**6)
    first, second, last = parse(result.messages).sections[0].body
    for summary, source in ((first, messages[1]), (second, messages[3])):
        reasoning_part, _ = summary.ai_message.parts
        call = summary_call(summary)
        assert reasoning_part is source.parts[0]
        assert call.reasoning is not None
        assert call.reasoning.signature == FAKE_GEMINI_SIGNATURE.encode()
    assert last.ai_message is messages[-1]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "pairs",
    [
        pytest.param([request("c1", 400, text="x", text_reasoning="t")] * 2, id="text-reasoning"),
        pytest.param([request("c1", 400), request("c2", 400)], id="no-reasoning"),
    ],
)
async def test_no_fake_signature_without_tool_call_reasoning(pairs: list[list[Message]]) -> None:
    messages = section("q", *pairs, completion(20))
    result = await run(messages, last_section_bytes=600)
    summary = parse(result.messages).sections[0].body[0]
    assert len(summary.ai_message.parts) == 1
    assert summary_call(summary).reasoning is None


@pytest.mark.anyio
async def test_completion_summary_carries_no_reasoning() -> None:
    thoughtful = Message(
        role=Role.AI, parts=[TextPart(text="a" * 400, reasoning=Reasoning(content="deep"))]
    )
    messages = section("q", [thoughtful], completion(400), completion(20))
    result = await run(messages, last_section_bytes=600)
    summary = parse(result.messages).sections[0].body[0]
    assert summary.type is BodyPairType.COMPLETION
    assert summary.ai_message.parts == (TextPart(text=summary.ai_message.text),)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "config",
    [
        pytest.param(big_config(), id="section-summary"),
        pytest.param(big_config(use_qa=True, max_qa_sections=1), id="qa-summary"),
    ],
)
async def test_no_reasoning_kept_outside_the_last_sections(config: dict[str, Any]) -> None:
    messages = section("q", *reasoning_pairs(), system="s") + section("next", completion(5))
    result = await run(messages, **config)
    summary = parse(result.messages).sections[0].body[0]
    assert len(summary.ai_message.parts) == 1
    call = summary_call(summary)
    assert call.name == SUMMARIZATION_TOOL_NAME
    assert call.reasoning is None


# -- phase 3: QA ------------------------------------------------------------------------


def qa_chain(count: int = 6, *, system: str | None = "sys") -> list[Message]:
    out: list[Message] = []
    for index in range(count):
        pair = request(f"c{index}", 60) if index == 1 else completion(20, "abcdefgh"[index])
        out += section(f"question {index}", pair, system=system if index == 0 else None)
    return out


@pytest.mark.anyio
async def test_qa_folds_the_oldest_sections_concatenating_human_messages() -> None:
    messages = qa_chain(6)
    handler = FakeHandler()
    result = await run(messages, handler, use_qa=True, max_qa_sections=3)
    out = parse(result.messages).sections
    assert shape(result.messages) == [("S", "H", "R"), ("H", "C"), ("H", "c")]
    # 5 section summaries, then one QA summary.
    assert handler.calls == 6
    header = out[0].header
    assert header.system_message is messages[0]
    assert header.human_message is not None
    humans = [m for m in messages if m.role is Role.HUMAN]
    assert header.human_message.parts == tuple(p for m in humans[:4] for p in m.parts)
    assert summary_text(out[0].body[0]) == label(handler.prompts[-1])
    # Kept sections: the newest ones, unchanged, no system message.
    inputs = parse(messages).sections
    assert out[2] == inputs[5]
    assert out[1].header == inputs[4].header
    assert all(s.header.system_message is None for s in out[1:])
    # The QA prompt: folded human messages as context.
    for text in ("question 0", "question 3"):
        assert text in handler.prompts[-1]
    assert "question 4" not in handler.prompts[-1]


@pytest.mark.anyio
async def test_qa_with_human_summarization() -> None:
    messages = qa_chain(6)
    handler = FakeHandler()
    result = await run(
        messages, handler, use_qa=True, max_qa_sections=3, summarize_human_in_qa=True
    )
    out = parse(result.messages).sections
    assert handler.calls == 7
    humans = [m for m in messages if m.role is Role.HUMAN][:4]
    human_prompt = messages_to_prompt(humans, [])
    assert human_prompt in handler.prompts
    header = out[0].header
    assert header.system_message is messages[0]
    assert header.human_message is not None
    assert header.human_message.parts == (TextPart(text=label(human_prompt)),)
    assert len(out) == 3


@pytest.mark.anyio
async def test_qa_without_system_message() -> None:
    messages = qa_chain(5, system=None)
    result = await run(messages, use_qa=True, max_qa_sections=2)
    out = parse(result.messages).sections
    assert shape(result.messages) == [("H", "R"), ("H", "c")]
    assert out[0].header.system_message is None


@pytest.mark.anyio
async def test_qa_folds_only_completions_into_a_completion() -> None:
    messages = sections_chain(5)
    result = await run(messages, use_qa=True, max_qa_sections=2)
    assert shape(result.messages) == [("S", "H", "C"), ("H", "c", "c")]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param({"max_qa_sections": 6}, 6, id="count-at-limit"),
        pytest.param({"max_qa_sections": 5}, 5, id="count-over"),
        pytest.param({"max_qa_sections": 1}, 2, id="one-section-limit"),
        pytest.param({"max_qa_sections": 2, "keep_qa_sections": 3}, 4, id="keep-forced"),
        pytest.param({"use_qa": False, "max_qa_sections": 2}, 6, id="qa-off"),
    ],
)
async def test_qa_section_count(config: dict[str, Any], expected: int) -> None:
    result = await run(qa_chain(6), **{"use_qa": True, **config})
    assert len(parse(result.messages).sections) == expected


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("budget", "slack", "expected"),
    [
        pytest.param(
            "all", 0, [("S", "H", "C"), ("H", "R"), ("H", "C"), ("H", "c", "c")], id="at-limit"
        ),
        pytest.param("last-two", 0, [("S", "H", "R"), ("H", "C"), ("H", "c", "c")], id="two-fit"),
        pytest.param("last-two", -1, [("S", "H", "R"), ("H", "c", "c")], id="one-byte-short"),
    ],
)
async def test_qa_by_bytes_keeps_the_newest_sections_that_fit(
    budget: str, slack: int, expected: list[tuple[str, ...]]
) -> None:
    messages = qa_chain(3) + section("big", completion(1000), completion(1000))
    summarized = parse((await run(messages)).messages).sections
    sizes = {
        "all": sum(s.size for s in summarized),
        "last-two": sum(s.size for s in summarized[-2:]),
    }
    handler = FakeHandler()
    result = await run(
        messages, handler, use_qa=True, max_qa_bytes=sizes[budget] + slack, reserve_percent=0
    )
    assert shape(result.messages) == expected
    out = parse(result.messages).sections
    assert out[1:] == summarized[len(summarized) - len(out) + 1 :]
    assert handler.calls == 3 + (budget != "all")


# -- combined, idempotence, determinism -----------------------------------------------


def agent_chain() -> list[Message]:
    out = section(
        "find the bug",
        request("c1", 900, reasoning="think"),
        parallel(["c2", "c3"], 700),
        completion(300),
        system="you are an agent",
    )
    out += section("now fix it", request("c4", 2000), completion(200), request("c5", 300))
    out += section("and test it", request("c6", 5000), request("c7", 800), completion(100))
    out += section("ship it", parallel(["c8", "c9", "c10"], 900), request("c11", 400))
    return out


ALL_PHASES: dict[str, Any] = {
    "max_body_pair_bytes": 1000,
    "use_qa": True,
    "max_qa_sections": 3,
    "max_qa_bytes": 6000,
    "keep_qa_sections": 2,
    "last_section_bytes": 1000,
}


@pytest.mark.anyio
async def test_all_phases_combined() -> None:
    messages = agent_chain()
    handler = FakeHandler()
    result = await run(messages, handler, **ALL_PHASES)
    config = SummarizerConfig(**ALL_PHASES)
    check_output(messages, result.messages, config)
    # Sections 0-1 summarized, section 2 (oversized c6, then a fold), section 3 (fold),
    # then QA folds sections 0-1 into one.
    assert shape(result.messages) == [("S", "H", "R"), ("H", "R", "c"), ("H", "R", "r")]
    assert handler.calls == 6
    assert result.size_after < result.size_before
    assert result.messages[-2:] == messages[-2:]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("messages", "config"),
    [
        pytest.param(agent_chain(), ALL_PHASES, id="all-phases"),
        pytest.param(agent_chain(), {}, id="defaults"),
        pytest.param(agent_chain(), {"last_section_bytes": 500, "reserve_percent": 0}, id="tight"),
        pytest.param(
            agent_chain(),
            {**ALL_PHASES, "summarize_human_in_qa": True, "keep_qa_sections": 1},
            id="human-qa",
        ),
        pytest.param(qa_chain(8), {"use_qa": True, "max_qa_sections": 2}, id="qa-count"),
        pytest.param(
            rotation_chain(2000, 300, 2000, 300, 400),
            {"max_body_pair_bytes": 1000, "last_section_bytes": 1000},
            id="rotation",
        ),
        pytest.param(
            section("q", *reasoning_pairs(), completion(20)),
            {"last_section_bytes": 600},
            id="reasoning",
        ),
        pytest.param(
            section("q", *reasoning_pairs(), completion(20)),
            {"last_section_bytes": 10, "max_body_pair_bytes": 10},
            id="summaries-over-budget",
        ),
        pytest.param(
            section("q", *reasoning_pairs(), completion(20)),
            {"last_section_bytes": 10, "max_body_pair_bytes": 10, "max_summary_bytes": 5},
            id="summaries-over-budget-capped",
        ),
        pytest.param(agent_chain(), {**ALL_PHASES, "max_summary_bytes": 8}, id="all-phases-capped"),
    ],
)
async def test_summarizing_the_output_again_changes_nothing(
    messages: list[Message], config: dict[str, Any]
) -> None:
    first = await run(messages, **config)
    assert first.handler_calls > 0
    handler = FakeHandler()
    second = await run(first.messages, handler, **config)
    assert handler.calls == 0
    assert second.messages == first.messages
    assert all(a is b for a, b in zip(second.messages, first.messages, strict=True))


@pytest.mark.anyio
async def test_ids_are_deterministic() -> None:
    first = await run(agent_chain(), **ALL_PHASES)
    second = await run(agent_chain(), **ALL_PHASES)
    assert dump(first.messages) == dump(second.messages)
    ids = [c.id for m in first.messages for c in m.tool_calls if c.name == SUMMARIZATION_TOOL_NAME]
    assert len(ids) == 3
    assert len(set(ids)) == len(ids)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "template",
    [
        pytest.param("toolu_{r:24:b}", id="anthropic-string"),
        pytest.param(IdTemplate("{f}:{r:6:d}"), id="template-object"),
    ],
)
async def test_summary_ids_follow_the_template(template: str | IdTemplate) -> None:
    summarizer = Summarizer(SummarizerConfig(**ALL_PHASES))
    out = await summarizer.summarize_chain(FakeHandler(), agent_chain(), id_template=template)
    calls = [c for m in out for c in m.tool_calls if c.name == SUMMARIZATION_TOOL_NAME]
    assert calls
    assert all(IdTemplate(template).matches(c.id, SUMMARIZATION_TOOL_NAME) for c in calls)
    assert dump(out) == dump(
        await summarizer.summarize_chain(FakeHandler(), agent_chain(), id_template=template)
    )


@pytest.mark.anyio
async def test_output_does_not_depend_on_handler_timing() -> None:
    reference = await run(agent_chain(), **ALL_PHASES)
    for seed in range(3):
        handler = FakeHandler(delay=random_delays(seed))
        result = await run(agent_chain(), handler, **ALL_PHASES)
        assert dump(result.messages) == dump(reference.messages)


# -- concurrency ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("limit", "peak"),
    [
        pytest.param(None, 7, id="unbounded"),
        pytest.param(1, 1, id="one"),
        pytest.param(3, 3, id="three"),
        pytest.param(50, 7, id="over-the-work"),
    ],
)
async def test_max_concurrency_bounds_calls_in_flight(limit: int | None, peak: int) -> None:
    # 8 sections: the 7 old ones are summarized at once, unless bounded.
    handler = FakeHandler(delay=lambda _p: 0.2)  # long enough for all to start
    result = await run(sections_chain(8), handler, max_concurrency=limit)
    assert handler.calls == 7
    assert handler.peak == peak
    reference = await run(sections_chain(8))
    assert result.messages == reference.messages


@pytest.mark.anyio
async def test_sections_and_last_section_rotation_run_together() -> None:
    messages = sections_chain(3) + rotation_chain(400, 400, 100)
    handler = FakeHandler(delay=lambda _p: 0.2)  # long enough for all to start
    await run(messages, handler, max_body_pair_bytes=300)
    # 3 section summaries and 2 oversized pairs of the last section, all at once.
    assert handler.calls == 5
    assert handler.peak == 5


# -- inputs, outputs and the sync entry point -------------------------------------------


@pytest.mark.anyio
async def test_dict_input_is_accepted() -> None:
    messages = agent_chain()
    as_dicts = dump(messages)
    for item in as_dicts:
        item["role"] = {"human": "user", "ai": "assistant"}.get(item["role"], item["role"])
    result = await run(as_dicts, **ALL_PHASES)
    reference = await run(messages, **ALL_PHASES)
    assert result.messages == reference.messages
    assert all(isinstance(m, Message) for m in result.messages)


@pytest.mark.anyio
async def test_summary_result_books() -> None:
    messages = agent_chain()
    handler = FakeHandler()
    result = await run(messages, handler, **ALL_PHASES)
    assert result.size_before == parse(messages).size
    assert result.size_after == parse(result.messages).size
    assert result.handler_calls == handler.calls
    assert result.handler_input_bytes == sum(len(p.encode()) for p in handler.prompts)
    assert result.handler_output_bytes == sum(len(label(p)) for p in handler.prompts)
    assert result.repairs == ()
    assert result.changed
    assert result.seconds >= 0


@pytest.mark.anyio
async def test_progress_callback_is_told_after_each_call() -> None:
    seen: list[tuple[int, int]] = []
    summarizer = Summarizer(SummarizerConfig(**ALL_PHASES))
    result = await summarizer.summarize(
        FakeHandler(), agent_chain(), on_call=lambda n, size: seen.append((n, size))
    )
    assert [n for n, _ in seen] == list(range(1, result.handler_calls + 1))
    assert seen[-1][1] == result.handler_input_bytes


@pytest.mark.anyio
async def test_repaired_input_is_reported() -> None:
    # The AI's second call has no result: repair adds the fallback result, which stays
    # for a call in the middle of the chain.
    ai = Message.ai("", *request("c1", 50)[0].tool_calls, *request("c2", 50)[0].tool_calls)
    messages = [Message.human("q"), ai, Message.tool("c1", "t", "ok"), Message.ai("done")]
    result = await run(messages)
    assert result.handler_calls == 0
    assert result.changed
    assert [issue.rule for issue in result.repairs] == ["missing-tool-result"]
    assert len(result.messages) == 5
    parse(result.messages)


@pytest.mark.anyio
async def test_the_newest_turns_pending_call_is_left_pending() -> None:
    # At the end of the chain the same call is still pending (issue 27): no filler.
    ai = Message.ai("", *request("c1", 50)[0].tool_calls, *request("c2", 50)[0].tool_calls)
    messages = [Message.human("q"), ai, Message.tool("c1", "t", "ok")]
    result = await run(messages)
    assert [issue.rule for issue in result.repairs] == ["missing-tool-result"]
    assert result.messages == messages
    parse([*result.messages, Message.tool("c2", "t", "late")])


@pytest.mark.anyio
async def test_chain_not_opening_with_system_or_human_is_a_chain_error() -> None:
    handler = FakeHandler()
    with pytest.raises(ChainError):
        await run([Message.ai("hello"), Message.human("q")], handler)
    assert handler.calls == 0


@pytest.mark.anyio
async def test_a_parse_error_the_compactor_would_not_take_is_raised_as_it_is() -> None:
    # Only a chain the Compactor takes gets the pointer; another error is not its own cause.
    with pytest.raises(ChainError, match="message 0, field content") as caught:
        await run([{"role": "human", "content": 5}], FakeHandler())
    assert caught.value.__cause__ is not caught.value  # the parser's own cause is kept
    assert "csum.Compactor" not in str(caught.value)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_summarize_chain_sync(backend: str) -> None:
    summarizer = Summarizer(SummarizerConfig(**ALL_PHASES))
    out = summarizer.summarize_chain_sync(FakeHandler(), agent_chain(), backend=backend)
    reference = anyio.run(summarizer.summarize_chain, FakeHandler(), agent_chain())
    assert out == reference
    assert len(out) < len(agent_chain())


@pytest.mark.anyio
async def test_summarize_chain_sync_inside_a_running_loop() -> None:
    # A notebook cell, or a framework's sync hook inside an async app: the thread runs a
    # loop already, so the sync entry point runs its own in a worker thread.
    summarizer = Summarizer(SummarizerConfig(**ALL_PHASES))
    out = summarizer.summarize_chain_sync(FakeHandler(), agent_chain())
    assert out == await summarizer.summarize_chain(FakeHandler(), agent_chain())


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(0, id="zero"),
        pytest.param(-2, id="negative"),
        pytest.param(True, id="bool"),
        pytest.param(1.5, id="float"),
        pytest.param("4", id="string"),
    ],
)
def test_max_concurrency_must_be_a_positive_int(value: object) -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        Summarizer(max_concurrency=value)  # type: ignore[arg-type]


def test_summarizer_defaults_and_config_type() -> None:
    summarizer = Summarizer(max_concurrency=4)
    assert summarizer.config == SummarizerConfig()
    assert summarizer.max_concurrency == 4
    assert "max_concurrency=4" in repr(summarizer)
    with pytest.raises(TypeError, match="SummarizerConfig"):
        Summarizer({"last_section_bytes": 10})  # type: ignore[arg-type]


# -- the tau-bench corpus -------------------------------------------------------------------


CORPUS_CONFIGS = [
    pytest.param({"last_section_bytes": 4000, "max_body_pair_bytes": 1500}, id="rotation"),
    pytest.param(
        {
            "last_section_bytes": 3000,
            "max_body_pair_bytes": 800,
            "use_qa": True,
            "max_qa_sections": 3,
            "max_qa_bytes": 9000,
            "keep_qa_sections": 2,
            "reserve_percent": 10,
        },
        id="all-phases",
    ),
    pytest.param(
        {"use_qa": True, "max_qa_sections": 2, "summarize_human_in_qa": True}, id="qa-human"
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize("config", CORPUS_CONFIGS)
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.stem.removeprefix("taubench_gpt4o_airline_")) for p in TAUBENCH_FILES]
    or [pytest.param(None, id="corpus-missing", marks=pytest.mark.skip("no corpus"))],
)
async def test_taubench_chains_keep_the_invariants(path: Path, config: dict[str, Any]) -> None:
    messages = load_openai_chain(path)
    before = dump(messages)
    handler = FakeHandler()
    result = await run(messages, handler, **config)
    assert dump(messages) == before
    check_output(messages, result.messages, SummarizerConfig(**config))
    assert handler.calls > 0
    again = FakeHandler()
    second = await run(result.messages, again, **config)
    assert again.calls == 0
    assert second.messages == result.messages


@pytest.mark.anyio
async def test_summary_ids_stay_unique_when_the_handler_repeats_itself(anyio_backend: str) -> None:
    async def same_text(prompt: str) -> str:
        return "summary unavailable"

    def qa_section(index: int) -> list[Message]:
        call = f"c{index}"
        return [
            Message.human(f"q{index}"),
            Message.ai("", ToolCall(id=call, name="f")),
            Message.tool(call, "f", "r"),
            Message.ai("done"),
        ]

    chain = [Message.system("s")]
    for index in range(5):
        chain += qa_section(index)
    summarizer = Summarizer(SummarizerConfig(use_qa=True, max_qa_sections=4))
    first = await summarizer.summarize_chain(same_text, chain)
    second = await summarizer.summarize_chain(same_text, first + qa_section(5))
    ids = [call.id for message in second for call in message.tool_calls]
    assert len(ids) == len(set(ids))
    assert "c5" in ids  # ids that were already in the chain never change
