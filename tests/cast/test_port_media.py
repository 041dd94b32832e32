"""Port keeps what matters when moving between providers: media in tool results,
blocks kept from one provider, failed tool results. For random chains and every
(source, target) pair of provider profiles, the ported chain lints clean for the target
and the target's codec encodes it; port is idempotent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast import lint, port
from cast._port import MOVED_MEDIA_TEXT, TOOL_ERROR_PREFIX
from cast.codecs import get_codec
from cast.messages import (
    BinaryPart,
    ImagePart,
    Message,
    ProviderPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.parse import parse_chain
from cast.providers import PROVIDERS

TARGETS = sorted(PROVIDERS)
WIRE_FORMATS = sorted({p.wire_format for p in PROVIDERS.values()})

MIME_TYPES = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/tiff",
    "application/pdf",
    "text/plain",
    "text/csv",
    "audio/wav",
    "audio/mpeg",
    "video/mp4",
)

media_parts = st.one_of(
    st.builds(
        BinaryPart,
        mime_type=st.sampled_from(MIME_TYPES),
        data=st.binary(min_size=1, max_size=16),
        filename=st.sampled_from(["", "report.pdf"]),
    ),
    st.builds(
        ImagePart,
        url=st.sampled_from(["https://example.com/a.png", "data:image/png;base64,iVBORw0K"]),
    ),
    st.builds(
        ImagePart,
        url=st.just("https://example.com/doc.pdf"),
        mime_type=st.sampled_from(["application/pdf", "video/mp4"]),
    ),
)

provider_parts = st.builds(
    ProviderPart,
    provider=st.sampled_from(WIRE_FORMATS),
    kind=st.sampled_from(["web_search_tool_result", "text", "cache_control", "mcp_call"]),
    data=st.sampled_from(['{"type":"text","text":"cited"}', '{"a":[1,2]}', '{"type":"ephemeral"}']),
)


@st.composite
def chains(draw: st.DrawFn) -> list[Message]:
    """A system prompt, then turns: a human message (text, sometimes media), an AI
    message calling tools, their results with media and kept blocks after them."""
    chain = [Message.system("Be brief.")]
    for turn in range(draw(st.integers(1, 3))):
        human: list[Any] = [TextPart(text=f"question {turn}")]
        human += draw(st.lists(media_parts | provider_parts, max_size=1))
        chain.append(Message(role=Role.HUMAN, parts=human))
        ids = [f"call_{turn}_{n}" for n in range(draw(st.integers(1, 2)))]
        calls = [ToolCall(id=i, name="get_file", arguments="{}") for i in ids]
        ai: list[Any] = draw(st.lists(provider_parts, max_size=1))
        chain.append(Message(role=Role.AI, parts=[*ai, *calls]))
        for call_id in ids:
            result = ToolResult(
                tool_call_id=call_id, name="get_file", content="file", is_error=draw(st.booleans())
            )
            extras = draw(st.lists(media_parts | provider_parts, max_size=2))
            chain.append(Message(role=Role.TOOL, parts=[result, *extras]))
        if draw(st.booleans()):
            chain.append(Message.ai("done"))
    return chain


def encode_for(target: str, messages: list[Message]) -> Any:
    return get_codec(PROVIDERS[target].wire_format.replace("-", "_")).encode(messages)


@given(
    chain=chains(),
    source=st.sampled_from(TARGETS),
    target=st.sampled_from(TARGETS),
)
def test_ported_chains_with_media_lint_clean_and_encode(
    chain: list[Message], source: str, target: str
) -> None:
    out = port(chain, target, source=source)
    assert lint(out, target, source=source) == []
    parse_chain(out)
    encode_for(target, out)
    assert port(out, target, source=source) == out


@pytest.mark.parametrize("target", ["openai", "mistral", "groq"])
def test_media_in_tool_results_moves_to_a_user_turn(target: str) -> None:
    pdf = BinaryPart(mime_type="image/png", data=b"\x89PNG", filename="shot.png")
    chain = [
        Message.human("Read the file."),
        Message.ai("", ToolCall(id="call_1", name="get_file")),
        Message(
            role=Role.TOOL,
            parts=[ToolResult(tool_call_id="call_1", name="get_file", content="ok"), pdf],
        ),
        Message.human("What is in it?"),
    ]
    out = port(chain, target)
    moved = next(m for m in out if m.role is Role.HUMAN and pdf in m.parts)
    assert moved.parts[0] == TextPart(text=MOVED_MEDIA_TEXT)
    tool = next(m for m in out if m.role is Role.TOOL)
    assert pdf not in tool.parts
    assert "moved to the next user message" in tool.parts[-1].text  # type: ignore[union-attr]
    assert lint(out, target) == []
    encode_for(target, out)


def test_media_a_target_takes_nowhere_becomes_a_note() -> None:
    audio = BinaryPart(mime_type="audio/wav", data=b"RIFF")
    chain = [Message(role=Role.HUMAN, parts=[TextPart(text="listen"), audio])]
    out = port(chain, "anthropic")
    note = out[0].parts[1]
    assert isinstance(note, TextPart)
    assert "audio/wav" in note.text
    assert "anthropic" in note.text
    assert port(chain, "gemini") == chain  # Gemini takes audio


def test_kept_blocks_stay_for_their_provider_and_become_notes_elsewhere() -> None:
    search = ProviderPart(
        provider="anthropic",
        kind="web_search_tool_result",
        data=json.dumps({"type": "web_search_tool_result", "tool_use_id": "srv_1"}),
    )
    cache = ProviderPart(provider="anthropic", kind="cache_control", data='{"type":"ephemeral"}')
    chain = [Message.human("q"), Message(role=Role.AI, parts=[search, TextPart(text="a")])]
    chain[0] = Message(role=Role.HUMAN, parts=[TextPart(text="q"), cache])
    assert port(chain, "anthropic", source="anthropic") == chain
    out = port(chain, "openai", source="anthropic")
    assert out[0].parts == (TextPart(text="q"),)  # a cache breakpoint means nothing elsewhere
    note = out[1].parts[0]
    assert isinstance(note, TextPart)
    assert "web_search_tool_result" in note.text
    assert "srv_1" in note.text


def test_failed_tool_results_keep_their_flag_or_say_so() -> None:
    chain = [
        Message.human("q"),
        Message.ai("", ToolCall(id="call_1", name="f")),
        Message(
            role=Role.TOOL,
            parts=[ToolResult(tool_call_id="call_1", name="f", content="boom", is_error=True)],
        ),
    ]
    for target in ("anthropic", "bedrock", "gemini"):
        result = port(chain, target)[2].parts[0]
        assert isinstance(result, ToolResult)
        assert result.is_error
    result = port(chain, "openai")[2].parts[0]
    assert isinstance(result, ToolResult)
    assert result.content == TOOL_ERROR_PREFIX + "boom"
    assert not result.is_error
    wire = get_codec("anthropic").encode(port(chain, "anthropic"))
    assert wire["messages"][2]["content"][0]["is_error"] is True
    wire = get_codec("bedrock").encode(port(chain, "bedrock"))
    assert wire["messages"][2]["content"][0]["toolResult"]["status"] == "error"
    wire = get_codec("gemini").encode(port(chain, "gemini"))
    assert wire["contents"][2]["parts"][0]["functionResponse"]["response"] == {"error": "boom"}


def test_empty_messages_are_filled_for_every_target() -> None:
    chain = [Message.human("q"), Message(role=Role.AI, parts=()), Message.human("again")]
    out = port(chain, "anthropic")
    assert out[1].text
    assert lint(out, "anthropic") == []
    assert lint(chain, "anthropic")[0].rule == "empty-message"
    # OpenAI refuses an assistant message with neither content nor tool calls too.
    assert port(chain, "openai") == out
    assert lint(chain, "openai")[0].rule == "empty-message"
