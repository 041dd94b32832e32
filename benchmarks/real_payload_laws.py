"""The laws every real provider payload of the shared corpus (``payloads/project-fixtures``,
:data:`benchmarks.shared_corpus.PAYLOADS`) is held to, written once for
the test suite (``tests/cast/test_real_payloads.py``, which asserts them) and for
``benchmarks/real_payload_counts.py`` (which counts them, on any checkout).

Only APIs that every recent checkout has are used here, so the counts can compare two.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from pathlib import Path
from typing import Any

from cast.codecs._common import b64decode_any

ROOT = Path(__file__).resolve().parent.parent
CODECS_DOC = ROOT / "docs" / "codecs.md"

SOURCE_PROVIDER: dict[str, str | None] = {
    "anthropic": "anthropic",
    "claude_code": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
    "openai": "openai",
    "openai_responses": "openai-responses",
    "langchaingo": None,
}
"""The provider whose reasoning a payload of each codec carries (port's ``source``)."""

_BASE64_KEYS = frozenset({"data", "bytes", "file_data", "image_url", "url"})


def not_carried_fields(doc: Path = CODECS_DOC) -> dict[str, frozenset[str]]:
    """The fields docs/codecs.md lists, per codec, as not carried (its "Fields not
    carried" table; empty sets when the doc has none): the strict law exempts exactly
    these, so the two cannot drift."""
    text = doc.read_text(encoding="utf-8")
    fields: dict[str, set[str]] = {codec: set() for codec in SOURCE_PROVIDER}
    if "## Fields not carried" not in text:
        return {codec: frozenset() for codec in fields}
    table = text.split("## Fields not carried", 1)[1].split("\n## ", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            fields[cells[0].strip("`")].update(re.findall(r"`([^`]+)`", cells[1]))
    return {codec: frozenset(keys) for codec, keys in fields.items()}


def standard_base64(text: str) -> str:
    """URL-safe base64 (or a data: URL holding it) in the standard padded alphabet,
    the codecs' canonical form; other text unchanged."""
    head, sep, data = text.rpartition(",") if text.startswith("data:") else ("", "", text)
    if any(c in data for c in "+/ .:") or not ("-" in data or "_" in data):
        return text
    decoded = b64decode_any(data)
    if decoded is None:
        return text
    return head + sep + base64.b64encode(decoded).decode("ascii")


def string_leaves(value: Any, skipped: frozenset[str], key: str = "") -> list[str]:
    """Every string (and number) value in ``value``, except those under ``skipped``
    keys; base64 in the codecs' canonical alphabet."""
    if key in skipped:
        return []
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in string_leaves(v, skipped, k)]
    if isinstance(value, list):
        return [x for v in value for x in string_leaves(v, skipped, key)]
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
        return [standard_base64(text) if key in _BASE64_KEYS else text]
    return []


def lost_values(payload: Any, encoded: Any, not_carried: frozenset[str]) -> list[str]:
    """The strict keep-every-value law: every string value of ``payload`` (outside the
    ``not_carried`` fields) is a value of ``encoded``, or part of one (texts a codec
    joins, objects it writes as compact JSON). Keys never count: a value that survives
    only as a key, or not at all, is lost."""
    before = Counter(string_leaves(payload, not_carried))
    values = string_leaves(encoded, frozenset())
    left = before - Counter(values)
    return [value for value in left if not any(value in v for v in values)]
