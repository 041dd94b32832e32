"""One test per class of issue 27, each on a real payload (the shared corpus's
``payloads/project-fixtures``, sources in its SOURCES.md):
fields that vanished silently, chains that were unreadable or rejected, summarizing
chains as agents hold them, and providers' compaction state."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from cast import (
    FALLBACK_RESPONSE_CONTENT,
    SUMMARIZATION_TOOL_NAME,
    ChainError,
    Message,
    Role,
    lint,
    port,
)
from cast.codecs import get_codec
from cast.parse import parse_chain
from cast.providers import PROVIDERS
from csum import Compactor, Summarizer, SummarizerConfig
from csum.handlers import extractive
from tests.conftest import PAYLOADS, missing


def load(name: str) -> Any:
    """A payload of the corpus's ``payloads/project-fixtures``; the test skips without it."""
    path = PAYLOADS / name
    if not path.is_file():
        pytest.skip(missing(path))
    return json.loads(path.read_text(encoding="utf-8"))


def round_trip(codec: str, payload: Any) -> Any:
    module = get_codec(codec)
    return module.encode(module.decode(payload))


def items_of_type(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [item for item in items if item.get("type") == kind]


# -- silent loss ----------------------------------------------------------------------------


def test_anthropic_tool_use_caller_is_sent_back() -> None:
    payload = load("anthropic/anthropic_native_tool_search_pending_call.json")
    sent = round_trip("anthropic", payload)
    before = payload["messages"][-1]["content"]
    after = sent["messages"][-1]["content"]
    callers = [b.get("caller") for b in before if b["type"] == "tool_use"]
    assert callers == [{"type": "direct"}]
    assert [b.get("caller") for b in after if b["type"] == "tool_use"] == callers


def test_anthropic_caller_is_dropped_for_other_targets() -> None:
    messages = get_codec("anthropic").decode(
        load("anthropic/anthropic_native_tool_search_pending_call.json")
    )
    ported = port(messages, "openai", source="anthropic")
    kinds = {getattr(p, "kind", "") for m in ported for p in m.parts}
    assert "caller" not in kinds
    get_codec("openai").encode(ported)
    kept = get_codec("anthropic").encode(port(messages, "anthropic", source="anthropic"))
    (answer,) = [m for m in kept["messages"] if m["role"] == "assistant"]
    assert answer["content"][-1]["caller"] == {"type": "direct"}


def test_responses_program_caller_is_sent_back() -> None:
    payload = load("openai_responses/constructed_program_caller.json")
    sent = round_trip("openai_responses", payload)
    (call,) = items_of_type(sent["input"], "function_call")
    assert call["caller"] == {"type": "program", "caller_id": "call_prog_123"}


def test_responses_namespace_is_sent_back() -> None:
    payload = load("openai_responses/cross_provider_capability_replay_anthropic_to_responses.json")
    sent = round_trip("openai_responses", payload)
    before = [c.get("namespace") for c in items_of_type(payload["input"], "function_call")]
    after = [c.get("namespace") for c in items_of_type(sent["input"], "function_call")]
    assert "lookup_refund_policy" in before
    assert after == before


def test_responses_phase_is_sent_back() -> None:
    payload = load("openai_responses/openai_responses_phase_live.json")
    sent = round_trip("openai_responses", payload)
    phases = [i.get("phase") for i in sent["input"] if i.get("role") == "assistant"]
    assert phases == ["commentary"]


def test_consecutive_assistant_items_with_phases_stay_apart() -> None:
    payload = {
        "input": [
            {"role": "user", "content": "Capital of PotatoLand?"},
            {"role": "assistant", "content": "Looking it up.", "phase": "commentary"},
            {"role": "assistant", "content": "Potato City.", "phase": "final_answer"},
        ]
    }
    assert round_trip("openai_responses", payload) == payload


# -- unreadable or rejected -----------------------------------------------------------------


def test_mistral_thinking_part_decodes_to_reasoning() -> None:
    payload = load("openai/mistral_model_thinking_part.json")
    messages = get_codec("openai").decode(payload)
    reasoning = messages[1].parts[0].reasoning  # type: ignore[union-attr]
    assert reasoning is not None
    chunks = [c["text"] for c in payload["messages"][1]["content"][0]["thinking"]]
    assert reasoning.content == "\n\n".join(chunks)
    # Mistral takes no reasoning back; a replaying target keeps it from its own source.
    assert port(messages, "mistral", source="mistral")[1].parts[0].reasoning is None  # type: ignore[union-attr]
    replayed = port(messages, "ollama", source="ollama")
    assert replayed[1].parts[0].reasoning == reasoning  # type: ignore[union-attr]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_compatible_reasoning_fields_decode_to_reasoning(field: str) -> None:
    payload = {
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", field: "Adding."},
        ]
    }
    messages = get_codec("openai").decode(payload)
    assert messages[1].parts[0].reasoning.content == "Adding."  # type: ignore[union-attr]


