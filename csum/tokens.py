"""Token counters (:class:`EstimatedTokens` by calibrated bytes-per-token ratios, no
tokenizer; :class:`TiktokenCounter` exact), the context windows of common models, and
the :class:`Meter` that measures a chain in a budget's unit."""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

from cast import (
    BinaryPart,
    BodyPair,
    ChainAST,
    Header,
    ImagePart,
    Message,
    Section,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.chainio import install_hint
from cast.internals import utf8_len

__all__ = [
    "BYTES_PER_TOKEN",
    "IMAGE_FORMULAS",
    "MODEL_CONTEXT_WINDOWS",
    "UNKNOWN_IMAGE_SIZE",
    "EstimatedTokens",
    "Meter",
    "TiktokenCounter",
    "TokenCounter",
    "context_window",
    "image_size",
    "image_tokens",
    "model_key",
    "url_image_size",
]

MODEL_CONTEXT_WINDOWS: Mapping[str, int] = MappingProxyType(
    {
        # https://platform.openai.com/docs/models
        "gpt-3.5-turbo": 16_385,
        "gpt-4-turbo": 128_000,
        "gpt-4o": 128_000,
        "gpt-4o-mini": 128_000,
        "gpt-4.1": 1_047_576,
        "gpt-5": 400_000,
        "o1": 200_000,
        "o3": 200_000,
        "o4-mini": 200_000,
        # https://docs.anthropic.com/en/docs/about-claude/models/overview
        "claude-3-5-haiku": 200_000,
        "claude-3-5-sonnet": 200_000,
        "claude-3-7-sonnet": 200_000,
        "claude-haiku-4": 200_000,
        "claude-opus-4": 200_000,
        "claude-sonnet-4": 200_000,
        # https://ai.google.dev/gemini-api/docs/models
        "gemini-1.5-flash": 1_048_576,
        "gemini-1.5-pro": 2_097_152,
        "gemini-2.0-flash": 1_048_576,
        "gemini-2.5-flash": 1_048_576,
        "gemini-2.5-pro": 1_048_576,
        # https://api-docs.deepseek.com/quick_start/pricing
        "deepseek-chat": 128_000,
        "deepseek-reasoner": 128_000,
        # https://docs.mistral.ai/getting-started/models/models_overview/
        "mistral-large": 128_000,
    }
)
"""Context windows in tokens of common models, by name prefix (dated and suffixed
versions such as ``gpt-4o-2024-08-06`` match their family), from each provider's models
page; docs/compactor.md lists them."""


_FRAMEWORK_PREFIX = re.compile(r"^[a-z][a-z0-9_-]*:(?![0-9])")
"""``openai:``, ``anthropic:``, ``google-gla:``, ``bedrock:`` (pydantic-ai, LangChain)."""
_BEDROCK_PREFIX = re.compile(
    r"^(?:(?:us|us-gov|eu|apac|jp|au|ca|global)\.)?"
    r"(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|openai|qwen|writer)\."
)
"""A Bedrock model id's cross-region inference prefix and vendor (``us.anthropic.``)."""


def model_key(model: str) -> str:
    """The bare model name in a framework's or a cloud's spelling of it: without a
    framework prefix (``openai:gpt-4o``), a path (``publishers/google/models/...``,
    ``openai/gpt-4o``) or a Bedrock region and vendor (``us.anthropic.claude-...``);
    lower case. Version suffixes stay (names match by prefix)."""
    name = model.strip().lower()
    name = _FRAMEWORK_PREFIX.sub("", name, count=1)
    name = name.rsplit("/", 1)[-1]
    return _BEDROCK_PREFIX.sub("", name, count=1)


def context_window(model: str, windows: Mapping[str, int] | None = None) -> int:
    """The context window of ``model`` in tokens: the entry of ``windows`` (then of
    :data:`MODEL_CONTEXT_WINDOWS`) whose name is the longest prefix of the model's
    :func:`model_key` (case-insensitive; framework, path and Bedrock prefixes ignored).

    Raises ``ValueError`` saying how to give the window when none matches.
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a model name (str), not {type(model).__name__}")
    name = model_key(model)
    for table in (windows or {}, MODEL_CONTEXT_WINDOWS):
        best = max((key for key in table if name.startswith(model_key(key))), key=len, default=None)
        if best is not None:
            return table[best]
    known = ", ".join(sorted({*MODEL_CONTEXT_WINDOWS, *(windows or {})}))
    raise ValueError(
        f"unknown model {model!r} (read as {name!r}): give its context window, "
        f"Budget.of_model({model!r}, 0.5, windows={{{name!r}: 128_000}}), or a budget "
        f'of your own, budget=Budget.tokens(64_000) or budget="256KiB"; '
        f"known models: {known}"
    )


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens one message costs in a request."""

    def count(self, message: Message) -> int:
        """Tokens of ``message``, its framing included."""
        ...


MESSAGE_OVERHEAD = 4
"""Tokens of a message's framing (role and separators; OpenAI documents 3 + 1)."""
CALL_OVERHEAD = 8
"""Tokens of a tool call's or tool result's framing (id, type, JSON keys)."""


class _PartCounter:
    image_formula: ImageFormula

    def text_tokens(self, text: str, kind: str) -> int:
        raise NotImplementedError

    def count(self, message: Message) -> int:
        total = MESSAGE_OVERHEAD
        part: Any
        for part in message.parts:
            cls = type(part)
            if cls is TextPart or cls is ToolCall:
                if (reasoning := part.reasoning) is not None:
                    total += self.text_tokens(reasoning.content, "reasoning")
                if cls is TextPart:
                    total += self.text_tokens(part.text, "text")
                else:
                    total += CALL_OVERHEAD + self.text_tokens(part.name + part.arguments, "call")
            elif cls is ToolResult:
                total += CALL_OVERHEAD + self.text_tokens(part.content, "result")
            elif cls is ImagePart:
                size = url_image_size(part.url)
                total += image_tokens(size, self.image_formula, detail=part.detail)
            elif cls is BinaryPart:
                if part.mime_type.startswith("image/"):
                    total += image_tokens(image_size(part.data[:65536]), self.image_formula)
                else:
                    total += math.ceil(len(part.data) / BYTES_PER_TOKEN["binary"])
        return total


BYTES_PER_TOKEN: Mapping[str, float] = MappingProxyType(
    {"text": 4.0, "reasoning": 4.0, "call": 3.5, "result": 3.0, "binary": 4.0}
)
"""UTF-8 bytes per token of each kind of content, calibrated with the o200k_base
encoding on the corpus (``benchmarks/calibrate_tokens.py``): prose 4.07-4.65, tool-call
arguments 3.53-3.66, tool results 2.75-3.41. Rounded down (results: a little above the
tau-bench figure, which is dominated by short JSON), so that the estimate tends to
count more tokens than there are: a budget is then kept, not overrun."""


class EstimatedTokens(_PartCounter):
    """The default token counter: no tokenizer, bytes divided by calibrated ratios;
    ``image_formula`` picks the provider formula images are counted with (``"openai"``,
    ``"anthropic"``, ``"gemini"``)."""

    def __init__(
        self,
        image_formula: ImageFormula = "openai",
        bytes_per_token: Mapping[str, float] | None = None,
    ) -> None:
        ratios = {**BYTES_PER_TOKEN, **(bytes_per_token or {})}
        if any(not value > 0 for value in ratios.values()):
            raise ValueError(f"bytes_per_token ratios must be positive, got {ratios}")
        image_tokens(None, image_formula)  # validates the name
        self.image_formula = image_formula
        self.ratios = ratios

    def text_tokens(self, text: str, kind: str) -> int:
        if not text:
            return 0
        return math.ceil(utf8_len(text) / self.ratios[kind])

    def __repr__(self) -> str:
        return f"EstimatedTokens(image_formula={self.image_formula!r})"


class TiktokenCounter(_PartCounter):
    """Exact text counts with an OpenAI encoding (optional extra ``tiktoken``): an
    encoding name (``"o200k_base"``, GPT-4o and later; ``"cl100k_base"``, GPT-4) loaded
    with ``tiktoken.get_encoding``, or any object with a tiktoken-style ``encode(text)``
    method. Framing and images are counted as by :class:`EstimatedTokens`."""

    def __init__(self, encoding: str | Any = "o200k_base", image_formula: ImageFormula = "openai"):
        if isinstance(encoding, str):
            try:
                import tiktoken
            except ImportError as exc:  # pragma: no cover - depends on the extra
                raise ImportError(
                    f"TiktokenCounter needs tiktoken: {install_hint('tiktoken')}"
                ) from exc
            encoding = tiktoken.get_encoding(encoding)
        if not callable(getattr(encoding, "encode", None)):
            raise TypeError(f"encoding must be a name or have encode(), not {encoding!r}")
        image_tokens(None, image_formula)
        self.encoding = encoding
        self.image_formula = image_formula

    def text_tokens(self, text: str, kind: str) -> int:
        if not text:
            return 0
        try:
            return len(self.encoding.encode(text, disallowed_special=()))
        except TypeError:  # an encoder without tiktoken's keyword
            return len(self.encoding.encode(text))

    def __repr__(self) -> str:
        return f"TiktokenCounter({getattr(self.encoding, 'name', self.encoding)!r})"


class Meter:
    """Measures messages and AST nodes in the budget's unit; token counts are cached per
    message object for the messages of the last call."""

    def __init__(self, unit: str, counter: TokenCounter) -> None:
        self.unit = unit
        self.counter = counter
        self._bytes = unit == "bytes"
        self._cache: dict[int, tuple[Message, int]] = {}
        self._fresh: dict[int, tuple[Message, int]] = {}

    def tokens(self, message: Message) -> int:
        key = id(message)
        hit = self._cache.get(key) or self._fresh.get(key)
        if hit is not None and hit[0] is message:
            self._fresh[key] = hit
            return hit[1]
        count = self.counter.count(message)
        self._fresh[key] = (message, count)
        return count

    def __call__(self, message: Message) -> int:
        return message.size if self._bytes else self.tokens(message)

    def node(self, node: Header | BodyPair | Section) -> int:
        """The size of a node of the AST (its messages')."""
        return node.size if self._bytes else sum(map(self.tokens, node.messages()))

    def chain(self, ast: ChainAST) -> int:
        """The size of a whole chain."""
        return ast.size if self._bytes else sum(map(self.node, ast.sections))

    def total(self, messages: Iterable[Message]) -> int:
        """The size of a few loose messages (a turn's new ones, an insertion)."""
        return sum(map(self, messages))

    def all_tokens(self, ast: ChainAST) -> int:
        """Tokens of the chain (for the events; not cached with a byte budget)."""
        count = self.counter.count if self._bytes else self.tokens
        return sum(count(m) for section in ast.sections for m in section.messages())

    def rotate(self) -> None:
        """End a call that measured the whole chain: keep only what it measured."""
        self._cache, self._fresh = self._fresh, {}

    def keep(self) -> None:
        """End a call that measured only new messages: keep everything."""
        self._cache.update(self._fresh)
        self._fresh = {}


# --- images ----------------------------------------------------------------------
# Image token counts by the providers' published formulas, from the pixel size read in
# the header of PNG, GIF, JPEG and WebP data (:data:`UNKNOWN_IMAGE_SIZE` for a URL).
#
# * openai: ``detail="low"`` 85; else fit 2048 x 2048, shortest side 768, 85 + 170 a
#   512-pixel tile (platform.openai.com/docs/guides/images-vision#calculating-costs).
# * anthropic: long edge scaled to 1568, then width x height / 750
#   (docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs).
# * gemini: 258 up to 384 x 384, else 258 a 768 x 768 tile
#   (ai.google.dev/gemini-api/docs/tokens#multimodal-tokens).

ImageFormula = Literal["openai", "anthropic", "gemini"]
IMAGE_FORMULAS: tuple[ImageFormula, ...] = ("openai", "anthropic", "gemini")

UNKNOWN_IMAGE_SIZE = (1024, 1024)
"""Pixel size assumed for an image whose data is not at hand (a remote URL)."""

_DATA_URL = re.compile(r"data:[^,]*;base64,", re.IGNORECASE)


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from PNG, GIF, JPEG or WebP header bytes; None otherwise."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data.startswith(b"\xff\xd8"):  # JPEG: the first start-of-frame segment
        index = 2
        while index + 9 < len(data) and data[index] == 0xFF:
            marker = data[index + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                index += 2
                continue
            (length,) = struct.unpack(">H", data[index + 2 : index + 4])
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[index + 5 : index + 9])
                return width, height
            index += 2 + length
    elif data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        chunk = data[12:16]
        if chunk == b"VP8 " and len(data) >= 30:
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X" and len(data) >= 30:
            width = int.from_bytes(data[24:27], "little") + 1
            height = int.from_bytes(data[27:30], "little") + 1
            return width, height
    return None


def url_image_size(url: str, limit: int = 65536) -> tuple[int, int] | None:
    """The pixel size of a base64 ``data:`` URL image (standard or URL-safe), read from
    the first ``limit`` bytes of its payload, or None."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    payload = url[match.end() : match.end() + limit * 4 // 3 + 4].strip()
    payload = payload[: len(payload) // 4 * 4]
    try:
        return image_size(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):
        return None


def image_tokens(
    size: tuple[int, int] | None, formula: ImageFormula = "openai", *, detail: str = ""
) -> int:
    """Tokens one image costs under ``formula`` (see the comment above ``ImageFormula``)."""
    pixels = size if size is not None and min(size) > 0 else UNKNOWN_IMAGE_SIZE
    width, height = float(pixels[0]), float(pixels[1])
    if formula == "openai":
        if detail == "low":
            return 85
        scale = min(1.0, 2048 / max(width, height))
        width, height = width * scale, height * scale
        scale = min(1.0, 768 / min(width, height))
        width, height = width * scale, height * scale
        return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)
    if formula == "anthropic":
        scale = min(1.0, 1568 / max(width, height))
        return max(1, math.ceil(width * scale * height * scale / 750))
    if formula == "gemini":
        if width <= 384 and height <= 384:
            return 258
        return 258 * math.ceil(width / 768) * math.ceil(height / 768)
    raise ValueError(f"unknown image formula {formula!r}; expected one of {IMAGE_FORMULAS}")
