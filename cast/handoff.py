"""Hand a coding agent's session to the other agent (Claude Code <-> Codex CLI): ported
with :func:`cast.port`, compacted offline by csum when over budget (csum is imported only
then), written as a new session in the target's store (docs/handoff.md)."""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
import uuid as uuid_module
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from cast._port import TOOL_ERROR_PREFIX, LostCompactionWarning, port
from cast.chainio import read_json
from cast.codecs import claude_code, claude_code_session, codex_rollout
from cast.errors import ChainError, InputError
from cast.messages import Message, Role, TextPart, ToolResult
from cast.providers import resolve_provider
from cast.transforms import has_reasoning, without_reasoning

__all__ = [
    "AGENTS",
    "DEFAULT_BUDGETS",
    "Agent",
    "Handoff",
    "ReasoningMode",
    "Session",
    "codex_provider",
    "handoff",
    "read_session",
    "store_root",
]

Agent = Literal["claude-code", "codex"]
"""The agents a session can be handed to and from."""
AGENTS: tuple[str, ...] = get_args(Agent)
ReasoningMode = Literal["drop", "text"]
"""What happens to the source agent's thinking: dropped with a note, or its readable
text kept as plain assistant text."""

PROVIDERS: dict[str, str] = {"claude-code": "anthropic", "codex": "openai-responses"}
"""The provider each agent's model is reached through."""
DEFAULT_BUDGETS: dict[str, str] = {"claude-code": "100000 tokens", "codex": "129000 tokens"}
"""Half of each agent's context window (Claude Code's models: 200,000 tokens; Codex
0.171 with gpt-5-codex reports 258,400 usable tokens in its rollouts), so the resumed
agent has the other half to work in."""

_NAMES = {"claude-code": "Claude Code", "codex": "Codex"}
_COMMANDS = {"claude-code": "claude --resume", "codex": "codex resume"}
_STORES = {"claude-code": ("CLAUDE_CONFIG_DIR", "~/.claude"), "codex": ("CODEX_HOME", "~/.codex")}
# Context Codex adds to every session itself (the target agent adds its own).
_CODEX_CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True)
class Session:
    """A session read from an agent's file: which agent wrote it, its messages (as the
    agent resumes them), and the working directory, id and model it records."""

    agent: Agent
    messages: list[Message]
    cwd: str | None
    session_id: str | None
    model: str | None


@dataclass(frozen=True)
class Handoff:
    """A session written for another agent, and how to resume it.

    ``size_before`` / ``size_after`` are the chain's size in the budget's ``unit``
    before and after compaction; ``notes`` say what did not cross (thinking, lost
    compactions)."""

    agent: Agent
    session_id: str
    path: Path
    cwd: str
    resume_command: str
    compacted: bool
    unit: str
    size_before: int
    size_after: int
    notes: tuple[str, ...]


def store_root(agent: Agent) -> Path:
    """Where ``agent`` keeps its sessions' folder: ``$CLAUDE_CONFIG_DIR`` (default
    ``~/.claude``) for Claude Code, ``$CODEX_HOME`` (default ``~/.codex``) for Codex."""
    variable, default = _STORES[agent]
    return Path(os.environ.get(variable) or os.path.expanduser(default))


def codex_provider() -> str:
    """The model provider Codex is configured to use: ``model_provider`` in
    ``$CODEX_HOME/config.toml`` (``openai`` when it names none or cannot be read).
    The handed-off rollout names it, so the interactive ``codex resume`` goes on with
    it."""
    try:
        with (store_root("codex") / "config.toml").open("rb") as handle:
            config = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return "openai"
    provider = config.get("model_provider")
    return provider if isinstance(provider, str) and provider else "openai"


def _kind(lines: list[Any]) -> Agent | None:
    for line in lines:
        if not isinstance(line, dict):
            continue
        if line.get("type") == "session_meta" and isinstance(line.get("payload"), dict):
            return "codex"
        if line.get("type") in ("user", "assistant") and isinstance(line.get("message"), dict):
            return "claude-code"
        if line.get("role") in ("user", "assistant") and "content" in line:
            return "claude-code"  # the message objects of a log
    return None


