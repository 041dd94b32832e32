"""Counts over every real provider payload of the shared corpus
(``payloads/project-fixtures``, :data:`benchmarks.shared_corpus.PAYLOADS`; it stops
saying so when that is missing): how many round-trip, keep every value, port + lint +
encode for each target, and summarize for each target without growth or a new lint
violation.

Run it on two checkouts to compare them (the not-carried table is read from this file's
tree, the payloads from the corpus, the library from whatever ``cast`` imports)::

    PYTHONPATH=. python benchmarks/real_payload_counts.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/real_payload_counts.py

It only uses APIs both sides have; the laws are in ``benchmarks/real_payload_laws.py``,
shared with ``tests/test_real_payloads.py``. Where ``port`` raises for an encrypted
compaction item, the documented ``encrypted_compaction="note"`` option is used and the
payload is counted in the ``raised by default`` line.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections import Counter
from typing import Any

import anyio

from benchmarks.real_payload_laws import SOURCE_PROVIDER, lost_values, not_carried_fields
from benchmarks.shared_corpus import PAYLOADS, require
from cast import Message, Role, lint, port
from cast.codecs import get_codec
from cast.providers import PROVIDERS, ProviderProfile
from csum import Summarizer, SummarizerConfig
from csum.handlers import extractive

SOURCE = SOURCE_PROVIDER
SMALL = SummarizerConfig(
    last_section_bytes=600, max_body_pair_bytes=300, use_qa=True, max_qa_bytes=1200
)


def keeps_every_value(codec: str, payload: Any, encoded: Any, skip: frozenset[str]) -> bool:
    return not lost_values(payload, encoded, skip)


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
    skip = not_carried_fields()
    fixtures = sorted(require(PAYLOADS).glob("*/*.json"))
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
