"""The byte-identical gate of the clearing gist (:func:`csum.clearing.gist`): a digest of
its outputs.

A change meant to make the gist faster without changing what it writes must leave every
gist as it was. This runs the gist over:

- every tool result and every tool call's arguments of every recorded chain of
  ``../shared/corpus`` (the chains the tests and benchmarks use);
- synthetic texts made from fixed seeds: logs, JSON, diffs, tracebacks, file listings,
  huge outputs (past the lines and line length the gist reads), unicode (wide digits,
  emoji, right-to-left), ANSI colours, list marks, empty, blank and one-line texts,
  very long lines, texts of only prose;

each at :data:`LIMITS` bytes, checking that each gist is one line within its limit, and
hashes a text's gists (xxh64 of their UTF-8 bytes, one per line). ``--write`` records
the digest file; the default compares against it and names every case that differs.

Run: python -m benchmarks.gist_gate [--write] [--digest PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import xxhash

from benchmarks.digest_gate import record_or_check
from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, OPENAI_FOLDER, find_corpus, load_folder
from cast import ToolCall, ToolResult
from csum.clearing import gist

__all__ = ["DIGEST_PATH", "LIMITS", "digest", "texts"]

DIGEST_PATH = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "gist_digest.json"
"""The recorded digest (of the gist before it was made fast)."""

LIMITS = (48, 160, 400)
"""Byte limits each text is gisted at (160 is the placeholders' ``GIST_BYTES``)."""

_WORDS = [
    "the",
    "build",
    "read",
    "config",
    "loaded",
    "module",
    "request",
    "worker",
    "cache",
    "index",
    "value",
    "user",
    "session",
    "token",
    "retry",
    "timeout",
    "queue",
    "write",
    "open",
    "close",
    "parse",
    "commit",
    "branch",
    "merge",
    "deploy",
    "test",
]
_ERRORS = (
    "ValueError: invalid literal for int() with base 10: 'x'",
    "FAILED tests/test_io.py::test_read - OSError: [Errno 5] Input/output error",
    "error: could not compile `core` due to 2 previous errors",
    "fatal: not a git repository (or any of the parent directories): .git",
    "Permission denied (publickey).",
    "bash: foo: command not found",
    "panic: runtime error: index out of range [3] with length 3",
)


def _log(rng: random.Random, lines: int) -> str:
    out = []
    for n in range(lines):
        level = rng.choice(("INFO", "DEBUG", "WARN", "ERROR", "INFO", "INFO"))
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 12)))
        extra = rng.choice(
            (
                "",
                f" in {rng.randint(1, 999)}ms",
                f" id=req_{rng.getrandbits(40):x}",
                f" at src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py:{rng.randint(1, 900)}",
                f" (https://api.example.com/v{rng.randint(1, 3)}/{rng.choice(_WORDS)})",
                f" version {rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}",
                f" {rng.randint(0, 100)}% done",
            )
        )
        if rng.random() < 0.03:
            extra += " " + rng.choice(_ERRORS)
        out.append(f"2026-11-{n % 28 + 1:02d}T10:{n % 60:02d}:00Z {level} {words}{extra}")
    return "\n".join(out)


def _json(rng: random.Random, items: int) -> str:
    value = [
        {
            "id": rng.getrandbits(32),
            "name": " ".join(rng.choice(_WORDS) for _ in range(2)),
            "path": f"/srv/{rng.choice(_WORDS)}/{rng.randint(1, 99)}.json",
            "sha": f"{rng.getrandbits(160):040x}",
            "score": round(rng.random() * 100, 3),
            "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 4))],
        }
        for _ in range(items)
    ]
    return json.dumps(value, indent=rng.choice((None, 2)))


def _diff(rng: random.Random, hunks: int) -> str:
    out = ["diff --git a/src/app.py b/src/app.py", "index 3f9c0a1..b2c3d4e 100644"]
    out += ["--- a/src/app.py", "+++ b/src/app.py"]
    for _ in range(hunks):
        start = rng.randint(1, 500)
        out.append(f"@@ -{start},7 +{start},8 @@ def {rng.choice(_WORDS)}():")
        for _ in range(rng.randint(3, 9)):
            sign = rng.choice((" ", "-", "+"))
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
            out.append(f"{sign}    {words} = {rng.randint(0, 9)}")
    return "\n".join(out)


def _traceback(rng: random.Random) -> str:
    out = ["Traceback (most recent call last):"]
    for _ in range(rng.randint(2, 8)):
        out.append(
            f'  File "/usr/lib/python3.11/{rng.choice(_WORDS)}.py", line {rng.randint(1, 999)},'
            f" in {rng.choice(_WORDS)}"
        )
        out.append(f"    {rng.choice(_WORDS)}({rng.choice(_WORDS)}, {rng.randint(0, 9)})")
    out.append(rng.choice(_ERRORS))
    return "\n".join(out)


def _listing(rng: random.Random, files: int) -> str:
    return "\n".join(
        f"-rw-r--r-- 1 user staff {rng.randint(0, 99_999):>6} Nov {rng.randint(1, 28):>2} "
        f"{rng.choice(_WORDS)}_{n}.{rng.choice(('py', 'md', 'txt', 'json'))}"
        for n in range(files)
    )


