"""A large synthetic agent chain for the speed benchmarks: mixed text, parallel tool
calls, large tool results, shaped like the recorded chains of the corpus."""

from __future__ import annotations

import json
import random
import string

from cast import Message, Role, TextPart, ToolCall, ToolResult

_WORDS = (
    "scan",
    "port",
    "host",
    "service",
    "version",
    "error",
    "file",
    "path",
    "config",
    "result",
    "output",
    "request",
    "token",
    "build",
    "deploy",
    "check",
    "report",
    "found",
    "open",
    "closed",
    "timeout",
    "retry",
    "user",
    "query",
)
_TOOLS = ("terminal", "file_read", "search", "browser", "nmap_scan", "sql_query")


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        if rng.random() < 0.05:
            word = f"/var/lib/app/{rng.choice(_WORDS)}-{rng.randrange(1000)}.log"
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choices(string.ascii_letters + string.digits, k=24))


def build_chain(
    target_messages: int = 20_000, target_bytes: int = 25_000_000, seed: int = 7
) -> list[Message]:
    """A valid chain of about ``target_messages`` messages and ``target_bytes`` bytes."""
    rng = random.Random(seed)
    per_message = target_bytes / target_messages
    messages: list[Message] = [Message.system(_text(rng, 6000))]
    while len(messages) < target_messages:
        messages.append(Message.human(_text(rng, rng.randint(80, 600))))
        for _ in range(rng.randint(2, 8)):
            if rng.random() < 0.25:
                messages.append(Message.ai(_text(rng, rng.randint(200, 2000))))
                continue
            calls = [
                ToolCall(
                    id=_call_id(rng),
                    name=rng.choice(_TOOLS),
                    arguments=json.dumps({"command": _text(rng, rng.randint(30, 200))}),
                )
                for _ in range(rng.choice((1, 1, 1, 2, 3, 4)))
            ]
            text = _text(rng, rng.randint(0, 300))
            parts = ([TextPart(text=text)] if text else []) + calls
            messages.append(Message(role=Role.AI, parts=parts))
            for call in calls:
                # Tool results carry most of the bytes; a few are huge.
                size = int(rng.expovariate(1 / (per_message * 1.1)))
                if rng.random() < 0.01:
                    size += 60_000
                content = _text(rng, max(size, 20))
                messages.append(
                    Message(
                        role=Role.TOOL,
                        parts=[ToolResult(tool_call_id=call.id, name=call.name, content=content)],
                    )
                )
    return messages
