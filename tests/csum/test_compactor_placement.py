"""Summaries placed where the target takes them with thinking on (issue #38 item 1, the
library path): ``Compactor(target=...)`` for a provider that merges same-role turns
sends a text summary that an AI message follows in the user turn before it, and reads
its own placed summaries back on the next call (csum.assemble)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import ChainAST, Message, Reasoning, Role, TextPart, ToolCall, lint, port
from cast.codecs import anthropic, claude_code
from cast.providers import PROVIDERS
from csum import Budget, CompactionEvent, Compactor
from csum.assemble import placed_for, unplaced
from csum.plan import EARLIER_CONVERSATION_TEXT, SUMMARIZED_CONTENT_PREFIX
from strategies import valid_chains
from tests.conftest import CLAUDE_CODE, corpus_files, real_cases

SESSIONS = [p for p in corpus_files(CLAUDE_CODE) if "sub_agent" not in p.name][:3]
BUDGETS_KIB = (16, 48)


def rules(messages: list[Message], target: str, *, thinking: bool) -> set[str]:
    return {v.rule for v in lint(messages, target, thinking=thinking)}


def own_parts(message: Message) -> tuple[Any, ...]:
    """A human message's parts without the summaries placed in it."""
    return tuple(
        p
        for p in message.parts
        if not (type(p) is TextPart and p.text.startswith(SUMMARIZED_CONTENT_PREFIX))
    )


def summary_texts(messages: list[Message]) -> list[str]:
    return [
        p.text
        for m in messages
        for p in m.parts
        if type(p) is TextPart and p.text.startswith(SUMMARIZED_CONTENT_PREFIX)
    ]


@pytest.mark.parametrize("path", real_cases(SESSIONS, CLAUDE_CODE), ids=lambda p: p and p.stem)
@pytest.mark.parametrize("kib", BUDGETS_KIB)
def test_claude_code_loop_sends_valid_requests_with_thinking_on(path: Path, kib: int) -> None:
    """A real Claude Code session (thinking blocks with signatures) replayed as an agent
    loop: before each model call the Compactor compacts what the agent holds; every
    request, encoded for Anthropic and read back, breaks no rule with thinking on that
    the recorded history did not; the user's messages stay verbatim; placed summaries
    are folded into the next summary (depths grow), never read as the user's words (a
    user turn holds the user's own parts, the questions a compaction carries, and the
    summaries placed after them)."""
    chain = list(claude_code.decode(json.loads(path.read_text("utf-8"))))
    said = {part for m in chain if m.role is Role.HUMAN for part in m.parts}
    events: list[CompactionEvent] = []
    compactor = Compactor(
        budget=Budget.bytes(kib * 1024), target="anthropic", on_event=events.append
    )
    held: list[Message] = []
    history: list[Message] = []
    compactions = placed = deepest = 0
    for message in chain:
        held.append(message)
        history.append(message)
        if message.role is not Role.TOOL:
            continue
        given = len(held)
        result = anyio.run(compactor.run, held)
        if result.events:  # the event counts what was given and what is returned
            assert events[-1] is result.events[0]
            assert (events[-1].messages_before, events[-1].messages_after) == (
                given,
                len(result.messages),
            )
        held = result.messages
        compactions += result.compacted
        deepest = max(deepest, *compactor.summary_depths.values(), 0)
        sent = anthropic.decode(json.loads(json.dumps(anthropic.encode(held))))
        recorded = rules(history, "anthropic", thinking=True)
        assert rules(sent, "anthropic", thinking=True) <= recorded, len(history)
        for m in held:
            if m.role is Role.HUMAN and own_parts(m) != m.parts:
                placed += 1
                assert set(own_parts(m)) <= said | {TextPart(text=EARLIER_CONVERSATION_TEXT)}
        for text in summary_texts(held):  # no summary holds an earlier one as user text
            assert SUMMARIZED_CONTENT_PREFIX not in text[len(SUMMARIZED_CONTENT_PREFIX) :]
    assert compactions >= 2
    if kib <= 16:
        assert placed, "the loop never placed a summary in a user turn"
        assert deepest >= 2


