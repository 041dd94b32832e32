"""The Compactor's append check is sound: when it says the new messages keep a valid
chain valid, the whole chain parses strictly; agent-style appends are recognised."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from cast import Message, ToolCall, diagnose
from csum.compactor import extends_validly
from strategies import mutilated_chains, valid_chains


@given(
    prefix=valid_chains(min_sections=1, max_sections=3),
    tail=valid_chains(min_sections=0, max_sections=2) | mutilated_chains(),
    cut=st.integers(0, 12),
)
def test_a_yes_means_the_whole_chain_is_valid(
    prefix: list[Message], tail: list[Message], cut: int
) -> None:
    assume(prefix and diagnose(prefix) == [])
    new = tail[min(cut, len(tail)) :]
    if extends_validly(prefix, new):
        assert diagnose([*prefix, *new]) == []


@given(chain=valid_chains(min_sections=1, max_sections=3), calls=st.integers(1, 4))
def test_agent_turns_are_recognised(chain: list[Message], calls: int) -> None:
    assume(chain and diagnose(chain) == [])
    ids = [f"new_{i}" for i in range(calls)]
    turn = [
        Message.ai("", *(ToolCall(id=i, name="f") for i in ids)),
        *(Message.tool(i, "f", "result") for i in ids),
    ]
    assert extends_validly(chain, turn)
    assert extends_validly([*chain, *turn], [Message.ai("answer"), Message.human("next")])
    assert not extends_validly(chain, turn[:-1])  # a call left without its result
