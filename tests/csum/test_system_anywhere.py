"""System messages at any position (issue 40, class 1): the AST keeps each one where it
stands; ``Compactor``, ``Summarizer`` and ``port`` keep every one of them verbatim, in its
order among the user's messages, never ahead of the user's task; the first task is not
folded into a summary while it fits. Real payloads come from the shared corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.real_payload_counts import keeps_system_order
from cast import ChainAST, ChainError, Message, Role, ToolCall, lint, port
from cast.codecs import get_codec
from cast.providers import PROVIDERS
from csum import Compactor, Summarizer, SummarizerConfig
from csum.handlers import extractive
from csum.plan import KEEP_USER_SHARE
from strategies import valid_chains
from tests.conftest import CORPUS

PAYLOADS = CORPUS / "payloads"
MID_CHAIN_SYSTEM = [
    "set1/anthropic/pai_inline_system_cache_control.json",
    "set1/anthropic/pai_mid_conversation_system_after_tool.json",
    "project-fixtures/anthropic/anthropic_lazy_advertisement_live.json",
    "project-fixtures/openai_responses/cross_provider_capability_replay_anthropic_to_responses.json",
    "project-fixtures/openai_responses/supported_model_calls_additional_tool.json",
]
SMALL = SummarizerConfig(
    last_section_bytes=600, max_body_pair_bytes=300, use_qa=True, max_qa_bytes=1200
)


def systems(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.role is Role.SYSTEM]


def compact(messages: list[Message], budget: int) -> list[Message]:
    async def run() -> list[Message]:
        return (await Compactor(extractive(200), budget=budget).run(messages, force=True)).messages

    return anyio.run(run)


def summarize(messages: list[Message]) -> list[Message]:
    async def run() -> list[Message]:
        return await Summarizer(SMALL).summarize_chain(extractive(100), messages)

    return anyio.run(run)


def aider_chain(turns: int = 6) -> list[Message]:
    """aider's request: system prompt, history, the user's request, then a reminder."""
    chain = [Message.system("You are aider."), Message.human("TASK: fix the bug in foo.py")]
    for k in range(turns):
        chain += [Message.ai(f"done {k} " + "x " * 400), Message.human(f"more {k} " + "y " * 300)]
    return [*chain, Message.ai("ok"), Message.human("go on"), Message.system("Reply in diffs.")]


# -- the AST ---------------------------------------------------------------------------------


def test_the_ast_lists_system_messages_where_they_stand() -> None:
    chain = [Message.system("s"), Message.human("q"), Message.ai("a"), Message.system("late")]
    with pytest.raises(ChainError):
        ChainAST.from_messages(chain)  # the contract's strict rule 2
    ast = ChainAST.from_messages(chain, repair=True)
    assert ast.system_messages() == (chain[0], chain[3])
    assert ast.current_section == 0  # the reminder after the answer is no new question
    assert ast.sections[1].size == chain[3].size
    assert ast.to_messages() == chain


def test_sections_opened_by_system_messages_keep_them_in_order() -> None:
    from cast import Section

    first, second, question = Message.system("a"), Message.system("b"), Message.human("q")
    sections = Section.opened_by([first, second], question)
    tree = ChainAST(
        (
            Section(
                Section.opened_by([], Message.human("t"))[0].header,
                ChainAST.from_messages([Message.human("t"), Message.ai("r")]).sections[0].body,
            ),
            *sections,
        )
    )
    assert tree.to_messages()[2:] == [first, second, question]


# -- Compactor, Summarizer, port ---------------------------------------------------------------


def test_compactor_keeps_a_reminder_after_the_question() -> None:
    chain = aider_chain()
    out = compact(chain, 3000)
    assert out[0] == chain[0]
    assert out[-2:] == chain[-2:]  # the question, then the reminder: nothing folded
    assert "TASK: fix the bug in foo.py" in out[1].text  # the first task, kept verbatim
    assert sum(m.size for m in out) < sum(m.size for m in chain)
    assert keeps_system_order(chain, out)


def test_compactor_keeps_dynamic_instructions_after_tool_results() -> None:
    chain = [Message.system("sys"), Message.human("task: read the files")]
    for k in range(6):
        call = ToolCall(id=f"c{k}", name="read", arguments="{}")
        chain += [Message.ai(f"reading {k}", call), Message.tool(f"c{k}", "read", "z " * 400)]
        chain += [Message.system(f"instruction {k}"), Message.ai(f"read {k}")]
        chain += [Message.human(f"next {k}")]
    out = compact(chain, 4000)
    assert systems(out) == systems(chain)
    assert keeps_system_order(chain, out)
    assert out[-1] == chain[-1]


def test_summarizer_keeps_system_messages_in_their_place() -> None:
    chain = aider_chain()
    out = summarize(chain)
    assert systems(out) == systems(chain)
    assert keeps_system_order(chain, out)


@given(chain=valid_chains(min_sections=2, max_sections=5), data=st.data())
@settings(max_examples=40, deadline=None)
def test_every_system_message_survives_in_order(chain: list[Message], data: Any) -> None:
    """Insert system messages anywhere after the first message: a forced compaction and
    a summary keep every one verbatim and in order among the user's messages."""
    chain = list(chain)
    count = data.draw(st.integers(1, 3))
    for k in range(count):
        at = data.draw(st.integers(1, len(chain)))
        chain.insert(at, Message.system(f"instruction {k}"))
    size = sum(m.size for m in chain)
    compactor_budget = max(size // 2, 600)
    repaired_ast = ChainAST.from_messages(chain, repair=True)
    repaired = repaired_ast.to_messages()
    task = repaired_ast.sections[0].header.human_message  # the task the chain opens with
    keep = Compactor(extractive(200), budget=compactor_budget).keep_units
    opening = repaired_ast.sections[0].header.system_message is not None
    mid_chain = len(repaired_ast.system_messages()) > opening  # else repair merged them all
    fits = mid_chain and task is not None and task.size <= keep * KEEP_USER_SHARE
    for out in (compact(chain, compactor_budget), summarize(chain)):
        assert [m.text for m in systems(out)][-count:] == [m.text for m in systems(repaired)][
            -count:
        ]
        assert keeps_system_order(repaired, out, fits)


def test_port_keeps_a_late_system_message_in_place_for_every_target() -> None:
    chain = aider_chain(2)
    for target in sorted(PROVIDERS):
        out = port(chain, target)
        assert keeps_system_order(chain, out), target
        assert lint(out, target) == [], target


# -- real payloads -----------------------------------------------------------------------------


def load(name: str) -> list[Message]:
    path = PAYLOADS / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared corpus is absent)")
    payload: Any = json.loads(path.read_text(encoding="utf-8"))
    return get_codec(Path(name).parent.name).decode(payload)


