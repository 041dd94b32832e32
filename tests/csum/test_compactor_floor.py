"""Over the floor (the system prompt and the newest turn alone exceed the budget): the
Compactor still replaces the older turns with a summary, short, and never drops them
without one (issue #38). On asyncio and trio."""

from __future__ import annotations

import pytest

from cast import BodyPair, Message, ToolCall, parse_chain
from csum import Compactor
from csum.assemble import FLOOR_SUMMARY_BYTES
from csum.plan import is_summarized

pytestmark = pytest.mark.anyio


def _chain(system_bytes: int, turns: int) -> list[Message]:
    chain = [
        Message.system("You are a coding agent. " * (system_bytes // 24)),
        Message.human("Fix the loader."),
    ]
    for i in range(turns):
        call = ToolCall(id=f"call_{i}", name="read_file", arguments=f'{{"path": "src/m{i}.py"}}')
        chain.append(Message.ai("", call))
        chain.append(
            Message.tool(f"call_{i}", "read_file", f"def load_{i}(path): return parse(path)\n" * 30)
        )
    return chain


def _summaries(messages: list[Message]) -> list[BodyPair]:
    return [p for s in parse_chain(messages).sections for p in s.body if is_summarized(p)]


async def test_over_the_floor_the_older_turns_get_a_short_summary() -> None:
    chain = _chain(system_bytes=9000, turns=12)
    keeper = Compactor(budget=8192)
    result = await keeper.run(chain)
    assert result.over_budget  # the system prompt alone is over: nothing can fit
    assert result.size_after < result.size_before
    (summary,) = _summaries(result.messages)
    assert len(summary.ai_message.text.encode()) <= FLOOR_SUMMARY_BYTES + 64
    assert result.messages[0] == chain[0]
    assert result.messages[-2:] == chain[-2:]  # the newest turn verbatim
