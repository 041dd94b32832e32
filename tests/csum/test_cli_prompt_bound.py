"""``csum summarize --budget`` bounds every prompt (``--max-prompt-bytes``, default
:data:`csum.cli.DEFAULT_MAX_PROMPT_BYTES`): what is evicted beyond it is summarized in
pieces and merged, and the chain written is as valid as with one prompt. On a real
Claude Code session, through ``main(argv)``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import csum.cli
from cast import ChainAST, Message
from cast.chainio import decode_chain
from tests.conftest import CLAUDE_CODE

SESSION = CLAUDE_CODE / "claudecode_spotter_8463c716.json"
"""The largest Claude Code session of the corpus (about 0.7 MB of messages)."""

pytestmark = pytest.mark.skipif(not SESSION.is_file(), reason="shared corpus not found")


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    code = csum.cli.main(list(argv), stdout=io.StringIO(), stderr=err)
    return code, err.getvalue()


def messages(path: Path) -> list[Message]:
    return decode_chain(json.loads(path.read_text(encoding="utf-8")))[0]


def handler_calls(report: str) -> int:
    return int(report.split(" handler calls", maxsplit=1)[0].rsplit(", ", 1)[-1])


def test_a_small_bound_summarizes_in_pieces_and_writes_a_valid_chain(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    before = SESSION.read_bytes()
    code, report = run(
        "summarize",
        str(SESSION),
        "--budget",
        "16KiB",
        "--max-prompt-bytes",
        "32KiB",
        "-o",
        str(out),
    )
    assert code == 0, report
    assert SESSION.read_bytes() == before
    assert handler_calls(report) > 10  # pieces, then merges
    chain = decode_chain(json.loads(out.read_text(encoding="utf-8")), "anthropic")[0]
    ChainAST.from_messages(chain)  # valid without repair
    assert sum(m.size for m in chain) <= 16 * 1024
    original = messages(SESSION)
    assert chain[-1] == original[-1]  # the newest message, verbatim


def test_the_default_bound_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    real = csum.cli.Compactor

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(csum.cli, "Compactor", spy)
    code, report = run("summarize", str(SESSION), "-o", str(tmp_path / "out.json"))
    assert code == 0, report
    assert seen[0]["robustness"].max_prompt_bytes == csum.cli.DEFAULT_MAX_PROMPT_BYTES
    assert seen[0]["robustness"].max_concurrency == 1  # the offline handler: one call at a time
    code, report = run(
        "summarize", str(SESSION), "--max-concurrency", "3", "-o", str(tmp_path / "out.json")
    )
    assert code == 0, report
    assert seen[1]["robustness"].max_concurrency == 3


def test_one_prompt_when_the_evicted_part_fits(tmp_path: Path) -> None:
    code, report = run(
        "summarize", str(SESSION), "--max-prompt-bytes", "4MiB", "-o", str(tmp_path / "o.json")
    )
    assert code == 0, report
    assert handler_calls(report) == 1


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (("--max-prompt-bytes", "100"), "--max-prompt-bytes must be at least 4096"),
        (("--max-prompt-bytes", "lots"), "lots"),
        (("--last-section-budget", "8KiB", "--max-prompt-bytes", "64KiB"), "applies to --budget"),
        (("--max-concurrency", "0"), "--max-concurrency must be at least 1"),
    ],
)
def test_bad_bounds_are_usage_errors(options: tuple[str, ...], needle: str) -> None:
    code, report = run("summarize", str(SESSION), *options)
    assert code == 2
    assert needle in report
