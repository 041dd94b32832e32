"""Counts over every real payload in ``tests/fixtures/real``: how many round-trip, keep
every value, port + lint + encode for each target, and summarize for each target
without growth or a new lint violation.

Run it on two checkouts to compare them (the fixtures and the not-carried table are
read from this file's tree, the library from whatever ``cast`` imports)::

    PYTHONPATH=. python benchmarks/real_payload_counts.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/real_payload_counts.py

It only uses APIs both sides have; where ``port`` raises for an encrypted compaction
item, the documented ``encrypted_compaction="note"`` option is used and the payload is
counted in the ``raised by default`` line.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from cast import Message, Role, lint, port
from cast.codecs import get_codec
from cast.codecs._common import b64decode_any
from cast.providers import PROVIDERS, ProviderProfile
from csum import Summarizer, SummarizerConfig
from csum.handlers import extractive

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
SOURCE = {
    "anthropic": "anthropic",
    "claude_code": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
    "openai": "openai",
    "openai_responses": "openai-responses",
    "langchaingo": None,
}
SMALL = SummarizerConfig(
    last_section_bytes=600, max_body_pair_bytes=300, use_qa=True, max_qa_bytes=1200
)
_BASE64_KEYS = frozenset({"data", "bytes", "file_data", "image_url", "url"})


def not_carried() -> dict[str, frozenset[str]]:
    """docs/codecs.md's "Fields not carried" table (empty when the doc has none)."""
    text = (ROOT / "docs" / "codecs.md").read_text(encoding="utf-8")
    fields: dict[str, set[str]] = {codec: set() for codec in SOURCE}
    if "## Fields not carried" in text:
        table = text.split("## Fields not carried", 1)[1].split("\n## ", 1)[0]
        for line in table.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[0].startswith("`"):
                fields[cells[0].strip("`")].update(re.findall(r"`([^`]+)`", cells[1]))
    return {codec: frozenset(keys) for codec, keys in fields.items()}


def _canonical(text: str) -> str:
    head, sep, data = text.rpartition(",") if text.startswith("data:") else ("", "", text)
    if any(c in data for c in "+/ .:") or not ("-" in data or "_" in data):
        return text
    decoded = b64decode_any(data)
    if decoded is None:
        return text
    import base64

    return head + sep + base64.b64encode(decoded).decode("ascii")


def leaves(value: Any, skipped: frozenset[str], key: str = "") -> list[str]:
    """String and number values of ``value`` outside ``skipped`` keys."""
    if key in skipped:
        return []
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in leaves(v, skipped, k)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v, skipped, key)]
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [_canonical(str(value)) if key in _BASE64_KEYS else str(value)]
    return []


def keeps_every_value(codec: str, payload: Any, encoded: Any, skip: frozenset[str]) -> bool:
    values = leaves(encoded, frozenset())
    left = Counter(leaves(payload, skip)) - Counter(values)
    return all(any(value in v for v in values) for value in left)


def is_empty(message: Message) -> bool:
    return message.role is not Role.SYSTEM and all(
        type(p).__name__ == "TextPart" and not p.text and p.reasoning is None  # type: ignore[union-attr]
        for p in message.parts
    )


def ported(codec: str, messages: list[Message], profile: ProviderProfile) -> tuple[Any, bool]:
    """(the ported chain, whether port raised by default for an encrypted compaction)."""
    try:
        return port(messages, profile, source=SOURCE[codec]), False
    except ValueError as error:
        if type(error).__name__ != "EncryptedCompactionError":
            raise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = port(messages, profile, source=SOURCE[codec], encrypted_compaction="note")
    return out, True


def raises_by_default(codec: str, messages: list[Message], profile: ProviderProfile) -> bool:
    return ported(codec, messages, profile)[1]


def port_lint_encode(codec: str, messages: list[Message], profile: ProviderProfile) -> bool:
    out, _ = ported(codec, messages, profile)
    if any(is_empty(m) for m in out) or lint(out, profile, source=SOURCE[codec]):
        return False
    get_codec(profile.wire_format.replace("-", "_")).encode(out)
    return True


def summarizes(codec: str, messages: list[Message], profile: ProviderProfile) -> bool:
    chain, _ = ported(codec, messages, profile)
    before = {str(v) for v in lint(chain, profile)}

    async def run() -> list[Message]:
        return await Summarizer(SMALL).summarize_chain(
            extractive(200), chain, target=profile.name, allow_growth=False
        )

    out = anyio.run(run)
    grew = sum(m.size for m in out) > sum(m.size for m in chain)
    return not grew and not [v for v in lint(out, profile) if str(v) not in before]


def attempt(check: Any, *args: Any) -> bool:
    try:
        return bool(check(*args))
    except Exception:  # any failure is a miss, counted
        return False


def main() -> None:
    skip = not_carried()
    fixtures = sorted(REAL.glob("*/*.json"))
    counts: Counter[str] = Counter()
    misses: dict[str, list[str]] = {}
    raised = 0
    for path in fixtures:
        codec = path.parent.name
        payload = json.loads(path.read_text(encoding="utf-8"))
        module = get_codec(codec)
        try:
            messages = module.decode(payload)
            encoded = module.encode(messages)
            trip = module.decode(encoded) == messages and module.encode(messages) == encoded
        except Exception:  # an unreadable payload fails every count
            misses.setdefault("unreadable", []).append(path.stem)
            continue
        results = {
            "round trip": trip,
            "keep every value": trip and keeps_every_value(codec, payload, encoded, skip[codec]),
        }
        for name in sorted(PROVIDERS):
            profile = PROVIDERS[name]
            results[f"port+lint+encode {name}"] = attempt(
                port_lint_encode, codec, messages, profile
            )
            results[f"summarize {name}"] = attempt(summarizes, codec, messages, profile)
        for key, ok in results.items():
            counts[key] += ok
            if not ok:
                misses.setdefault(key, []).append(path.stem)
        raised += any(attempt(raises_by_default, codec, messages, p) for p in PROVIDERS.values())
    total = len(fixtures)
    print(f"real payloads: {total}")
    for key in ["round trip", "keep every value"]:
        print(f"{key}: {counts[key]}/{total}")
    for kind in ("port+lint+encode", "summarize"):
        per = [f"{n} {counts[f'{kind} {n}']}" for n in sorted(PROVIDERS)]
        print(f"{kind} per target (of {total}): " + ", ".join(per))
    print(f"port raised by default for an encrypted compaction (then noted): {raised}")
    if "-v" in sys.argv:
        for key, names in misses.items():
            print(f"  missed {key}: {', '.join(names)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
