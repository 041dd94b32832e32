"""Speed of the offline extractive handler: its caches, as ratios measured in one run.

The handler caches what it learns of a short token (its class as an identifier) and of a
short line (the signals it carries apart from its identifiers). A long-running agent
loop summarizes its own earlier summaries again and again, so their lines come back;
a one-off summary of new text gains only from tokens it repeats. Each workload is timed
both ways, in turn, round after round (garbage collector on):

- **cold**: every cache cleared before each summary (the baseline: no cache at all);
- **warm**: caches as a running process has them.

Workloads, each in several seeded orders:

1. ``corpus``: windows of 12 messages of the real recorded chains
   (``../shared/corpus``), each summarized once at 1,500 bytes;
2. ``loop``: the same windows as an agent loop summarizing its history at every step:
   the summary so far plus the next window, summarized to 2,000 bytes;
3. ``synthetic``: windows of 12 messages of ``benchmarks.chains`` (random words).

Not measured: the model handlers (their time is the model's); prompts over 64 KiB
characters, which run in a worker thread; the code before the caches (compared by hand
in docs/performance.md, against a checkout of the earlier commit).

Run: python -m benchmarks.bench_extractive [--rounds 3] [--seeds 3]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable

import csum.handlers._extractive.features as features_module
import csum.handlers._extractive.text as text_module
from benchmarks.chains import build_chain
from benchmarks.policies.corpus import (
    CLAUDE_CODE_FOLDER,
    OPENAI_FOLDER,
    find_corpus,
    load_folder,
)
from benchmarks.timing import Ratio, paired_ratio
from cast import Message
from csum.handlers import summarize_extractive
from csum.prompt import SummaryRequest, summary_request

WINDOW = 12  # messages per prompt
CACHES = (text_module._cached_weight, features_module._cached_signals)


def _clear() -> None:
    for cache in CACHES:
        cache.cache_clear()


def _windows(messages: list[Message]) -> list[list[Message]]:
    return [messages[start : start + WINDOW] for start in range(1, len(messages), WINDOW)]


def corpus_windows() -> list[list[Message]]:
    """Windows of the real chains (Claude Code sessions, tau-bench runs)."""
    corpus = find_corpus()
    if corpus is None:
        raise SystemExit("no corpus found (../shared/corpus)")
    windows: list[list[Message]] = []
    for folder in (CLAUDE_CODE_FOLDER, OPENAI_FOLDER):
        for chain in load_folder(corpus, folder):
            windows += _windows(list(chain.messages))
    return windows


def synthetic_windows(count: int) -> list[list[Message]]:
    """``count`` windows of a synthetic chain."""
    chain = build_chain(target_messages=WINDOW * count + 1, target_bytes=1_500 * WINDOW * count)
    return _windows(chain)[:count]


def one_off(prompts: list[SummaryRequest], *, cold: bool) -> Callable[[], None]:
    def run() -> None:
        for prompt in prompts:
            if cold:
                _clear()
            summarize_extractive(prompt, 1500)

    return run


def loop(windows: list[list[Message]], *, cold: bool) -> Callable[[], None]:
    def run() -> None:
        summary = ""
        for window in windows:
            if cold:
                _clear()
            prompt = summary_request([], [Message.human(summary), *window] if summary else window)
            summary = summarize_extractive(prompt, 2000)

    return run


def measure(make: Callable[[bool], Callable[[], None]], rounds: int) -> Ratio:
    warm = make(False)
    warm()  # imports and regex compilation out of the way
    return paired_ratio(rounds, warm, make(True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per seed (3)")
    parser.add_argument("--seeds", type=int, default=3, help="orders of each workload (3)")
    args = parser.parse_args()
    if args.rounds < 1 or args.seeds < 1:
        parser.error(f"--rounds and --seeds must be at least 1, got {args.rounds} and {args.seeds}")
    real = corpus_windows()
    synthetic = synthetic_windows(len(real))
    print(
        f"{len(real)} real windows, {len(synthetic)} synthetic; warm / cold time, lower is faster"
    )
    print(f"{'workload':<12} {'min':>6} {'mean':>6} {'cold s':>7} {'warm s':>7}")
    for name, windows, kind in (
        ("corpus", real, "one-off"),
        ("loop", real, "loop"),
        ("synthetic", synthetic, "one-off"),
        ("synth loop", synthetic, "loop"),
    ):
        total: Ratio | None = None
        for seed in range(args.seeds):
            order = list(windows)
            random.Random(seed).shuffle(order)

            def make(
                cold: bool, order: list[list[Message]] = order, kind: str = kind
            ) -> Callable[[], None]:
                if kind == "loop":
                    return loop(order, cold=cold)
                return one_off([summary_request([], w) for w in order], cold=cold)

            ratio = measure(make, args.rounds)
            total = ratio if total is None else total + ratio
        assert total is not None
        print(
            f"{name:<12} {total.min:6.2f} {total.mean:6.2f} {total.baseline:7.2f} {total.ours:7.2f}"
        )


if __name__ == "__main__":
    main()
