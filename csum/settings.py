"""Settings objects shared by the engines, each given once as one frozen value.

* :class:`Robustness`: how a summarize handler is called (timeout, retries, input
  limit and splitting, concurrency, fallback). ``RobustHandler(handler, Robustness(...))``
  and ``Compactor(handler, robustness=Robustness(...))`` take the same object: one
  definition, no copied parameters.
* :class:`Stores`: the summary cache and the history archive a keeper writes to
  (``Compactor(stores=...)``, ``Summarizer(stores=...)``).

Both check their fields when made: a wrong type is a ``TypeError``, a value out of
range a ``ValueError``, each naming the field (``Robustness.timeout ...``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from csum._calls import SummarizeHandler
from csum._handler_check import check_handler
from csum._retry import RetryPolicy
from csum.archive import HistoryArchive
from csum.cache import SummaryCache

__all__ = ["MIN_PROMPT_BYTES", "Robustness", "Stores"]

MIN_PROMPT_BYTES = 4096
"""Smallest accepted ``max_prompt_bytes``: the fixed instructions take about 1.3 KB."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Robustness:
    """How a summarize handler is called (see :class:`~csum.RobustHandler`).

    ``timeout``: seconds per call (None: none). ``retry``: how often and how long to
    wait between attempts of a transient failure (``RetryPolicy(max_retries=0)``: no
    retries). ``max_prompt_bytes``: the handler's input limit in UTF-8 bytes (None:
    unlimited; at least :data:`MIN_PROMPT_BYTES`); longer prompts are split and the
    pieces' summaries merged, at most ``max_split_depth`` merge rounds deep, with at
    most ``max_concurrency`` calls in flight. ``fallback``: a handler tried when the
    handler fails for good.
    """

    timeout: float | None = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_prompt_bytes: int | None = None
    max_split_depth: int = 3
    max_concurrency: int = 4
    fallback: SummarizeHandler | None = None

    def __post_init__(self) -> None:
        timeout: object = self.timeout
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise TypeError(f"Robustness.timeout must be seconds or None, not {timeout!r}")
            if not timeout > 0 or not math.isfinite(timeout):
                raise ValueError(
                    f"Robustness.timeout must be a positive number of seconds or None, "
                    f"got {timeout!r}"
                )
        retry: object = self.retry
        if not isinstance(retry, RetryPolicy):
            raise TypeError(f"Robustness.retry must be a csum.RetryPolicy, not {retry!r}")
        limit: object = self.max_prompt_bytes
        if limit is not None:
            if not _is_int(limit):
                raise TypeError(
                    f"Robustness.max_prompt_bytes must be an int or None, not {limit!r}"
                )
            assert isinstance(limit, int)
            if limit < MIN_PROMPT_BYTES:
                raise ValueError(
                    f"Robustness.max_prompt_bytes must be at least {MIN_PROMPT_BYTES}, got {limit}"
                )
        for name in ("max_split_depth", "max_concurrency"):
            value: object = getattr(self, name)
            if not _is_int(value):
                raise TypeError(f"Robustness.{name} must be an int, not {value!r}")
            assert isinstance(value, int)
            if value < 1:
                raise ValueError(f"Robustness.{name} must be at least 1, got {value}")
        if self.fallback is not None:
            check_handler(self.fallback, "Robustness.fallback")


@dataclass(frozen=True, slots=True)
class Stores:
    """Where a keeper keeps what outlives one call.

    ``cache`` (a :class:`~csum.SummaryCache`) serves summaries already made for the same
    prompt (a replayed or forked session). ``archive`` (a :class:`~csum.HistoryArchive`)
    keeps every message summarized away, and each summary then ends with the
    ``[archived: ...]`` line naming them. Store failures are events, never a failed
    summarization.
    """

    cache: SummaryCache | None = None
    archive: HistoryArchive | None = None

    def __post_init__(self) -> None:
        if self.cache is not None and not isinstance(self.cache, SummaryCache):
            raise TypeError(
                f"Stores.cache must be a csum.SummaryCache or None, not {type(self.cache).__name__}"
            )
        if self.archive is not None and not isinstance(self.archive, HistoryArchive):
            raise TypeError(
                f"Stores.archive must be a csum.HistoryArchive or None, "
                f"not {type(self.archive).__name__}"
            )
