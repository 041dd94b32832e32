"""Issue 40, classes 2, 3 and 5 on the corpus's real payloads (``payloads/set1``,
``set3``, ``set4``; skipped when the corpus is absent): every payload decodes (but the
two malformed on purpose), the fields a client sends back survive the round trip (the
keep-every-value law, with docs/codecs.md's not-carried table), and the payloads whose
parts or fields were refused or dropped before port lint-clean and encodable to the six
targets the issue names."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from benchmarks.real_payload_laws import lost_values, not_carried_fields
from cast import CodecError, lint, port
from cast.codecs import get_codec
from cast.providers import get_provider
from tests.conftest import CORPUS

PAYLOADS = CORPUS / "payloads"
SETS = ("set1", "set3", "set4")
LAW_CODECS = ("openai", "anthropic", "gemini", "bedrock")
"""The codecs whose not-carried table covers every field of a request (the log and item
formats carry metadata the APIs never take back: ids, timestamps, statuses)."""
MALFORMED = {
    "set1/claude_code/ccl_edge_cases": "entries[9].content",  # junk lines on purpose
    "set4/openai/ollm_legacy_function_call": "messages[1].function_call",  # documented
}
TARGETS = ("openai", "openai-responses", "anthropic", "gemini", "bedrock", "mistral")
SOURCE = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "bedrock": "bedrock"}
CLASS_PAYLOADS = [
    "set4/openai/pai_openrouter_cache_control_on_tool_text",
    "set4/openai/pai_openrouter_video_url_part",
    "set4/openai/pai_mistral_document_url_part",
    "set4/bedrock/pai_nova_code_interpreter_in_assistant",
    "set4/openai/vai_alibaba_tool_call_index",
    "set4/openai/pai_snowflake_reasoning_details_signature",
    "set4/openai/oi_autogen_team_named_messages",
    "set4/openai/pai_openrouter_url_citation_annotations",
    "set4/openai/oaipy_refusal_content_null",
]


def _paths() -> list[Path]:
    return sorted(p for name in SETS for p in (PAYLOADS / name).glob("*/*.json"))


def _name(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"


def _load(name: str) -> Any:
    path = PAYLOADS / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared corpus is absent)")
    return json.loads(path.read_text(encoding="utf-8"))


pytestmark = pytest.mark.skipif(not PAYLOADS.is_dir(), reason="the corpus's payloads are absent")


@pytest.mark.parametrize("path", _paths(), ids=_name)
def test_every_payload_decodes_and_round_trips(path: Path) -> None:
    codec = get_codec(path.parent.name)
    payload = json.loads(path.read_text(encoding="utf-8"))
    name = _name(path)
    if name in MALFORMED:
        with pytest.raises(CodecError) as caught:
            codec.decode(payload)
        assert caught.value.path.startswith(MALFORMED[name])
        return
    messages = codec.decode(payload)
    encoded = codec.encode(messages)
    assert codec.decode(encoded) == messages
    assert codec.encode(codec.decode(encoded)) == encoded
    if path.parent.name in LAW_CODECS:
        assert lost_values(payload, encoded, not_carried_fields()[path.parent.name]) == []


@pytest.mark.parametrize("name", CLASS_PAYLOADS)
@pytest.mark.parametrize("target", TARGETS)
def test_kept_parts_and_fields_port_lint_clean(name: str, target: str) -> None:
    codec = name.split("/")[1]
    messages = get_codec(codec).decode(_load(name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is dropped silently or with a warning
        out = port(messages, target, source=SOURCE[codec])
    assert lint(out, target) == []
    get_codec(get_provider(target).wire_format).encode(out)