@pytest.mark.parametrize("path", real_cases(SESSIONS[:1], CLAUDE_CODE), ids=lambda p: p and p.stem)
def test_own_placed_summary_is_read_back(path: Path) -> None:
    """The output compacted again without anything new is the same chain; with a new
    turn and ``force=True`` the placed summary is folded (depth 2) and the question it
    was placed in comes back as the user wrote it."""
    chain = list(claude_code.decode(json.loads(path.read_text("utf-8"))))
    compactor = Compactor(budget=Budget.bytes(24 * 1024), target="anthropic")
    held: list[Message] = []
    for index, message in enumerate(chain[:-1]):
        held = [*held, message]
        if message.role is not Role.TOOL or chain[index + 1].role is Role.TOOL:
            continue  # the model is called once every result of its calls is in
        out = anyio.run(compactor.compact, held)
        if any(m.role is Role.HUMAN and own_parts(m) != m.parts for m in out):
            break
        held = out
    else:
        pytest.fail("no summary was placed in a user turn")
    again = Compactor(budget=Budget.bytes(24 * 1024), target="anthropic")
    result = anyio.run(again.run, out)
    assert not result.compacted
    assert result.messages == out
    assert ChainAST.from_messages(unplaced(ChainAST.from_messages(out)).to_messages())
    forced = anyio.run(lambda: compactor.run(out, force=True))
    assert max(compactor.summary_depths.values()) == 2
    texts = summary_texts(forced.messages)
    assert all(SUMMARIZED_CONTENT_PREFIX not in t[len(SUMMARIZED_CONTENT_PREFIX) :] for t in texts)


MERGING = sorted(name for name, p in PROVIDERS.items() if p.merges_same_role)


def short_summary(length: int) -> Any:
    async def summarize(prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        return ("summary " * length)[:length]

    return summarize


THOUGHT = TextPart(text="", reasoning=Reasoning(content="let me think", signature=b"sig"))


def thinking_turns(chain: list[Message]) -> list[Message]:
    """``chain`` as an agent with thinking on sends it: every AI message opens with a
    signed thinking block, and the last turn is a tool call and its result."""
    out = [m.evolve(parts=(THOUGHT, *m.parts)) if m.role is Role.AI else m for m in chain]
    call = ToolCall(id="call_last", name="run", arguments="{}")
    return [
        *out,
        Message.from_parts(Role.AI, (THOUGHT, call)),
        Message.tool("call_last", "run", "the newest result"),
    ]


def thinking_rules(messages: list[Message], target: str) -> set[str]:
    """The rules ``messages`` break for ``target`` with thinking on and not with it off."""
    return rules(messages, target, thinking=True) - rules(messages, target, thinking=False)


@settings(max_examples=40)
@given(
    chain=valid_chains(min_sections=2, max_sections=5),
    target=st.sampled_from(sorted(PROVIDERS)),
    limit=st.integers(200, 3000),
    length=st.integers(1, 200),
)
def test_placement_law(chain: list[Message], target: str, limit: int, length: int) -> None:
    """For every provider profile, a compaction of a chain ported to it adds no rule it
    breaks only with thinking on (``thinking-not-first``); its summaries are read back
    into the reference shape (unplaced after placed is the identity on the Compactor's
    chains), and a second call on the output changes nothing."""
    history = thinking_turns(port(chain, target))
    compactor = Compactor(
        short_summary(length), budget=Budget.bytes(limit).evolve(keep_ratio=0.3), target=target
    )
    result = anyio.run(lambda: compactor.run(history, force=True))
    out = result.messages
    assert thinking_rules(out, target) <= thinking_rules(history, target)
    canonical = unplaced(ChainAST.from_messages(out)).to_messages()
    assert placed_for(canonical, PROVIDERS[target]) == out
    if target not in MERGING:
        assert canonical == out
    again = Compactor(
        short_summary(length), budget=Budget.bytes(10 * limit + 10_000), target=target
    )
    second = anyio.run(again.run, out)
    assert not second.compacted
    assert second.messages == out
