"""The byte-identical gate of the offline extractive handler: a digest of its outputs.

A change meant to move code without changing what it does (the handler's restructuring)
must leave every summary as it was. This runs :func:`csum.handlers.summarize_extractive`
over:

- every fidelity item (parts A to E), as the prompt the summarizer would hand it, at both
  fidelity budgets and at 5 % and 50 %; and its plain text (a prompt that is not ours) at
  10 %;
- windows of 12 messages of every recorded chain of ``../shared/corpus``, each
  summarized once at 300 and at 1,500 bytes;
- every chain as an agent loop: the summary so far plus the next window, summarized to
  2,000 bytes (summaries of summaries), and the same at 600 bytes;

and hashes each output (xxh64 of its UTF-8 bytes). The handler is handed each prompt's
request (:func:`csum.prompt.summary_request`, as the engine does; a plain text as
:func:`csum.prompt.text_request`). ``--write`` records the digest file; the default
compares against it and names every case that differs.

Run: python -m benchmarks.extractive_gate [--write] [--digest PATH] [--every N]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import xxhash

from benchmarks.digest_gate import record_or_check
from benchmarks.fidelity_items import (
    BUDGETS,
    DEV_PATH,
    FRESH_PATH,
    HELDOUT_PATH,
    ITEMS_PATH,
    load_items,
)
from benchmarks.policies.corpus import (
    CLAUDE_CODE_FOLDER,
    OPENAI_FOLDER,
    find_corpus,
    load_folder,
)
from benchmarks.shared_corpus import FIDELITY, require
from cast import Message
from csum.handlers import summarize_extractive
from csum.prompt import SummaryRequest, summary_request, text_request

__all__ = ["DIGEST_PATH", "cases", "digest"]

DIGEST_PATH = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "extractive_digest.json"
"""The recorded digest (of the code before the restructuring)."""

WINDOW = 12  # messages per prompt
ITEM_SHARES = (0.05, *BUDGETS, 0.50)
ONE_OFF_BYTES = (300, 1_500)
LOOP_BYTES = (600, 2_000)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _item_cases() -> Iterator[tuple[str, SummaryRequest, int]]:
    require(FIDELITY)
    items = load_items(ITEMS_PATH, heldout=HELDOUT_PATH, dev=DEV_PATH, fresh=FRESH_PATH)
    for item in items:
        request = item.request()
        for share in ITEM_SHARES:
            yield f"item/{item.id}/{share}", request, max(1, round(share * item.size))
        yield f"text/{item.id}", text_request(item.text), max(1, round(0.10 * item.size))


def _chains() -> list[tuple[str, list[Message]]]:
    corpus = find_corpus()
    if corpus is None:
        raise SystemExit("no corpus found (../shared/corpus)")
    return [
        (f"{folder}/{chain.name}", list(chain.messages))
        for folder in (CLAUDE_CODE_FOLDER, OPENAI_FOLDER)
        for chain in load_folder(corpus, folder)
    ]


def _windows(messages: list[Message]) -> list[list[Message]]:
    return [messages[start : start + WINDOW] for start in range(1, len(messages), WINDOW)]


def cases() -> Iterator[tuple[str, SummaryRequest, int]]:
    """Every one-off case: (name, request, max_bytes). Loops are in :func:`digest`."""
    yield from _item_cases()
    for name, messages in _chains():
        for index, window in enumerate(_windows(messages)):
            prompt = summary_request([], window)
            for budget in ONE_OFF_BYTES:
                yield f"window/{name}/{index}/{budget}", prompt, budget


def _loop_hashes(every: int) -> Iterator[tuple[str, str]]:
    for number, (name, messages) in enumerate(_chains()):
        if number % every:
            continue
        for budget in LOOP_BYTES:
            summary = ""
            for index, window in enumerate(_windows(messages)):
                batch = [Message.human(summary), *window] if summary else window
                summary = summarize_extractive(summary_request([], batch), budget)
                yield f"loop/{name}/{budget}/{index}", _hash(summary, budget)


def _hash(summary: str, budget: int) -> str:
    if _size(summary) > budget:
        raise AssertionError(f"summary of {_size(summary)} bytes over its budget of {budget}")
    return xxhash.xxh64_hexdigest(summary.encode("utf-8"))


def digest(every: int = 1) -> dict[str, str]:
    """The hash of every case's summary (one case in ``every``, and the loops of one
    chain in ``every``)."""
    hashes: dict[str, str] = {}
    for number, (name, request, budget) in enumerate(cases()):
        if number % every == 0:
            hashes[name] = _hash(summarize_extractive(request, budget), budget)
    hashes.update(_loop_hashes(every))
    return hashes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.extractive_gate")
    parser.add_argument("--write", action="store_true", help="record the digest file")
    parser.add_argument("--digest", type=Path, default=DIGEST_PATH)
    parser.add_argument("--every", type=int, default=1, help="run one case in N (1: all)")
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error(f"--every must be at least 1, got {args.every}")
    found = digest(args.every)
    return record_or_check(found, args.digest, write=args.write)


if __name__ == "__main__":
    sys.exit(main())
