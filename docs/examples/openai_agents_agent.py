"""An OpenAI Agents SDK agent kept under a 16 KiB budget by chaincast, with no API key.

The model is a scripted ``agents.Model``: it reads a large log ten times through a
tool, then answers. The session stores the history across runs; its input filter
keeps every model call of a run under budget (the SDK reads a session only when a run
starts). A run of ten tool calls takes eleven model calls: more than the SDK's default
``max_turns`` of 10, so it is raised. Swap the model for ``"gpt-4o"`` and drop
``budget=``: the filter then takes half of that model's context window.

Run: ``python docs/examples/openai_agents_agent.py`` (needs ``pip install
'chaincast[openai-agents]'``, or ``pip install '.[openai-agents]'`` from a checkout).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
)
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from cast.codecs import openai_agents as codec
from csum.integrations.openai_agents import CompactingSession

BUDGET = 16 * 1024


class ScriptedModel(Model):
    """Ten tool calls, then the answer; records the size of every input it receives."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    async def get_response(
        self, system_instructions: str | None, input: str | list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.sent.append(sum(m.size for m in codec.decode(items)))
        step = len(self.sent)
        output: list[Any]
        if step <= 10:
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{step}",
                    name="read_log",
                    arguments=f'{{"part": {step}}}',
                )
            ]
        else:
            text = ResponseOutputText(type="output_text", text="Part 7 failed.", annotations=[])
            output = [
                ResponseOutputMessage(
                    type="message", id="msg_1", role="assistant", status="completed", content=[text]
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example does not stream")


@function_tool
def read_log(part: int) -> str:
    """One part of the build log (about 5 KB)."""
    status = "error: disk full" if part == 7 else "ok"
    return f"part {part}: {status}\n" + f"step {part} compiled module {part}.o\n" * 160


async def main() -> None:
    model = ScriptedModel()
    agent = Agent(
        name="builder", instructions="You read build logs.", model=model, tools=[read_log]
    )
    session = CompactingSession(SQLiteSession("build-42"), budget="16KiB")
    run_config = RunConfig(call_model_input_filter=session.input_filter(), tracing_disabled=True)
    result = await Runner.run(
        agent, "Why did the build fail?", session=session, run_config=run_config, max_turns=30
    )
    print(result.final_output)
    for event in session.input_filter().events:
        print(event)  # unit, before -> after, budget, over_budget
    print(f"largest input sent: {max(model.sent):,} bytes (budget {BUDGET:,})")
    if max(model.sent) > BUDGET:
        raise SystemExit("a model call went over the budget")


asyncio.run(main())
