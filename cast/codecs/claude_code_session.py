"""Claude Code session files: the whole log lines Claude Code writes and resumes from
(``claude --resume``; facts in docs/handoff.md, mapping in docs/codecs.md)."""

from __future__ import annotations

import hashlib
import json
import uuid as uuid_module
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from cast.codecs import claude_code
from cast.codecs._common import array_of, ensure
from cast.messages import Message

__all__ = [
    "CLI_VERSION",
    "EPOCH",
    "conversation_lines",
    "decode",
    "encode",
    "line_uuid",
    "session_cwd",
    "session_uuid",
]

CLI_VERSION = "2.1.197"
"""The Claude Code version whose session files this codec's output was checked with."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The first line's time when none is given: no time is known from the messages."""


def session_uuid(entries: list[dict[str, Any]]) -> str:
    """A session id that is a function of the ``entries`` written (a name-based UUID)."""
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
    return str(uuid_module.uuid5(uuid_module.NAMESPACE_URL, f"chaincast-session:{digest}"))


def _line_time(start: datetime | None, k: int) -> str:
    """The time of line ``k`` of a session begun at ``start`` (:data:`EPOCH`): 1 ms apart."""
    moment = (start or EPOCH) + timedelta(milliseconds=k)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def line_uuid(session_id: str, position: int) -> str:
    """The ``uuid`` of the line at ``position`` of session ``session_id``."""
    return str(uuid_module.uuid5(uuid_module.NAMESPACE_URL, f"{session_id}/{position}"))


def conversation_lines(lines: Iterable[object]) -> list[Any]:
    """The lines Claude Code would resume with, oldest first: the ``parentUuid`` chain
    back from the newest user or assistant line not on a side chain (all lines, in
    order, when none carries a ``uuid``). Lines are shared, not copied."""
    rows = array_of(lines, "session log lines")
    if not any(isinstance(row, dict) and isinstance(row.get("uuid"), str) for row in rows):
        return rows
    by_uuid: dict[str, int] = {}
    newest: int | None = None
    for k, line in enumerate(rows):
        ensure(line, dict, f"entries[{k}]", "a log line object", k)
        key = line.get("uuid")
        if isinstance(key, str):
            by_uuid[key] = k
            if line.get("type") in ("user", "assistant") and line.get("isSidechain") is not True:
                newest = k
    if newest is None:
        return []
    chain: list[int] = []
    seen: set[int] = set()
    at: int | None = newest
    while at is not None and at not in seen:
        seen.add(at)
        chain.append(at)
        parent = rows[at].get("parentUuid")
        at = by_uuid.get(parent) if isinstance(parent, str) else None
    return [rows[at] for at in reversed(chain)]


def decode(payload: object) -> list[Message]:
    """Messages of a Claude Code session's lines (see :func:`conversation_lines`); errors
    name the line among those resumed (``entries[3].content[0].input``)."""
    return claude_code.decode(conversation_lines(payload))  # type: ignore[arg-type]


def session_cwd(lines: Iterable[object]) -> str | None:
    """The working directory the newest line that records one names (None: none does)."""
    found: str | None = None
    for line in lines:
        if isinstance(line, dict) and isinstance(line.get("cwd"), str):
            found = line["cwd"]
    return found


def encode(
    messages: Iterable[Message | dict[str, Any]],
    *,
    session_id: str | None = None,
    cwd: str = "",
    model: str | None = None,
    start: datetime | None = None,
) -> list[dict[str, Any]]:
    """The lines of a new Claude Code session holding ``messages`` (``session_id`` default
    :func:`session_uuid` of the entries; ``model`` left out when None; ``start`` default
    :data:`EPOCH`); a SYSTEM message is an error."""
    entries = claude_code.encode(messages)
    session = session_id or session_uuid(entries)
    out: list[dict[str, Any]] = []
    parent: str | None = None
    for k, entry in enumerate(entries):
        this = line_uuid(session, k)
        role = entry["role"]
        message = dict(entry)
        if role == "assistant" and model is not None:
            message["model"] = model
        out.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session,
                "version": CLI_VERSION,
                "type": role,
                "message": message,
                "uuid": this,
                "timestamp": _line_time(start, k),
            }
        )
        parent = this
    return out
