"""pydantic-ai: :class:`HistoryProcessor` keeps an agent's messages under budget,
``Agent(model, capabilities=[HistoryProcessor(budget=32_000).capability()])``; pydantic-ai
keeps what it returns as the run's history (``result.all_messages()``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import cast.codecs.pydantic_ai as codec
from csum.integrations import _PROVIDER_PREFIXES, HistoryHook

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ThinkingPart
except ImportError as exc:  # pragma: no cover - exercised in the extras-free CI venv
    hint = f"csum.integrations.pydantic_ai needs pydantic-ai: {codec.INSTALL_HINT}"
    raise ImportError(hint) from exc

__all__ = ["HistoryProcessor"]


class HistoryProcessor(HistoryHook):
    """A pydantic-ai history processor running a chaincast keeper: the processor itself
    is the ``messages -> messages`` callable ``history_processors=[...]`` takes,
    :meth:`capability` the ``ProcessHistory`` capability for ``capabilities=[...]``.

    Through :meth:`capability` the processor learns the agent's model at its first
    call: without ``budget=``, its default keeper then takes
    :data:`~csum.integrations.DEFAULT_MODEL_SHARE` of that model's context window and
    shapes summaries for its provider (``model.system``).

    On failure (a part chaincast cannot hold, a keeper error) the agent goes on with its
    history as it was and a ``failed`` :class:`~csum.integrations.HookEvent` is
    reported, unless ``on_error="raise"``.
    """

    framework = "pydantic-ai"

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        provider = _signature_provider(messages)
        out = await self.compact_history(
            messages,
            codec.decode_counted,
            lambda fresh: codec.to_framework(codec.encode(fresh, provider_name=provider)),
        )
        return _keep_instructions(messages, out)

    async def with_context(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """The processor with pydantic-ai's run context: learns the agent's model (see
        the class docstring), then compacts."""
        system = getattr(ctx.model, "system", None)  # its provider's name
        provider = _PROVIDER_PREFIXES.get(system) if isinstance(system, str) else None
        self.learn_model(ctx.model, provider)
        return await self(messages)

    def capability(self) -> ProcessHistory[Any]:
        """This processor as the capability ``Agent(capabilities=[...])`` takes."""
        return ProcessHistory(self.with_context)


def _signature_provider(messages: Sequence[ModelMessage]) -> str | None:
    """The provider of the latest signed thinking part (re-encoded reasoning's)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ThinkingPart) and part.signature and part.provider_name:
                    return part.provider_name
    return None


def _keep_instructions(
    before: Sequence[ModelMessage], after: list[ModelMessage]
) -> list[ModelMessage]:
    """The latest request's instructions on the rebuilt latest request (read there)."""
    if not before or not after or after[-1] is before[-1]:
        return after
    old, new = before[-1], after[-1]
    if isinstance(old, ModelRequest) and isinstance(new, ModelRequest) and old.instructions:
        after[-1] = dataclasses.replace(new, instructions=old.instructions)
    return after
