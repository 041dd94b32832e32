"""A real ``redis-server`` for the tests, on a free port of 127.0.0.1.

Loaded as a pytest plugin by ``conftest.py``. Outside CI a missing ``redis-server``
skips the Redis tests with the reason printed; in CI (``CI`` set) it fails them, since
``.ci/run`` installs it. fakeredis is no substitute: these tests check real expiry,
locks, connections and a server that dies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import pytest


@dataclass
class RedisServer:
    """One running server: its process and URL."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        """Stop the server at once (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


REDIS_CLIENT_REASON: Final = "the redis extra is not installed: pip install '.[redis]'"
needs_redis_client = pytest.mark.skipif(
    importlib.util.find_spec("redis") is None and not os.environ.get("CI"),
    reason=REDIS_CLIENT_REASON,
)
"""For a test that builds a Redis store without a server (one that is down)."""


def redis_binary() -> str:
    """The path of redis-server; skip (outside CI) or fail (in CI) when it is missing,
    or when the ``redis`` client (the redis extra) is not installed."""
    if importlib.util.find_spec("redis") is None:
        if os.environ.get("CI"):
            pytest.fail(f"{REDIS_CLIENT_REASON}; CI must have it (the test extra)")
        pytest.skip(REDIS_CLIENT_REASON)
    found = shutil.which("redis-server")
    if found is None:
        reason = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it (.ci/run installs it)")
        print(f"\nskipping the Redis tests: {reason}")
        pytest.skip(reason)
    return found


def start_redis() -> RedisServer:
    """Start a fresh server (no persistence) and wait until it answers PING."""
    binary = redis_binary()
    port = _free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = RedisServer(process, port)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(64).startswith(b"+PONG"):
                    return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    pytest.fail(f"redis-server did not start on 127.0.0.1:{port}")


@pytest.fixture(scope="session")
def redis_session_server() -> Iterator[RedisServer]:
    """One server for the whole test session."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_session_server: RedisServer) -> str:
    """The session server's URL, emptied before the test."""
    import redis

    client = redis.Redis.from_url(redis_session_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_session_server.url


@pytest.fixture
def redis_own_server() -> Iterator[RedisServer]:
    """A server of the test's own (it may kill it)."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()
