"""The retry policy shared by the SDK handlers and the robust handler wrapper:
exponential backoff with jitter, capped, honouring a provider's ``Retry-After``."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait between attempts.

    The n-th retry waits ``min(backoff_max, backoff_base * 2 ** (n - 1))`` seconds, less
    up to ``jitter`` of it drawn at random (so clients that failed together spread
    out), and at least the provider's ``Retry-After`` (capped by ``backoff_max``).
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not self.backoff_base >= 0 or not math.isfinite(self.backoff_base):
            raise ValueError(f"backoff_base must be a finite number >= 0, got {self.backoff_base}")
        if not self.backoff_max >= self.backoff_base or not math.isfinite(self.backoff_max):
            raise ValueError(
                f"backoff_max must be finite and >= backoff_base, got {self.backoff_max}"
            )
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be within 0..1, got {self.jitter}")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        base = min(self.backoff_max, self.backoff_base * 2.0 ** min(retry - 1, 62))
        delay = base * (1.0 - self.jitter * rng.random())
        if retry_after is not None and retry_after > delay:
            delay = min(retry_after, self.backoff_max)
        return delay
