"""What the gateway tests' clients share: the client's key, the agent's system prompt,
its ``read_file`` tool and what that tool returns, and an HTTP client for the anthropic
SDK (``tests/csum/serve/test_serve.py``, ``tests/csum/serve/test_serve_translations.py``)."""

from __future__ import annotations

import json
from typing import Any

import httpx

API_KEY = "sk-test-secret-0123456789"
SYSTEM = "You are a coding agent. Read files with read_file before changing them."
READ_FILE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "lines": {"type": "array"}},
    "required": ["path"],
}


def tool_output(arguments: str) -> str:
    """What the client's tool returns for a read_file call (about 1.2 KB)."""
    path = json.loads(arguments)["path"]
    lines = [f"{path}:{i}: def handler_{i}(request): return route(request, {i})" for i in range(20)]
    return "\n".join(lines)


def anthropic_http(**options: Any) -> Any:
    """An HTTP client for the anthropic SDK (recent versions take an ``httpx2`` one)."""
    try:
        import httpx2
    except ImportError:
        return httpx.Client(**options)
    return httpx2.Client(**options)


CHAT_READ_FILE = {
    "type": "function",
    "function": {"name": "read_file", "parameters": READ_FILE_SCHEMA},
}
"""The ``read_file`` tool as a Chat Completions request declares it."""
