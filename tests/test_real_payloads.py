"""Real payloads (requests the providers accepted, recorded by other projects' test
suites; see ``tests/fixtures/real/SOURCES.md``) through the whole cast path.

One helper per step: decode, parse (strict, else repaired), round trip (with the
strict keep-every-value law), then port to every registered provider: no empty message,
lint clean for it and encode with its codec; then summarize for that provider: no lint
violation the ported chain did not have, and never larger.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from cast import lint, open_with_human, port
from cast._compaction import EncryptedCompactionError, LostCompactionWarning
from cast._lint import is_empty
from cast.codecs import detect_format, get_codec
from cast.codecs._common import b64decode_any
from cast.errors import ChainError
from cast.messages import Message, Role
from cast.parse import parse_chain
from cast.providers import PROVIDERS, ProviderProfile
from csum import Summarizer, SummarizerConfig
from csum.handlers import extractive

REAL = Path(__file__).parent / "fixtures" / "real"
FIXTURES = sorted(REAL.glob("*/*.json"))
CODECS_DOC = Path(__file__).parent.parent / "docs" / "codecs.md"

SOURCE_PROVIDER = {
    "anthropic": "anthropic",
    "claude_code": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
    "openai": "openai",
    "openai_responses": "openai-responses",
    "langchaingo": None,
}
"""The provider whose reasoning a payload of each codec carries (port's ``source``)."""


def not_carried_fields() -> dict[str, frozenset[str]]:
    """The fields docs/codecs.md lists, per codec, as not carried (its "Fields not
    carried" table): the strict law exempts exactly these, so the two cannot drift."""
    text = CODECS_DOC.read_text(encoding="utf-8")
    table = text.split("## Fields not carried", 1)[1].split("\n## ", 1)[0]
    fields: dict[str, set[str]] = {codec: set() for codec in SOURCE_PROVIDER}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        codec = cells[0].strip("`")
        fields[codec].update(re.findall(r"`([^`]+)`", cells[1]))
    return {codec: frozenset(keys) for codec, keys in fields.items()}


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


def string_leaves(value: Any, skipped: frozenset[str], key: str = "") -> list[str]:
    """Every string (and number) value in ``value``, except those under ``skipped``
    keys; base64 in the codecs' canonical alphabet."""
    found: list[str] = []
    if key in skipped:
        return found
    if isinstance(value, dict):
        for k, v in value.items():
            found += string_leaves(v, skipped, k)
    elif isinstance(value, list):
        for v in value:
            found += string_leaves(v, skipped, key)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
        found.append(_standard_base64(text) if key in _BASE64_KEYS else text)
    return found


_BASE64_KEYS = frozenset({"data", "bytes", "file_data", "image_url", "url"})


def _standard_base64(text: str) -> str:
    """URL-safe base64 (or a data: URL holding it) in the standard padded alphabet,
    the codecs' canonical form; other text unchanged."""
    head, sep, data = text.rpartition(",") if text.startswith("data:") else ("", "", text)
    if any(c in data for c in "+/ .:") or not ("-" in data or "_" in data):
        return text
    decoded = b64decode_any(data)
    if decoded is None:
        return text
    return head + sep + base64.b64encode(decoded).decode("ascii")


def lost_values(codec: str, payload: Any, encoded: Any) -> list[str]:
    """The strict keep-every-value law: every string value of ``payload`` (outside the
    fields docs/codecs.md lists as not carried for ``codec``) is a value of ``encoded``,
    or part of one (texts a codec joins, objects it writes as compact JSON). Keys never
    count: a value that survives only as a key, or not at all, is lost."""
    before = Counter(string_leaves(payload, NOT_CARRIED[codec]))
    values = string_leaves(encoded, frozenset())
    left = before - Counter(values)
    return [value for value in left if not any(value in v for v in values)]


def assert_round_trip(codec: str, payload: Any, messages: list[Message]) -> None:
    """Step 3: encode(decode(x)) decodes to the same messages, is stable, and keeps
    every value of x (apart from the fields docs/codecs.md lists as not carried)."""
    module = get_codec(codec)
    encoded = module.encode(messages)
    assert module.decode(encoded) == messages
    assert module.encode(module.decode(encoded)) == encoded
    missing = lost_values(codec, payload, encoded)
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


def test_enough_payloads_across_every_codec() -> None:
    counts = Counter(codec_of(p) for p in FIXTURES)
    assert sum(counts.values()) >= 40
    assert set(counts) == set(SOURCE_PROVIDER)


def test_strict_law_catches_a_dropped_key_unless_the_doc_lists_it() -> None:
    payload = load(REAL / "bedrock" / "constructed_text_block_with_type.json")
    encoded = get_codec("bedrock").encode(get_codec("bedrock").decode(payload))
    assert "type" in NOT_CARRIED["bedrock"]
    assert lost_values("bedrock", payload, encoded) == []
    unlisted = {**NOT_CARRIED, "bedrock": NOT_CARRIED["bedrock"] - {"type"}}
    before = Counter(string_leaves(payload, unlisted["bedrock"]))
    values = string_leaves(encoded, frozenset())
    left = before - Counter(values)
    assert [v for v in left if not any(v in x for x in values)] == ["text"]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_decode_parse_round_trip(path: Path) -> None:
    codec = codec_of(path)
    payload = load(path)
    assert detect_format(payload) == codec
    messages = decode_payload(codec, payload)
    parse_messages(messages)
    assert_round_trip(codec, payload, messages)


@pytest.mark.parametrize("target", sorted(PROVIDERS))
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_port_lint_encode(path: Path, target: str) -> None:
    codec = codec_of(path)
    messages = decode_payload(codec, load(path))
    port_lint_encode(codec, messages, PROVIDERS[target])


@pytest.mark.parametrize("target", sorted(PROVIDERS))
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_summarize_for_every_target(path: Path, target: str) -> None:
    codec = codec_of(path)
    messages = decode_payload(codec, load(path))
    summarize_for(codec, messages, PROVIDERS[target])
