"""A pydantic-ai agent kept under a 16 KiB budget by chaincast, with no API key.

The model is pydantic-ai's own ``FunctionModel`` playing a script: it reads a large
log ten times through a tool, then answers. Swap it for ``"openai:gpt-4o"`` (or any
model pydantic-ai knows) and drop ``budget=``: the processor then takes half of that
model's context window.

Run: ``python docs/examples/pydantic_ai_agent.py`` (needs ``pip install
'chaincast[pydantic-ai]'``, or ``pip install '.[pydantic-ai]'`` from a checkout).
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cast.codecs import pydantic_ai as codec
from csum.integrations.pydantic_ai import HistoryProcessor

BUDGET = 16 * 1024
sent: list[int] = []  # bytes of every history the model received


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Ten tool calls, then the answer (a real model decides this itself)."""
    sent.append(sum(m.size for m in codec.decode(messages)))
    step = len(sent)
    if step <= 10:
        return ModelResponse(parts=[ToolCallPart("read_log", {"part": step})])
    return ModelResponse(parts=[TextPart("The build failed at part 7: disk full.")])


keeper = HistoryProcessor(budget="16KiB")
agent = Agent(
    FunctionModel(scripted_model),
    system_prompt="You read build logs.",
    capabilities=[keeper.capability()],
)


@agent.tool_plain
def read_log(part: int) -> str:
    """One part of the build log (about 5 KB)."""
    status = "error: disk full" if part == 7 else "ok"
    return f"part {part}: {status}\n" + f"step {part} compiled module {part}.o\n" * 160


result = agent.run_sync("Why did the build fail?")
print(result.output)
for event in keeper.events:
    print(event)  # unit, before -> after, budget, over_budget
print(f"largest history sent: {max(sent):,} bytes (budget {BUDGET:,})")
if max(sent) > BUDGET:
    raise SystemExit("a model call went over the budget")
