"""Named Compactor settings for one purpose (``LOW_COST``, ``LONG_MEMORY`` in
:mod:`csum.compactor`): the budget settings go into the budget, the clearing stage into
``clearing=``::

    Compactor(handler, budget=LOW_COST.budget("128KiB"), clearing=LOW_COST.clearing)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from csum._budget_settings import DEFAULT_MAX_DEPTH
from csum.budget import Budget, as_budget
from csum.clearing import Clearing

__all__ = ["Preset"]

_CHECK_LIMIT = 1 << 40
"""The limit a preset's settings are checked against (presets hold shares, not sizes)."""


@dataclass(frozen=True, slots=True)
class Preset:
    """Compactor settings with a name: the :class:`~csum.Budget` settings it sets
    (``trigger``, ``keep_ratio``, ``summary_ratio``, ``max_depth``) and its clearing
    stage (None: none).

    :meth:`budget` puts the settings on a budget of yours; :attr:`clearing` goes to
    ``Compactor(clearing=...)``. Change one with ``LOW_COST.budget(limit).evolve(...)``
    or ``dataclasses.replace(LOW_COST, keep_ratio=0.2)``.
    """

    name: str
    clearing: Clearing | None
    trigger: float
    keep_ratio: float
    summary_ratio: float
    max_depth: int | None = DEFAULT_MAX_DEPTH

    def __post_init__(self) -> None:
        self.budget(_CHECK_LIMIT)  # each bad setting is an error naming it
        if self.clearing is not None and not isinstance(self.clearing, Clearing):
            raise TypeError(
                f"Preset.clearing must be a csum.Clearing or None, not {self.clearing!r}"
            )

    def settings(self) -> dict[str, Any]:
        """The budget settings of the preset, by :class:`~csum.Budget` field name."""
        return {
            "trigger": self.trigger,
            "keep_ratio": self.keep_ratio,
            "summary_ratio": self.summary_ratio,
            "max_depth": self.max_depth,
        }

    def budget(self, budget: int | str | Budget) -> Budget:
        """``budget`` (an int in bytes, a size string such as ``"128KiB"`` or
        ``"4000 tokens"``, or a :class:`~csum.Budget`) with this preset's settings in
        place of its own."""
        return as_budget(budget).evolve(
            trigger=self.trigger,
            keep_ratio=self.keep_ratio,
            summary_ratio=self.summary_ratio,
            max_depth=self.max_depth,
        )
