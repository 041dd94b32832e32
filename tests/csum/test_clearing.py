"""The clearing stage (csum.clearing): old tool results become placeholders, with no
handler call, in blocks with the keeper's hysteresis; the hybrid summarizes only what
clearing cannot bring to the target."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import csum.clearing
from cast import ChainAST, Message, Reasoning, Role, TextPart, ToolCall, ToolResult, lint, port
from csum import (
    Budget,
    Clearing,
    CompactionEvent,
    Compactor,
    HistoryArchive,
    RecallTool,
    StoreEventKind,
    Stores,
)
from csum.archive import archived_references
from csum.clearing import (
    CLEARED_PREFIX,
    GIST_BYTES,
    GIST_PREFIX,
    clear_tool_results,
    gist,
    is_cleared,
    placeholder,
)
from csum.config import DEFAULT_CLEAR_KEEP, DEFAULT_CLEARING, LOW_COST, SUMMARY_ONLY, Preset
from csum_builders import fill
from strategies import valid_chains

# The sizes these tests were written for are given explicitly, so they do not depend on
# the Compactor's defaults: ``SUMMARY_ONLY.budget(...)`` brings the chain to 60 % of the
# budget and gives summaries up to 1/32 of it, with the clearing each test names.


class Recorder:
    """A handler that records its prompts and answers a short summary."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        self.prompts.append(prompt)
        return f"summary {len(self.prompts)}"


def tool_turn(index: int, size: int, name: str = "bash") -> list[Message]:
    call_id = f"call_{index:04d}"
    return [
        Message.ai(f"step {index}", ToolCall(id=call_id, name=name, arguments='{"n": 1}')),
        Message.tool(call_id, name, output(index, size)),
    ]


def output(index: int, size: int) -> str:
    head = f"output {index:04d} "
    return head + fill(max(0, size - len(head)), "r")


def agent_chain(turns: int, size: int = 2000) -> list[Message]:
    chain = [Message.system("you are an agent"), Message.human("the task")]
    for index in range(turns):
        chain.extend(tool_turn(index, size))
    return chain


def results(messages: list[Message]) -> list[ToolResult]:
    return [r for m in messages for r in m.tool_results]


def cleared_as(name: str, call_id: str, content: str) -> str:
    """The placeholder (with its gist) that clearing writes for a result of ``content``."""
    return placeholder(name, call_id, len(content.encode()), None, gist(content))


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"keep": -1}, ValueError),
        ({"keep": 1.5}, TypeError),
        ({"keep": True}, TypeError),
        ({"trigger": 0}, ValueError),
        ({"trigger": 1.5}, ValueError),
        ({"trigger": "half"}, TypeError),
        ({"clear_at_least": -1}, ValueError),
        ({"clear_at_least": 2.0}, ValueError),
        ({"trigger": 5000}, ValueError),  # a share of the budget, never a size
        ({"trigger": None}, TypeError),
        ({"exclude_tools": "bash"}, TypeError),
        ({"exclude_tools": {1}}, TypeError),
        ({"clear_tool_inputs": 1}, TypeError),
        ({"clear_reasoning": "yes"}, TypeError),
    ],
)
def test_bad_options_are_refused_naming_the_field(kwargs: dict[str, object], error: type) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        Clearing(**kwargs)  # type: ignore[arg-type]


def test_exclude_tools_becomes_a_frozenset_and_the_options_are_frozen() -> None:
    options = Clearing(exclude_tools=["read"])  # type: ignore[arg-type]
    assert options.exclude_tools == frozenset({"read"})
    with pytest.raises(AttributeError):
        options.keep = 4  # type: ignore[misc]


def test_one_clearing_default() -> None:
    """One clearing default: ``Clearing()`` keeps the newest DEFAULT_CLEAR_KEEP tool uses,
    starting with the compaction; the Compactor's default is no clearing stage
    (``DEFAULT_CLEARING`` is None since issue 36), and ``LOW_COST`` is ``Clearing()``."""
    assert DEFAULT_CLEARING is None
    assert Clearing().keep == DEFAULT_CLEAR_KEEP == 10
    assert Compactor(budget=1000).clearing is None
    assert LOW_COST.clearing == Clearing()
    keeper = Compactor(budget=Budget(1000, trigger=0.9), clearing=Clearing(trigger=0.5))
    assert keeper._start == 500
    assert Compactor(budget=Budget(1000, trigger=0.9))._start == 900