def read_session(path: str | os.PathLike[str]) -> Session:
    """The session in the file at ``path``: a Claude Code log or a Codex rollout (JSON
    lines, or a JSON array of the same lines or of a log's message objects).

    Raises :class:`~cast.errors.InputError` naming the file when it cannot be read, is
    neither agent's format, holds no conversation or a line that does not decode.
    """
    where = os.fspath(path)
    lines = read_json(where)  # JSON lines for .jsonl
    if not isinstance(lines, list):
        raise InputError(f"{where} is not a session: expected JSON lines or a JSON array")
    agent = _kind(lines)
    if agent is None:
        raise InputError(
            f"{where} is not a Claude Code session or a Codex rollout "
            "(no user or assistant log line, no session_meta line)"
        )
    try:
        if agent == "codex":
            meta = codex_rollout.session_meta(lines) or {}
            messages = [m for m in codex_rollout.decode(lines) if not _codex_context(m)]
            cwd, session_id, model = meta.get("cwd"), meta.get("id"), _codex_model(lines)
        else:
            chain = claude_code_session.conversation_lines(lines)
            messages = claude_code.decode(chain)
            cwd = claude_code_session.session_cwd(chain)
            session_id = next(
                (ln["sessionId"] for ln in chain if isinstance(ln.get("sessionId"), str)), None
            )
            model = None
    except ChainError as exc:
        raise InputError(f"{where}: {exc}") from exc
    if not any(m.role is Role.HUMAN for m in messages):
        raise InputError(f"{where}: the session holds no conversation (no user message)")
    cwd = cwd if isinstance(cwd, str) and cwd else None
    return Session(agent, messages, cwd, session_id if isinstance(session_id, str) else None, model)


def _codex_model(lines: list[Any]) -> str | None:
    for line in reversed(lines):
        payload = line.get("payload") if isinstance(line, dict) else None
        if line.get("type") == "turn_context" and isinstance(payload, dict):
            model = payload.get("model")
            return model if isinstance(model, str) else None
    return None


def _codex_context(message: Message) -> bool:
    """Whether ``message`` is Codex's own developer instructions or context."""
    if message.role is not Role.HUMAN:
        return message.role is Role.SYSTEM
    texts = [p.text for p in message.parts if type(p) is TextPart]
    return 0 < len(texts) == len(message.parts) and all(
        t.lstrip().startswith(_CODEX_CONTEXT) for t in texts
    )


def _flagged(part: Any) -> Any:
    """A result with port's error prefix flagged as an error again, without the prefix."""
    if type(part) is ToolResult and part.content.startswith(TOOL_ERROR_PREFIX):
        content = part.content.removeprefix(TOOL_ERROR_PREFIX)
        return part.model_copy(update={"content": content, "is_error": True})
    return part


def _fit(
    messages: list[Message], budget_text: str, provider: str
) -> tuple[list[Message], bool, str, int, int]:
    """The chain within the budget: compacted offline by csum when larger, first task pinned."""
    from csum import Clearing, Compactor
    from csum.config import as_budget
    from csum.tokens import EstimatedTokens, Meter

    try:
        budget = as_budget(budget_text)
    except ValueError as exc:
        raise InputError(f"bad --budget {budget_text!r}: {exc}") from exc
    measure = Meter(budget.unit, EstimatedTokens()).total  # as the Compactor measures
    before = measure(messages)
    if before <= budget.limit:
        return messages, False, budget.unit, before, before
    first_task = next(m for m in messages if m.role is Role.HUMAN)
    # Clearing first: the default offline handler then reads placeholders, not the session.
    compactor = Compactor(
        budget=budget, target=provider, pin=lambda m: m is first_task, clearing=Clearing()
    )
    compacted = compactor.compact_sync(messages)
    after = measure(compacted)
    if after > budget.limit:
        raise InputError(
            f"--budget {budget_text} is too small for this session: compacted, it still "
            f"takes {after} {budget.unit}"
        )
    return compacted, True, budget.unit, before, after


def _target_path(agent: Agent, session_id: str, cwd: str, moment: datetime) -> Path:
    root = store_root(agent)
    if agent == "claude-code":
        return root / "projects" / _NOT_ALNUM.sub("-", cwd) / f"{session_id}.jsonl"
    local = moment.astimezone()
    day = root / "sessions" / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}"
    return day / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl"


