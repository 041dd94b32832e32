"""Added latency of a reused request of a compacted conversation, real sessions at 128 KiB.

Requests are built at bench time from the shared corpus (never copied into the
repository): a real Claude Code session (``anthropic_claudecode``, its logged turns
merged into API messages by ``claude_code.to_api_messages``, thinking on, the newest
user turn marked for the cache as Claude Code marks it) and a real Codex CLI session
(``payloads/set4/openai_responses/codex_rollout_tui_0125.json``: its instructions and
items). For each seed, a cut in the session (a history of a different length) is sent
once so the gateway compacts it at a 128 KiB budget; then the same history plus 1, 4
and 16 new items of the session is the reused request measured, each time right after
the cut's own request again (untimed), as a client sends its conversation growing: the
gateway last saw the conversation without the new items (and, for Claude Code, with
its cache marker on the item before them).

Measured, for each session, seed and count of new items:

1. through HTTP: the gateway (``csum serve --budget 128KiB``, its own process, worker
   threads as by default) against a bare pass-through proxy (Starlette + httpx, no
   parsing) on the same upstream, requests alternating so the machine's noise falls on
   both: p50 and p90 of the added milliseconds (gateway less pass-through, request by
   request pairs);
2. in process: ``Rewriter.rewrite`` (``--no-offload``) of the same request, with the
   raw-prefix path and with the full path only (decode, hash, re-encode), p50 ms and
   their ratio.

Printed: min and mean over the seeds, the growth from 1 to 16 new items, and the
history length each seed reused. Goal: added p50 <= 2 ms, growing with the new items
only. A full run here (2 cores shared, load 3-5): rewrite p50 in process 0.7-1.7 ms
(4.0-7.1 ms when the body was parsed whole); added p50 over HTTP 1.1-3.0 ms for
Claude Code, 1.8-6.2 ms for Codex, noisy by 2-3 ms from run to run (docs/serve.md).

Not measured: the real agents' system prompts and tools (not in the corpus: stand-ins
of their recorded sizes are used, 27 KB of system text and 81 KB of tools for Claude
Code, none for Codex beyond its instructions); compacting requests (each seed compacts
once, untimed: bench_serve measures compaction); streaming answers; a Redis store (the
state read is one GET either way); token budgets (bytes here).

Run: python -m benchmarks.bench_serve_reuse [--quick] [--seeds N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx

from benchmarks.bench_serve import _free_port, _passthrough_app, _start
from benchmarks.shared_corpus import CLAUDE_CODE, CORPUS, missing
from cast.codecs import claude_code
from csum.config import Budget
from csum.serve.apis import APIS, Api
from csum.serve.compaction import Outcome, OutcomeKind, Rewriter
from csum.serve.config import ServeConfig
from csum.stores import MemoryStore

BUDGET = 128 * 1024
NEW_ITEMS = (1, 4, 16)
CODEX = CORPUS / "payloads" / "set4" / "openai_responses" / "codex_rollout_tui_0125.json"
SESSION = CLAUDE_CODE / "claudecode_spotter_8463c716.json"
_, RESPONSES, MESSAGES = APIS
ANSWER = b'{"id":"msg_1","type":"message","role":"assistant","content":[]}'


def _dumps(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _stand_in_tools() -> list[dict[str, Any]]:
    """24 tools of about 81 KB in all, Claude Code's recorded size (see the docstring)."""
    words = "the path of the file to read, relative to the working directory; "
    return [
        {
            "name": f"Tool{i}",
            "description": words * 20,
            "input_schema": {
                "type": "object",
                "properties": {
                    f"p{j}": {"type": "string", "description": words} for j in range(12)
                },
            },
        }
        for i in range(24)
    ]


class Session:
    """A session's items and how a request of its first ``n`` items is written."""

    def __init__(self, name: str, api: Api, items: list[Any], write: Callable[[list[Any]], bytes]):
        self.name, self.api, self.items, self.write = name, api, items, write

    def request(self, count: int) -> bytes:
        return self.write(self.items[:count])


def claude_code_session() -> Session:
    turns = claude_code.to_api_messages(json.loads(SESSION.read_text()))
    marker = {"type": "ephemeral"}
    system = [{"type": "text", "text": "You are Claude Code. " * 1300, "cache_control": marker}]
    tools = _stand_in_tools()

    def write(items: list[Any]) -> bytes:
        items = json.loads(json.dumps(items))
        last = items[-1]
        if isinstance(last.get("content"), list) and last["content"]:
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        thinking = {"type": "enabled", "budget_tokens": 1024}
        payload = {"model": "claude-sonnet-4-5", "system": system, "tools": tools}
        return _dumps({**payload, "thinking": thinking, "messages": items})

    return Session("Claude Code", MESSAGES, turns, write)


