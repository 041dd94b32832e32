"""Image token counts by the providers' published formulas, from the pixel size read in
the header of PNG, GIF, JPEG and WebP data (:data:`UNKNOWN_IMAGE_SIZE` for a URL).

* openai: ``detail="low"`` 85; else fit 2048 x 2048, shortest side 768, 85 + 170 a
  512-pixel tile (platform.openai.com/docs/guides/images-vision#calculating-costs).
* anthropic: long edge scaled to 1568, then width x height / 750
  (docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs).
* gemini: 258 up to 384 x 384, else 258 a 768 x 768 tile
  (ai.google.dev/gemini-api/docs/tokens#multimodal-tokens).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Literal

__all__ = ["IMAGE_FORMULAS", "UNKNOWN_IMAGE_SIZE", "ImageFormula", "image_size", "image_tokens"]

ImageFormula = Literal["openai", "anthropic", "gemini"]
IMAGE_FORMULAS: tuple[ImageFormula, ...] = ("openai", "anthropic", "gemini")

UNKNOWN_IMAGE_SIZE = (1024, 1024)
"""Pixel size assumed for an image whose data is not at hand (a remote URL)."""

_DATA_URL = re.compile(r"data:[^,]*;base64,", re.IGNORECASE)


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from PNG, GIF, JPEG or WebP header bytes; None otherwise."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return _webp_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        index += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
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
    payload = url[match.end() : match.end() + limit * 4 // 3 + 4].replace("-", "+")
    payload = payload.replace("_", "/").strip()
    payload = payload[: len(payload) // 4 * 4]
    try:
        return image_size(base64.b64decode(payload))
    except (binascii.Error, ValueError):
        return None


def image_tokens(
    size: tuple[int, int] | None, formula: ImageFormula = "openai", *, detail: str = ""
) -> int:
    """Tokens one image costs under ``formula`` (see the module docstring)."""
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
