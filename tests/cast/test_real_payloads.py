"""Real payloads (requests the providers accepted, recorded by other projects' test
suites; the shared corpus's ``payloads/project-fixtures``, sources in its ``SOURCES.md``)
through the whole cast path; every test skips, saying so, when the corpus is missing.

One helper per step: decode, parse (strict, else repaired), round trip (with the
strict keep-every-value law), then port to every registered provider: no empty message,
lint clean for it and encode with its codec; then summarize for that provider: no lint
violation the ported chain did not have, and never larger.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.real_payload_laws import SOURCE_PROVIDER, lost_values, not_carried_fields
from cast import lint, open_with_human, port
from cast._lint import is_empty
from cast._port import EncryptedCompactionError, LostCompactionWarning
from cast.codecs import AmbiguousFormatError, detect_format, get_codec
from cast.errors import ChainError
from cast.messages import Message, Role
from cast.parse import parse_chain
from cast.providers import PROVIDERS, ProviderProfile
from csum import Summarizer, SummarizerConfig
from csum.handlers import extractive
from tests.conftest import PAYLOADS, needs, real_cases

FIXTURES = sorted(PAYLOADS.glob("*/*.json"))
CASES = real_cases([pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in FIXTURES], PAYLOADS)
NOT_CARRIED = not_carried_fields()


def codec_of(path: Path) -> str:
    return path.parent.name


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# -- steps ----------------------------------------------------------------------------------


def decode_payload(codec: str, payload: Any) -> list[Message]:
    """Step 1: the codec decodes the payload without changing it."""
    before = copy.deepcopy(payload)
    messages = get_codec(codec).decode(payload)
    assert payload == before
    return messages


def parse_messages(messages: list[Message]) -> list[Message]:
    """Step 2: strict parse, or a repaired one when strict refuses; the chain back. A
    chain that opens with an AI message is refused even with repair (parse rule 1):
    :func:`cast.open_with_human` gives it the opening human message port adds."""
    try:
        return parse_chain(messages).to_messages()
    except ChainError as error:  # a strict refusal is allowed; repair must work
        if error.rule == "first-message":
            messages = open_with_human(messages)
        return parse_chain(messages, repair=True).to_messages()


def assert_round_trip(codec: str, payload: Any, messages: list[Message]) -> None:
    """Step 3: encode(decode(x)) decodes to the same messages, is stable, and keeps
    every value of x (apart from the fields docs/codecs.md lists as not carried)."""
    module = get_codec(codec)
    encoded = module.encode(messages)
    assert module.decode(encoded) == messages
    assert module.encode(module.decode(encoded)) == encoded
    missing = lost_values(payload, encoded, NOT_CARRIED[codec])
    assert not missing, f"values lost in the round trip: {missing[:5]}"


def target_codec(profile: ProviderProfile) -> str:
    return profile.wire_format.replace("-", "_")


def port_for(codec: str, messages: list[Message], profile: ProviderProfile) -> list[Message]:
    """``port`` from the payload's provider to ``profile``. An encrypted compaction item
    the target cannot keep raises by default; the documented option then replaces it by
    a note and warns."""
    source = SOURCE_PROVIDER[codec]
    try:
        return port(messages, profile, source=source)
    except EncryptedCompactionError:
        with pytest.warns(LostCompactionWarning):
            return port(messages, profile, source=source, encrypted_compaction="note")


def port_lint_encode(codec: str, messages: list[Message], profile: ProviderProfile) -> None:
    """Step 4: port to ``profile``; no message of the result is empty, it lints clean and
    its codec encodes it (lint clean implies encodable)."""
    source = SOURCE_PROVIDER[codec]
    ported = port_for(codec, messages, profile)
    empty = [i for i, m in enumerate(ported) if m.role is not Role.SYSTEM and is_empty(m)]
    assert not empty, f"empty messages after port: {empty}"
    violations = lint(ported, profile, source=source)
    assert not violations, "\n".join(map(str, violations))
    get_codec(target_codec(profile)).encode(ported)
    assert port(ported, profile, source=source) == ported  # idempotent


SMALL = SummarizerConfig(
    last_section_bytes=600, max_body_pair_bytes=300, use_qa=True, max_qa_bytes=1200
)
"""Budgets small enough that most real payloads are summarized in every phase."""


def summarize_for(codec: str, messages: list[Message], profile: ProviderProfile) -> None:
    """Step 5: summarize the ported chain for ``profile``: the output adds no lint
    violation the ported chain did not have, and is never larger than it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LostCompactionWarning)
        ported = port(messages, profile, encrypted_compaction="note")
    before = {str(v) for v in lint(ported, profile)}

    async def run() -> list[Message]:
        summarizer = Summarizer(SMALL)
        return await summarizer.summarize_chain(
            extractive(200), ported, target=profile.name, allow_growth=False
        )

    out = anyio.run(run)
    new = [v for v in lint(out, profile) if str(v) not in before]
    assert not new, "\n".join(map(str, new))
    assert sum(m.size for m in out) <= sum(m.size for m in ported)


# -- tests ----------------------------------------------------------------------------------


@needs(PAYLOADS)
def test_enough_payloads_across_every_codec() -> None:
    counts = Counter(codec_of(p) for p in FIXTURES)
    assert sum(counts.values()) >= 40
    assert set(counts) == set(SOURCE_PROVIDER)


@needs(PAYLOADS)
def test_strict_law_catches_a_dropped_key_unless_the_doc_lists_it() -> None:
    payload = load(PAYLOADS / "bedrock" / "constructed_text_block_with_type.json")
    encoded = get_codec("bedrock").encode(get_codec("bedrock").decode(payload))
    assert "type" in NOT_CARRIED["bedrock"]
    assert lost_values(payload, encoded, NOT_CARRIED["bedrock"]) == []
    assert lost_values(payload, encoded, NOT_CARRIED["bedrock"] - {"type"}) == ["text"]


def detected_formats(payload: Any) -> tuple[str, ...]:
    """What detection says: one format, or the formats it names when two read the
    payload differently (named, never guessed)."""
    try:
        return (detect_format(payload),)
    except AmbiguousFormatError as error:
        return error.formats


@pytest.mark.parametrize("path", CASES)
def test_decode_parse_round_trip(path: Path) -> None:
    codec = codec_of(path)
    payload = load(path)
    assert codec in detected_formats(payload)
    messages = decode_payload(codec, payload)
    parse_messages(messages)
    assert_round_trip(codec, payload, messages)


@pytest.mark.parametrize("target", sorted(PROVIDERS))
@pytest.mark.parametrize("path", CASES)
def test_port_lint_encode(path: Path, target: str) -> None:
    codec = codec_of(path)
    messages = decode_payload(codec, load(path))
    port_lint_encode(codec, messages, PROVIDERS[target])


@pytest.mark.parametrize("target", sorted(PROVIDERS))
@pytest.mark.parametrize("path", CASES)
def test_summarize_for_every_target(path: Path, target: str) -> None:
    codec = codec_of(path)
    messages = decode_payload(codec, load(path))
    summarize_for(codec, messages, PROVIDERS[target])
