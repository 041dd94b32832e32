"""Old spellings kept for one release: each use warns (``DeprecationWarning``) with the
spelling that replaces it."""

from __future__ import annotations

import argparse
import dataclasses
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, TextIO, TypeVar

from csum._budget_settings import SETTING_DEFAULTS
from csum.budget import Budget
from csum.settings import Robustness, Stores

__all__ = [
    "CompactorKeywords",
    "add_keep_ratio_flags",
    "deprecated",
    "keep_ratio_flag",
    "moved_into",
]

_Settings = TypeVar("_Settings")


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (removed in the next release)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved_into(
    owner: str,
    group: str,
    settings: _Settings | None,
    default: _Settings,
    legacy: Mapping[str, Any],
    *,
    stacklevel: int = 4,
) -> _Settings:
    """The settings object ``owner`` runs with: ``settings`` (or ``default``), or one made
    from the old keywords ``legacy`` that moved into it (each warns, naming the new
    spelling). Giving both is a ``TypeError``; so is a keyword the group does not have.
    """
    if not legacy:
        return default if settings is None else settings
    kind = type(default).__name__
    names = {f.name for f in dataclasses.fields(default)}  # type: ignore[arg-type]
    for name in legacy:
        if name not in names:
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")
    given = ", ".join(f"{name}=..." for name in legacy)
    if settings is not None:
        raise TypeError(f"{owner}(): give {given} inside {group}={kind}(...), not beside it")
    deprecated(f"{owner}({given})", f"{owner}({group}={kind}({given}))", stacklevel=stacklevel)
    made: _Settings = dataclasses.replace(default, **legacy)  # type: ignore[type-var]
    return made


_RENAMED: Final[Mapping[str, str]] = MappingProxyType({"target_ratio": "keep_ratio"})
"""Old keyword spellings of the Compactor (a ``target_*`` that meant a size; the
provider is ``target``) and the new ones."""
_BUDGET: Final = frozenset(SETTING_DEFAULTS)
"""The Compactor's old loose keywords that are now :class:`~csum.Budget` fields."""
_STORES: Final = frozenset(f.name for f in dataclasses.fields(Stores))
_ROBUSTNESS: Final = frozenset(f.name for f in dataclasses.fields(Robustness))


@dataclass(frozen=True, slots=True)
class CompactorKeywords:
    """The Compactor's old keywords, sorted by where they went: into ``budget=`` (the
    settings of :class:`~csum.Budget`, the renamed ``target_ratio`` among them), into
    ``stores=``, into ``robustness=``."""

    renamed: dict[str, Any]
    stores: dict[str, Any]
    robustness: dict[str, Any]
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def sort(cls, given: Mapping[str, Any]) -> CompactorKeywords:
        """Sort ``given``; a keyword the Compactor never had is a ``TypeError``."""
        for name in given:
            if name not in _RENAMED and name not in _BUDGET | _STORES | _ROBUSTNESS:
                raise TypeError(f"Compactor() got an unexpected keyword argument {name!r}")
        return cls(
            {k: v for k, v in given.items() if k in _RENAMED},
            {k: v for k, v in given.items() if k in _STORES},
            {k: v for k, v in given.items() if k in _ROBUSTNESS},
            {k: v for k, v in given.items() if k in _BUDGET},
        )

    def budget_with(self, budget: Budget) -> Budget:
        """``budget`` with the old loose keywords (``keep_ratio=``, ``trigger=``... and
        ``target_ratio=``) as its settings, warning once, naming the new spelling. A
        keyword also set inside ``budget`` (or given in both its spellings) is a
        ``TypeError``."""
        loose = dict(self.budget)
        if "target_ratio" in self.renamed:
            if "keep_ratio" in loose:
                raise TypeError(
                    "Compactor(): give keep_ratio=..., not both keep_ratio= and its old "
                    "spelling target_ratio="
                )
            loose["keep_ratio"] = self.renamed["target_ratio"]
        if not loose:
            return budget
        written = [*self.renamed, *self.budget]
        twice = [name for name in loose if name in budget.settings()]
        if twice:
            names = ", ".join(f"{name}=" for name in twice)
            raise TypeError(
                f"Compactor(): {names} given both beside budget= and inside it ({budget!r}): "
                f"give it inside the Budget only"
            )
        given = ", ".join(f"{name}=..." for name in written)
        settings = ", ".join(f"{name}=..." for name in loose)
        deprecated(
            f"Compactor({given})",
            f"Compactor(budget=Budget(limit, {settings})) (or budget.evolve({settings}))",
            stacklevel=4,
        )
        return budget.evolve(**loose)

    def stores_with(self, stores: Stores | None) -> Stores:
        """``stores``, or one made of the old ``cache=`` / ``archive=`` (warns)."""
        if stores is not None and not isinstance(stores, Stores):
            raise TypeError(f"stores must be a csum.Stores or None, not {type(stores).__name__}")
        return moved_into("Compactor", "stores", stores, Stores(), self.stores, stacklevel=5)


def add_keep_ratio_flags(add: Callable[..., Any], help_text: str) -> None:
    """Add ``--keep-ratio`` (default None: the Compactor's) and its old spelling
    ``--target-ratio`` (hidden) with ``add`` (a parser's or a group's ``add_argument``)."""
    add("--keep-ratio", type=float, default=None, metavar="R", help=help_text)
    add("--target-ratio", type=float, default=None, help=argparse.SUPPRESS)


def keep_ratio_flag(args: argparse.Namespace, err: TextIO) -> float | None:
    """The ``--keep-ratio`` given (None: not given), checked; the old ``--target-ratio``
    is read too, with a warning on ``err``. A bad value is a ``ValueError`` naming the
    flag as it was written."""
    old: float | None = args.target_ratio
    value: float | None = args.keep_ratio
    flag = "--keep-ratio"
    if old is not None:
        if value is not None:
            raise ValueError("give --keep-ratio, not both it and its old spelling --target-ratio")
        value, flag = old, "--target-ratio"
    if value is not None and not 0 < value <= 1:
        raise ValueError(f"{flag} must be within (0, 1], got {value}")
    if old is not None:  # after the checks: a usage error stays one line
        print(
            "warning: --target-ratio is deprecated and will be removed in the next release: "
            "use --keep-ratio",
            file=err,
        )
    return value
