"""Named Compactor settings for one purpose (``LOW_COST``, ``LONG_MEMORY`` in
:mod:`csum.compactor`), given in the grouped style: the budget settings go into the
budget, the clearing stage into ``clearing=``::

    Compactor(handler, budget=LOW_COST.budget("128KiB"), clearing=LOW_COST.clearing)

A preset is still a mapping of the Compactor's old loose keywords, so
``Compactor(budget=..., **LOW_COST)`` keeps working for one release, with a
``DeprecationWarning`` naming the spelling above.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, KeysView, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from csum._deprecated import deprecated
from csum.budget import Budget, as_budget
from csum.clearing import DEFAULT_CLEARING, Clearing

__all__ = ["Preset"]


class _Unset(enum.Enum):
    UNSET = "unset"


_UNSET: Final = _Unset.UNSET
"""A preset that sets no clearing stage (the Compactor's default applies)."""

_CHECK_LIMIT = 1 << 40
"""The limit a preset's settings are checked against (presets hold shares, not sizes)."""


class Preset(Mapping[str, Any]):
    """Compactor settings with a name: budget settings (any :class:`~csum.Budget`
    setting: ``keep_ratio``, ``summary_ratio``, ``max_depth``...) and, when the preset
    sets one, a clearing stage (``clearing=None``: none; left out: the default).

    :meth:`budget` applies the settings to a budget of yours; :attr:`clearing` is the
    preset's clearing stage (the Compactor's default when it sets none). Combine by
    replacing either: ``LOW_COST.budget(Budget.tokens(64_000, keep_ratio=0.2))`` (a
    setting your budget sets wins), ``clearing=Clearing(keep=5)``.
    """

    __slots__ = ("_clearing", "_keywords", "_settings", "name")

    def __init__(
        self,
        name: str,
        *,
        clearing: Clearing | Literal[_Unset.UNSET] | None = _UNSET,
        **settings: Any,
    ) -> None:
        Budget(_CHECK_LIMIT, **settings)  # each bad setting is an error naming it
        if clearing is not _UNSET and clearing is not None and not isinstance(clearing, Clearing):
            raise TypeError(f"Preset clearing must be a csum.Clearing or None, not {clearing!r}")
        self.name = name
        self._settings: Mapping[str, Any] = MappingProxyType(dict(settings))
        self._clearing = clearing
        old = dict(settings) if clearing is _UNSET else {"clearing": clearing, **settings}
        self._keywords: Mapping[str, Any] = MappingProxyType(old)

    def budget(self, budget: int | str | Budget) -> Budget:
        """``budget`` (an int in bytes, a size string such as ``"128KiB"`` or
        ``"4000 tokens"``, or a :class:`~csum.Budget`) with this preset's settings; a
        setting the given Budget sets itself is kept."""
        base = as_budget(budget)
        own = base.settings()
        return base.evolve(**{k: v for k, v in self._settings.items() if k not in own})

    @property
    def clearing(self) -> Clearing | None:
        """The preset's clearing stage (None: none), or the Compactor's default when the
        preset sets none."""
        return DEFAULT_CLEARING if self._clearing is _UNSET else self._clearing

    def settings(self) -> dict[str, Any]:
        """The budget settings the preset sets, by :class:`~csum.Budget` field name."""
        return dict(self._settings)

    # -- the old spelling, Compactor(**preset), for one release ------------------------

    def keys(self) -> KeysView[str]:
        """The old loose keywords; unpacking (``**preset``) calls this, so it warns."""
        deprecated(
            f"Compactor(**{self.name})",
            f"Compactor(budget={self.name}.budget(limit), clearing={self.name}.clearing)",
            stacklevel=3,
        )
        return KeysView(self)

    def __getitem__(self, key: str) -> Any:
        return self._keywords[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keywords)

    def __len__(self) -> int:
        return len(self._keywords)

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self._settings.items()]
        if self._clearing is not _UNSET:
            shown.insert(0, f"clearing={self._clearing!r}")
        return f"Preset({self.name!r}, {', '.join(shown)})"
