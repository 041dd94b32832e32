"""The Compactor and its peers from agent frameworks, as policies on the same workloads.

* :class:`CompactorPolicy` — ``csum.Compactor``'s summary stage alone, at its former
  defaults (``csum.config.SUMMARY_ONLY``: trigger = budget, target 60 %, no clearing,
  summaries 1/32 of the budget), or tuned (``trigger``/``keep_ratio``,
  ``clearing``, ``summary_ratio`` given). Pinned, so the benchmarks' "before" rows do not
  move when the Compactor's defaults do.
* :class:`LangChainSummarization` — LangChain's ``SummarizationMiddleware`` (package
  ``langchain``, ``langchain.agents.middleware``) with its defaults (keep the last 20
  messages, summary input trimmed to 4,000 tokens, approximate token counter), its
  trigger at the budget (``("tokens", budget // 4)``: the counter counts ~4 characters a
  token). Its summary model is a LangChain chat model that answers with the same
  offline extractive handler every other policy uses, through the metered handler.
* :class:`PydanticAIHistoryProcessor` — pydantic-ai has no built-in summarizer; its
  documentation's *Summarize old messages* history processor is written here against
  ``pydantic_ai.messages`` types and run by a pydantic-ai ``Agent`` whose summarizer
  model is a ``FunctionModel`` answering with the extractive handler: once over the
  budget, the oldest messages up to a safe point (a tool call stays with its return)
  are summarized, the rest kept.

The peers receive the chain without its system message and get it back in front, as
their frameworks hold the system prompt apart from the history. Like the baselines, a
summary placed as a user message right before a user message is merged into it
(providers merge consecutive user turns anyway).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.policies.baselines import _rebuild
from benchmarks.policies.policy import (
    MeteredHandler,
    Policy,
    PolicyStep,
    WorkloadSessions,
    _to_langchain,
)
from cast import Message, Role
from csum import Budget, Compactor, Stores
from csum.config import SUMMARY_ONLY
from csum.prompt import text_request

_SETTINGS = frozenset(f.name for f in dataclasses.fields(Budget)) - {"limit", "unit"}
"""The Compactor options that are :class:`~csum.Budget` settings."""

__all__ = [
    "CompactorPolicy",
    "LangChainSummarization",
    "PydanticAIHistoryProcessor",
    "langchain_middleware_available",
    "pydantic_ai_available",
]


class CompactorPolicy(Policy):
    """``csum.Compactor`` before every turn (it keeps its own hysteresis state);
    ``options`` are passed on to it: the :class:`~csum.Budget` settings
    (``summary_ratio``, ``max_depth``...) in its budget, the others as keywords."""

    guarantees_valid = True
    keeps_last_pair = True
    stays_in_budget = True

    def __init__(
        self,
        budget: int,
        handler: MeteredHandler,
        *,
        trigger: float | None = None,
        reinsert_bytes: int | None = None,
        name: str = "Compactor",
        description: str = "csum.Compactor, summary stage alone (SUMMARY_ONLY, the former "
        "defaults: trigger = budget, target 60 %, summaries 1/32)",
        **options: Any,
    ) -> None:
        super().__init__(budget, handler)
        # SUMMARY_ONLY's sizes and stage unless ``options`` name others
        options.setdefault("keep_ratio", SUMMARY_ONLY.keep_ratio)
        options.setdefault("clearing", SUMMARY_ONLY.clearing)
        options.setdefault("summary_ratio", SUMMARY_ONLY.summary_ratio)
        if trigger is None:
            trigger = SUMMARY_ONLY.trigger
        # With ``reinsert_bytes``, a SQLite history archive in a temporary folder, one
        # session per workload (as CsumPolicy does).
        self.sessions = WorkloadSessions(reinsert_bytes)
        # the Budget's settings among ``options`` go into the budget, the rest as they are
        settings = {name: options.pop(name) for name in list(options) if name in _SETTINGS}
        self.compactor = Compactor(
            handler,
            budget=Budget.bytes(budget, trigger=trigger, **settings),
            stores=Stores(archive=self.sessions.archive),
            **options,
        )
        if reinsert_bytes:
            self.keeps_last_pair = False  # re-insertion adds a recall pair to the newest turn
        self.name = name
        self.description = description

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        self.sessions.follow(messages)
        result = await self.compactor.run(messages)
        changed = result.compacted or result.reinserted_bytes > 0
        return result.messages, self._step(changed)


def langchain_middleware_available() -> bool:
    """Whether ``langchain`` (with ``agents.middleware``) is installed."""
    try:
        import langchain.agents.middleware  # noqa: F401
    except ImportError:
        return False
    return True


def _split_system(messages: Sequence[Message]) -> tuple[Message | None, list[Message]]:
    if messages and messages[0].role is Role.SYSTEM:
        return messages[0], list(messages[1:])
    return None, list(messages)


def _with_summary(
    system: Message | None, summary: str | None, kept: Sequence[Message]
) -> list[Message]:
    if summary is None:
        return ([system] if system is not None else []) + list(kept)
    return _rebuild(system, summary, kept)


class LangChainSummarization(Policy):
    """LangChain's ``SummarizationMiddleware`` run before every turn (see module doc)."""

    name = "SummarizationMiddleware (langchain)"
    description = 'SummarizationMiddleware(trigger=("tokens", budget/4)), keep 20 messages'

    def __init__(self, budget: int, handler: MeteredHandler) -> None:
        super().__init__(budget, handler)
        from langchain.agents.middleware import SummarizationMiddleware

        model = _handler_chat_model(handler)
        self.middleware = SummarizationMiddleware(model, trigger=("tokens", budget // 4))

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        started = time.perf_counter()
        system, history = _split_system(messages)
        converted = _to_langchain(history)
        glue = time.perf_counter() - started
        update = await self.middleware.abefore_model({"messages": converted}, None)  # type: ignore[arg-type]
        if update is None:
            return list(messages), self._step(False, glue)
        started = time.perf_counter()
        summary: str | None = None
        kept: list[Message] = []
        for item in update["messages"][1:]:  # the first removes every message
            source = item.additional_kwargs.get("lc_source")
            if source == "summarization":
                summary = str(item.content)
            else:
                kept.append(history[int(str(item.id))])
        out = _with_summary(system, summary, kept)
        return out, self._step(True, glue + time.perf_counter() - started)


def _handler_chat_model(handler: MeteredHandler) -> Any:
    """A LangChain chat model whose answer is ``handler``'s summary of the prompt."""
    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class HandlerChatModel(BaseChatModel):
        """Answers every prompt with the metered handler's summary of its text."""

        @property
        def _llm_type(self) -> str:
            return "csum-handler"

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: CallbackManagerForLLMRun | None = None,
            **kw: Any,
        ) -> ChatResult:
            raise NotImplementedError("the benchmark runs the middleware asynchronously")

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kw: Any,
        ) -> ChatResult:
            prompt = "\n".join(str(m.content) for m in messages)
            summary = await handler(text_request(prompt))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=summary))])

    return HandlerChatModel()


