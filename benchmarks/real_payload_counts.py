"""Counts over every real provider payload of the shared corpus
(``payloads/project-fixtures``, :data:`benchmarks.shared_corpus.PAYLOADS`; it stops
saying so when that is missing): how many round-trip, keep every value, port + lint +
encode for each target, and summarize for each target without growth or a new lint
violation.

Run it on two checkouts to compare them (the not-carried table is read from this file's
tree, the payloads from the corpus, the library from whatever ``cast`` imports)::

    PYTHONPATH=. python benchmarks/real_payload_counts.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/real_payload_counts.py

With ``--classes`` it counts instead, over the real payloads of the shared corpus
(``payloads/set1``, ``set3``, ``set4``, ``project-fixtures``; ``$CHAINCAST_CORPUS`` or
``../shared/corpus``), the five classes of issue 40 (``-v`` names the misses); with
``--corpus`` the four counts above over those payloads::

    PYTHONPATH=. python benchmarks/real_payload_counts.py --classes
    PYTHONPATH=. python benchmarks/real_payload_counts.py --corpus

1. system messages anywhere: of the payloads with a system message after the chain's
   first turn, how many go through a forced ``Compactor`` turn (small budget) and
   ``Summarizer`` with every system message kept, in its order among the user's messages,
   and the first user message kept verbatim; and how many ``port`` keeps so per target;
2. untyped exceptions: payloads whose decode raises anything but ``CodecError``;
3. refused: payloads whose decode raises ``CodecError`` (two are malformed on purpose: a
   Claude Code log with junk lines and a legacy ``function_call``);
4. detection: payloads ``detect_format`` gives its folder's codec, or a codec that decodes
   it to the same messages, or that it says fit two codecs naming its own;
5. silent drops: payloads that keep every value (the strict law, with the not-carried
   table of this tree's docs/codecs.md).

It does not measure speed (``benchmarks/bench_codecs.py``) nor fuzzed payloads
(``tests/cast/codecs/test_codec_fuzz.py``).

It only uses APIs both sides have; the laws are in ``benchmarks/real_payload_laws.py``,
shared with ``tests/cast/test_real_payloads.py``. Where ``port`` raises for an encrypted
compaction item, the documented ``encrypted_compaction="note"`` option is used and the
payload is counted in the ``raised by default`` line.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import anyio

from benchmarks.real_payload_laws import SOURCE_PROVIDER, lost_values, not_carried_fields
from benchmarks.shared_corpus import CORPUS, PAYLOADS, require
from cast import CodecError, Message, Role, lint, port
from cast.codecs import detect_format, get_codec
from cast.providers import PROVIDERS, ProviderProfile
from csum import Compactor, Summarizer, SummarizerConfig
from csum.handlers import extractive
from csum.plan import KEEP_USER_SHARE

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
        return port(messages, profile, source=SOURCE.get(codec)), False
    except ValueError as error:
        if type(error).__name__ != "EncryptedCompactionError":
            raise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = port(messages, profile, source=SOURCE.get(codec), encrypted_compaction="note")
    return out, True


def raises_by_default(codec: str, messages: list[Message], profile: ProviderProfile) -> bool:
    return ported(codec, messages, profile)[1]


def port_lint_encode(codec: str, messages: list[Message], profile: ProviderProfile) -> bool:
    out, _ = ported(codec, messages, profile)
    if any(is_empty(m) for m in out) or lint(out, profile, source=SOURCE.get(codec)):
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


CORPUS_SETS = ("set1", "set3", "set4", "project-fixtures")
"""The folders of real payloads under the corpus's ``payloads``: the sets issue 40 names and
the copy of the fixtures the repository held."""


def corpus_payloads() -> list[Path]:
    """Every payload of the corpus sets (none when the corpus is absent)."""
    corpus = CORPUS
    return sorted(
        path for name in CORPUS_SETS for path in (corpus / "payloads" / name).glob("*/*.json")
    )


def keeps_system_order(before: list[Message], after: list[Message], task_fits: bool = True) -> bool:
    """Every system message of ``before`` comes back verbatim in ``after`` (as a system
    message, or in a human message where the target takes none mid-chain), in its order
    among the user's messages that come back verbatim; and the first user message (the
    task) comes back verbatim when ``task_fits``."""
    spoken = (Role.SYSTEM, Role.HUMAN)
    joined = "\x00".join(m.text for m in after if m.role in spoken)
    order = [m for m in before if m.role in spoken]
    task = next((m for m in order if m.role is Role.HUMAN), None)

    @cache
    def matches(index: int, at: int) -> bool:
        """Whether ``order[index:]`` is found in ``joined`` from ``at`` on, in order (a
        user message summarized away may be skipped)."""
        if index == len(order):
            return True
        message = order[index]
        found = joined.find(message.text, at)
        if found >= 0 and matches(index + 1, found + len(message.text)):
            return True
        needed = message.role is Role.SYSTEM or (task_fits and message is task)
        return not needed and matches(index + 1, at)

    return matches(0, 0)


def has_system_after_first_turn(messages: list[Message]) -> bool:
    seen_other = False
    for message in messages:
        if message.role is Role.SYSTEM and seen_other:
            return True
        seen_other = seen_other or message.role is not Role.SYSTEM
    return False


def compacts_keeping_system(messages: list[Message]) -> bool:
    size = sum(m.size for m in messages)
    compactor = Compactor(extractive(200), budget=max(size // 2, 400))
    task = next((m for m in messages if m.role is Role.HUMAN), None)
    fits = task is None or task.size <= compactor.keep_units * KEEP_USER_SHARE

    async def run() -> list[Message]:
        return (await compactor.run(messages, force=True)).messages

    return keeps_system_order(messages, anyio.run(run), fits)


def summarizes_keeping_system(messages: list[Message]) -> bool:
    async def run() -> list[Message]:
        return await Summarizer(SMALL).summarize_chain(extractive(200), messages)

    return keeps_system_order(messages, anyio.run(run))


def ports_keeping_system(codec: str, messages: list[Message], profile: ProviderProfile) -> bool:
    return keeps_system_order(messages, ported(codec, messages, profile)[0])


def keeps_every_value_of(
    module: Any, payload: Any, messages: list[Message], not_carried: frozenset[str]
) -> bool:
    return not lost_values(payload, module.encode(messages), not_carried)


def detection_fits(codec: str, payload: Any, messages: list[Message]) -> bool:
    try:
        found = detect_format(payload)
    except CodecError as error:  # an ambiguity that names the payload's own codec
        return codec in getattr(error, "formats", ())
    if found == codec:
        return True
    try:
        return get_codec(found).decode(payload) == messages
    except CodecError:
        return False


def class_counts() -> None:
    """The counts of the five classes of issue 40 (see the module docstring)."""
    paths = corpus_payloads()
    if not paths:
        print("no corpus payloads found (set CHAINCAST_CORPUS)")
        return
    skip = not_carried_fields()
    counts: Counter[str] = Counter()
    misses: dict[str, list[str]] = {}

    def count(key: str, ok: bool, name: str) -> None:
        counts[key] += ok
        counts[f"{key} of"] += 1
        if not ok:
            misses.setdefault(key, []).append(name)

    for path in paths:
        name = f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"
        codec = path.parent.name
        payload = json.loads(path.read_text(encoding="utf-8"))
        module = get_codec(codec)
        try:
            messages = module.decode(payload)
        except CodecError as error:
            count("2 no untyped exception", True, name)
            count("3 decoded", False, f"{name} ({str(error)[:60]})")
            continue
        except Exception as error:  # the class counted: anything but CodecError
            count("2 no untyped exception", False, f"{name} ({type(error).__name__})")
            count("3 decoded", False, name)
            continue
        count("2 no untyped exception", True, name)
        count("3 decoded", True, name)
        count("4 detected", attempt(detection_fits, codec, payload, messages), name)
        not_carried = skip.get(codec, frozenset())
        kept = attempt(keeps_every_value_of, module, payload, messages, not_carried)
        count("5 keep every value", kept, name)
        if has_system_after_first_turn(messages):
            count(
                "1 compactor keeps system order", attempt(compacts_keeping_system, messages), name
            )
            count(
                "1 summarizer keeps system order",
                attempt(summarizes_keeping_system, messages),
                name,
            )
            for target in sorted(PROVIDERS):
                profile = PROVIDERS[target]
                ok = attempt(ports_keeping_system, codec, messages, profile)
                count(f"1 port keeps system order {target}", ok, name)
    print(f"corpus payloads ({', '.join(CORPUS_SETS)}): {len(paths)}")
    for key in sorted(k for k in counts if not k.endswith(" of")):
        print(f"{key}: {counts[key]}/{counts[key + ' of']}")
    if "-v" in sys.argv:
        for key, names in sorted(misses.items()):
            print(f"  missed {key}: {', '.join(names)}")
    sys.stdout.flush()


def main() -> None:
    if "--classes" in sys.argv:
        class_counts()
        return
    skip = not_carried_fields()
    fixtures = (
        corpus_payloads() if "--corpus" in sys.argv else sorted(require(PAYLOADS).glob("*/*.json"))
    )
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
            "keep every value": trip
            and keeps_every_value(codec, payload, encoded, skip.get(codec, frozenset())),
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
