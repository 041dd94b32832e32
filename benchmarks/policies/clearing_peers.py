"""Peers that clear old tool results without a model call, as policies.

* :class:`AnthropicClearToolUses` — an emulation of Anthropic's server-side context
  editing strategy ``clear_tool_uses_20250919`` (beta ``context-management-2025-06-27``,
  https://platform.claude.com/docs/en/build-with-claude/context-editing). Its documented
  semantics: once the prompt's input tokens exceed ``trigger`` (default 100,000), the
  oldest tool results are cleared in chronological order and replaced by a placeholder,
  except the newest ``keep`` tool uses (default 3); ``clear_at_least`` (default none)
  is a minimum: when clearing cannot remove that many tokens the strategy is not
  applied; ``exclude_tools`` names tools whose results are never cleared;
  ``clear_tool_inputs`` (default false) clears the calls' parameters too. It runs on
  the server before every request, and the client keeps its full history: the payload
  the model sees is edited anew at each request, the history never is. The
  placeholder's exact text is not documented; a constant ``[tool result cleared]``
  is used here (a constant keeps cleared messages byte-identical across requests).
* :class:`NaiveClearing` — the same with no trigger: every turn, all tool results but
  the newest 3 are cleared.
* :class:`LangChainContextEditing` — LangChain's ``ContextEditingMiddleware`` with
  ``ClearToolUsesEdit`` (package ``langchain``), driven through its real
  ``awrap_model_call`` with a ``ModelRequest`` and a model handler that records the
  edited messages (no model call is needed for clearing). The middleware edits a deep
  copy of the request's messages, so its agent state keeps the full history too.

Because the edits are transient, these policies keep the full history themselves: the
harness hands back the payload they sent, and they map each edited message back to its
original before editing again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from benchmarks.policies.cost import BYTES_PER_TOKEN
from benchmarks.policies.policy import Policy, PolicyStep, _to_langchain
from cast import Message, Role, ToolCall, ToolResult

__all__ = [
    "ANTHROPIC_PLACEHOLDER",
    "AnthropicClearToolUses",
    "LangChainContextEditing",
    "NaiveClearing",
    "TransientEditPolicy",
    "context_editing_available",
]

ANTHROPIC_PLACEHOLDER = "[tool result cleared]"


def context_editing_available() -> bool:
    """Whether ``langchain`` has ``ContextEditingMiddleware``."""
    try:
        from langchain.agents.middleware import ContextEditingMiddleware  # noqa: F401
    except ImportError:
        return False
    return True


def _differs(a: Sequence[Message], b: Sequence[Message]) -> bool:
    return len(a) != len(b) or any(x is not y for x, y in zip(a, b, strict=True))


class TransientEditPolicy(Policy):
    """A policy whose edits apply to one request only: it edits the full history."""

    guarantees_valid = True

    def __init__(self, budget: int) -> None:
        super().__init__(budget, None)
        self._originals: dict[int, tuple[Message, Message]] = {}
        """id(sent message) -> (sent message, its original)."""
        self._edited: dict[tuple[int, str], tuple[Message, Message]] = {}
        """(id(original), edit) -> (original, edited): an edit made once is reused."""
        self._first: Message | None = None

    def _restore(self, messages: Sequence[Message]) -> list[Message]:
        """The full history behind ``messages`` (a new workload starts afresh)."""
        if messages and messages[0] is not self._first:
            self.new_session()
            self._first = messages[0]
        out = []
        for message in messages:
            hit = self._originals.get(id(message))
            out.append(hit[1] if hit is not None and hit[0] is message else message)
        return out

    def _remember(self, original: Message, edit: str, make: Any) -> Message:
        key = (id(original), edit)
        hit = self._edited.get(key)
        if hit is not None and hit[0] is original:
            return hit[1]
        edited: Message = make()
        self._edited[key] = (original, edited)
        self._originals[id(edited)] = (edited, original)
        return edited

    def cleared_result(self, message: Message, placeholder: str) -> Message:
        """``message`` (a tool message) with every result's content replaced."""

        def make() -> Message:
            parts = tuple(
                part.model_copy(update={"content": placeholder})
                if isinstance(part, ToolResult)
                else part
                for part in message.parts
            )
            return Message(role=message.role, parts=parts)

        return self._remember(message, "result", make)

    def cleared_inputs(self, message: Message, call_ids: frozenset[str]) -> Message:
        """``message`` (an AI message) with the arguments of ``call_ids`` emptied."""

        def make() -> Message:
            parts = tuple(
                part.model_copy(update={"arguments": "{}"})
                if isinstance(part, ToolCall) and part.id in call_ids
                else part
                for part in message.parts
            )
            return Message(role=message.role, parts=parts)

        return self._remember(message, "inputs:" + ",".join(sorted(call_ids)), make)

    def new_session(self) -> None:
        """Forget every mapping (a new workload)."""
        self._originals.clear()
        self._edited.clear()


