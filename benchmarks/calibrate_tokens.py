"""Calibration of ``csum.EstimatedTokens`` against an exact tokenizer on the corpus.

``python -m benchmarks.calibrate_tokens [--corpus DIR]`` prints, per kind of content
(prose, reasoning, tool-call arguments, tool results), the UTF-8 bytes per token of
the o200k_base encoding (GPT-4o and later), then the estimate's ratio to the exact
count per chain (min, mean, max). It needs an o200k_base encoder: ``bpe_openai`` (ships
the encoding inside the wheel) or ``tiktoken`` with its encoding file available.
It does not measure other providers' tokenizers (Anthropic, Gemini), whose counts are
only available from their APIs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.policies.corpus import find_corpus
from cast.chainio import decode_chain
from cast.messages import TextPart, ToolCall, ToolResult
from csum import EstimatedTokens, TiktokenCounter

__all__ = ["main"]


def _encoder() -> Any:
    try:
        import bpe_openai

        return bpe_openai.get_encoding("o200k_base")
    except ImportError:
        import tiktoken

        return tiktoken.get_encoding("o200k_base")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.calibrate_tokens")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default ../shared/corpus)")
    args = parser.parse_args(argv)
    corpus = find_corpus(args.corpus)
    if corpus is None:
        print("corpus not found", file=sys.stderr)
        return 1
    encoder = _encoder()
    exact = TiktokenCounter(encoder)
    estimate = EstimatedTokens()
    kinds: dict[str, list[int]] = {}
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        ratios = []
        for path in sorted(folder.glob("*.json")):
            messages, _ = decode_chain(json.loads(path.read_text(encoding="utf-8")))
            for message in messages:
                for part in message.parts:
                    texts: list[tuple[str, str]] = []
                    if isinstance(part, TextPart):
                        texts.append(("text", part.text))
                        if part.reasoning is not None:
                            texts.append(("reasoning", part.reasoning.content))
                    elif isinstance(part, ToolCall):
                        texts.append(("call", part.name + part.arguments))
                    elif isinstance(part, ToolResult):
                        texts.append(("result", part.content))
                    for kind, text in texts:
                        totals = kinds.setdefault(f"{folder.name}/{kind}", [0, 0])
                        totals[0] += len(text.encode("utf-8"))
                        totals[1] += len(encoder.encode(text))
            ratios.append(
                sum(map(estimate.count, messages)) / max(1, sum(map(exact.count, messages)))
            )
        print(
            f"{folder.name}: {len(ratios)} chains, estimate / o200k_base per chain: "
            f"min {min(ratios):.3f}, mean {statistics.fmean(ratios):.3f}, max {max(ratios):.3f}"
        )
    for kind, (nbytes, tokens) in sorted(kinds.items()):
        print(f"  {kind:32} {nbytes:>10,} bytes {tokens:>9,} tokens {nbytes / tokens:5.2f} B/token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
