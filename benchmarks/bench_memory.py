"""Peak memory and time of every command on a ~100 MB chain, as ratios to the file size.

Two chains of about ``--megabytes`` MB of JSON are written to a temporary folder:

- **real**: the Claude Code sessions of the shared corpus, merged into their Messages
  API payloads (``claude_code.to_api_messages``) and repeated (tool ids made unique per
  copy) into one Anthropic payload;
- **synthetic**: ``benchmarks.chains.build_chain`` (corpus-shaped), as an OpenAI Chat
  payload.

``cast convert`` writes each of the providers' main formats (Gemini, OpenAI Chat,
Anthropic, Bedrock), ``cast lint`` checks against Anthropic, ``csum summarize`` uses
its defaults (offline extractive handler).

Each command runs in a fresh interpreter (``benchmarks._rss``), which reports its peak
resident set size (``VmHWM``) and the RSS it had after importing chaincast; every
command writes to a file (``-o``), not to a terminal. Ratios: peak RSS / file size, and
(peak - RSS after imports) / file size, the part that grows with the input. Goal: peak
RSS <= 3x the file size for every command. The garbage collector stays on.

Not measured: standard input or output instead of files, LLM handlers (the offline
extractive handler stands in; a model call holds only its prompt), input formats other
than the two above, output formats other than the four above, inputs with lone
surrogates (they take the slower ``json`` path).

Run: python -m benchmarks.bench_memory [--megabytes 100] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.chains import build_chain
from benchmarks.shared_corpus import CORPUS
from cast.codecs import claude_code, openai

GOAL = 3.0


def _unique_ids(value: Any, suffix: str) -> Any:
    """A copy of a Messages API payload fragment with every tool id suffixed."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("id", "tool_use_id") and isinstance(item, str):
                out[key] = item + suffix
            else:
                out[key] = _unique_ids(item, suffix)
        return out
    if isinstance(value, list):
        return [_unique_ids(item, suffix) for item in value]
    return value


def real_chain(corpus: Path, megabytes: float) -> dict[str, Any]:
    """An Anthropic payload of about ``megabytes`` MB made of the real sessions."""
    sessions = []
    for path in sorted((corpus / "anthropic_claudecode").glob("claudecode_spotter_*.json")):
        if "sub_agent" in path.name:
            continue
        merged = claude_code.to_api_messages(json.loads(path.read_text(encoding="utf-8")))
        for message in merged:
            if isinstance(message["content"], list):
                message["content"] = [
                    {k: v for k, v in block.items() if k not in ("caller", "is_error")}
                    for block in message["content"]
                ]
        if merged and merged[-1]["role"] == "user":
            merged.append({"role": "assistant", "content": "ok"})
        sessions.append(merged)
    if not any(sessions):
        raise SystemExit(
            f"no Claude Code sessions (claudecode_spotter_*.json) under {corpus}/"
            "anthropic_claudecode: pass the corpus folder with --corpus"
        )
    messages: list[Any] = []
    size = 0
    copy = 0
    while size < megabytes * 1e6:
        for session in sessions:
            part = _unique_ids(session, f"_{copy}")
            size += len(json.dumps(part, ensure_ascii=False).encode())
            messages.extend(part)
        copy += 1
    return {"system": "You are Claude Code.", "messages": messages}


def synthetic_chain(megabytes: float) -> dict[str, Any]:
    messages = build_chain(
        target_messages=int(20_000 * megabytes / 28), target_bytes=int(megabytes * 1e6 * 0.92)
    )
    return openai.encode(messages)


CONVERT_TARGETS = ("gemini", "openai", "anthropic", "bedrock")
"""The formats ``cast convert`` writes in the benchmark (the providers' main APIs)."""


def commands(chain: Path, out: Path) -> dict[str, list[str]]:
    runs = {
        "cast inspect": ["cast", "inspect", str(chain)],
        "cast lint": ["cast", "lint", str(chain), "--target", "anthropic"],
    }
    for target in CONVERT_TARGETS:
        runs[f"cast convert --to {target}"] = [
            "cast",
            "convert",
            str(chain),
            "--to",
            target,
            "-o",
            str(out),
        ]
    runs["csum summarize"] = ["csum", "summarize", str(chain), "-q", "-o", str(out)]
    return runs


def run(argv: list[str]) -> dict[str, float]:
    """Run one command in a fresh interpreter; its peak RSS, import RSS and seconds."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks._rss", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[1],
    )
    report = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if not report.startswith("{"):
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(report)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--only", help="run only the commands whose name contains this (e.g. 'convert')"
    )
    parser.add_argument("--chain", choices=("real", "synthetic"), help="run only this chain")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        chains: dict[str, Any] = {}
        if args.chain in (None, "real"):
            chains["real (Claude Code, anthropic)"] = real_chain(args.corpus, args.megabytes)
        if args.chain in (None, "synthetic"):
            chains["synthetic (openai)"] = synthetic_chain(args.megabytes)
        print(
            "| chain | command | file | peak RSS / file | (peak - imports) / file "
            "| seconds per 100 MB | goal |"
        )
        print("|---|---|---:|---:|---:|---:|---:|")
        for label, payload in chains.items():
            path = Path(folder) / "chain.json"
            path.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
            del payload
            size = path.stat().st_size
            for name, cmd in commands(path, Path(folder) / "out.json").items():
                if args.only and args.only not in name:
                    continue
                results = [run(cmd) for _ in range(args.repeat)]
                peak = [r["peak"] / size for r in results]
                grown = [(r["peak"] - r["imports"]) / size for r in results]
                secs = [r["seconds"] * 1e8 / size for r in results]
                ok = "✓" if max(peak) <= GOAL else "✗"
                print(
                    f"| {label} | `{name}` | {size / 1e6:.1f} MB "
                    f"| {min(peak):.2f}x (mean {statistics.mean(peak):.2f}x) "
                    f"| {min(grown):.2f}x (mean {statistics.mean(grown):.2f}x) "
                    f"| {min(secs):.1f} (mean {statistics.mean(secs):.1f}) | <= {GOAL:g}x {ok} |",
                    flush=True,
                )
        chains.clear()


if __name__ == "__main__":
    main()
