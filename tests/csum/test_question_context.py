"""A compaction's prompt shows a long staying question as its head and tail, not whole
(csum.request.question_context): the summarizer reads it only to know what was asked, and the
question itself stays in the chain verbatim."""

from __future__ import annotations

import anyio
import pytest

from cast import Message, Role, TextPart, ToolCall
from csum import Compactor
from csum.prompt import SummaryRequest
from csum.request import QUESTION_CONTEXT_BYTES, RequestHandler, question_context

pytestmark = pytest.mark.anyio

_HEAD = "Refactor the transcript renderer."
_TAIL = "Reply with the FULL content of each file."


def _long_question(filler: int) -> Message:
    lines = "\n".join(f"- lib/spotter_web/live/file_{i:04d}.ex" for i in range(filler))
    return Message.human(f"{_HEAD}\n{lines}\n{_TAIL}")


def test_a_short_question_is_itself() -> None:
    question = Message.human("fix the build")
    assert question_context(question) is question


def test_a_long_question_keeps_its_head_and_tail_within_the_bound() -> None:
    question = _long_question(2_000)
    before = question.model_dump()
    shown = question_context(question)
    assert shown.role == Role.HUMAN
    assert shown.size <= QUESTION_CONTEXT_BYTES + 100  # the bound and the note's line
    text = shown.text
    assert text.startswith(_HEAD)
    assert text.endswith(_TAIL)
    left_out = question.size - len(text.split("\n[...")[0]) - len(text.split("...]\n")[1])
    assert f"[... {left_out} bytes of the question left out here" in text
    assert question.model_dump() == before  # not changed


def test_a_question_of_many_parts_is_read_as_text() -> None:
    question = Message.from_parts(
        Role.HUMAN, tuple(TextPart(text=f"part {i} " + "x" * 100) for i in range(100))
    )
    shown = question_context(question, 600)
    assert len(shown.parts) == 1
    assert shown.text.startswith("part 0 ")
    assert shown.text.endswith("x" * 50)


class _Recorder(RequestHandler):
    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    async def __call__(self, request: SummaryRequest, /) -> str:
        await anyio.lowlevel.checkpoint()
        self.requests.append(request)
        return "summary"


async def test_the_compaction_prompt_shows_the_staying_question_cut() -> None:
    question = _long_question(1_000)
    chain = [Message.system("You are a coding agent."), question]
    for i in range(40):
        call_id = f"toolu_{i:04d}"
        chain.append(Message.ai(f"step {i}", ToolCall(id=call_id, name="Read", arguments="{}")))
        chain.append(Message.tool(call_id, "Read", f"line {i} " + "y" * 3_000))
    recorder = _Recorder()
    result = await Compactor(recorder, budget=100_000).run(chain)
    assert result.compacted
    assert recorder.requests
    (context,) = recorder.requests[0].context
    assert context.content.startswith(_HEAD)
    assert context.content.endswith(_TAIL)
    assert len(context.content.encode()) <= QUESTION_CONTEXT_BYTES + 100
    # The question stays in the chain whole.
    assert question in result.messages