def _write_new(path: Path, lines: list[dict[str, Any]], agent: Agent) -> None:
    """Write a new session file (never replacing one); on failure nothing is left."""
    created: list[Path] = []
    folder = path.parent
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        for directory in reversed(missing):
            directory.mkdir()
            created.append(directory)
        with path.open("x", encoding="utf-8") as handle:
            handle.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    except OSError as exc:
        if path.exists() and not isinstance(exc, FileExistsError):
            path.unlink()
        for directory in reversed(created):
            directory.rmdir()
        raise InputError(
            f"cannot write the {_NAMES[agent]} session store at {folder}: "
            f"{exc.strerror or exc}; nothing was written"
        ) from exc


def handoff(
    source: str | os.PathLike[str],
    to: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    budget: str | None = None,
    reasoning: ReasoningMode = "drop",
) -> Handoff:
    """Write the session at ``source`` as a new session of agent ``to`` and say how to
    resume it. Reasoning never crosses (only its own provider verifies it): it is
    dropped with a note, or with ``reasoning="text"`` its readable text is kept.

    ``cwd``: the directory the new session belongs to (default: the source session's
    own); ``budget``: the largest the written chain may be, a size as csum reads one
    (``"200KB"``, ``"50000 tokens"``; default :data:`DEFAULT_BUDGETS` of the target);
    ``reasoning``: ``"drop"`` (default) or ``"text"``. Raises
    :class:`~cast.errors.InputError`, with nothing written, for a source that is not a
    readable session, an unknown agent, a bad budget or a store that cannot be written.
    """
    if to not in AGENTS:
        raise InputError(f"unknown agent {to!r}: expected one of {', '.join(AGENTS)}")
    agent: Agent = to  # type: ignore[assignment]
    if reasoning not in get_args(ReasoningMode):
        raise InputError(f"unknown reasoning mode {reasoning!r}: expected drop or text")
    session = read_session(source)
    folder = os.fspath(cwd) if cwd is not None else session.cwd
    if not folder:
        raise InputError(f"{os.fspath(source)} records no working directory: pass --cwd")
    folder = os.path.abspath(folder)
    as_text = reasoning == "text"
    messages = [
        without_reasoning(m, as_text=as_text) or m if m.role is Role.AI else m
        for m in session.messages
    ]
    removed = sum(has_reasoning(p) for m in session.messages if m.role is Role.AI for p in m.parts)
    notes: list[str] = []
    if removed:
        kind = "thinking block" if session.agent == "claude-code" else "reasoning item"
        done = "kept as plain text where readable" if as_text else "dropped"
        why = (
            f"only {_NAMES[session.agent]}'s provider can verify them"
            if session.agent != agent
            else "only the model that made them can verify them, and it may not be the one "
            "that resumes"
        )
        notes.append(f"{removed} {kind}{'s' if removed != 1 else ''} {done}: {why}")
    provider = PROVIDERS[agent]
    if resolve_provider(provider).tool_error_flag:
        tool = Role.TOOL
        messages = [
            m.evolve(parts=tuple(map(_flagged, m.parts))) if m.role is tool else m for m in messages
        ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LostCompactionWarning)
        messages = port(
            messages, provider, source=PROVIDERS[session.agent], encrypted_compaction="note"
        )
    notes.extend(str(w.message) for w in caught if issubclass(w.category, LostCompactionWarning))
    messages, compacted, unit, before, after = _fit(
        messages, budget or DEFAULT_BUDGETS[agent], provider
    )
    session_id = str(uuid_module.uuid4())
    moment = datetime.now(UTC)
    codec = claude_code_session if agent == "claude-code" else codex_rollout
    extra = {"model_provider": codex_provider()} if agent == "codex" else {}
    try:
        lines = codec.encode(messages, session_id=session_id, cwd=folder, start=moment, **extra)
    except ChainError as exc:
        raise InputError(f"cannot write the session for {_NAMES[agent]}: {exc}") from exc
    path = _target_path(agent, session_id, folder, moment)
    _write_new(path, lines, agent)
    command = f"cd {shlex.quote(folder)} && {_COMMANDS[agent]} {session_id}"
    return Handoff(
        agent, session_id, path, folder, command, compacted, unit, before, after, tuple(notes)
    )