@pytest.mark.parametrize("name", MID_CHAIN_SYSTEM)
def test_real_payloads_with_system_messages_mid_chain(name: str) -> None:
    messages = load(name)
    size = sum(m.size for m in messages)
    assert keeps_system_order(messages, summarize(messages))
    compactor = Compactor(extractive(200), budget=max(size // 2, 400))
    task = next(m for m in messages if m.role is Role.HUMAN)
    out = compact(messages, max(size // 2, 400))
    assert keeps_system_order(messages, out, task.size <= compactor.keep_units * KEEP_USER_SHARE)
    for target in sorted(PROVIDERS):
        assert keeps_system_order(messages, port(messages, target)), target


@pytest.mark.anyio
async def test_the_gateway_compacts_an_aider_request_keeping_its_reminder() -> None:
    """aider's request, 42 KB against a 16 KiB budget: compacted (it was forwarded as it
    came), with the system prompt first, the question and the reminder last."""
    from csum.config import Budget
    from csum.serve import ServeConfig
    from csum.serve.apis import APIS
    from csum.serve.compaction import OutcomeKind, Rewriter
    from csum.stores import MemoryStore

    items: list[dict[str, Any]] = [
        {"role": "system", "content": "Act as an expert software developer."},
        {"role": "user", "content": "Fix the failing import in utils.py"},
    ]
    for k in range(24):
        items += [
            {"role": "assistant", "content": f"Edit {k}:\n" + "utils.py line\n" * 80},
            {"role": "user", "content": f"I applied edit {k}. " + "Output: ok\n" * 40},
        ]
    items += [
        {"role": "assistant", "content": "Applied."},
        {"role": "user", "content": "Now run the tests."},
        {"role": "system", "content": "Reply with SEARCH/REPLACE blocks only."},
    ]
    body = json.dumps({"model": "gpt-4o", "messages": items}).encode()
    assert len(body) > 40_000
    config = ServeConfig(upstream="http://127.0.0.1:9", budget=Budget.bytes(16 * 1024))
    outcome = await Rewriter(config, MemoryStore()).rewrite(APIS[0], body, None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.body is not None
    sent = json.loads(outcome.body)["messages"]
    assert sent[0] == items[0]
    assert sent[-2:] == items[-2:]
    assert "Fix the failing import in utils.py" in json.dumps(sent[1])  # the task, kept
    assert len(outcome.body) < len(body)
