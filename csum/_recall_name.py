"""The recall tool's name, in a module of its own: the tool (:mod:`csum.recall`) and
the synthetic recall pairs re-insertion writes (:mod:`csum.archive`) must agree on it,
and re-insertion sits below the archive the tool reads."""

from __future__ import annotations

from typing import Final

RECALL_TOOL_NAME: Final = "recall_archived"
"""The name of the tool a model calls to read archived messages back."""
