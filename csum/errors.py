"""Exceptions of ``csum``.

Hierarchy::

    RuntimeError
    └── SummarizationError     a handler call failed or returned something unusable;
                               the caller's chain is untouched. The handler's exception
                               is the ``__cause__`` (an ``ExceptionGroup`` when several
                               concurrent calls failed).
"""

from __future__ import annotations

__all__ = ["SummarizationError"]


class SummarizationError(RuntimeError):
    """Summarization failed; nothing of the input was changed and no partial result
    escapes. ``section`` is the index of the section being summarized, when known."""

    def __init__(
        self, message: str, *, section: int | None = None, phase: str | None = None
    ) -> None:
        self.section = section
        self.phase = phase
        where = []
        if phase:
            where.append(phase)
        if section is not None:
            where.append(f"section {section}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{message}")
