"""A LangChain ``create_agent`` agent kept under a 16 KiB budget by chaincast, with no
API key.

The model is a scripted fake: LangChain's ``GenericFakeChatModel`` with ``bind_tools``
(the stock one raises ``NotImplementedError`` when an agent binds its tools). It reads
a large log ten times through a tool, then answers. Swap it for ``"openai:gpt-4o"``
and give the middleware the same name, ``CompactionMiddleware(model="openai:gpt-4o")``:
its budget is then half of that model's context window.

Run: ``python docs/examples/langchain_agent.py`` (needs ``pip install
'chaincast[langchain]'``, or ``pip install '.[langchain]'`` from a checkout).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import Field

from cast.codecs import langchain as codec
from csum.integrations.langchain import CompactionMiddleware

BUDGET = 16 * 1024


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model for tests: plays its messages in order, accepts tools and
    records the size of every history it receives."""

    sent: list[int] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self  # the script already knows which tools it calls

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(sum(m.size for m in codec.decode(messages)))
        return super()._generate(messages, *args, **kwargs)


@tool
def read_log(part: int) -> str:
    """One part of the build log (about 5 KB)."""
    status = "error: disk full" if part == 7 else "ok"
    return f"part {part}: {status}\n" + f"step {part} compiled module {part}.o\n" * 160


script = [
    AIMessage("", tool_calls=[{"name": "read_log", "args": {"part": n}, "id": f"call_{n}"}])
    for n in range(1, 11)
]
model = ScriptedChatModel(messages=iter([*script, AIMessage("The build failed at part 7.")]))
keeper = CompactionMiddleware(budget="16KiB")
agent = create_agent(model, tools=[read_log], middleware=[keeper])

state = agent.invoke({"messages": [HumanMessage("Why did the build fail?")]})
print(state["messages"][-1].content)
for event in keeper.events:
    print(event)  # unit, before -> after, budget, over_budget
print(f"largest history sent: {max(model.sent):,} bytes (budget {BUDGET:,})")
if max(model.sent) > BUDGET:
    raise SystemExit("a model call went over the budget")