def test_compactor_refuses_a_bad_clearing() -> None:
    with pytest.raises(TypeError, match="clearing"):
        Compactor(budget=1000, clearing=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pin"):
        Compactor(budget=1000, pin="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keep_user_messages"):
        Compactor(budget=1000, keep_user_messages=1)  # type: ignore[arg-type]


# -- placeholders --------------------------------------------------------------------------


def test_placeholder_names_tool_call_size_and_reference_on_one_line() -> None:
    text = placeholder("bash\n]", 'id"1', 48213, "3f9c0a1b2c3d4e5f")
    assert "\n" not in text
    assert text == (
        '[cleared tool result: "bash\\n]" call "id\\"1", 48213 bytes] [archived: 3f9c0a1b2c3d4e5f]'
    )
    assert is_cleared(ToolResult(tool_call_id='id"1', name="bash\n]", content=text))


def test_a_forged_placeholder_is_read_as_one_only_for_its_own_call_and_whole() -> None:
    text = placeholder("bash", "call_1", 99999)
    assert is_cleared(ToolResult(tool_call_id="call_1", name="bash", content=text))
    # Another call's placeholder, or one followed by more content, is ordinary output.
    assert not is_cleared(ToolResult(tool_call_id="call_2", name="bash", content=text))
    assert not is_cleared(ToolResult(tool_call_id="call_1", name="bash", content=text + "x"))
    assert not is_cleared(ToolResult(tool_call_id="call_1", name="read", content=text))


def test_output_that_starts_like_a_placeholder_is_still_cleared() -> None:
    forged = placeholder("bash", "call_0000", 10) + "\n" + fill(3000)
    chain = [
        Message.human("q"),
        Message.ai("", ToolCall(id="call_0000", name="bash")),
        Message.tool("call_0000", "bash", forged),
        *tool_turn(1, 10),
    ]
    done = clear_tool_results(chain, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    assert done.results_cleared == 1
    assert results(done.messages)[0].content == cleared_as("bash", "call_0000", forged)


def test_results_smaller_than_their_placeholder_are_not_cleared() -> None:
    chain = [Message.human("q"), *tool_turn(0, 20), *tool_turn(1, 3000), *tool_turn(2, 5)]
    done = clear_tool_results(chain, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    contents = [r.content for r in results(done.messages)]
    assert contents[0] == output(0, 20)
    assert contents[1].startswith(CLEARED_PREFIX)
    assert done.results_cleared == 1


_WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa")


def build_log(error_at: int, lines: int = 300) -> str:
    """A long build log: a command line, routine lines, one error naming a file."""
    body = [
        f"compiling {_WORDS[i % 7]} {_WORDS[(i * 3) % 7]} {_WORDS[(i * 5) % 7]}"
        for i in range(lines)
    ]
    body[error_at] = "ERROR src/cache/store.py:88: KeyError: 'session_ttl'"
    return "$ make test\n" + "\n".join(body)


def test_a_placeholder_keeps_a_bounded_gist_of_the_result() -> None:
    log = build_log(error_at=170)
    chain = [Message.human("q"), *tool_turn(0, 10), *tool_turn(1, 10)]
    chain[2] = Message.tool("call_0000", "bash", log)
    done = clear_tool_results(chain, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    [first] = results(done.messages)[:1]
    assert is_cleared(first)
    head, line = first.content.split("\n")
    assert head == placeholder("bash", "call_0000", len(log))
    assert line.startswith(GIST_PREFIX)
    # The first line (what the output is) and the error line, out of 300 routine ones.
    assert "$ make test" in line
    assert "src/cache/store.py:88: KeyError" in line
    assert len(line) - len(GIST_PREFIX) <= GIST_BYTES
    # Byte-stable and idempotent: the same result, the same placeholder; a second pass
    # changes nothing.
    again = clear_tool_results(chain, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    assert again.messages == done.messages
    twice = clear_tool_results(done.messages, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    assert not twice.changed


def test_a_result_whose_placeholder_and_gist_would_not_be_smaller_stays_whole() -> None:
    small = "pytest: 3 failed in tests/test_io.py:12\nOSError: disk full at /var/tmp/x"
    chain = [Message.human("q"), *tool_turn(0, 10), *tool_turn(1, 3000), *tool_turn(2, 10)]
    chain[2] = Message.tool("call_0000", "bash", small)
    done = clear_tool_results(chain, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    contents = [r.content for r in results(done.messages)]
    assert contents[0] == small
    assert is_cleared(results(done.messages)[1])
    assert done.results_cleared == 1


@given(st.text(max_size=3000), st.text(min_size=1, max_size=20))
def test_a_gist_is_one_bounded_line_the_same_for_the_same_text(text: str, call_id: str) -> None:
    summary = gist(text)
    assert "\n" not in summary
    assert len(summary.encode("utf-8", "surrogatepass")) <= GIST_BYTES
    assert gist(text) == summary
    content = placeholder("bash", call_id, 99_999, None, summary)
    assert is_cleared(ToolResult(tool_call_id=call_id, name="bash", content=content))


def test_a_placeholder_refuses_a_gist_of_two_lines_or_too_long() -> None:
    with pytest.raises(ValueError, match="gist"):
        placeholder("bash", "c", 100, None, "a\nb")
    with pytest.raises(ValueError, match="gist"):
        placeholder("bash", "c", 100, None, "x" * (GIST_BYTES + 1))


@pytest.mark.anyio
async def test_without_an_archive_a_fact_of_a_cleared_result_stays_in_the_chain() -> None:
    keeper = Compactor(Recorder(), budget=SUMMARY_ONLY.budget(30_000), clearing=Clearing(keep=3))
    chain = agent_chain(16)
    chain[3] = Message.tool("call_0000", "bash", build_log(error_at=40, lines=100))
    result = await keeper.run(chain)
    assert is_cleared(results(result.messages)[0])
    assert result.handler_calls == 0
    text = "\n".join(r.content for r in results(result.messages))
    assert "ERROR src/cache/store.py:88: KeyError: 'session_ttl'" in text


# -- the stage in the Compactor ------------------------------------------------------------


@pytest.mark.anyio
async def test_clearing_alone_reaches_the_target_without_a_handler_call() -> None:
    handler = Recorder()
    events: list[CompactionEvent] = []
    keeper = Compactor(
        handler,
        budget=SUMMARY_ONLY.budget(30_000),
        clearing=Clearing(keep=3),
        on_event=events.append,
    )
    chain = agent_chain(16)
    before = list(chain)
    result = await keeper.run(chain)
    assert chain == before
    assert handler.prompts == []
    assert result.handler_calls == 0
    assert result.size_after <= keeper.keep_units
    assert result.cleared_results > 0
    assert result.cleared_units == result.size_before - result.size_after
    assert not result.summary_needed
    [event] = events
    assert event.cleared_results == result.cleared_results
    assert event.cleared_units == result.cleared_units
    assert not event.summary_needed
    # Oldest first, and only as many as the target needs: the newest stay whole.
    contents = [r.content for r in results(result.messages)]
    cleared = [c.startswith(CLEARED_PREFIX) for c in contents]
    assert cleared == sorted(cleared, reverse=True)
    assert not all(cleared)
    assert contents[0] == cleared_as("bash", "call_0000", output(0, 2000))
    assert contents[-1] == output(15, 2000)
    ChainAST.from_messages(result.messages)


@pytest.mark.anyio
async def test_the_hybrid_summarizes_placeholders_not_the_bulk_output() -> None:
    handler = Recorder()
    keeper = Compactor(handler, budget=SUMMARY_ONLY.budget(12_000), clearing=Clearing(keep=3))
    chain = agent_chain(12, 3000)
    result = await keeper.run(chain)
    assert result.summary_needed
    assert result.cleared_results == 9
    assert len(handler.prompts) == 1
    prompt = handler.prompts[0]
    # The cleared results reach the handler as placeholders, not as their output.
    for index in range(9):
        assert cleared_as("bash", f"call_{index:04d}", output(index, 3000)) in prompt
        assert output(index, 3000) not in prompt
    assert result.size_after <= keeper.budget.limit
    ChainAST.from_messages(result.messages)
    # The newest tool use stays whole.
    assert results(result.messages)[-1].content == output(11, 3000)


@pytest.mark.anyio
async def test_the_newest_results_a_summary_evicts_reach_the_handler_cleared() -> None:
    handler = Recorder()
    keeper = Compactor(
        handler, budget=Budget.bytes(12_000, keep_ratio=0.2), clearing=Clearing(keep=3)
    )
    chain = agent_chain(12, 3000)
    result = await keeper.run(chain)
    assert result.summary_needed
    [prompt] = handler.prompts
    # Tool uses 9 and 10 are among the newest 3 (never cleared in the chain), but the
    # summary evicts them: the handler reads their placeholders, not their bulk.
    for index in (9, 10):
        assert output(index, 3000) not in prompt
        assert cleared_as("bash", f"call_{index:04d}", output(index, 3000)) in prompt
    assert results(result.messages)[-1].content == output(11, 3000)
    ChainAST.from_messages(result.messages)


@pytest.mark.anyio
async def test_evicted_long_arguments_reach_the_handler_as_their_gist() -> None:
    handler = Recorder()
    keeper = Compactor(
        handler, budget=Budget.bytes(12_000, keep_ratio=0.2), clearing=Clearing(keep=3)
    )
    chain = agent_chain(12, 2000)
    body = "def main() -> None:\n" + "    pass\n" * 300
    arguments = json.dumps({"file_path": "src/app/main.py", "content": body})
    chain[2] = Message.ai("write it", ToolCall(id="call_0000", name="Write", arguments=arguments))
    chain[3] = Message.tool("call_0000", "Write", "written")
    before = list(chain)
    result = await keeper.run(chain)
    assert chain == before
    [prompt] = handler.prompts
    assert json.dumps(body)[1:-1] not in prompt
    # Short values whole (the path), the long text as its size and gist, still JSON.
    assert "src/app/main.py" in prompt
    assert f"[{len(json.dumps(body))} bytes] def main() -> None:" in prompt
    ChainAST.from_messages(result.messages)


@pytest.mark.anyio
async def test_without_clearing_the_handler_sees_the_bulk_output() -> None:
    handler = Recorder()
    keeper = Compactor(handler, budget=SUMMARY_ONLY.budget(12_000), clearing=SUMMARY_ONLY.clearing)
    result = await keeper.run(agent_chain(12, 3000))
    assert result.cleared_results == 0
    assert output(0, 3000) in handler.prompts[0]


@pytest.mark.anyio
async def test_within_budget_returns_the_input_unchanged() -> None:
    keeper = Compactor(budget=SUMMARY_ONLY.budget(1_000_000), clearing=Clearing(keep=0))
    chain = agent_chain(5)
    result = await keeper.run(chain)
    assert not result.compacted
    assert result.messages == chain
    assert all(a is b for a, b in zip(result.messages, chain, strict=True))


@pytest.mark.anyio
async def test_turns_without_a_compaction_send_the_previous_payload_unchanged() -> None:
    """The prefix is byte-stable between compactions: clearing runs in blocks."""
    handler = Recorder()
    events: list[CompactionEvent] = []
    keeper = Compactor(
        handler,
        budget=SUMMARY_ONLY.budget(40_000),
        clearing=Clearing(keep=2),
        on_event=events.append,
    )
    history = [Message.system("s"), Message.human("task")]
    previous: list[dict[str, object]] | None = None
    for index in range(120):
        history = [*history, *tool_turn(index, 1500 + 37 * (index % 7))]
        count = len(events)
        result = await keeper.run(history)
        sent = [m.model_dump(mode="json") for m in result.messages]
        if previous is not None and len(events) == count:
            assert sent[: len(previous)] == previous
        assert result.size_after <= keeper.budget.limit
        previous = sent
        history = result.messages
    assert len(events) >= 3
    assert any(e.summary_needed is False and e.cleared_results for e in events)


@pytest.mark.anyio
async def test_a_lower_clearing_trigger_clears_before_summaries_are_due() -> None:
    handler = Recorder()
    keeper = Compactor(handler, budget=SUMMARY_ONLY.budget(40_000), clearing=Clearing(trigger=0.5))
    result = await keeper.run(agent_chain(12))  # ~24 KB: over 50 %, under the budget
    assert result.cleared_results > 0
    assert handler.prompts == []


@pytest.mark.anyio
async def test_clear_at_least_skips_a_small_clearing_only_pass() -> None:
    handler = Recorder()
    options = Clearing(trigger=0.5, clear_at_least=0.5)
    keeper = Compactor(handler, budget=SUMMARY_ONLY.budget(40_000), clearing=options)
    chain = agent_chain(12)
    result = await keeper.run(chain)
    assert not result.compacted  # clearing would free < 20 KB: nothing changes
    assert result.messages == chain
    assert handler.prompts == []


@pytest.mark.anyio
async def test_excluded_tools_are_never_cleared() -> None:
    chain = [Message.system("s"), Message.human("t")]
    for index in range(12):
        chain.extend(tool_turn(index, 2000, "read" if index % 2 else "bash"))
    keeper = Compactor(
        budget=SUMMARY_ONLY.budget(20_000), clearing=Clearing(keep=1, exclude_tools={"read"})
    )
    result = await keeper.run(chain)
    for item in results(result.messages):
        if item.name == "read":
            assert not is_cleared(item)


@pytest.mark.anyio
async def test_clear_tool_inputs_and_reasoning() -> None:
    chain = [Message.system("s"), Message.human("t")]
    for index in range(10):
        call_id = f"c{index}"
        arguments = json.dumps({"text": fill(500, "a")})
        thought = Reasoning(content=fill(300, "t"), signature=b"sig")
        chain.append(
            Message.from_parts(
                Role.AI,
                (
                    TextPart(text=f"step {index}", reasoning=thought),
                    ToolCall(id=call_id, name="write", arguments=arguments),
                ),
            )
        )
        chain.append(Message.tool(call_id, "write", fill(1500, "r")))
    options = Clearing(keep=2, clear_tool_inputs=True, clear_reasoning=True)
    events: list[CompactionEvent] = []
    keeper = Compactor(budget=SUMMARY_ONLY.budget(20_000), clearing=options, on_event=events.append)
    result = await keeper.run(chain)
    ai = [m for m in result.messages if m.role is Role.AI]
    size = len(json.dumps({"text": fill(500, "a")}))
    assert json.loads(ai[0].tool_calls[0].arguments) == {"cleared_arguments_bytes": size}
    assert ai[0].parts[0].reasoning is None  # type: ignore[union-attr]
    assert ai[-1].parts[0].reasoning is not None  # type: ignore[union-attr]
    assert ai[-1].tool_calls[0].arguments == chain[-2].tool_calls[0].arguments
    assert events[0].cleared_inputs > 0
    assert events[0].cleared_reasoning > 0
    ChainAST.from_messages(result.messages)


@pytest.mark.parametrize("target", ["openai", "anthropic", "gemini", "bedrock", "mistral"])
@pytest.mark.anyio
async def test_cleared_chains_lint_clean_for_every_target(target: str) -> None:
    chain = port(agent_chain(14), target)
    assert lint(chain, target) == []
    keeper = Compactor(budget=SUMMARY_ONLY.budget(20_000), clearing=Clearing(keep=2), target=target)
    result = await keeper.run(chain)
    assert result.cleared_results > 0
    assert lint(result.messages, target) == []


# -- pins ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_pinned_messages_are_never_cleared_or_summarized() -> None:
    chain = [Message.system("s"), Message.human("RULE: never push to main")]
    for index in range(14):
        chain.extend(tool_turn(index, 2000))
        if index == 2:
            chain[-1] = Message.tool("call_0002", "bash", "PINNED " + fill(2000, "p"))
    chain.append(Message.ai("done"))
    chain.append(Message.human("next"))
    chain.extend(tool_turn(99, 200))

    def pin(message: Message) -> bool:
        return "RULE" in message.text or any("PINNED" in r.content for r in message.tool_results)

    handler = Recorder()
    keeper = Compactor(
        handler, budget=SUMMARY_ONLY.budget(14_000), clearing=Clearing(keep=1), pin=pin
    )
    result = await keeper.run(chain, force=True)
    assert result.summary_needed
    texts = [r.content for r in results(result.messages)]
    assert "PINNED " + fill(2000, "p") in texts
    humans = [m for m in result.messages if m.role is Role.HUMAN]
    assert any("RULE: never push to main" in m.text for m in humans)
    assert "PINNED" not in "".join(handler.prompts)
    ChainAST.from_messages(result.messages)
    # A later compaction carries them again.
    grown = [*result.messages, *tool_turn(100, 9000)]
    again = await keeper.run(grown, force=True)
    assert any("RULE: never push to main" in m.text for m in again.messages)
    assert "PINNED " + fill(2000, "p") in [r.content for r in results(again.messages)]
    ChainAST.from_messages(again.messages)


@pytest.mark.anyio
async def test_keep_user_messages_keeps_questions_verbatim_while_they_fit() -> None:
    chain = [Message.system("s")]
    for index in range(12):
        chain.append(Message.human(f"question {index}: " + fill(100, "q")))
        chain.extend(tool_turn(index, 1500))
        chain.append(Message.ai(f"answer {index}"))
    chain.append(Message.human("current"))
    keeper = Compactor(
        Recorder(),
        budget=SUMMARY_ONLY.budget(10_000),
        keep_user_messages=True,
        clearing=SUMMARY_ONLY.clearing,
    )
    result = await keeper.run(chain, force=True)
    text = "\n".join(m.text for m in result.messages if m.role is Role.HUMAN)
    for index in range(12):
        assert f"question {index}: " + fill(100, "q") in text
    plain = await Compactor(
        Recorder(), budget=SUMMARY_ONLY.budget(10_000), clearing=SUMMARY_ONLY.clearing
    ).run(chain, force=True)
    plain_text = "\n".join(m.text for m in plain.messages if m.role is Role.HUMAN)
    assert "question 0: " not in plain_text


@pytest.mark.anyio
async def test_keep_user_messages_summarizes_the_oldest_when_they_do_not_fit() -> None:
    chain = [Message.system("s")]
    for index in range(12):
        chain.append(Message.human(f"question {index}: " + fill(400, "q")))
        chain.extend(tool_turn(index, 1500))
        chain.append(Message.ai(f"answer {index}"))
    chain.append(Message.human("current"))
    handler = Recorder()
    keeper = Compactor(
        handler,
        budget=SUMMARY_ONLY.budget(10_000),
        keep_user_messages=True,
        clearing=SUMMARY_ONLY.clearing,
    )
    result = await keeper.run(chain, force=True)
    text = "\n".join(m.text for m in result.messages if m.role is Role.HUMAN)
    assert "question 11: " in text
    assert "question 0: " not in text
    assert "question 0: " in handler.prompts[0]
    assert result.size_after <= keeper.budget.limit


# -- archive -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_recall_brings_a_cleared_result_back_whole(tmp_path: Path) -> None:
    archive = HistoryArchive(tmp_path / "archive.sqlite", session="s1")
    keeper = Compactor(
        budget=SUMMARY_ONLY.budget(20_000),
        clearing=Clearing(keep=1),
        stores=Stores(archive=archive),
    )
    chain = agent_chain(12)
    chain[3] = Message.tool("call_0000", "bash", "the original output\n" + fill(2000, "o"))
    result = await keeper.run(chain)
    first = results(result.messages)[0]
    assert is_cleared(first)
    assert "[archived: " in first.content
    [reference] = archived_references(first.content)
    [back] = await archive.recall(reference)
    assert back == chain[3]
    answer = await RecallTool(archive)(json.dumps({"reference": reference}))
    assert "the original output" in answer
    assert any(e.kind is StoreEventKind.ARCHIVED for e in result.store_events)
    await archive.aclose()


class _BrokenStore:
    name = "broken"

    async def put(self, *args: object) -> None:
        raise OSError("disk full")

    async def get(self, *args: object) -> list[bytes]:
        return []

    async def search(self, *args: object) -> list[tuple[str, bytes]]:
        return []

    async def delete_session(self, *args: object) -> int:
        return 0

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_a_failed_archive_leaves_placeholders_without_references() -> None:
    archive = HistoryArchive(_BrokenStore(), session="s1")  # type: ignore[arg-type]
    keeper = Compactor(
        budget=SUMMARY_ONLY.budget(20_000),
        clearing=Clearing(keep=1),
        stores=Stores(archive=archive),
    )
    result = await keeper.run(agent_chain(12))
    cleared = [r for r in results(result.messages) if is_cleared(r)]
    assert cleared
    assert all("[archived: " not in r.content for r in cleared)
    assert any(e.kind is StoreEventKind.ARCHIVE_UNAVAILABLE for e in result.store_events)


# -- properties ----------------------------------------------------------------------------

_big_chains = valid_chains(min_sections=1).map(
    lambda chain: [
        m.evolve(
            parts=tuple(
                p.evolve(content=p.content * 40) if isinstance(p, ToolResult) else p
                for p in m.parts
            )
        )
        for m in chain
    ]
)


@given(_big_chains, st.integers(0, 3), st.booleans(), st.booleans())
def test_clearing_laws(chain: list[Message], keep: int, inputs: bool, reasoning: bool) -> None:
    options = Clearing(keep=keep, clear_tool_inputs=inputs, clear_reasoning=reasoning)
    pinned_ids = {id(m) for m in chain[::3]}

    def pinned(message: Message) -> bool:
        return id(message) in pinned_ids

    done = clear_tool_results(chain, options, measure=lambda m: m.size, goal=None, pin=pinned)
    out = done.messages
    # Valid, never larger, same length and roles.
    ChainAST.from_messages(out)
    assert sum(m.size for m in out) <= sum(m.size for m in chain)
    assert [m.role for m in out] == [m.role for m in chain]
    assert done.units_freed == sum(m.size for m in chain) - sum(m.size for m in out)
    # Pinned messages untouched; the newest pair untouched.
    last_ai = max((i for i, m in enumerate(chain) if m.role is Role.AI), default=len(chain))
    for index, (old, new) in enumerate(zip(chain, out, strict=True)):
        if id(old) in pinned_ids or index >= last_ai or old.role not in {Role.AI, Role.TOOL}:
            assert new is old
    # The newest `keep` tool uses keep their results (a use is its AI message and call
    # id: ids may repeat across pairs, as a summary pair's does).
    calls = [(i, p.id) for i, m in enumerate(chain) if m.role is Role.AI for p in m.tool_calls]
    newest = set(calls[len(calls) - keep :]) if keep else set()
    asked = -1
    for index, (old, new) in enumerate(zip(chain, out, strict=True)):
        asked = index if old.role is Role.AI else asked
        for before, after in zip(old.tool_results, new.tool_results, strict=False):
            if (asked, before.tool_call_id) in newest:
                assert after.content == before.content
    # Idempotent.
    again = clear_tool_results(out, options, measure=lambda m: m.size, goal=None, pin=pinned)
    assert again.messages == out
    assert not again.changed


def test_a_reasoning_only_message_left_whole_is_not_counted_as_cleared() -> None:
    """An AI message holding only reasoning keeps it (an AI message needs a part): the
    pass changed nothing, so it reports nothing (it counted one clearing on every pass,
    so a second pass was never a no-op; Hypothesis found it)."""
    chain = [
        Message.human("hello"),
        Message.from_parts(Role.AI, [TextPart(text="", reasoning=Reasoning(content="why"))]),
        Message.from_parts(Role.AI, []),
    ]
    options = Clearing(keep=0, clear_reasoning=True)
    done = clear_tool_results(chain, options, measure=lambda m: m.size, goal=None)
    assert done.messages == chain
    assert (done.reasoning_cleared, done.changed) == (0, False)


# -- focus ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_focus_reaches_the_prompt_delimited_and_keys_the_cache() -> None:
    from csum import SummaryCache

    cache = SummaryCache(handler_id="recorder")
    handler = Recorder()
    chain = agent_chain(12, 3000)
    keeper = Compactor(
        handler,
        budget=SUMMARY_ONLY.budget(12_000),
        clearing=SUMMARY_ONLY.clearing,
        stores=Stores(cache=cache),
    )
    await keeper.run(chain, focus="the </focus> failing test in api/")
    marked = re.search(r"<focus(_[0-9a-f]{8})>(.*)</focus\1>", handler.prompts[0])
    assert marked is not None
    assert marked.group(2) == "the </focus> failing test in api/"
    # Same chain, no focus or another focus: a different prompt, so no cache hit.
    other = Compactor(
        handler,
        budget=SUMMARY_ONLY.budget(12_000),
        clearing=SUMMARY_ONLY.clearing,
        stores=Stores(cache=cache),
    )
    result = await other.run(chain)
    assert len(handler.prompts) == 2
    assert "<focus_" not in handler.prompts[1]
    assert not any(e.kind is StoreEventKind.CACHE_HIT for e in result.store_events)
    same = Compactor(
        handler,
        budget=SUMMARY_ONLY.budget(12_000),
        clearing=SUMMARY_ONLY.clearing,
        stores=Stores(cache=cache),
    )
    hit = await same.run(chain, focus="the </focus> failing test in api/")
    assert len(handler.prompts) == 2
    assert any(e.kind is StoreEventKind.CACHE_HIT for e in hit.store_events)


def test_focus_on_compact_sync_and_bad_focus() -> None:
    handler = Recorder()
    keeper = Compactor(handler, budget=SUMMARY_ONLY.budget(12_000), clearing=SUMMARY_ONLY.clearing)
    keeper.compact_sync(agent_chain(12, 3000), focus="next: fix the parser")
    assert "<focus_" in handler.prompts[0]
    assert "next: fix the parser" in handler.prompts[0]
    with pytest.raises(TypeError, match="focus"):
        keeper.compact_sync(agent_chain(2), focus=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="blank"):
        keeper.compact_sync(agent_chain(2), focus="  ")
    with pytest.raises(ValueError, match="MAX_FOCUS_BYTES"):
        keeper.compact_sync(agent_chain(2), focus="x" * 5000)


# -- cache breakpoints ---------------------------------------------------------------------


def _cache_controls(body: dict[str, object]) -> list[str]:
    """Where the encoded Anthropic request carries cache_control: "system" or a role."""
    found: list[str] = []
    system = body.get("system")
    if isinstance(system, list):
        found += ["system" for block in system if "cache_control" in block]
    for message in body["messages"]:  # type: ignore[attr-defined]
        content = message["content"]
        if isinstance(content, list):
            found += [message["role"] for block in content if "cache_control" in block]
    return found


def _points(messages: list[Message]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(messages)
        for j, p in enumerate(m.parts)
        if getattr(p, "kind", "") == "cache_control"
    ]


@pytest.mark.anyio
async def test_cache_breakpoints_mark_the_stable_prefix_within_four() -> None:
    from cast.codecs import anthropic

    chain = port(agent_chain(12, 3000), "anthropic")
    keeper = Compactor(
        Recorder(),
        budget=SUMMARY_ONLY.budget(12_000),
        target="anthropic",
        cache_breakpoints=True,
        clearing=SUMMARY_ONLY.clearing,
    )
    result = await keeper.run(chain, force=True)
    body = anthropic.encode(result.messages)
    marks = _cache_controls(body)
    assert marks[0] == "system"
    assert 2 <= len(marks) <= 4
    assert lint(result.messages, "anthropic") == []
    back = anthropic.decode(body)  # carried through the codec, where they were
    assert _points(back) == _points(result.messages)
    # The summary is still read as one (placed in the user turn for Anthropic, read back
    # by the next call, csum.assemble): the next compaction folds it.
    from csum import is_summarized
    from csum.assemble import unplaced

    parsed = unplaced(ChainAST.from_messages(result.messages))
    assert any(is_summarized(p) for s in parsed.sections for p in s.body)
    grown = [*result.messages, *port(tool_turn(50, 9000), "anthropic")]
    again = await keeper.run(grown, force=True)
    assert len(_cache_controls(anthropic.encode(again.messages))) <= 4


@pytest.mark.anyio
async def test_cache_breakpoints_count_the_callers_own() -> None:
    from cast import ProviderPart

    point = ProviderPart(provider="anthropic", kind="cache_control", data='{"type":"ephemeral"}')
    chain = port(agent_chain(12, 3000), "anthropic")
    for index in (3, 5, 7):
        chain[index] = chain[index].evolve(parts=(*chain[index].parts, point))
    keeper = Compactor(
        budget=SUMMARY_ONLY.budget(20_000),
        target="anthropic",
        clearing=Clearing(keep=1),
        cache_breakpoints=True,
    )
    result = await keeper.run(chain)
    count = sum(1 for m in result.messages for p in m.parts if p == point)
    assert count <= 4


def test_cache_breakpoints_need_an_anthropic_target() -> None:
    with pytest.raises(ValueError, match="Anthropic"):
        Compactor(budget=1000, cache_breakpoints=True)
    with pytest.raises(ValueError, match="Anthropic"):
        Compactor(budget=1000, target="openai", cache_breakpoints=True)


# -- real Claude Code sessions -------------------------------------------------------------


def _sessions() -> list[tuple[str, list[Message]]]:
    from cast.chainio import decode_chain
    from cast.codecs import claude_code
    from tests.conftest import CLAUDE_CODE, corpus_files

    out = []
    for path in corpus_files(CLAUDE_CODE, "claudecode_spotter_*.json"):
        if "sub_agent" in path.name:
            continue
        log = json.loads(path.read_text("utf-8"))
        body = {"system": "s", "messages": claude_code.to_api_messages(log)}
        out.append((path.name, decode_chain(body, "anthropic")[0]))
    return out


def _steps(chain: list[Message]) -> list[list[Message]]:
    """The chain cut before each AI message: what an agent loop adds per call."""
    steps: list[list[Message]] = [[]]
    for message in chain:
        if message.role is Role.AI and steps[-1]:
            steps.append([])
        steps[-1].append(message)
    return steps


@pytest.mark.parametrize(
    ("clearing", "sizes"),
    [(Clearing(keep=3), SUMMARY_ONLY), (LOW_COST.clearing, LOW_COST)],
    ids=["Clearing(keep=3) at 60 %", "LOW_COST"],
)
def test_claude_code_sessions_through_a_loop_stay_within_budget(
    clearing: Clearing | None, sizes: Preset
) -> None:
    sessions = _sessions()
    if not sessions:
        pytest.skip("the Claude Code corpus is not beside the repository")
    budget = 64 * 1024
    for name, chain in sessions:
        events: list[CompactionEvent] = []
        keeper = Compactor(
            budget=sizes.budget(budget),
            clearing=clearing,
            target="anthropic",
            on_event=events.append,
        )
        history: list[Message] = []
        cleared = over = 0
        for step in _steps(chain):
            history = [*history, *step]
            if history[-1].role is Role.AI and history[-1].tool_calls:
                continue  # the loop calls the model once the results are in
            result = keeper.compact_sync(history)
            ast = ChainAST.from_messages(result)  # repair-free parse
            if sum(m.size for m in result) > budget:  # only when it cannot fit
                tail = ast.sections[-1]
                system, question = ast.sections[0].header.system_message, tail.header
                mandatory = (system.size if system else 0) + tail.body[-1].size
                mandatory += question.human_message.size if question.human_message else 0
                assert mandatory > budget, name
                over += 1
            cleared += sum(1 for r in results(result) if is_cleared(r))
            history = result
        # At a 10 % target (LOW_COST) the summary evicts what was cleared: count the passes.
        cleared += sum(e.cleared_results for e in events)
        assert cleared or sum(m.size for m in chain) <= budget, name


@given(_big_chains, st.integers(0, 3), st.floats(0.2, 1.5))
def test_the_compactor_with_clearing_keeps_chains_valid_and_bounded(
    anyio_backend: str, chain: list[Message], keep: int, share: float
) -> None:
    size = sum(m.size for m in chain)
    budget = max(64, int(size * share))
    keeper = Compactor(Recorder(), budget=SUMMARY_ONLY.budget(budget), clearing=Clearing(keep=keep))
    before = list(chain)
    result = anyio.run(keeper.run, chain, backend=anyio_backend)
    assert chain == before  # nothing the caller passed is changed
    out = result.messages
    ast = ChainAST.from_messages(out)
    if size <= budget:
        assert out == ChainAST.from_messages(chain, repair=True).to_messages()
        assert not result.compacted
    assert result.over_budget == (sum(m.size for m in out) > budget)
    # The newest body pair is kept verbatim.
    source = ChainAST.from_messages(chain, repair=True).sections[-1]
    if source.body:
        assert ast.sections[-1].body[-1].messages() == source.body[-1].messages()


# -- each result gisted once ---------------------------------------------------------------


class GistCounter:
    """Counts the texts csum.clearing gists (the real gist, counted)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        monkeypatch.setattr(csum.clearing, "gist", self)

    def __call__(self, text: str, limit: int = GIST_BYTES) -> str:
        self.texts.append(text)
        return gist(text, limit)


def test_a_pass_over_a_cleared_chain_gists_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = GistCounter(monkeypatch)
    options = Clearing(keep=1)
    first = clear_tool_results(agent_chain(8), options, measure=lambda m: m.size, goal=None)
    assert first.results_cleared == 7
    assert len(counter.texts) == 7
    again = clear_tool_results(first.messages, options, measure=lambda m: m.size, goal=None)
    assert not again.changed
    assert len(counter.texts) == 7


def test_a_result_its_placeholder_alone_would_not_shrink_is_not_gisted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = GistCounter(monkeypatch)
    chain = [Message.human("q"), *tool_turn(0, 40), *tool_turn(1, 3000), *tool_turn(2, 5)]
    done = clear_tool_results(chain, Clearing(keep=1), measure=lambda m: m.size, goal=None)
    assert done.results_cleared == 1
    assert counter.texts == [output(1, 3000)]


@pytest.mark.anyio
async def test_a_compaction_gists_each_evicted_result_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = GistCounter(monkeypatch)
    handler = Recorder()
    keeper = Compactor(
        handler, budget=Budget.bytes(12_000, keep_ratio=0.2), clearing=Clearing(keep=3)
    )
    result = await keeper.run(agent_chain(12, 3000))
    assert result.summary_needed
    assert counter.texts
    assert len(counter.texts) == len(set(counter.texts))


def test_the_gist_of_a_huge_result_reads_its_start_and_its_end() -> None:
    routine = [f"step {n} of the run went fine" for n in range(6_000)]
    middle = len(routine) // 2
    lines = [*routine[:middle], "ERROR middle.py:3 broke", *routine[middle:]]
    text = "\n".join(["$ make all", *lines, "FAILED 3 tests in src/app/test_io.py"])
    assert len(text) > 100_000
    summary = gist(text)
    assert summary.startswith("$ make all")
    assert "FAILED 3 tests in src/app/test_io.py" in summary  # its outcome, at the end
    assert "middle.py" not in summary  # its middle is not read: the cost is bounded
