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
  the stored one, so the keeper never summarizes the same turns twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cast.codecs.openai_agents as codec
from cast import Message
from csum.budget import Budget
from csum.integrations._history import HistoryHook, HookEvent, Keeper, OnError, logger

try:
    from agents.items import TResponseInputItem
    from agents.memory import Session, SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised in the extras-free CI venv
    hint = f"csum.integrations.openai_agents needs the OpenAI Agents SDK: {codec.INSTALL_HINT}"
    raise ImportError(hint) from exc

__all__ = ["CompactingSession", "InputFilter"]

Group = list[Any]


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
        out = await self.compact_items(base)
        if self.events[-1].outcome == "failed":
            self._last_input = self._last_output = None
            return model_data
        self._last_input, self._last_output = items, out
        if out == items:
            return model_data
        return ModelInputData(input=out, instructions=model_data.instructions)


class CompactingSession:
    """A ``Session`` storing through ``inner`` and handing back history kept under budget.

    On failure ``get_items`` hands back the stored items as they are and reports a
    ``failed`` event, unless ``on_error="raise"``.
    """

    def __init__(
        self,
        inner: Session,
        keeper: Keeper | None = None,
        *,
        budget: int | Budget | None = None,
        persist: bool = True,
        on_error: OnError = "continue",
        on_event: Callable[[HookEvent], None] | None = None,
    ) -> None:
        self.inner = inner
        self.persist = persist
        self.history = _ItemsKeeper(keeper, budget=budget, on_error=on_error, on_event=on_event)

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    @property
    def session_settings(self) -> SessionSettings | None:
        return self.inner.session_settings

    @property
    def events(self) -> list[HookEvent]:
        """Every compaction event so far, oldest first."""
        return self.history.events

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The stored history kept under budget (the latest ``limit`` items of it)."""
        stored = await self.inner.get_items()
        items = await self.history.compact_items(stored)
        if self.persist and self.events[-1].outcome == "compacted":
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
