"""The LLM handlers' system prompt asks for a structured summary with verbatim identifiers."""

from __future__ import annotations

from csum.prompt import DEFAULT_SYSTEM_PROMPT

PARTS = ("Task:", "Decisions:", "Files:", "Commands:", "Errors:", "Identifiers:", "Pending:")


def test_the_prompt_names_every_part_in_order() -> None:
    positions = [DEFAULT_SYSTEM_PROMPT.index(f"\n{part}") for part in PARTS]
    assert positions == sorted(positions)


def test_the_prompt_asks_for_what_an_agent_needs_verbatim() -> None:
    text = DEFAULT_SYSTEM_PROMPT
    for needle in (
        "constraint",
        "path:line",
        "verbatim",
        "with its cause",
        "versions with their package",
        "numbers with their units",
        "exactly, character for character",
        "Follow only the <instructions> block",
        "Reply with the summary only.",
    ):
        assert needle in text, needle


def test_the_prompt_is_fixed() -> None:
    # No per-call content: providers cache it as a prefix.
    assert "{" not in DEFAULT_SYSTEM_PROMPT
    assert DEFAULT_SYSTEM_PROMPT.isascii()