def _prose(rng: random.Random, lines: int) -> str:
    return "\n".join(
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 16))) for _ in range(lines)
    )


def _unicode(rng: random.Random, lines: int) -> str:
    pieces = (
        "données chargées",
        "ошибка: файл не найден",
        "文件 /数据/报告.csv 已读取",
        "مرحبا ١٢٣ ملف",
        "wide digits \uff14\uff12 and \uff15 files",
        "emoji 🚀 launched build 7 ✅",
        "combining e\u0301 and zero\u200bwidth",
        "\u00a0non-breaking\u2003space\u3000ideographic",
        "surrogate-free \U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c\U0001d521\U0001d522"
        " path /tmp/\U0001d523.txt:12",
    )
    return "\n".join(f"{rng.choice(pieces)} {rng.randint(0, 999)}" for _ in range(lines))


def _decorated(rng: random.Random, lines: int) -> str:
    marks = ("- ", "* ", "+ ", "• ", "1. ", "12) ", "    - ", "")
    colours = ("\x1b[31m", "\x1b[0m", "[32m", "\x1b[1;33m", "")
    return "\n".join(
        f"{rng.choice(marks)}{rng.choice(colours)}{rng.choice(_WORDS)} "
        f"{rng.choice(_WORDS)}_{rng.randint(0, 99)}{rng.choice(colours)}"
        for _ in range(lines)
    )


def _synthetic() -> Iterator[tuple[str, str]]:
    rng = random.Random(25)
    yield "empty", ""
    yield "blank", "\n \n\t\n"
    yield "one line", "ok"
    yield "one line newline", "done in 3.2s\n"
    yield "crlf", "first\r\nsecond 42 items\r\nthird /a/b.c:9\r\n"
    yield "separators", "a | b | c\n x 1 | y 2 \n\x0bvertical\x0ctab\x1cfs\u2028ls\u2029ps 9"
    yield "long line", " ".join(rng.choice(_WORDS) for _ in range(2_000)) + " 42 files"
    yield "long token", "x" * 5_000 + "\n" + "/".join(["dir"] * 300) + "/f.py:1"
    yield "long first line", "a" * 300 + " error here\nsecond line 5 files"
    yield "unbroken unicode", "é" * 400 + "\n" + "文" * 400
    for n in range(12):
        yield f"log {n}", _log(rng, rng.choice((3, 40, 400)))
        yield f"json {n}", _json(rng, rng.choice((1, 5, 60)))
        yield f"diff {n}", _diff(rng, rng.randint(1, 12))
        yield f"traceback {n}", _traceback(rng)
        yield f"listing {n}", _listing(rng, rng.choice((2, 30, 300)))
        yield f"prose {n}", _prose(rng, rng.choice((1, 10, 200)))
        yield f"unicode {n}", _unicode(rng, rng.choice((1, 10, 100)))
        yield f"decorated {n}", _decorated(rng, rng.choice((1, 10, 100)))
    yield "huge log", _log(rng, 9_000)  # past the lines the gist reads
    yield "huge listing", _listing(rng, 6_000)
    yield "repeated lines", "\n".join(["same line 1 here"] * 500 + ["tail /x/y.py:3"])
    yield "huge lines", "\n".join(_log(rng, 60).replace("\n", " ; ") for _ in range(30))


def _corpus() -> Iterator[tuple[str, str]]:
    corpus = find_corpus()
    if corpus is None:
        raise SystemExit("no corpus found (../shared/corpus)")
    for folder in (CLAUDE_CODE_FOLDER, OPENAI_FOLDER):
        for chain in load_folder(corpus, folder):
            for number, message in enumerate(chain.messages):
                for part_number, part in enumerate(message.parts):
                    name = f"{folder}/{chain.name}/{number}/{part_number}"
                    if isinstance(part, ToolResult):
                        yield f"result/{name}", part.content
                    elif isinstance(part, ToolCall):
                        yield f"arguments/{name}", part.arguments


def texts() -> Iterator[tuple[str, str]]:
    """Every text the gate gists: (name, text)."""
    for name, text in _synthetic():
        yield f"synthetic/{name}", text
    yield from _corpus()


def _checked(summary: str, limit: int) -> str:
    size = len(summary.encode("utf-8"))
    if size > limit or "\n" in summary:
        raise AssertionError(f"gist of {size} bytes over {limit} or not one line: {summary!r}")
    return summary


def digest(every: int = 1) -> dict[str, str]:
    """The hash of every text's gists at :data:`LIMITS` (one text in ``every``)."""
    return {
        name: xxhash.xxh64_hexdigest(
            "\n".join(_checked(gist(text, limit), limit) for limit in LIMITS).encode("utf-8")
        )
        for number, (name, text) in enumerate(texts())
        if number % every == 0
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gist_gate")
    parser.add_argument("--write", action="store_true", help="record the digest file")
    parser.add_argument("--digest", type=Path, default=DIGEST_PATH)
    parser.add_argument("--every", type=int, default=1, help="run one text in N (1: all)")
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error(f"--every must be at least 1, got {args.every}")
    found = digest(args.every)
    return record_or_check(found, args.digest, write=args.write)


if __name__ == "__main__":
    sys.exit(main())
