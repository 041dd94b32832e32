"""``csum serve`` against a minimal pass-through proxy, ratios measured in one run.

Both proxies run under uvicorn in their own process, forward with one pooled httpx
``AsyncClient`` and relay the answer as it comes; the pass-through does nothing else
(no JSON parsing, no compaction), so the difference is what the gateway adds. The
upstream is a minimal Starlette app under uvicorn (a fixed small answer, or an SSE
stream of 10 events 2 ms apart); the client is httpx in this process. Requests to the
two proxies alternate, so the machine's noise falls on both.

Measured (the issue's goals in brackets):

1. within-budget Chat Completions requests of 20 KB and 200 KB: throughput at 8
   concurrent requests [>= 0.7x the pass-through] and p50 latency one at a time
   [added p50 <= 2 ms];
2. streaming: time to first byte [<= 1.1x the pass-through];
3. over-budget requests of 200 KB at a 64 KiB budget, each of a new conversation (so
   each compacts): added p50 latency against one in-process ``Compactor.compact`` of
   the same chain [<= 3x];
4. the gateway's resident memory after a warm-up and after ``--requests`` more
   within-budget requests [flat within 10 %];
5. compaction off the event loop: p50 / p99 latency of small (2 KB) within-budget
   requests, one at a time, while 200 KB over-budget requests of new conversations
   are in flight back to back, on a gateway that compacts in worker threads (the
   default) and on one with ``--no-offload`` (compaction on the event loop), against
   the same small requests with nothing else in flight.

Run: python -m benchmarks.bench_serve [--quick] [--requests 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

from cast.codecs import openai
from csum import Budget, Compactor

ROOT = Path(__file__).resolve().parents[1]
SSE_EVENTS = 10
SSE_GAP = 0.002
OVER_BUDGET = 64 * 1024


def _upstream_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    answer = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()

    async def chat(request: Request) -> Response:
        body = await request.body()
        if b'"stream":true' not in body:
            return Response(answer, media_type="application/json")

        async def events() -> AsyncIterator[bytes]:
            for i in range(SSE_EVENTS):
                yield f'data: {{"n": {i}}}\n\n'.encode()
                await anyio.sleep(SSE_GAP)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _passthrough_app(upstream: str) -> Any:
    """The reference: forward the bytes, relay the answer, nothing else."""
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    client = httpx.AsyncClient(
        timeout=600, limits=httpx.Limits(max_connections=100, max_keepalive_connections=100)
    )
    skip = {"host", "content-length", "connection", "transfer-encoding"}

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = [(k, v) for k, v in request.headers.items() if k not in skip]
        sent = client.build_request(
            request.method, upstream + request.url.path, headers=headers, content=body
        )
        answer = await client.send(sent, stream=True)
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers={k: v for k, v in answer.headers.items() if k not in skip},
            background=BackgroundTask(answer.aclose),
        )

    return Starlette(routes=[Route("/{path:path}", forward, methods=["POST", "GET"])])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(args: list[str], port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{args} did not start")


def chat_body(
    size: int, conversation: int = 0, stream: bool = False, unique: bool = False
) -> bytes:
    """A tool-heavy Chat Completions request of about ``size`` bytes; ``unique``: its
    tool results name the conversation too, so no summary of another conversation's
    evicted part is found in the summary cache."""
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Conversation {conversation}: tidy the repository."},
    ]
    i = 0
    while len(json.dumps(items)) < size:
        call = {
            "id": f"call_{i:05d}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})},
        }
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        tag = f"c{conversation}/" if unique else ""
        text = "".join(f"{tag}src/m{i}.py:{n}: def f_{n}(x): return g(x, {n})\n" for n in range(20))
        items.append({"role": "tool", "tool_call_id": f"call_{i:05d}", "content": text})
        i += 1
    payload: dict[str, Any] = {"model": "gpt-4o", "messages": items}
    if stream:
        payload["stream"] = True
    return json.dumps(payload).encode()


async def _latencies(
    client: httpx.AsyncClient, url: str, bodies: list[bytes], first_byte: bool = False
) -> list[float]:
    out = []
    for body in bodies:
        started = time.perf_counter()
        async with client.stream("POST", url, content=body) as response:
            async for _ in response.aiter_raw():
                if first_byte:
                    break
            out.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise RuntimeError(f"{url}: status {response.status_code}")
    return out


async def _throughput(client: httpx.AsyncClient, url: str, body: bytes, count: int) -> float:
    left = [count]

    async def worker() -> None:
        while left[0] > 0:
            left[0] -= 1
            response = await client.post(url, content=body)
            if response.status_code != 200:
                raise RuntimeError(f"{url}: status {response.status_code}")

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(8):
            group.start_soon(worker)
    return count / (time.perf_counter() - started)


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def _alternate(
    rounds: int, measure: Callable[[str], Awaitable[list[float]]], urls: dict[str, str]
) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {name: [] for name in urls}
    for _ in range(rounds):
        for name, url in urls.items():
            found[name].extend(await measure(url))
    return found


async def _compact_seconds(bodies: list[bytes]) -> float:
    """Median time of one ``Compactor.compact`` of each of ``bodies``' chains (a fresh
    keeper each; each chain once, as the gateway gets them: compacting one chain again
    in a process is faster, its extractive work partly memoized)."""
    times = []
    for body in bodies:
        chain = openai.decode(json.loads(body))
        keeper = Compactor(budget=Budget.bytes(OVER_BUDGET), target="openai")
        started = time.perf_counter()
        await keeper.compact(chain)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def _small_beside_large(
    client: httpx.AsyncClient, url: str, small: int, large: int, loaded: bool
) -> tuple[list[float], int]:
    """Latencies of ``small`` 2 KB requests one at a time, while (``loaded``) 200 KB
    over-budget requests of new conversations go back to back; and how many of these
    were answered meanwhile."""
    little = chat_body(2_000)
    bigs = [chat_body(200_000, conversation=10_000 + n, unique=True) for n in range(large)]
    done = [0]
    out: list[float] = []

    async def heavy() -> None:
        for big in bigs:
            if len(out) >= small:
                return
            response = await client.post(url, content=big)
            if response.status_code != 200:
                raise RuntimeError(f"{url}: status {response.status_code}")
            done[0] += 1

    async with anyio.create_task_group() as group:
        if loaded:
            group.start_soon(heavy)
            await anyio.sleep(0.05)  # the first large one is in flight
        out.extend(await _latencies(client, url, [little] * small))
        group.cancel_scope.cancel()
    if loaded:
        await anyio.sleep(3)  # the compaction in flight ends before the next measure
    return out, done[0]


async def _stall_lines(client: httpx.AsyncClient, urls: dict[str, str], quick: bool) -> list[str]:
    """Rounds alternating between the gateways (so the machine's noise falls on all):
    small requests alone, then beside large compactions."""
    small, rounds = (30, 3) if quick else (50, 6)
    idle: dict[str, list[float]] = {name: [] for name in urls}
    busy: dict[str, list[float]] = {name: [] for name in urls}
    large = dict.fromkeys(urls, 0)
    for url in urls.values():
        await _latencies(client, url, [chat_body(2_000)] * 5)
    for _ in range(rounds):
        for name, url in urls.items():
            idle[name].extend((await _small_beside_large(client, url, small, 0, False))[0])
            found, done = await _small_beside_large(client, url, small, small // 8 + 3, True)
            busy[name].extend(found)
            large[name] += done
    lines = []
    for name in urls:
        calm, loaded = idle[name], busy[name]
        lines.append(
            f"| 2 KB requests beside 200 KB compactions, {name}: p50 / p99 ms | "
            f"alone {statistics.median(calm) * 1000:.2f} / {_percentile(calm, 0.99) * 1000:.2f} | "
            f"beside {statistics.median(loaded) * 1000:.2f} / "
            f"{_percentile(loaded, 0.99) * 1000:.2f} | {len(loaded)} small, {large[name]} large "
            "answered meanwhile | (keep their latency) |"
        )
    return lines


async def run(quick: bool, requests: int) -> list[str]:
    upstream_port, pass_port, gate_port, over_port, inline_port = (_free_port() for _ in range(5))
    upstream = f"http://127.0.0.1:{upstream_port}"
    processes = [
        _start(["-m", "benchmarks.bench_serve", "upstream", str(upstream_port)], upstream_port)
    ]
    try:
        processes.append(
            _start(
                ["-m", "benchmarks.bench_serve", "passthrough", str(pass_port), upstream],
                pass_port,
            )
        )
        serve = ["-m", "csum", "serve", "--upstream", upstream, "--log-level", "warning"]
        gateway = _start([*serve, "--port", str(gate_port), "--budget", "1MiB"], gate_port)
        processes.append(gateway)
        processes.append(
            _start([*serve, "--port", str(over_port), "--budget", str(OVER_BUDGET)], over_port)
        )
        inline = [*serve, "--port", str(inline_port), "--budget", str(OVER_BUDGET)]
        processes.append(_start([*inline, "--no-offload"], inline_port))
        path = "/v1/chat/completions"
        urls = {
            "pass-through": f"http://127.0.0.1:{pass_port}{path}",
            "gateway": f"http://127.0.0.1:{gate_port}{path}",
        }
        lines = [
            "| measure | pass-through | gateway | ratio / added | goal |",
            "|---|--:|--:|--:|--:|",
        ]
        rounds = 3 if quick else 5
        count = 60 if quick else 300
        limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
        async with httpx.AsyncClient(timeout=600, limits=limits) as client:
            for size in (20_000, 200_000):
                body = chat_body(size)
                for url in urls.values():  # warm the pools
                    await _latencies(client, url, [body] * 5)
                rates: dict[str, list[float]] = {name: [] for name in urls}
                for _ in range(rounds):
                    for name, url in urls.items():
                        rates[name].append(await _throughput(client, url, body, count))
                best = {name: max(v) for name, v in rates.items()}
                lines.append(
                    f"| {size // 1000} KB within budget: req/s at 8 concurrent | "
                    f"{best['pass-through']:.0f} | {best['gateway']:.0f} | "
                    f"{best['gateway'] / best['pass-through']:.2f}x | >= 0.7x |"
                )

                async def sequential(url: str, body: bytes = body) -> list[float]:
                    return await _latencies(client, url, [body] * (10 if quick else 40))

                found = await _alternate(rounds, sequential, urls)
                p50 = {name: statistics.median(v) * 1000 for name, v in found.items()}
                lines.append(
                    f"| {size // 1000} KB within budget: p50 ms one at a time | "
                    f"{p50['pass-through']:.2f} | {p50['gateway']:.2f} | "
                    f"+{p50['gateway'] - p50['pass-through']:.2f} ms | <= +2 ms |"
                )
            stream = chat_body(20_000, stream=True)

            async def first_byte(url: str) -> list[float]:
                return await _latencies(client, url, [stream] * (10 if quick else 40), True)

            found = await _alternate(rounds, first_byte, urls)
            ttfb = {name: statistics.median(v) * 1000 for name, v in found.items()}
            lines.append(
                f"| stream, 20 KB: time to first byte, p50 ms | {ttfb['pass-through']:.2f} | "
                f"{ttfb['gateway']:.2f} | {ttfb['gateway'] / ttfb['pass-through']:.2f}x | "
                "<= 1.1x |"
            )
            over_count = 5 if quick else 20
            bodies = [
                chat_body(200_000, conversation=n, unique=True) for n in range(1, over_count + 1)
            ]
            over_url = f"http://127.0.0.1:{over_port}{path}"
            over = statistics.median(await _latencies(client, over_url, bodies))
            plain = statistics.median(await _latencies(client, urls["pass-through"], bodies))
            compact = await _compact_seconds(bodies)
            added = over - plain
            lines.append(
                f"| 200 KB over a 64 KiB budget: p50 ms (compact once: {compact * 1000:.1f} ms) | "
                f"{plain * 1000:.1f} | {over * 1000:.1f} | +{added * 1000:.1f} ms = "
                f"{added / compact:.2f}x compact | <= 3x |"
            )
            stall_urls = {
                "worker threads": over_url,
                "--no-offload": f"http://127.0.0.1:{inline_port}{path}",
            }
            lines.extend(await _stall_lines(client, stall_urls, quick))
            small = chat_body(20_000)
            await _throughput(client, urls["gateway"], small, 500)
            before = _rss(gateway.pid)
            await _throughput(client, urls["gateway"], small, requests)
            after = _rss(gateway.pid)
            lines.append(
                f"| gateway RSS after 500 and {requests:,} more requests, MiB | | "
                f"{before / 2**20:.1f} -> {after / 2**20:.1f} | "
                f"{(after - before) / before * 100:+.1f} % | within 10 % |"
            )
        return lines
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("upstream", "passthrough"):
        import uvicorn

        role, port = sys.argv[1], int(sys.argv[2])
        app = _upstream_app() if role == "upstream" else _passthrough_app(sys.argv[3])
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and requests")
    parser.add_argument("--requests", type=int, help="requests of the memory run (10,000)")
    args = parser.parse_args()
    requests = args.requests or (2000 if args.quick else 10_000)
    started = time.perf_counter()
    lines = anyio.run(run, args.quick, requests)
    print("\n".join(lines))
    print(f"\n({time.perf_counter() - started:.0f} s, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