@pytest.mark.parametrize("target", sorted(PROVIDERS))
def test_empty_assistant_turn_never_reaches_a_provider(target: str) -> None:
    messages = get_codec("anthropic").decode(load("anthropic/constructed_refusal_empty_turn.json"))
    profile = PROVIDERS[target]
    assert [v.rule for v in lint(messages, profile)].count("empty-message") == 1
    ported = port(messages, profile, source="anthropic")
    assert all(m.parts for m in ported)
    assert not [v for v in lint(ported, profile) if v.rule == "empty-message"]
    wire = json.dumps(get_codec(profile.wire_format.replace("-", "_")).encode(ported))
    assert '"content": null' not in wire.replace('"tool_calls"', "")
    assert '"parts": []' not in wire
    assert '"content": []' not in wire


def test_empty_message_lint_uses_the_providers_error_text() -> None:
    messages = get_codec("anthropic").decode(load("anthropic/constructed_refusal_empty_turn.json"))
    texts = {t: str(lint(messages, t)[0]) for t in ("openai", "mistral", "bedrock", "gemini")}
    assert "expected a string, got null" in texts["openai"]
    assert "must have either content or tool_calls" in texts["mistral"]
    assert "The content field in the Message object" in texts["bedrock"]
    assert "contents.parts must not be empty" in texts["gemini"]


def test_last_empty_assistant_message_is_dropped() -> None:
    chain = [Message.human("q"), Message(role=Role.AI, parts=())]
    assert port(chain, "openai") == [Message.human("q")]
    assert lint(chain, "anthropic") == []  # the optional final assistant message
    assert lint(chain, "openai")[0].rule == "empty-message"


@pytest.mark.parametrize(
    "fixture",
    [
        "gemini/google_url_input_imageurl.json",
        "gemini/multimodal_tool_return_matrix_direct_uploaded_file_image_google_gemini3.json",
    ],
)
def test_image_by_url_from_gemini_lints_clean_and_encodes_for_anthropic(fixture: str) -> None:
    messages = get_codec("gemini").decode(load(fixture))
    ported = port(messages, "anthropic", source="gemini")
    assert lint(ported, "anthropic") == []
    wire = get_codec("anthropic").encode(ported)
    assert '"type": "url"' in json.dumps(wire)


# -- summarizing real chains ----------------------------------------------------------------

SMALL = SummarizerConfig(last_section_bytes=600, max_body_pair_bytes=300)


def pending_chain() -> list[Message]:
    return get_codec("anthropic").decode(
        load("anthropic/anthropic_native_tool_search_pending_call.json")
    )


def assert_still_pending(out: list[Message], chain: list[Message]) -> None:
    assert out[-1] == chain[-1]  # the AI message with the pending call ends the chain
    assert FALLBACK_RESPONSE_CONTENT not in json.dumps([m.model_dump(mode="json") for m in out])


@pytest.mark.anyio
async def test_summarizer_leaves_the_newest_calls_pending() -> None:
    chain = pending_chain()
    result = await Summarizer(SMALL).summarize(extractive(200), chain)
    assert_still_pending(result.messages, chain)
    assert result.size_after <= sum(m.size for m in chain)


@pytest.mark.anyio
async def test_compactor_leaves_the_newest_calls_pending() -> None:
    chain = pending_chain()
    compactor = Compactor(handler=extractive(200), budget=100_000)
    assert_still_pending(await compactor.compact(chain), chain)
    forced = await compactor.run(chain, force=True)
    assert_still_pending(forced.messages, chain)


@pytest.mark.anyio
async def test_calls_in_the_middle_still_get_fallback_results() -> None:
    chain = [*pending_chain(), Message.ai("I could not get the rate.")]
    out = await Summarizer().summarize_chain(extractive(200), chain)  # nothing to summarize
    assert FALLBACK_RESPONSE_CONTENT in json.dumps([m.model_dump(mode="json") for m in out])


