"""LangChain / LangGraph: :class:`CompactionMiddleware` for ``create_agent`` and
:func:`pre_model_hook` for LangGraph graphs keep an agent's messages under budget before
each model call (``docs/integrations.md``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Unpack
from typing import cast as typed

import cast.codecs.langchain as codec
from cast import Message
from csum.integrations import (
    _PROVIDER_PREFIXES,
    HistoryHook,
    HookOptions,
    KeeperOrHandler,
    _HistoryEvents,
)

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, RemoveMessage
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - exercised in the extras-free CI venv
    raise ImportError(f"csum.integrations.langchain needs LangChain: {codec.INSTALL_HINT}") from exc

__all__ = ["CompactionMiddleware", "MessagesKeeper", "PreModelHook", "pre_model_hook"]


def _encode(fresh: list[Message]) -> list[BaseMessage]:
    return codec.to_framework(codec.encode(fresh))


class MessagesKeeper(HistoryHook):
    """A state's ``messages`` through a chaincast keeper: ``None`` when nothing changed
    (or compaction failed and ``on_error`` is ``"continue"``), else the new list."""

    framework = "langchain"

    async def acompact(self, messages: Sequence[BaseMessage]) -> list[BaseMessage] | None:
        out = await self.compact_history(messages, codec.decode_counted, _encode)
        return out if self.compacted else None

    def compact(self, messages: Sequence[BaseMessage]) -> list[BaseMessage] | None:
        out = self.compact_history_sync(messages, codec.decode_counted, _encode)
        return out if self.compacted else None


_LS_PROVIDERS = {**_PROVIDER_PREFIXES, "amazon_bedrock": "bedrock", "google": "gemini"}
"""LangChain ``ls_provider`` names: the framework prefixes and two more."""


def _replace(messages: list[BaseMessage]) -> dict[str, Any]:
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


class CompactionMiddleware(
    _HistoryEvents[MessagesKeeper], AgentMiddleware[AgentState[Any], Any, Any]
):
    """``create_agent`` middleware: before each model call, the state's messages are
    brought under budget and replace the old ones (``RemoveMessage(id=REMOVE_ALL_MESSAGES)``
    then the new list, as LangGraph's message reducer expects); messages the keeper left
    alone are the state's own objects.

    Without ``budget=`` or ``model=``, it learns the agent's model at the first model call
    (LangChain shows it to ``wrap_model_call``, after ``before_model``): that first call's
    messages are kept under a share of the model's window in ``wrap_model_call``, the
    state from the second call on.

    On failure the model call goes ahead with the messages as they were and a ``failed``
    :class:`~csum.integrations.HookEvent` is reported, unless ``on_error="raise"``.
    """

    def __init__(self, keeper: KeeperOrHandler = None, **options: Unpack[HookOptions]) -> None:
        super().__init__()
        self.history = MessagesKeeper(keeper, shown_as="CompactionMiddleware({args})", **options)

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Passes the call through; on the first call, learns the agent's model and keeps
        what the model sees under the budget that model implies (see the class docstring)."""
        if self.history.awaits_model:
            self._learn(request.model)
            out = self.history.compact(request.messages)
            if out is not None:
                request = request.override(messages=typed(list[AnyMessage], out))
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        if self.history.awaits_model:
            self._learn(request.model)
            out = await self.history.acompact(request.messages)
            if out is not None:
                request = request.override(messages=typed(list[AnyMessage], out))
        return await handler(request)

    def _learn(self, model: Any) -> None:
        try:
            params = dict(model._get_ls_params())  # LangChain's own provider and model name
        except Exception:  # noqa: BLE001 - a model without LangSmith params: read attributes
            params = {}
        provider = _LS_PROVIDERS.get(str(params.get("ls_provider") or ""))
        self.history.learn_model(params.get("ls_model_name") or model, provider)

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        if self.history.awaits_model:  # compacted in wrap_model_call, once the model is known
            return None
        out = self.history.compact(state["messages"])
        return None if out is None else _replace(out)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        if self.history.awaits_model:
            return None
        out = await self.history.acompact(state["messages"])
        return None if out is None else _replace(out)


class PreModelHook(_HistoryEvents[MessagesKeeper], RunnableLambda[dict[str, Any], dict[str, Any]]):
    """The runnable :func:`pre_model_hook` returns: a LangGraph ``pre_model_hook`` (sync
    and async) whose ``events`` (and ``history``, the :class:`MessagesKeeper`) show what
    each call did."""


def pre_model_hook(
    keeper: KeeperOrHandler = None, *, replace_state: bool = True, **options: Unpack[HookOptions]
) -> PreModelHook:
    """A LangGraph ``pre_model_hook`` (sync and async; the prebuilt ``create_react_agent``
    takes one) keeping messages under budget. It sees no model: give it ``model=`` for a
    share of the model's window.

    ``replace_state=True`` rewrites the state's messages; ``False`` leaves the state
    whole and sends the compacted list to the model only (``llm_input_messages``).
    """
    history = MessagesKeeper(keeper, shown_as="pre_model_hook({args})", **options)

    def update(messages: list[BaseMessage], out: list[BaseMessage] | None) -> dict[str, Any]:
        if out is None:
            return {"llm_input_messages": messages}
        return _replace(out) if replace_state else {"llm_input_messages": out}

    def hook(state: dict[str, Any]) -> dict[str, Any]:
        return update(state["messages"], history.compact(state["messages"]))

    async def ahook(state: dict[str, Any]) -> dict[str, Any]:
        return update(state["messages"], await history.acompact(state["messages"]))

    runnable = PreModelHook(hook, afunc=ahook, name="chaincast_pre_model_hook")
    runnable.history = history
    return runnable
