"""Real processes for the gateway tests, on 127.0.0.1 only: the scripted upstream
(tests/support/serve_upstream.py) and ``csum serve`` gateways, each under uvicorn in a
subprocess of its own."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Process:
    """A server in a subprocess: its URL, process and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _start(
    args: list[str], port: int, ready: str, log: Path, env: dict[str, str] | None = None
) -> Process:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, *args], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    server = Process(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{args} exited: {server.log_text()}")
        try:
            if httpx.get(server.url + ready, timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"{args} did not start: {server.log_text()}")


def start_upstream(log_dir: Path) -> Process:
    port = free_port()
    script = str(ROOT / "tests" / "support" / "serve_upstream.py")
    return _start([script, str(port)], port, "/_recorded", log_dir / f"upstream-{port}.log")


def start_gateway(
    upstream: str, log_dir: Path, *flags: str, env: dict[str, str] | None = None
) -> Process:
    port = free_port()
    args = ["-m", "csum", "serve", "--upstream", upstream, "--port", str(port), *flags]
    return _start(args, port, "/healthz", log_dir / f"gateway-{port}.log", env)


def recorded(upstream: Process) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = httpx.get(upstream.url + "/_recorded", timeout=10).json()
    return data


def reset(upstream: Process) -> None:
    httpx.post(upstream.url + "/_reset", timeout=10).raise_for_status()


def metric(gateway: Process, name: str, **labels: str) -> float:
    """The sum of the ``/metrics`` samples named ``name`` whose labels include ``labels``."""
    text = httpx.get(gateway.url + "/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        sample, _, rest = head.partition("{")
        found = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if sample == name and all(found.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total


def sse_data(text: str) -> list[dict[str, Any]]:
    """The JSON data of an SSE stream's events (``[DONE]`` left out)."""
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