def codex_session() -> Session:
    data = json.loads(CODEX.read_text())

    def write(items: list[Any]) -> bytes:
        payload = {"model": "gpt-5", "instructions": data["instructions"], "input": items}
        return _dumps({**payload, "store": False, "stream": False})

    return Session("Codex", RESPONSES, data["input"], write)


def cuts(session: Session, seeds: int) -> list[int]:
    """A history end per seed: after a user turn or a turn's last tool output, spread
    over the session from about 1.5x the budget on (each compacts)."""
    ends = [
        n
        for n in range(1, len(session.items) - max(NEW_ITEMS))
        if _turn_ends(session.items, n) and len(session.request(n)) > BUDGET * 3 // 2
    ]
    rng = random.Random(seeds)
    return sorted(rng.sample(ends, min(seeds, len(ends))))


def _turn_ends(items: list[Any], n: int) -> bool:
    last: dict[str, Any] = items[n - 1]
    after: dict[str, Any] = items[n]
    outputs = ("function_call_output", "custom_tool_call_output", "tool_result")
    if last.get("role") == "user":
        return bool(after.get("role") != "user")
    return last.get("type") in outputs and after.get("type") not in outputs


class FullPath(Rewriter):
    """The gateway's Rewriter without the raw-prefix path (the baseline in process)."""

    async def _reused(self, request: Any, read: Any) -> Outcome | None:
        return None


def _config(upstream: str = "http://127.0.0.1:9") -> ServeConfig:
    return ServeConfig(upstream=upstream, budget=Budget.bytes(BUDGET), offload=False)


async def _in_process(
    session: Session, cut: int, repeat: int
) -> dict[int, tuple[float, float, float]]:
    """p50 ms of ``rewrite`` with the raw-prefix path, with the full path, and of one
    ``json.loads`` of the body, per count of new items whose request is reused (one
    that compacts again is left out: a miss)."""
    fast, full = Rewriter(_config(), MemoryStore()), FullPath(_config(), MemoryStore())
    before = session.request(cut)
    for rewriter in (fast, full):
        outcome = await rewriter.rewrite(session.api, before, None)
        if outcome.kind is not OutcomeKind.COMPACTED:
            raise RuntimeError(f"{session.name} at {cut}: {outcome.kind}, not compacted")
    out = {}
    for count in NEW_ITEMS:
        body = session.request(cut + count)
        times: dict[str, list[float]] = {"fast": [], "full": [], "loads": []}
        for _ in range(repeat):
            started = time.perf_counter()
            json.loads(body)
            times["loads"].append(time.perf_counter() - started)
            for name, rewriter in (("fast", fast), ("full", full)):
                await rewriter.rewrite(session.api, before, None)  # the last request seen
                started = time.perf_counter()
                outcome = await rewriter.rewrite(session.api, body, None)
                times[name].append(time.perf_counter() - started)
                if outcome.kind is not OutcomeKind.REUSED:
                    break
            if outcome.kind is not OutcomeKind.REUSED:
                break
        if outcome.kind is not OutcomeKind.REUSED:
            print(f"miss: {session.name} at {cut} + {count} new items: {outcome.kind}")
            continue
        out[count] = (
            statistics.median(times["fast"]) * 1000,
            statistics.median(times["full"]) * 1000,
            statistics.median(times["loads"]) * 1000,
        )
    return out


async def _over_http(
    client: httpx.AsyncClient,
    urls: dict[str, str],
    session: Session,
    cut: int,
    counts: list[int],
    repeat: int,
) -> dict[int, list[float]]:
    """Added ms (gateway less pass-through, request pairs) per count of new items."""
    path = session.api.path
    answer = await client.post(urls["gateway"] + path, content=session.request(cut))
    answer.raise_for_status()
    out: dict[int, list[float]] = {}
    for count in counts:
        body = session.request(cut + count)
        added = []
        for _ in range(repeat):
            sent = await client.post(urls["gateway"] + path, content=session.request(cut))
            sent.raise_for_status()  # the last request the gateway saw, untimed
            took = {}
            for name, base in urls.items():
                started = time.perf_counter()
                response = await client.post(base + path, content=body)
                took[name] = time.perf_counter() - started
                response.raise_for_status()
            added.append((took["gateway"] - took["pass-through"]) * 1000)
        out[count] = added
    return out


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _row(label: str, values: list[float], unit: str = " ms") -> str:
    if not values:
        return f"| {label} | nan | nan |"
    return f"| {label} | {min(values):.2f}{unit} | {statistics.mean(values):.2f}{unit} |"


