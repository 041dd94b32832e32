"""OpenAI Agents SDK: keep the model input under budget, and sessions that hand back
compacted history.

- :class:`InputFilter` for ``RunConfig(call_model_input_filter=InputFilter(budget=...))``:
  before each model call, ``ModelInputData.input`` (Responses input items) goes through
  the keeper; ``instructions`` pass untouched. The SDK keeps its own full item list; the
  filter carries its last result over to the next call of the run, and
  :class:`CompactingSession` makes compaction stick across runs.
- :class:`CompactingSession` wraps any ``Session`` (``SQLiteSession``, a Redis one...):
  items are stored through the wrapped session and ``get_items`` hands back the history
  kept under budget; with ``persist=True`` (the default) the compacted history replaces
  the stored one, so the keeper never summarizes the same turns twice. The SDK reads a
  session once, when a run starts: only the input filter bounds the model calls inside
  a run, so ``session.input_filter()`` gives the filter to use with it (and a session
  used without it warns once, :class:`UnboundedRunWarning`).

Without ``budget=``, :class:`InputFilter` takes a share of its agent's model window
(``Agent(model=...)``, or the SDK's default model), learned at its first call.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import cast.codecs.openai_agents as codec
from cast import Message
from csum.config import DEFAULT_MAX_EVENTS
from csum.integrations._history import (
    BudgetLike,
    HistoryHook,
    HookEvent,
    Keeper,
    OnError,
    logger,
)
from csum.request import Handler

try:
    from agents.items import TResponseInputItem
    from agents.memory import Session, SessionSettings
    from agents.models import get_default_model
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised in the extras-free CI venv
    hint = f"csum.integrations.openai_agents needs the OpenAI Agents SDK: {codec.INSTALL_HINT}"
    raise ImportError(hint) from exc

__all__ = ["CompactingSession", "InputFilter", "UnboundedRunWarning"]

Group = list[Any]
KeeperOrHandler = Keeper | Handler | None


class UnboundedRunWarning(UserWarning):
    """A :class:`CompactingSession` used without its input filter: the history is
    compacted when a run starts, not between the model calls of the run."""


def _decode(groups: Sequence[Group]) -> tuple[list[Message], list[int]]:
    return codec.decode_counted([item for group in groups for item in group])


def _encode(fresh: list[Message]) -> list[Group]:
    return [list(codec.encode(fresh))]


class _ItemsKeeper(HistoryHook):
    framework = "openai-agents"

    async def compact_items(self, items: Sequence[Any]) -> list[TResponseInputItem]:
        groups = codec.group_items(list(items))
        out = await self.compact_history(groups, _decode, _encode)
        return [item for group in out for item in group]


class InputFilter(_ItemsKeeper):
    """A ``call_model_input_filter`` running a chaincast keeper on the model input.

    The SDK hands the filter its whole item list at every call; when that list starts
    with the list of the previous call, the previous result stands in for that prefix,
    so a compaction carries over to the next calls of the run instead of being redone.

    On failure the model gets the input as it was and a ``failed``
    :class:`~csum.integrations.HookEvent` is reported, unless ``on_error="raise"``
    (then the run fails with the error, as the SDK does for a failing filter).
    """

    _last_input: list[Any] | None = None
    _last_output: list[Any] | None = None

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        items = list(model_data.input)
        base = items
        last_input, last_output = self._last_input, self._last_output
        if last_input is not None and last_output is not None:
            n = len(last_input)
            if len(items) >= n and items[:n] == last_input:
                base = [*last_output, *items[n:]]
        self._learn_agent_model(data)
        out = await self.compact_items(base)
        if self.last_event is None or self.last_event.outcome == "failed":
            self._last_input = self._last_output = None
            return model_data
        self._last_input, self._last_output = items, out
        if out == items:
            return model_data
        return ModelInputData(input=out, instructions=model_data.instructions)

    def _learn_agent_model(self, data: CallModelData[Any]) -> None:
        """The agent's model (or the SDK's default one) for a budget from its window."""
        if not self.awaits_model:
            return
        model = getattr(data.agent, "model", None) or get_default_model()
        chat = isinstance(model, OpenAIChatCompletionsModel)
        self.learn_model(model, "openai" if chat else "openai-responses")


class CompactingSession:
    """A ``Session`` storing through ``inner`` and handing back history kept under budget.

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
        budget: BudgetLike | None = None,
        model: object | None = None,
        target: str | None = None,
        persist: bool = True,
        on_error: OnError = "continue",
        on_event: Callable[[HookEvent], None] | None = None,
        max_events: int | None = DEFAULT_MAX_EVENTS,
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
        self.history = _ItemsKeeper(
            keeper,
            budget=budget,
            model=model,
            target=target,
            on_error=on_error,
            on_event=on_event,
            max_events=max_events,
            shown_as="CompactingSession(inner, {args})",
        )
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

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    @session_id.setter
    def session_id(self, value: str) -> None:  # the Session protocol's attribute is settable
        self.inner.session_id = value

    @property
    def session_settings(self) -> SessionSettings | None:
        return self.inner.session_settings

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self.inner.session_settings = value

    @property
    def events(self) -> deque[HookEvent]:
        """The latest compaction events of ``get_items``, oldest first."""
        return self.history.events

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
        last = self.history.last_event
        if self.persist and last is not None and last.outcome == "compacted":
            await self._replace_stored(stored, items)
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def _replace_stored(
        self, stored: list[TResponseInputItem], items: list[TResponseInputItem]
    ) -> None:
        """Store ``items`` instead of ``stored``. When the inner session fails half-way
        (cleared, not refilled), ``stored`` is put back so the history is never lost;
        the error is then raised under ``on_error="raise"``, else logged (the caller
        still gets the compacted items, and the next call compacts again)."""
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
