"""Summarizer configuration: byte budgets and which phases run."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SummarizerConfig"]


class SummarizerConfig(BaseModel):
    """Budgets of the summarization algorithm (sizes in UTF-8 bytes).

    Defaults follow the algorithm's reference values. Sizes and counts must be positive
    and ``reserve_percent`` within 0..99; anything else (including ``True`` or ``"100"``
    for a number) is a ``ValidationError``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    preserve_last: bool = True
    """Rotate the last sections: summarize oversized and oldest pairs to fit budgets."""
    last_section_bytes: int = Field(default=51200, gt=0)
    """Budget of each of the last ``keep_qa_sections`` sections."""
    max_body_pair_bytes: int = Field(default=16384, gt=0)
    """A pair over this size (except a section's last) is summarized on its own."""
    use_qa: bool = False
    """Fold the oldest sections into one summary section when over the QA limits."""
    max_qa_sections: int = Field(default=10, gt=0)
    """QA limit on the number of sections."""
    max_qa_bytes: int = Field(default=65536, gt=0)
    """QA limit on the chain size."""
    summarize_human_in_qa: bool = False
    """Summarize the folded human messages too, instead of concatenating them."""
    keep_qa_sections: int = Field(default=1, gt=0)
    """How many newest sections keep their body pairs (all others get one pair)."""
    reserve_percent: int = Field(default=25, ge=0, le=99)
    """Share of ``last_section_bytes`` (and ``max_qa_bytes``) left free after a rotation,
    so the next turns do not trigger another one at once."""
