"""The recall tool's name, shared by :mod:`csum.recall` and :mod:`csum.archive` (which
sits below the archive the tool reads)."""

from __future__ import annotations

from typing import Final

RECALL_TOOL_NAME: Final = "recall_archived"
"""The name of the tool a model calls to read archived messages back."""
