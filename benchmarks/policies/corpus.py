"""Load the recorded chains of ``../shared/corpus`` as lists of :class:`cast.Message`.

The library's codecs are used when present (``cast.codecs.openai.decode``,
``cast.codecs.claude_code.decode``); small loaders here stand in for
them otherwise, so the benchmark runs against whatever the tree holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.shared_corpus import CORPUS
from cast import ChainAST, Message, Reasoning, Role, TextPart, ToolCall, ToolResult

__all__ = [
    "CLAUDE_CODE_FOLDER",
    "HELDOUT_FOLDER",
    "OPENAI_FOLDER",
    "CorpusChain",
    "decode_claude_code",
    "decode_openai",
    "find_corpus",
    "load_folder",
    "load_heldout",
]


OPENAI_FOLDER = "openai_taubench"
CLAUDE_CODE_FOLDER = "anthropic_claudecode"
HELDOUT_FOLDER = "sessions-heldout"
"""13 real sessions of other projects and agents: the held-out part (read once, to report)."""


@dataclass(frozen=True, slots=True)
class CorpusChain:
    """One recorded chain, repaired so that every failure later is the policy's."""

    name: str
    messages: list[Message]
    repairs: int
    """How many issues ``ChainAST.from_messages(repair=True)`` fixed in the recording."""
    loader: str
    """Which decoder read it: the library codec or this module's stand-in."""


def find_corpus(path: Path | None = None) -> Path | None:
    """The corpus folder (``path`` or the default), or None when it is missing."""
    folder = path if path is not None else CORPUS
    return folder if (folder / OPENAI_FOLDER).is_dir() else None


# --- OpenAI Chat Completions (tau-bench) ---------------------------------------------


