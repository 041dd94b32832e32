"""Lint holds each provider to what it accepts: the recorded real requests providers
answered (``../shared/corpus/payloads``) trip no rule of their own provider that the
provider does not enforce (issue #38: Codex CLI's own requests hold two user messages
in a row, which the Responses API takes)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from cast import Message, Role, lint
from cast.codecs import get_codec
from tests.conftest import CORPUS

PAYLOADS = CORPUS / "payloads"
ACCEPTED = {
    # file: (codec, provider): requests the provider answered with two human turns in a row
    "set4/openai_responses/codex_rollout_tui_0125.json": ("openai_responses", "openai-responses"),
    "set1/openai/sweagent_pydicom1458_text.json": ("openai", "openai"),
    "set4/openai/oi_autogen_team_named_messages.json": ("openai", "openai"),
    "set4/gemini/oi_adk_multi_agent_context_turns.json": ("gemini", "gemini"),
}


def _messages(path: Path, codec: str) -> list[Message]:
    return get_codec(codec).decode(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_recorded_requests_with_consecutive_human_turns_lint_clean_of_it(name: str) -> None:
    path = PAYLOADS / name
    if not path.exists():
        pytest.skip(f"the recorded payload {path} is absent")
    codec, provider = ACCEPTED[name]
    messages = _messages(path, codec)
    pairs = pairwise(messages)
    assert any(a.role is Role.HUMAN and b.role is Role.HUMAN for a, b in pairs)
    assert "consecutive-human" not in {v.rule for v in lint(messages, provider)}


@pytest.mark.parametrize(
    ("provider", "reported"),
    [
        ("openai", False),
        ("openai-responses", False),
        ("anthropic", False),  # consecutive same-role turns are merged into one
        ("gemini", False),
        ("bedrock", True),  # turns must alternate
        ("deepseek", True),  # not known to take them: still reported
    ],
)
def test_consecutive_human_messages_are_reported_where_refused(
    provider: str, reported: bool
) -> None:
    chain = [
        Message.human("<environment_context>cwd</environment_context>"),
        Message.human("Fix it"),
    ]
    found = {v.rule for v in lint(chain, provider)}
    assert ("consecutive-human" in found) is reported
