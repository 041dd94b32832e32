"""``csum summarize --budget`` bounds the whole chain (the Compactor), says so when it
cannot, and with ``--target`` adds no lint violation; on the real corpus and the
bundled example. Nothing ever grows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import csum.cli
from cast import lint
from cast.chainio import decode_chain
from tests.conftest import CORPUS

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not found")
FILES = sorted(CORPUS.glob("*/*.json")) if CORPUS.is_dir() else []


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = csum.cli.main(["summarize", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def size_of(payload: object, fmt: str | None = None) -> int:
    messages, _ = decode_chain(payload, fmt)
    return sum(m.size for m in messages)


def test_example_whole_chain_fits_the_budget() -> None:
    code, out, err = run("--example", "--budget", "40KiB", "-q")
    assert code == 0, err
    assert size_of(json.loads(out), "anthropic") <= 40 * 1024


def test_token_budget_is_kept_by_the_estimate() -> None:
    from csum import EstimatedTokens

    code, out, err = run("--example", "--budget", "8000", "--tokens", "-q")
    assert code == 0, err
    messages, _ = decode_chain(json.loads(out), "anthropic")
    assert sum(EstimatedTokens().count(m) for m in messages) <= 8000


def test_unfittable_budget_warns_and_exits_1() -> None:
    code, out, err = run("--example", "--budget", "1KiB")
    assert code == 1
    assert "still over its budget" in err
    assert out  # the chain is still written: nothing is lost


TARGETS = ("mistral", "deepseek", "anthropic", "gemini", "openai", "bedrock")
CASES = [(path, TARGETS[i % len(TARGETS)]) for i, path in enumerate(FILES)]


@needs_corpus
@pytest.mark.parametrize(("path", "target"), CASES, ids=[f"{p.name}-{t}" for p, t in CASES])
def test_corpus_with_target_adds_no_violation_and_never_grows(path: Path, target: str) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    before, fmt = decode_chain(payload)
    budget = max(8192, sum(m.size for m in before) // 2)
    code, out, err = run(str(path), "--budget", str(budget), "--target", target, "-q")
    assert code in (0, 1), err
    after, _ = decode_chain(json.loads(out), fmt)
    assert sum(m.size for m in after) <= sum(m.size for m in before)
    assert {v.rule for v in lint(after, target)} <= {v.rule for v in lint(before, target)}
    if code == 0:
        assert sum(m.size for m in after) <= budget


SMALL = [path for path in FILES if path.stat().st_size < 200_000]


@needs_corpus
@pytest.mark.parametrize("path", SMALL, ids=[p.name for p in SMALL])
def test_corpus_reference_mode_never_grows(path: Path) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    before, fmt = decode_chain(payload)
    code, out, err = run(str(path), "--last-section-budget", "4KiB", "--qa", "-q")
    assert code == 0, err
    after, _ = decode_chain(json.loads(out), fmt)
    assert sum(m.size for m in after) <= sum(m.size for m in before)
