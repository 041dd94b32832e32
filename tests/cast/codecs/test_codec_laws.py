"""The laws every provider codec obeys, checked for each codec in one place.

1. A recorded real payload (``tests/fixtures/codecs``, sources in its README) decodes
   without being changed, encodes back to itself (or to the canonical form the fixture
   records as ``encoded``), decodes again to the same messages, and is recognised by
   ``detect_format``.
2. Garbage made of the codec's own keys and words raises nothing but ``CodecError``,
   and every ``CodecError`` names the bad field's path; an empty path means the
   payload as a whole, and then the message says what the payload should have been.
3. Nothing the caller passes in is changed, whatever happens.

Each codec's own test file keeps only the cases particular to that codec.
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import CODECS, NATIVE, detect_format, get_codec
from cast.errors import CodecError
from strategies import json_garbage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codecs"

RECORDED = {
    "anthropic": [
        "anthropic_tool_use.json",
        "anthropic_thinking_tool_use.json",
        "anthropic_vision.json",
    ],
    "bedrock": ["bedrock_converse_tool_use.json"],
    "gemini": ["gemini_function_calling.json", "gemini3_thought_signatures.json"],
    "langchaingo": ["langchaingo_pentagi_chain.json"],
    "openai": [
        "openai_function_calling.json",
        "openai_parallel_vision.json",
        "deepseek_thinking_tool_calls.json",
        "vllm_reasoning.json",
    ],
    "openai_responses": ["openai_responses_function_calling.json"],
}
"""Recorded payloads per codec. Claude Code logs are checked on the shared corpus
(tests/cast/codecs/test_codecs_claude_code.py): a log is not a request and has no canonical form.
The framework codecs are projections (framework fields chaincast does not hold, such
as timestamps, are not re-created): their recordings are checked for what they keep in
tests/cast/codecs/test_codecs_frameworks.py."""

PROJECTIONS = {
    "pydantic_ai": "pydantic_ai_function_model.json",
    "langchain": "langchain_create_agent.json",
    "openai_agents": None,
}
"""Framework codecs and their recorded history (laws 2 and 3 hold for them too)."""

# Each codec's garbage is drawn from the keys and words its payloads use, so it reaches
# deep into the decoder instead of failing on the first field.
GARBAGE = {
    "anthropic": json_garbage(
        keys=[
            "messages",
            "system",
            "role",
            "content",
            "type",
            "text",
            "id",
            "name",
            "input",
            "tool_use_id",
            "thinking",
            "signature",
            "data",
            "source",
            "media_type",
            "url",
        ],
        words=[
            "user",
            "assistant",
            "text",
            "tool_use",
            "tool_result",
            "thinking",
            "redacted_thinking",
            "image",
            "document",
            "base64",
            "url",
        ],
    ),
    "bedrock": json_garbage(
        keys=[
            "messages",
            "system",
            "role",
            "content",
            "text",
            "image",
            "format",
            "source",
            "bytes",
            "toolUse",
            "toolUseId",
            "name",
            "input",
            "toolResult",
            "json",
            "status",
            "reasoningContent",
            "reasoningText",
            "signature",
            "redactedContent",
            "cachePoint",
        ],
        words=["user", "assistant", "png", "error", "success", "QUJD", "default"],
    ),
    "claude_code": json_garbage(
        keys=["role", "content", "type", "id", "message", "text", "tool_use_id", "name", "input"],
        words=["user", "assistant", "message", "text", "tool_use", "tool_result", "m1"],
    ),
    "claude_code_session": json_garbage(
        keys=["type", "message", "uuid", "parentUuid", "isSidechain", "role", "content", "id"],
        words=["user", "assistant", "message", "text", "tool_use", "tool_result", "u1", "u2"],
    ),
    "codex_rollout": json_garbage(
        keys=["type", "payload", "timestamp", "role", "content", "call_id", "name", "input"],
        words=[
            "session_meta",
            "response_item",
            "compacted",
            "replacement_history",
            "message",
            "function_call",
            "custom_tool_call",
            "custom_tool_call_output",
            "user",
        ],
    ),
    "gemini": json_garbage(
        keys=[
            "contents",
            "systemInstruction",
            "role",
            "parts",
            "text",
            "thought",
            "thoughtSignature",
            "functionCall",
            "functionResponse",
            "id",
            "name",
            "args",
            "response",
            "inlineData",
            "fileData",
            "mimeType",
            "data",
            "fileUri",
        ],
        words=["user", "model", "result"],
    ),
    "langchaingo": json_garbage(
        keys=[
            "role",
            "text",
            "parts",
            "type",
            "reasoning",
            "content",
            "signature",
            "image_url",
            "url",
            "detail",
            "binary",
            "mime_type",
            "data",
            "tool_call",
            "id",
            "function",
            "name",
            "arguments",
            "tool_response",
            "tool_call_id",
        ],
        words=[
            "human",
            "ai",
            "system",
            "tool",
            "generic",
            "text",
            "image_url",
            "binary",
            "tool_call",
            "tool_response",
            "aGk=",
        ],
    ),
    "openai": json_garbage(
        keys=[
            "messages",
            "role",
            "content",
            "type",
            "text",
            "image_url",
            "url",
            "tool_calls",
            "id",
            "function",
            "name",
            "arguments",
            "tool_call_id",
            "reasoning_content",
            "refusal",
            "input_audio",
            "data",
            "format",
            "file",
            "file_data",
        ],
        words=[
            "user",
            "assistant",
            "tool",
            "system",
            "text",
            "image_url",
            "function",
            "input_audio",
            "file",
            "refusal",
        ],
    ),
    "openai_responses": json_garbage(
        keys=[
            "input",
            "instructions",
            "type",
            "role",
            "content",
            "text",
            "refusal",
            "image_url",
            "detail",
            "call_id",
            "name",
            "arguments",
            "output",
            "id",
            "summary",
            "encrypted_content",
        ],
        words=[
            "message",
            "user",
            "assistant",
            "system",
            "developer",
            "input_text",
            "output_text",
            "input_image",
            "refusal",
            "function_call",
            "function_call_output",
            "reasoning",
            "summary_text",
        ],
    ),
    "pydantic_ai": st.lists(
        json_garbage(
            keys=["kind", "parts", "part_kind", "content", "tool_name", "args", "tool_call_id"],
            words=["request", "response", "user-prompt", "tool-call", "tool-return", "text"],
        )
    ),
    "langchain": st.lists(
        json_garbage(
            keys=["type", "data", "content", "tool_calls", "tool_call_id", "args", "id", "name"],
            words=["human", "ai", "tool", "system", "text", "reasoning", "tool_call"],
        )
    ),
    "openai_agents": st.lists(
        json_garbage(
            keys=["type", "role", "content", "call_id", "name", "arguments", "output", "text"],
            words=["message", "user", "assistant", "function_call", "function_call_output"],
        )
    ),
}


def load_fixture(name: str) -> dict[str, Any]:
    fixture: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return fixture


def test_every_codec_has_its_laws_checked() -> None:
    assert set(GARBAGE) == set(CODECS)
    # Claude Code logs and the agents' session files: tests/cast/codecs/test_codecs_claude_code.py
    # and tests/cast/test_handoff.py check them on the corpus and on what the CLIs wrote.
    sessions = {"claude_code", "claude_code_session", "codex_rollout"}
    assert set(RECORDED) | sessions | set(PROJECTIONS) == set(CODECS)
    recorded = {name for names in RECORDED.values() for name in names}
    recorded |= {name for name in PROJECTIONS.values() if name}
    assert recorded == {path.name for path in FIXTURES.glob("*.json")}


@pytest.mark.parametrize(
    ("codec_name", "fixture_name"),
    [
        pytest.param(codec, name, id=name.removesuffix(".json"))
        for codec, names in RECORDED.items()
        for name in names
    ],
)
def test_recorded_payloads_round_trip(codec_name: str, fixture_name: str) -> None:
    codec = get_codec(codec_name)
    fixture = load_fixture(fixture_name)
    payload = fixture["payload"]
    before = copy.deepcopy(payload)
    messages = codec.decode(payload)
    assert payload == before  # decode reads only
    expected = fixture.get("encoded", payload)
    encoded = codec.encode(messages, **fixture.get("options", {}))
    assert encoded == expected
    assert codec.decode(json.loads(json.dumps(encoded))) == messages
    assert detect_format(payload) == codec_name


@pytest.mark.parametrize("codec_name", ["openai_responses", "openai_agents"])
def test_an_unknown_item_with_a_list_for_its_role_is_no_type_error(codec_name: str) -> None:
    """Hypothesis found [{"role": [], "type": "user"}] raising TypeError (an unhashable
    role looked up among the known roles): it decodes (kept whole) or is a CodecError."""
    with contextlib.suppress(CodecError):
        get_codec(codec_name).decode([{"role": [], "type": "user"}])


@pytest.mark.parametrize("codec_name", [pytest.param(name, id=name) for name in CODECS])
@given(data=st.data())
def test_garbage_raises_only_codec_errors_with_a_path(codec_name: str, data: st.DataObject) -> None:
    payload = data.draw(GARBAGE[codec_name], label="payload")
    snapshot = copy.deepcopy(payload)
    errors: list[CodecError] = []
    for read in (get_codec(codec_name).decode, detect_format):
        try:
            read(payload)
        except CodecError as error:
            errors.append(error)
        assert payload == snapshot  # never changed, even half-way through a failure
    for caught in errors:
        whole_payload = caught.detail.startswith(("expected ", "cannot detect the format"))
        assert caught.path or whole_payload, f"CodecError without a path: {caught}"
        assert not caught.path or str(caught).startswith(f"{caught.path}: ")


@pytest.mark.parametrize("codec_name", [pytest.param(name, id=name) for name in CODECS])
def test_unknown_names_and_the_native_codec_resolve(codec_name: str) -> None:
    assert get_codec(codec_name.replace("_", "-")) is get_codec(codec_name)
    assert get_codec(NATIVE) is not get_codec(codec_name)
