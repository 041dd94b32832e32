"""The compaction settings a :class:`~csum.Budget` carries besides its limit: their
defaults and the checks made when a budget is made (each error names its field)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["DEFAULT_COOLDOWN_TURNS", "DEFAULT_MAX_DEPTH", "SETTING_DEFAULTS", "check_settings"]

DEFAULT_MAX_DEPTH = 3
"""How many compactions a summary's content goes through before it is kept as it is
(``Budget.max_depth``)."""
DEFAULT_COOLDOWN_TURNS = 4
"""Calls after a compaction during which the trigger (not the limit) is ignored
(``Budget.cooldown_turns``)."""

SETTING_DEFAULTS: Final[Mapping[str, object]] = MappingProxyType(
    {
        "trigger": None,
        "keep_ratio": None,
        "summary_ratio": None,
        "summary_reserve": None,
        "max_depth": DEFAULT_MAX_DEPTH,
        "cooldown_turns": DEFAULT_COOLDOWN_TURNS,
    }
)
"""Each setting's default, in field order (None: the Compactor's default)."""

MAX_SUMMARY_RATIO = 0.5
"""Summaries take at most half of the budget (the rest is what they summarize for)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_settings(limit: int, unit: str, values: Mapping[str, object]) -> None:
    """Raise ``TypeError`` (wrong type) or ``ValueError`` (out of range) naming the first
    bad setting of a budget of ``limit`` ``unit``."""
    trigger = values["trigger"]
    if trigger is not None:
        if not _is_number(trigger):
            raise TypeError(
                f"Budget.trigger must be None, a share of the limit (float) or a size in "
                f"{unit} (int), not {trigger!r}"
            )
        if isinstance(trigger, float) and not 0 < trigger <= 1:
            raise ValueError(f"Budget.trigger as a share must be within (0, 1], got {trigger!r}")
        if isinstance(trigger, int) and not 0 < trigger <= limit:
            raise ValueError(f"Budget.trigger must be within 1..{limit} {unit}, got {trigger}")
    for name, high in (("keep_ratio", 1.0), ("summary_ratio", MAX_SUMMARY_RATIO)):
        ratio = values[name]
        if ratio is None:
            continue
        if not _is_number(ratio):
            raise TypeError(f"Budget.{name} must be a number or None, not {ratio!r}")
        assert isinstance(ratio, int | float)
        if not 0 < ratio <= high:
            raise ValueError(f"Budget.{name} must be within (0, {high:g}], got {ratio!r}")
    reserve = values["summary_reserve"]
    if reserve is not None:
        if not _is_int(reserve):
            raise TypeError(
                f"Budget.summary_reserve must be an int ({unit}) or None, not {reserve!r}"
            )
        assert isinstance(reserve, int)
        if not 0 <= reserve < limit:
            raise ValueError(
                f"Budget.summary_reserve must be within 0..{limit - 1} {unit}, got {reserve}"
            )
    depth = values["max_depth"]
    if depth is not None:
        if not _is_int(depth):
            raise TypeError(f"Budget.max_depth must be an int or None, not {depth!r}")
        assert isinstance(depth, int)
        if depth < 1:
            raise ValueError(f"Budget.max_depth must be at least 1, got {depth}")
    cooldown = values["cooldown_turns"]
    if not _is_int(cooldown):
        raise TypeError(f"Budget.cooldown_turns must be an int, not {cooldown!r}")
    assert isinstance(cooldown, int)
    if cooldown < 0:
        raise ValueError(f"Budget.cooldown_turns must be >= 0, got {cooldown}")