async def run(quick: bool, seeds: int) -> list[str]:
    sessions = []
    for path, build in ((SESSION, claude_code_session), (CODEX, codex_session)):
        if path.is_file():
            sessions.append(build())
        else:
            print(f"skipped: {missing(path)}")
    upstream_port, pass_port, gate_port = (_free_port() for _ in range(3))
    upstream = f"http://127.0.0.1:{upstream_port}"
    me = ["-m", "benchmarks.bench_serve_reuse"]
    processes = [_start([*me, "upstream", str(upstream_port)], upstream_port)]
    lines = ["| session, measure | min over seeds | mean over seeds |", "|---|--:|--:|"]
    repeat = 15 if quick else 40
    try:
        processes.append(_start([*me, "passthrough", str(pass_port), upstream], pass_port))
        serve = ["-m", "csum", "serve", "--upstream", upstream, "--log-level", "warning"]
        processes.append(
            _start([*serve, "--port", str(gate_port), "--budget", "128KiB"], gate_port)
        )
        urls = {
            "gateway": f"http://127.0.0.1:{gate_port}",
            "pass-through": f"http://127.0.0.1:{pass_port}",
        }
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        async with httpx.AsyncClient(timeout=600, limits=limits) as client:
            for session in sessions:
                lines.extend(await _session_lines(client, urls, session, seeds, repeat))
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
    return lines


async def _session_lines(
    client: httpx.AsyncClient, urls: dict[str, str], session: Session, seeds: int, repeat: int
) -> list[str]:
    p50: dict[int, list[float]] = {n: [] for n in NEW_ITEMS}
    p90: dict[int, list[float]] = {n: [] for n in NEW_ITEMS}
    fast: dict[int, list[float]] = {n: [] for n in NEW_ITEMS}
    loads: dict[int, list[float]] = {n: [] for n in NEW_ITEMS}
    ratio: dict[int, list[float]] = {n: [] for n in NEW_ITEMS}
    sizes = []
    for cut in cuts(session, seeds):
        sizes.append(len(session.request(cut)) / 1024)
        local = await _in_process(session, cut, max(5, repeat // 3))
        added = await _over_http(client, urls, session, cut, sorted(local), repeat)
        for count in local:
            p50[count].append(statistics.median(added[count]))
            p90[count].append(_percentile(added[count], 0.9))
            fast[count].append(local[count][0])
            loads[count].append(local[count][2])
            ratio[count].append(local[count][1] / local[count][0])
    name = session.name
    lines = [
        f"| {name}: request bodies reused, KiB | {min(sizes):.0f} | {statistics.mean(sizes):.0f} |"
    ]
    for count in NEW_ITEMS:
        lines.append(_row(f"{name}, {count} new: added p50 over HTTP (goal <= 2 ms)", p50[count]))
        lines.append(_row(f"{name}, {count} new: added p90 over HTTP", p90[count]))
        lines.append(_row(f"{name}, {count} new: rewrite p50 in process", fast[count]))
        lines.append(_row(f"{name}, {count} new: json.loads of the body, p50", loads[count]))
        lines.append(_row(f"{name}, {count} new: full path / raw-prefix path", ratio[count], "x"))
    lines = [line for line in lines if "| nan" not in line]
    first, last = fast[NEW_ITEMS[0]], fast[NEW_ITEMS[-1]]
    if len(first) == len(last) and first:
        growth = [b / a for a, b in zip(first, last, strict=True)]
        lines.append(_row(f"{name}: rewrite 16 new / 1 new", growth, "x"))
    return lines


def _upstream_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def answer(request: Request) -> Response:
        await request.body()
        return Response(ANSWER, media_type="application/json")

    return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("upstream", "passthrough"):
        import uvicorn

        role, port = sys.argv[1], int(sys.argv[2])
        app = _upstream_app() if role == "upstream" else _passthrough_app(sys.argv[3])
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 seeds, fewer repeats")
    parser.add_argument(
        "--seeds", type=int, help="history cuts per session, drawn with this seed (3 quick, 5)"
    )
    args = parser.parse_args()
    if not (SESSION.is_file() or CODEX.is_file()):
        sys.exit(f"real recorded data not found: {SESSION.parent}, {CODEX}")
    started = time.perf_counter()
    lines = anyio.run(run, args.quick, args.seeds or (3 if args.quick else 5))
    print("\n".join(lines))
    print(f"\n({time.perf_counter() - started:.0f} s, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