# --- pydantic-ai ---------------------------------------------------------------------


def pydantic_ai_available() -> bool:
    """Whether ``pydantic_ai`` is installed."""
    try:
        import pydantic_ai  # noqa: F401
    except ImportError:
        return False
    return True


class PydanticAIHistoryProcessor(Policy):
    """pydantic-ai's documented *summarize old messages* history processor.

    Once the history passes the budget, everything before the last ``keep`` messages
    (moved back so a tool return stays with its call) is summarized by a summarize
    ``Agent`` and replaced by the summary; the rest is kept.
    """

    name = "history processor (pydantic-ai)"
    description = "docs' summarize-old-messages processor at the budget, keep last 6"

    def __init__(self, budget: int, handler: MeteredHandler, keep: int = 6) -> None:
        super().__init__(budget, handler)
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        async def summarize(messages: list[Any], info: AgentInfo) -> ModelResponse:
            prompt = _pydantic_text(messages)
            return ModelResponse(parts=[TextPart(content=await handler(text_request(prompt)))])

        self.agent: Any = Agent(
            FunctionModel(function=summarize),
            instructions="Summarize this conversation, omitting small talk and unrelated topics.",
        )
        self.keep = keep

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        if sum(m.size for m in messages) <= self.budget:
            return list(messages), self._step(False)
        started = time.perf_counter()
        system, history = _split_system(messages)
        cut = max(0, len(history) - self.keep)
        while 0 < cut < len(history) and history[cut].role is Role.TOOL:
            cut -= 1  # a tool return stays with its call
        if cut <= 0:
            return list(messages), self._step(False)
        converted = _to_pydantic_ai(history[:cut])
        glue = time.perf_counter() - started
        result = await self.agent.run(message_history=converted)
        out = _with_summary(system, str(result.output), history[cut:])
        return out, self._step(True, glue)


def _to_pydantic_ai(messages: Sequence[Message]) -> list[Any]:
    """Our messages as pydantic-ai ``ModelRequest`` / ``ModelResponse`` objects."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for message in messages:
        if message.role is Role.AI:
            parts: list[Any] = [TextPart(content=message.text)] if message.text else []
            parts.extend(
                ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call.id)
                for call in message.tool_calls
            )
            out.append(ModelResponse(parts=parts or [TextPart(content="")]))
        elif message.role is Role.TOOL:
            out.append(
                ModelRequest(
                    parts=[
                        ToolReturnPart(
                            tool_name=r.name, content=r.content, tool_call_id=r.tool_call_id
                        )
                        for r in message.tool_results
                    ]
                )
            )
        else:
            out.append(ModelRequest(parts=[UserPromptPart(content=message.text)]))
    return out


def _pydantic_text(messages: Sequence[Any]) -> str:
    """The text of pydantic-ai messages, one line per part (the summarizer's input)."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            kind = getattr(part, "part_kind", "")
            if kind == "tool-call":
                args = part.args if isinstance(part.args, str) else json.dumps(part.args)
                lines.append(f"{part.tool_name}({args})")
            elif hasattr(part, "content") and isinstance(part.content, str):
                lines.append(part.content)
    return "\n".join(lines)