@pytest.mark.anyio
async def test_summarizer_error_on_a_replay_says_to_use_the_compactor() -> None:
    payload = load("openai_responses/deepseek_responses_replay_unsent_item_ids.json")
    chain = get_codec("openai_responses").decode(payload)
    with pytest.raises(ChainError, match=r"csum\.Compactor") as caught:
        await Summarizer(SMALL).summarize_chain(extractive(200), chain)
    assert caught.value.index == 0
    out = await Compactor(handler=extractive(200), budget=100_000).compact(chain)
    assert out[0].role is Role.HUMAN


@pytest.mark.anyio
async def test_summarizer_takes_a_system_message_in_the_middle() -> None:
    payload = load("anthropic/inline_system_prompt_cache_prefix_is_reused.json")
    chain = get_codec("anthropic").decode(payload)
    assert [m.role for m in chain].count(Role.SYSTEM) > 1
    out = await Summarizer(SMALL).summarize_chain(extractive(200), chain)
    assert [m.role for m in out].count(Role.SYSTEM) == [m.role for m in chain].count(Role.SYSTEM)


# -- provider compaction state --------------------------------------------------------------


def summary_texts(messages: list[Message]) -> list[str]:
    """The texts of the summary pairs of a chain (parsed with repair)."""
    pairs = [p for s in parse_chain(messages, repair=True).sections for p in s.body]
    return [
        p.tool_messages[0].parts[0].content  # type: ignore[union-attr]
        for p in pairs
        if p.type.value == "summarization"
    ]


@pytest.mark.parametrize("target", ["openai", "gemini", "bedrock", "openai-responses"])
def test_anthropic_compaction_block_becomes_a_summary_pair(target: str) -> None:
    payload = load("anthropic/anthropic_compaction_round_trip.json")
    messages = get_codec("anthropic").decode(payload)
    ported = port(messages, target, source="anthropic")
    assert summary_texts(ported) == ["Summary: user said hello."]
    assert "compaction block" not in json.dumps([m.model_dump(mode="json") for m in ported])
    assert port(ported, target, source="anthropic") == ported
    # The summary pair goes (back) to Anthropic as plain tool_use / tool_result content.
    back = port(ported, "anthropic")
    assert lint(back, "anthropic") == []
    wire = json.dumps(get_codec("anthropic").encode(back))
    assert SUMMARIZATION_TOOL_NAME in wire


def test_anthropic_compaction_block_stays_for_anthropic() -> None:
    payload = load("anthropic/anthropic_compaction_round_trip.json")
    messages = get_codec("anthropic").decode(payload)
    wire = get_codec("anthropic").encode(port(messages, "anthropic", source="anthropic"))
    assert wire["messages"][1]["content"][0]["type"] == "compaction"


def test_openai_encrypted_compaction_does_not_pass_silently() -> None:
    from cast import EncryptedCompactionError, LostCompactionWarning

    payload = load("openai_responses/openai_responses_compact_messages.json")
    messages = get_codec("openai_responses").decode(payload)
    with pytest.raises(EncryptedCompactionError, match="encrypted_compaction='note'"):
        port(messages, "anthropic", source="openai-responses")
    with pytest.warns(LostCompactionWarning, match="compaction item omitted"):
        noted = port(messages, "anthropic", source="openai-responses", encrypted_compaction="note")
    assert "earlier turns it compacted are not available" in json.dumps(
        [m.model_dump(mode="json") for m in noted]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = port(messages, "openai-responses", source="openai-responses")
    assert get_codec("openai_responses").encode(kept)["input"][1]["type"] == "compaction"


def test_claude_code_compact_summary_is_a_summary_pair() -> None:
    entries = load("claude_code/spotter_8463c716_compact_summary.json")
    messages = get_codec("claude_code").decode(entries)
    assert messages[0].parts[0].name == SUMMARIZATION_TOOL_NAME  # type: ignore[union-attr]
    (text,) = summary_texts([Message.human("Continue."), *messages])
    assert text == entries[0]["message"]["content"]
    assert get_codec("claude_code").decode(get_codec("claude_code").encode(messages)) == messages


def test_summary_prompts_leave_out_fields_of_calls_and_messages() -> None:
    from csum import messages_to_prompt

    messages = pending_chain()
    ai = [m for m in messages if m.role is Role.AI]
    prompt = messages_to_prompt([messages[0]], ai)
    assert "get_exchange_rate" in prompt
    assert "[anthropic caller]" not in prompt
    assert "[anthropic server_tool_use]" in prompt  # content blocks stay