class AnthropicClearToolUses(TransientEditPolicy):
    """Anthropic's ``clear_tool_uses_20250919``, emulated (see the module doc).

    ``trigger`` and ``clear_at_least`` are in tokens (bytes / 4); ``trigger=None`` is
    the budget in tokens, so the peer clears when the full history passes the budget.
    """

    keeps_last_pair = False  # ``keep`` counts tool uses, not the newest pair

    def __init__(
        self,
        budget: int,
        *,
        trigger: int | None = None,
        keep: int = 3,
        clear_at_least: int = 0,
        exclude_tools: Sequence[str] = (),
        clear_tool_inputs: bool = False,
        name: str = "clear_tool_uses_20250919 (emulated)",
        description: str = "",
    ) -> None:
        super().__init__(budget)
        self.trigger = budget // BYTES_PER_TOKEN if trigger is None else trigger
        self.keep = keep
        self.clear_at_least = clear_at_least
        self.exclude_tools = frozenset(exclude_tools)
        self.clear_tool_inputs = clear_tool_inputs
        self.name = name
        self.description = description or (
            f"trigger {self.trigger:,} tokens, keep {keep} tool uses"
            + (f", clear_at_least {clear_at_least:,}" if clear_at_least else "")
        )

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        history = self._restore(messages)
        tokens = sum(m.size for m in history) / BYTES_PER_TOKEN
        if tokens <= self.trigger:
            return history, self._step(_differs(history, messages))
        results = [
            (index, part)
            for index, message in enumerate(history)
            if message.role is Role.TOOL
            for part in message.parts
            if isinstance(part, ToolResult)
        ]
        old = results[: max(0, len(results) - self.keep)]
        clear = [(i, p) for i, p in old if p.name not in self.exclude_tools]
        by_message: dict[int, list[ToolResult]] = {}
        for index, part in clear:
            by_message.setdefault(index, []).append(part)
        # Messages whose results are all clearable are cleared whole (a tool message
        # here holds one result, as the recorded chains do).
        targets = [i for i, parts in by_message.items() if len(parts) == len(history[i].parts)]
        saved = sum(
            history[i].size - self.cleared_result(history[i], ANTHROPIC_PLACEHOLDER).size
            for i in targets
        )
        call_ids = frozenset(p.tool_call_id for i in targets for p in by_message[i])
        out = list(history)
        if self.clear_tool_inputs and call_ids:
            for index, message in enumerate(history):
                if message.role is Role.AI and any(c.id in call_ids for c in message.tool_calls):
                    ids = frozenset(c.id for c in message.tool_calls if c.id in call_ids)
                    edited = self.cleared_inputs(message, ids)
                    saved += message.size - edited.size
                    out[index] = edited
        if not targets or saved / BYTES_PER_TOKEN < self.clear_at_least:
            return history, self._step(_differs(history, messages))
        for index in targets:
            out[index] = self.cleared_result(history[index], ANTHROPIC_PLACEHOLDER)
        return out, self._step(_differs(out, messages))


class NaiveClearing(AnthropicClearToolUses):
    """Every turn, every tool result but the newest ``keep`` (3) is cleared."""

    def __init__(self, budget: int, *, keep: int = 3) -> None:
        super().__init__(
            budget,
            trigger=0,
            keep=keep,
            name=f"naive clearing (every turn, keep {keep})",
            description=f"every turn, all tool results but the newest {keep} cleared",
        )


class LangChainContextEditing(TransientEditPolicy):
    """LangChain's ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])``.

    ``trigger`` is in tokens as the middleware's approximate counter counts them
    (about 4 characters a token); ``None`` is the budget / 4.
    """

    keeps_last_pair = False

    def __init__(
        self,
        budget: int,
        *,
        trigger: int | None = None,
        keep: int = 3,
        clear_at_least: int = 0,
        name: str = "ContextEditingMiddleware + ClearToolUsesEdit (langchain)",
    ) -> None:
        super().__init__(budget)
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

        self.placeholder = "[cleared]"
        edit = ClearToolUsesEdit(
            trigger=budget // BYTES_PER_TOKEN if trigger is None else trigger,
            keep=keep,
            clear_at_least=clear_at_least,
            placeholder=self.placeholder,
        )
        self.middleware: Any = ContextEditingMiddleware(edits=[edit])
        self.model = _null_chat_model()
        self.name = name
        self.description = (
            f"ClearToolUsesEdit(trigger={edit.trigger:,} tokens, keep={keep}), approximate counter"
        )

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        from langchain.agents.middleware.types import ModelRequest
        from langchain_core.messages import AIMessage, ToolMessage

        history = self._restore(messages)
        started = time.perf_counter()
        system, body = (
            (history[0], history[1:])
            if history and history[0].role is Role.SYSTEM
            else (None, history)
        )
        converted = _to_langchain(body)
        glue = time.perf_counter() - started
        seen: list[Any] = []

        async def record(request: Any) -> Any:
            seen.extend(request.messages)
            return AIMessage(content="")

        request = ModelRequest(model=self.model, messages=converted)
        await self.middleware.awrap_model_call(request, record)
        started = time.perf_counter()
        out = [system] if system is not None else []
        for original, edited in zip(body, seen, strict=True):
            meta = getattr(edited, "response_metadata", {}).get("context_editing", {})
            if isinstance(edited, ToolMessage) and meta.get("cleared"):
                out.append(self.cleared_result(original, self.placeholder))
            elif isinstance(edited, AIMessage) and meta.get("cleared_tool_inputs"):
                out.append(self.cleared_inputs(original, frozenset(meta["cleared_tool_inputs"])))
            else:
                out.append(original)
        glue += time.perf_counter() - started
        return out, self._step(_differs(out, messages), glue)


def _null_chat_model() -> Any:
    """A LangChain chat model that is never called (clearing needs no model)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=[""])
