"""SummarizerConfig: defaults from the contract, validation of budgets, immutability."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from csum import SummarizerConfig

CONTRACT_DEFAULTS = {
    "preserve_last": True,
    "last_section_bytes": 51200,
    "max_body_pair_bytes": 16384,
    "use_qa": False,
    "max_qa_sections": 10,
    "max_qa_bytes": 65536,
    "summarize_human_in_qa": False,
    "keep_qa_sections": 1,
    "reserve_percent": 25,
}


def test_defaults_follow_the_contract() -> None:
    assert SummarizerConfig().model_dump() == CONTRACT_DEFAULTS


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"last_section_bytes": 1}, id="smallest-last-section"),
        pytest.param({"max_body_pair_bytes": 1}, id="smallest-body-pair"),
        pytest.param({"max_qa_sections": 1}, id="one-qa-section"),
        pytest.param({"max_qa_bytes": 1}, id="smallest-qa-bytes"),
        pytest.param({"keep_qa_sections": 1}, id="keep-one-section"),
        pytest.param({"keep_qa_sections": 50}, id="keep-many-sections"),
        pytest.param({"reserve_percent": 0}, id="no-reserve"),
        pytest.param({"reserve_percent": 99}, id="largest-reserve"),
        pytest.param({"preserve_last": False, "use_qa": True}, id="flags"),
        pytest.param({"summarize_human_in_qa": True}, id="summarize-human"),
    ],
)
def test_valid_values_are_accepted(changes: dict[str, Any]) -> None:
    config = SummarizerConfig(**changes)
    for name, value in changes.items():
        assert getattr(config, name) == value


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("last_section_bytes", 0, id="last-section-zero"),
        pytest.param("last_section_bytes", -1, id="last-section-negative"),
        pytest.param("max_body_pair_bytes", 0, id="body-pair-zero"),
        pytest.param("max_body_pair_bytes", -16384, id="body-pair-negative"),
        pytest.param("max_qa_sections", 0, id="qa-sections-zero"),
        pytest.param("max_qa_sections", -3, id="qa-sections-negative"),
        pytest.param("max_qa_bytes", 0, id="qa-bytes-zero"),
        pytest.param("max_qa_bytes", -1, id="qa-bytes-negative"),
        pytest.param("keep_qa_sections", 0, id="keep-zero"),
        pytest.param("keep_qa_sections", -1, id="keep-negative"),
        pytest.param("reserve_percent", 100, id="reserve-100"),
        pytest.param("reserve_percent", 250, id="reserve-over-100"),
        pytest.param("reserve_percent", -1, id="reserve-negative"),
        pytest.param("last_section_bytes", 1.5, id="fractional-size"),
        pytest.param("last_section_bytes", "lots", id="non-numeric-size"),
        pytest.param("last_section_bytes", "2048", id="numeric-string"),
        pytest.param("last_section_bytes", True, id="bool-size"),
        pytest.param("use_qa", 1, id="int-flag"),
        pytest.param("keep_qa_sections", None, id="none-count"),
    ],
)
def test_invalid_values_are_a_validation_error(name: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        SummarizerConfig(**{name: value})
    assert caught.value.errors()[0]["loc"] == (name,)


def test_unknown_option_is_rejected() -> None:
    # A misspelt budget must not be silently ignored.
    with pytest.raises(ValidationError, match="last_section_size"):
        SummarizerConfig(last_section_size=1024)  # type: ignore[call-arg]


def test_config_is_frozen_and_hashable() -> None:
    config = SummarizerConfig(last_section_bytes=1000)
    with pytest.raises(ValidationError):
        config.last_section_bytes = 5  # type: ignore[misc]
    assert config.last_section_bytes == 1000
    assert hash(config) == hash(SummarizerConfig(last_section_bytes=1000))
    assert config != SummarizerConfig()


def test_json_round_trip() -> None:
    config = SummarizerConfig(use_qa=True, keep_qa_sections=3, reserve_percent=0)
    assert SummarizerConfig.model_validate_json(config.model_dump_json()) == config
