"""Budgets, the token counters, the context-window table, image token formulas, and
events as OpenTelemetry spans."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import pytest

from cast import BinaryPart, ImagePart, Message, Role, TextPart, ToolCall
from csum import (
    MODEL_CONTEXT_WINDOWS,
    Budget,
    CompactionEvent,
    Compactor,
    EstimatedTokens,
    TiktokenCounter,
    TokenCounter,
    context_window,
    otel_listener,
)
from csum.tokens import image_size, image_tokens
from tests.conftest import CORPUS


def png(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(header))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
    )


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 4


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 3) + b"\x00" * 3
    return b"\xff\xd8" + app0 + sof


def webp(width: int, height: int) -> bytes:
    body = (
        b"WEBPVP8X"
        + b"\x00" * 8
        + (width - 1).to_bytes(3, "little")
        + (height - 1).to_bytes(3, "little")
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


@pytest.mark.parametrize("make", [png, gif, jpeg, webp])
def test_image_size_from_headers(make: object) -> None:
    assert image_size(make(1200, 800)) == (1200, 800)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("size", "formula", "detail", "tokens"),
    [
        ((1024, 1024), "openai", "high", 765),  # OpenAI's worked example
        ((2048, 4096), "openai", "high", 1105),  # idem: 768x1536, 6 tiles
        ((4096, 8192), "openai", "low", 85),
        ((1000, 1000), "anthropic", "", 1334),  # (1000 x 1000) / 750
        ((3000, 3000), "anthropic", "", 3279),  # scaled to 1568 x 1568 first
        ((300, 300), "gemini", "", 258),
        ((1000, 1000), "gemini", "", 1032),  # 4 tiles of 768
    ],
)
def test_image_token_formulas(
    size: tuple[int, int], formula: str, detail: str, tokens: int
) -> None:
    assert image_tokens(size, formula, detail=detail) == tokens  # type: ignore[arg-type]


def test_images_are_counted_by_formula_not_by_bytes() -> None:
    data = png(1024, 1024) + b"\x00" * 200_000
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    urlsafe = "data:image/png;base64," + base64.urlsafe_b64encode(data).decode().rstrip("=")
    counter = EstimatedTokens("openai")
    for part in (
        ImagePart(url=url),
        ImagePart(url=urlsafe),
        BinaryPart(mime_type="image/png", data=data),
    ):
        message = Message(role=Role.HUMAN, parts=[part])
        assert counter.count(message) == 4 + 765
    remote = Message(role=Role.HUMAN, parts=[ImagePart(url="https://x.test/a.png", detail="low")])
    assert counter.count(remote) == 4 + 85
    assert (
        EstimatedTokens("anthropic").count(Message(role=Role.HUMAN, parts=[ImagePart(url=url)]))
        == 4 + 1399
    )


def test_estimate_counts_each_kind() -> None:
    counter = EstimatedTokens()
    message = Message(
        role=Role.AI, parts=[TextPart(text="a" * 400), ToolCall(id="c", name="f", arguments="{}")]
    )
    assert counter.count(message) == 4 + 100 + 8 + 1
    assert isinstance(counter, TokenCounter)


def test_budget_constructors() -> None:
    assert Budget.bytes(100) == Budget(100, "bytes")
    assert Budget.tokens(100).unit == "tokens"
    assert Budget.of_model("gpt-4o-2024-08-06", 0.5) == Budget.tokens(64_000)
    assert Budget.of_model("anthropic/claude-sonnet-4-20250514").limit == 200_000
    assert Budget.of_model("my-model", 0.25, windows={"my-model": 40_000}).limit == 10_000
    assert str(Budget.tokens(1000)) == "1,000 tokens"
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="positive int"):
            Budget(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fraction"):
        Budget.of_model("gpt-4o", 0)
    with pytest.raises(TypeError, match="fraction must be a number"):
        Budget.of_model("gpt-4o", True)
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        context_window("nope")


def test_window_table_prefers_the_longest_prefix() -> None:
    assert context_window("gpt-4o-mini") == MODEL_CONTEXT_WINDOWS["gpt-4o-mini"]
    assert context_window("gpt-4.1-nano") == 1_047_576
    assert context_window("gpt-4o", {"gpt-4o": 5}) == 5


def test_tiktoken_counter_with_an_encoder_object() -> None:
    class Words:
        def encode(self, text: str) -> list[str]:
            return text.split()

    counter = TiktokenCounter(Words())
    assert counter.count(Message.human("one two three")) == 4 + 3


def test_tiktoken_counter_with_a_real_encoding() -> None:
    bpe = pytest.importorskip("bpe_openai")
    counter = TiktokenCounter(bpe.get_encoding("o200k_base"))
    assert counter.count(Message.human("hello world")) == 4 + 2


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not found")
def test_estimate_is_calibrated_on_the_corpus() -> None:
    """Against o200k_base, the estimate stays within -10 %..+50 % per chain and errs on
    the side of counting more (so token budgets hold)."""
    bpe = pytest.importorskip("bpe_openai")
    from cast.chainio import decode_chain

    exact = TiktokenCounter(bpe.get_encoding("o200k_base"))
    estimate = EstimatedTokens()
    ratios = []
    for path in sorted(CORPUS.glob("*/*.json"))[::3]:
        messages, _ = decode_chain(json.loads(path.read_text(encoding="utf-8")))
        ratios.append(sum(map(estimate.count, messages)) / sum(map(exact.count, messages)))
    assert min(ratios) > 0.9
    assert max(ratios) < 1.5
    assert sum(ratios) / len(ratios) > 1.0


def test_otel_listener_records_a_span_per_event() -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = export.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    listener = otel_listener(provider.get_tracer("test"))

    async def handler(prompt: str) -> str:
        return "short summary"

    chain = [Message.system("s"), Message.human("q")]
    for index in range(20):
        chain += [
            Message.ai("", ToolCall(id=f"c{index}", name="f")),
            Message.tool(f"c{index}", "f", "x" * 500),
        ]
    events: list[CompactionEvent] = []

    def both(event: CompactionEvent) -> None:
        events.append(event)
        listener(event)

    Compactor(handler, budget=4000, on_event=both).compact_sync(chain)
    (span,) = exporter.get_finished_spans()
    assert span.name == "csum.compaction"
    assert span.attributes["csum.reason"] == "over-budget"
    assert span.attributes["csum.bytes_after"] == events[0].bytes_after
    assert span.attributes["csum.handler_calls"] == 1


@pytest.mark.parametrize(
    ("spelling", "window"),
    [
        ("openai:gpt-4o", 128_000),  # pydantic-ai, LangChain init_chat_model
        ("anthropic:claude-sonnet-4-5-20250929", 200_000),
        ("google-gla:gemini-2.5-flash", 1_048_576),
        ("gpt-4o", 128_000),  # init_chat_model("gpt-4o", model_provider="openai")
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000),  # Bedrock
        ("us.anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000),  # cross-region
        ("bedrock:eu.anthropic.claude-sonnet-4-20250514-v1:0", 200_000),
        ("claude-3-5-sonnet-v2@20241022", 200_000),  # Vertex
        ("publishers/google/models/gemini-2.5-pro", 1_048_576),  # Vertex resource
        ("projects/p/locations/us/publishers/anthropic/models/claude-opus-4", 200_000),
    ],
)
def test_the_frameworks_and_clouds_model_names(spelling: str, window: int) -> None:
    """``Budget.of_model`` refused every spelling but the bare name."""
    assert context_window(spelling) == window
    assert Budget.of_model(spelling, 0.5) == Budget.tokens(window // 2)


def test_an_unknown_model_says_how_to_give_its_window() -> None:
    with pytest.raises(ValueError, match=r"windows=\{'my-llm': 128_000\}.*budget=") as info:
        Budget.of_model("acme:my-llm")
    assert "known models: claude-3-5-haiku" in str(info.value)
    assert Budget.of_model("acme:my-llm", windows={"my-llm": 1000}) == Budget.tokens(1000)
    with pytest.raises(TypeError, match="model name"):
        context_window(None)  # type: ignore[arg-type]
