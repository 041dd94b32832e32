"""OpenAI Agents SDK: :class:`InputFilter` keeps each model call's input under budget,
:class:`CompactingSession` hands back compacted history (``docs/integrations.md``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Unpack

import cast.codecs.openai_agents as codec
from csum.integrations import HistoryHook, HookOptions, KeeperOrHandler, _HistoryEvents, logger

try:
    from agents.items import TResponseInputItem
    from agents.memory import Session
    from agents.models import get_default_model
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised in the extras-free CI venv
    hint = f"csum.integrations.openai_agents needs the OpenAI Agents SDK: {codec.INSTALL_HINT}"
    raise ImportError(hint) from exc

__all__ = ["CompactingSession", "InputFilter", "UnboundedRunWarning"]


class UnboundedRunWarning(UserWarning):
    """A :class:`CompactingSession` used without its input filter: the history is
    compacted when a run starts, not between the model calls of the run."""


def _inner_attribute(name: str) -> Any:
    """The wrapped session's attribute ``name`` (the Session protocol's are settable)."""
    return property(
        lambda self: getattr(self.inner, name), lambda self, value: setattr(self.inner, name, value)
    )


class _ItemsKeeper(HistoryHook):
    framework = "openai-agents"

    async def compact_items(self, items: Sequence[Any]) -> list[TResponseInputItem]:
        groups = codec.group_items(list(items))
        out = await self.compact_history(
            groups,
            lambda kept: codec.decode_counted([item for group in kept for item in group]),
            lambda fresh: [list(codec.encode(fresh))],
        )
        return [item for group in out for item in group]


class InputFilter(_ItemsKeeper):
    """A ``call_model_input_filter`` running a chaincast keeper on the model input
    (``ModelInputData.input``; ``instructions`` pass untouched). Without ``budget=``, it
    takes a share of its agent's model window (``Agent(model=...)``, or the SDK's
    default model), learned at its first call.

    The SDK hands the filter its whole item list at every call; when that list starts
    with the list of the previous call, the previous result stands in for that prefix,
    so a compaction carries over to the next calls of the run instead of being redone.

    On failure the model gets the input as it was and a ``failed``
    :class:`~csum.integrations.HookEvent` is reported, unless ``on_error="raise"``
    (then the run fails with the error, as the SDK does for a failing filter).
    """

    _last: tuple[list[Any], list[Any]] | None = None
    """The previous call's input and result."""

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        items = base = list(model_data.input)
        if self._last is not None:
            last_input, last_output = self._last
            if items[: len(last_input)] == last_input:
                base = [*last_output, *items[len(last_input) :]]
        if self.awaits_model:  # the agent's model, else the SDK's default
            model = getattr(data.agent, "model", None) or get_default_model()
            chat = isinstance(model, OpenAIChatCompletionsModel)
            self.learn_model(model, "openai" if chat else "openai-responses")
        out = await self.compact_items(base)
        if self.last_event is None or self.last_event.outcome == "failed":
            self._last = None
            return model_data
        self._last = (items, out)
        if out == items:
            return model_data
        return ModelInputData(input=out, instructions=model_data.instructions)


class CompactingSession(_HistoryEvents[_ItemsKeeper]):
    """A ``Session`` storing through ``inner`` (any ``Session``) and handing back history
    kept under budget; with ``persist=True`` the compacted history replaces the stored
    one, so the keeper never summarizes the same turns twice.

    The SDK reads the session once per run: pair it with :meth:`input_filter` to keep
    every model call of a run under budget (else it warns once,
    :class:`UnboundedRunWarning`).

    On failure ``get_items`` hands back the stored items as they are and reports a
    ``failed`` event, unless ``on_error="raise"``.
    """

    def __init__(
        self,
        inner: Session,
        keeper: KeeperOrHandler = None,
        *,
        persist: bool = True,
        **options: Unpack[HookOptions],
    ) -> None:
        missing = [
            name
            for name in ("get_items", "add_items", "pop_item", "clear_session")
            if not callable(getattr(inner, name, None))
        ]
        if missing:
            raise TypeError(
                f"inner must be an Agents SDK Session (it lacks {', '.join(missing)}), not "
                f"{type(inner).__name__}: CompactingSession(SQLiteSession('user-42'), ...)"
            )
        self.inner = inner
        self.persist = persist
        self.history = _ItemsKeeper(keeper, shown_as="CompactingSession(inner, {args})", **options)
        self._filter: InputFilter | None = None
        self._warned = False

    def input_filter(self) -> InputFilter:
        """The ``call_model_input_filter`` that keeps every model call of a run under
        this session's budget, with this session's keeper:
        ``RunConfig(call_model_input_filter=session.input_filter())``."""
        if self._filter is None:
            history = self.history
            self._filter = InputFilter(
                history.keeper,
                on_error=history.on_error,
                on_event=history.on_event,
                max_events=history.events.maxlen,
            )
        return self._filter

    session_id = _inner_attribute("session_id")
    session_settings = _inner_attribute("session_settings")

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The stored history kept under budget (the latest ``limit`` items of it)."""
        if self._filter is None and not self._warned:
            self._warned = True
            warnings.warn(
                "CompactingSession compacts the history when a run starts, not between the "
                "model calls of a run: a run with many tool calls can send the model more "
                "than the budget. Add its input filter: Runner.run(agent, input, "
                "session=session, run_config=RunConfig("
                "call_model_input_filter=session.input_filter()))",
                UnboundedRunWarning,
                stacklevel=2,
            )
        stored = await self.inner.get_items()
        items = await self.history.compact_items(stored)
        if self.persist and self.history.compacted:
            await self._replace_stored(stored, items)
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def _replace_stored(
        self, stored: list[TResponseInputItem], items: list[TResponseInputItem]
    ) -> None:
        """Store ``items`` instead of ``stored``, or ``stored`` again on a failure."""
        try:
            await self.inner.clear_session()
            await self.inner.add_items(items)
        except BaseException as exc:  # a cancellation half-way must not lose it either
            await self.inner.clear_session()
            await self.inner.add_items(stored)
            if not isinstance(exc, Exception) or self.history.on_error == "raise":
                raise
            logger.warning("openai-agents compacted history not stored: %s", exc)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()
