"""The gate of the provider rules' restructuring: a digest of what lint and port do.

A change meant to move the rules without changing what they do must leave every lint
report and every ported chain as it was. This runs, for every registered provider as
the target, over:

- every real payload of the shared corpus (``payloads/project-fixtures``, named
  ``real/<codec>/<name>``) and of ``tests/fixtures/codecs`` (decoded with the codec its
  folder or shape names);
- every recorded chain of ``../shared/corpus`` (as ``tests/cast/test_port.py`` loads them);
- the broken chains of ``tests/fixtures/rule_gate_chains.json``: examples drawn once
  from the Hypothesis strategies of broken chains the tests use (``tests/cast/test_port.py``,
  ``tests/cast/test_port_media.py``, ``tests/support/strategies.py``), stored so the gate does not
  depend on how a Hypothesis version draws;

``lint`` (alone, with a foreign ``source``, with ``tools=[]``: every violation's rule,
index, field, text and ``verbatim``) and ``port`` (unknown ``source`` and the target as
``source``: the ported chain as JSON, or the error raised, and the warnings given), and
hashes each (chain, target) case (xxh64). ``--write`` records the digest; the default
compares and names every case that differs. ``--write-chains`` draws the broken chains
again (only when a strategy is meant to change).

Run (from the repository root):
PYTHONPATH=. python tests/support/rule_gate.py [--write] [--write-chains] [--every N]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import xxhash

from benchmarks.digest_gate import record_or_check
from benchmarks.shared_corpus import CORPUS, PAYLOADS
from cast import lint, port
from cast.codecs import claude_code, detect_format, get_codec, native, openai
from cast.messages import Message
from cast.providers import PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
DIGEST_PATH = FIXTURES / "rule_gate_digest.json"
"""The recorded digest (of the code before the rules became objects)."""
CHAINS_PATH = FIXTURES / "rule_gate_chains.json"
"""The broken chains drawn from the Hypothesis strategies, in chaincast's JSON form."""

EXAMPLES_PER_STRATEGY = 120


def _corpus() -> Path | None:
    return CORPUS if CORPUS.is_dir() else None


def _real_payloads() -> Iterator[tuple[str, list[Message]]]:
    for path in sorted(PAYLOADS.glob("*/*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        yield f"real/{path.parent.name}/{path.stem}", get_codec(path.parent.name).decode(payload)
    for path in sorted((FIXTURES / "codecs").glob("*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        try:
            messages = get_codec(detect_format(payload)).decode(payload)
        except Exception:  # a framework payload whose extra is not installed
            continue
        yield f"codecs/{path.stem}", messages


def _corpus_chains() -> Iterator[tuple[str, list[Message]]]:
    corpus = _corpus()
    if corpus is None:
        return
    for path in sorted(corpus.glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if path.parent.name == "openai_taubench":
            yield f"corpus/{path.stem}", openai.decode(data)
        else:
            yield f"corpus/{path.stem}", claude_code.decode(data)


def _drawn_chains() -> Iterator[tuple[str, list[Message]]]:
    stored = json.loads(CHAINS_PATH.read_text(encoding="utf-8"))
    for name, payload in stored.items():
        yield name, native.decode(payload)


def chains() -> Iterator[tuple[str, list[Message]]]:
    """Every chain of the gate: (name, messages)."""
    yield from _real_payloads()
    yield from _corpus_chains()
    yield from _drawn_chains()


def _violations(messages: list[Message], target: str, **options: Any) -> list[list[Any]]:
    return [
        [v.index, v.rule, v.field, v.message, v.provider, v.verbatim]
        for v in lint(messages, target, **options)
    ]


def _ported(messages: list[Message], target: str, source: str | None) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: Any = [m.model_dump(mode="json") for m in port(messages, target, source=source)]
        except Exception as exc:
            out = f"{type(exc).__name__}: {exc}"
    return {"out": out, "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}


@cache
def _foreign(target: str) -> str:
    return "openai" if target != "openai" else "anthropic"


def outcome(messages: list[Message], target: str) -> dict[str, Any]:
    """What lint and port make of ``messages`` for ``target``."""
    return {
        "lint": _violations(messages, target),
        "lint_foreign": _violations(messages, target, source=_foreign(target)),
        "lint_no_tools": _violations(messages, target, tools=[]),
        "lint_thinking": _violations(messages, target, thinking=True),
        "port": _ported(messages, target, None),
        "port_same": _ported(messages, target, target),
    }


def _hash(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return xxhash.xxh64_hexdigest(text.encode("utf-8", "surrogatepass"))


def digest(every: int = 1) -> tuple[dict[str, str], set[str]]:
    """The hash of every (chain, target) case (one chain in ``every``), and the rules
    lint reported in them."""
    hashes: dict[str, str] = {}
    seen: set[str] = set()
    for number, (name, messages) in enumerate(chains()):
        if number % every:
            continue
        for target in sorted(PROVIDERS):
            result = outcome(messages, target)
            hashes[f"{name}/{target}"] = _hash(result)
            for key in ("lint", "lint_foreign", "lint_no_tools", "lint_thinking"):
                seen.update(violation[1] for violation in result[key])
    return hashes, seen


def draw_chains() -> dict[str, Any]:
    """Examples of the broken-chain strategies, drawn deterministically (derandomized)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    import strategies
    from tests.cast import test_port, test_port_media

    sources = {
        "port": st.one_of(test_port.chains(), test_port.mutilated_chains()),
        "media": test_port_media.chains(),
        "mutilated": strategies.mutilated_chains(),
    }
    drawn: dict[str, Any] = {}
    for label, strategy in sources.items():
        found: list[list[Message]] = []

        @settings(
            max_examples=EXAMPLES_PER_STRATEGY,
            derandomize=True,
            database=None,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(chain: list[Message]) -> None:
            found.append(chain)  # noqa: B023 (run at once, in this iteration)

        collect()
        for number, chain in enumerate(found):
            drawn[f"drawn/{label}/{number}"] = native.encode(chain)
    return drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/support/rule_gate.py")
    parser.add_argument("--write", action="store_true", help="record the digest file")
    parser.add_argument("--write-chains", action="store_true", help="draw the chains again")
    parser.add_argument("--every", type=int, default=1, help="run one chain in N (1: all)")
    args = parser.parse_args(argv)
    if args.write_chains:
        drawn = draw_chains()
        text = json.dumps(drawn, ensure_ascii=False, separators=(",", ":"), indent=0)
        CHAINS_PATH.write_text(text + "\n", encoding="utf-8")
        print(f"{len(drawn)} chains recorded in {CHAINS_PATH}")
    found, _ = digest(args.every)
    return record_or_check(found, DIGEST_PATH, write=args.write)


if __name__ == "__main__":
    sys.exit(main())
