"""Hooks that keep a framework's agent history under budget, one module per framework.

``csum.integrations.pydantic_ai``, ``csum.integrations.langchain`` and
``csum.integrations.openai_agents`` each need their framework (an optional extra) and
load only when imported; this package itself needs none of them. See
``docs/integrations.md``.
"""

from csum.config import DEFAULT_BUDGET, DEFAULT_MAX_EVENTS, DEFAULT_MODEL_SHARE
from csum.integrations._history import (
    BudgetLike,
    HistoryHook,
    HookEvent,
    Keeper,
    OnError,
    SummarizerKeeper,
    default_keeper,
    model_name,
    provider_of,
)

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_MODEL_SHARE",
    "BudgetLike",
    "HistoryHook",
    "HookEvent",
    "Keeper",
    "OnError",
    "SummarizerKeeper",
    "default_keeper",
    "model_name",
    "provider_of",
]
