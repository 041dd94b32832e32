"""Speed of the provider codecs on the largest real chains of the shared corpus, as a
ratio to ``json.loads`` + ``json.dumps`` of the same payload measured in the same run
(best of N; these machines are noisy). Goal: decode + encode <= 3x.

1. The largest Claude Code session, merged into its Messages API payload
   (``claude_code.to_api_messages``), through ``anthropic.decode`` + ``anthropic.encode``.
2. The largest tau-bench trajectory through ``openai.decode`` + ``openai.encode``.

Run: python -m benchmarks.bench_codecs [--repeat 20] [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.shared_corpus import CORPUS, missing, require
from benchmarks.timing import best_of
from cast.codecs import anthropic, claude_code, openai


def largest(folder: Path) -> Path:
    """The largest JSON file of ``folder``; stop saying what is missing when it has none."""
    files = list(require(folder).glob("*.json"))
    if not files:
        raise SystemExit(missing(folder / "*.json"))
    return max(files, key=lambda p: p.stat().st_size)


def measure(
    label: str,
    payload: Any,
    decode: Callable[[Any], Any],
    encode: Callable[[Any], Any],
    repeat: int,
) -> float:
    """Print and return (decode + encode) / (json.loads + json.dumps) for ``payload``."""
    text = json.dumps(payload)
    messages = decode(payload)
    assert encode(messages) == payload, f"{label}: the payload does not round-trip"

    def baseline() -> None:
        json.dumps(json.loads(text))

    def codec() -> None:
        encode(decode(payload))

    base = best_of(repeat, baseline)
    spent = best_of(repeat, codec)
    ratio = spent / base
    print(
        f"{label}: {len(text) / 1e6:.2f} MB, {len(messages)} messages; "
        f"json.loads+dumps {base * 1e3:.2f} ms, decode+encode {spent * 1e3:.2f} ms "
        f"-> ratio {ratio:.2f}x (goal <= 3x)"
    )
    return ratio


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)

    session = largest(args.corpus / "anthropic_claudecode")
    entries = json.loads(session.read_text(encoding="utf-8"))
    merged = claude_code.to_api_messages(entries)
    # The codec does not carry these log-only fields; drop them so the payload is in
    # canonical shape and the round trip can be checked.
    for message in merged:
        if isinstance(message["content"], list):
            message["content"] = [
                {k: v for k, v in block.items() if k not in ("caller", "is_error")}
                for block in message["content"]
            ]
    measure(
        f"anthropic ({session.name})",
        {"messages": merged},
        anthropic.decode,
        anthropic.encode,
        args.repeat,
    )

    trajectory = largest(args.corpus / "openai_taubench")
    payload = {"messages": json.loads(trajectory.read_text(encoding="utf-8"))}
    measure(f"openai ({trajectory.name})", payload, openai.decode, openai.encode, args.repeat)


if __name__ == "__main__":
    main()