def _openai_fallback(payload: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in payload:
        role = item["role"]
        content = item.get("content") or ""
        if role == "assistant":
            parts: list[Any] = [TextPart(text=content)] if content else []
            for call in item.get("tool_calls") or []:
                fn = call["function"]
                names[call["id"]] = fn["name"]
                parts.append(ToolCall(id=call["id"], name=fn["name"], arguments=fn["arguments"]))
            out.append(Message(role=Role.AI, parts=parts))
        elif role == "tool":
            call_id = item["tool_call_id"]
            name = item.get("name") or names.get(call_id, "")
            out.append(Message.tool(call_id, name, content))
        elif role == "user":
            out.append(Message.human(content))
        else:
            out.append(Message.system(content))
    return out


def decode_openai(payload: list[dict[str, Any]]) -> tuple[list[Message], str]:
    """Messages of an OpenAI Chat message array, and which loader read them."""
    try:
        from cast.codecs.openai import decode
    except ImportError:
        return _openai_fallback(payload), "benchmark loader"
    return decode(payload), "cast.codecs.openai"


# --- Claude Code logs ----------------------------------------------------------------


def _merge_claude_code(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """API-shaped messages from log entries (one content block per entry).

    Entries of one assistant message share ``id``; the tool results logged between
    them are gathered into one user message that follows the merged assistant message.
    """
    out: list[dict[str, Any]] = []
    open_id: object = None  # id of the assistant message still receiving blocks
    results: list[dict[str, Any]] = []

    def flush() -> None:
        if results:
            out.append({"role": "user", "content": list(results)})
            results.clear()

    for entry in entries:
        content = entry.get("content")
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
        )
        if entry.get("role") == "assistant":
            blocks = [{k: v for k, v in b.items() if k != "caller"} for b in blocks]
            if open_id is not None and entry.get("id") == open_id:
                out[-1]["content"].extend(blocks)  # results wait in ``results``
                continue
            flush()
            out.append({"role": "assistant", "content": list(blocks)})
            open_id = entry.get("id")
            continue
        results.extend(b for b in blocks if b.get("type") == "tool_result")
        others = [b for b in blocks if b.get("type") != "tool_result"]
        if others:
            flush()
            open_id = None
            out.append({"role": "user", "content": others})
    flush()
    return out


def _claude_code_fallback(messages: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in messages:
        if item["role"] == "assistant":
            parts: list[Any] = []
            thinking: Reasoning | None = None
            for block in item["content"]:
                kind = block.get("type")
                if kind in ("thinking", "redacted_thinking"):
                    signature = str(block.get("signature") or block.get("data") or "")
                    thinking = Reasoning(
                        content=block.get("thinking", ""), signature=signature.encode()
                    )
                elif kind == "text":
                    parts.append(TextPart(text=block["text"], reasoning=thinking))
                    thinking = None
                elif kind == "tool_use":
                    names[block["id"]] = block["name"]
                    args = json.dumps(block.get("input", {}), ensure_ascii=False)
                    parts.append(
                        ToolCall(
                            id=block["id"], name=block["name"], arguments=args, reasoning=thinking
                        )
                    )
                    thinking = None
            if thinking is not None:
                parts.append(TextPart(text="", reasoning=thinking))
            out.append(Message(role=Role.AI, parts=parts))
            continue
        texts: list[str] = []
        for block in item["content"]:
            if block.get("type") == "tool_result":
                body = block.get("content", "")
                if isinstance(body, list):
                    body = "\n".join(b.get("text", "") for b in body if b.get("type") == "text")
                call_id = block["tool_use_id"]
                out.append(
                    Message(
                        role=Role.TOOL,
                        parts=[
                            ToolResult(
                                tool_call_id=call_id, name=names.get(call_id, ""), content=body
                            )
                        ],
                    )
                )
            elif block.get("type") == "text":
                texts.append(block["text"])
        if texts:
            out.append(Message(role=Role.HUMAN, parts=[TextPart(text=t) for t in texts]))
    return out


def decode_claude_code(entries: list[dict[str, Any]]) -> tuple[list[Message], str]:
    """Messages of a Claude Code log (one block per entry), and which loader read them."""
    try:
        from cast.codecs import claude_code
    except ImportError:
        pass
    else:
        return list(claude_code.decode(entries)), "cast.codecs.claude_code"
    merged = _merge_claude_code(entries)
    try:
        from cast.codecs.anthropic import decode
    except ImportError:
        return _claude_code_fallback(merged), "benchmark loader"
    try:
        return decode(merged), "benchmark merge + cast.codecs.anthropic"
    except Exception:
        return _claude_code_fallback(merged), "benchmark loader"


# --- folders -------------------------------------------------------------------------

_DECODERS: dict[str, Callable[[list[dict[str, Any]]], tuple[list[Message], str]]] = {
    OPENAI_FOLDER: decode_openai,
    CLAUDE_CODE_FOLDER: decode_claude_code,
}


def load_folder(corpus: Path, folder: str, *, limit: int | None = None) -> list[CorpusChain]:
    """The chains of one corpus folder, smallest first, each repaired once."""
    decoder = _DECODERS[folder]
    files = sorted((corpus / folder).glob("*.json"), key=lambda p: (p.stat().st_size, p.name))
    if limit is not None:
        files = files[:limit]
    chains: list[CorpusChain] = []
    for path in files:
        payload = json.loads(path.read_text(encoding="utf-8"))
        messages, loader = decoder(payload)
        issues = _repairs(messages)
        if issues:
            messages = ChainAST.from_messages(messages, repair=True).to_messages()
        chains.append(CorpusChain(path.stem, messages, issues, loader))
    return chains


def _repairs(messages: list[Message]) -> int:
    from cast import diagnose

    return len(diagnose(messages))


def _heldout_claude_code(payload: Any) -> tuple[list[Message], str]:
    from cast.codecs import claude_code

    return list(claude_code.decode(payload)), "cast.codecs.claude_code"


def _heldout_openai(payload: Any) -> tuple[list[Message], str]:
    from cast.codecs.openai import decode

    return decode(payload["messages"]), "cast.codecs.openai"


def _heldout_responses(payload: Any) -> tuple[list[Message], str]:
    from cast.codecs.openai_responses import decode

    return decode(payload["input"]), "cast.codecs.openai_responses"


_HELDOUT_DECODERS: dict[str, Callable[[Any], tuple[list[Message], str]]] = {
    "claude_code": _heldout_claude_code,
    "openai": _heldout_openai,
    "openai_responses": _heldout_responses,
}
"""Held-out sub-folder -> its codec (the folder's README names them)."""


def load_heldout(corpus: Path, *, limit: int | None = None) -> list[CorpusChain]:
    """The held-out sessions (``sessions-heldout``), each decoded by the codec its
    sub-folder names and repaired once, smallest first. Report them once; never tune on
    them."""
    files = sorted(
        (p for sub in _HELDOUT_DECODERS for p in (corpus / HELDOUT_FOLDER / sub).glob("*.json")),
        key=lambda p: (p.stat().st_size, p.name),
    )
    chains: list[CorpusChain] = []
    for path in files[:limit]:
        payload = json.loads(path.read_text(encoding="utf-8"))
        messages, loader = _HELDOUT_DECODERS[path.parent.name](payload)
        issues = _repairs(messages)
        if issues:
            messages = ChainAST.from_messages(messages, repair=True).to_messages()
        chains.append(CorpusChain(path.stem, messages, issues, loader))
    return chains
