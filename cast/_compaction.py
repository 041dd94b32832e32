"""Provider compaction state made portable.

Providers now compact long conversations server-side and hand back what stands for the
compacted turns:

* Anthropic, a ``compaction`` block (``{"type": "compaction", "content": "<summary>"}``)
  at the start of an assistant message: readable text. For any other target it becomes
  a csum summary pair (a call of ``SUMMARIZATION_TOOL_NAME`` whose result is the
  summary), the shape chaincast's own summaries have, so the summarizers and the
  keeper treat it as one.
* OpenAI Responses, a ``compaction`` item holding only ``encrypted_content``: nobody
  but OpenAI can read it, so porting it elsewhere loses the compacted turns. ``port``
  raises :class:`EncryptedCompactionError` by default; with
  ``encrypted_compaction="note"`` it replaces the item by a text note naming what was
  lost and emits a :class:`LostCompactionWarning`.

Claude Code's own compact summaries (``isCompactSummary`` log lines) are read as summary
pairs by ``cast.codecs.claude_code``.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

from cast._fast import trusted_message
from cast._json import loads_strict
from cast.constants import SUMMARIZATION_TOOL_ARGS, SUMMARIZATION_TOOL_NAME
from cast.errors import ChainError
from cast.ids import IdTemplate
from cast.messages import Message, ProviderPart, Role, TextPart, ToolCall, ToolResult
from cast.providers import ProviderProfile

__all__ = [
    "COMPACTION",
    "EncryptedCompaction",
    "EncryptedCompactionError",
    "LostCompactionWarning",
    "port_compactions",
]

COMPACTION = "compaction"
"""``ProviderPart.kind`` of a provider's compaction block or item."""

EncryptedCompaction = Literal["raise", "note"]
"""What ``port`` does with an encrypted compaction item it cannot keep."""

_SUMMARY_CALL_ID = IdTemplate("call_{r:24:x}")


class EncryptedCompactionError(ChainError):
    """An OpenAI encrypted compaction item would be sent to a provider that cannot read
    it (``index`` is the message holding it): the turns it compacted would be lost."""


class LostCompactionWarning(UserWarning):
    """``port(..., encrypted_compaction="note")`` replaced an encrypted compaction item
    by a note: the turns it compacted are not in the ported chain."""


def port_compactions(
    items: list[Message],
    profile: ProviderProfile,
    same_source: bool,
    encrypted: EncryptedCompaction,
) -> list[Message]:
    """``items`` with every compaction block the target does not keep made portable:
    readable summaries as summary pairs, encrypted ones raised or noted (see the module
    docstring). Messages without one are passed through."""
    if encrypted not in ("raise", "note"):
        raise ValueError(f"encrypted_compaction must be 'raise' or 'note', not {encrypted!r}")
    out: list[Message] = []
    for index, message in enumerate(items):
        if not any(_is_compaction(p) for p in message.parts) or (
            same_source and _kept(message, profile)
        ):
            out.append(message)
            continue
        rest: list[Any] = []
        for part in message.parts:
            if not _is_compaction(part):
                rest.append(part)
                continue
            summary = _readable_summary(part)  # type: ignore[arg-type]
            if summary is not None:
                _flush(rest, message.role, out)
                out.extend(_summary_pair(summary))
                continue
            if encrypted == "raise":
                raise EncryptedCompactionError(
                    f"an encrypted {part.provider} compaction item "  # type: ignore[union-attr]
                    f"cannot be sent to {profile.name}: only its own provider can read the "
                    "turns it compacted; port with encrypted_compaction='note' to replace "
                    "it by a note (the turns are then lost), or restore them from an archive",
                    index=index,
                )
            note = (
                f"[{part.provider} compaction item omitted: its content is encrypted, "  # type: ignore[union-attr]
                f"so the earlier turns it compacted are not available to {profile.name}]"
            )
            warnings.warn(f"message {index}: {note}", LostCompactionWarning, stacklevel=3)
            rest.append(TextPart(text=note))
        _flush(rest, message.role, out)
    return out


def _is_compaction(part: object) -> bool:
    return type(part) is ProviderPart and part.kind == COMPACTION


def _kept(message: Message, profile: ProviderProfile) -> bool:
    """Whether the target keeps the message's compaction blocks as they are."""
    return all(
        p.provider == profile.wire_format
        for p in message.parts
        if type(p) is ProviderPart and p.kind == COMPACTION
    )


def _readable_summary(part: ProviderPart) -> str | None:
    """The summary text of a compaction block, or None when it is encrypted."""
    try:
        block = loads_strict(part.data)
    except ValueError:
        return None
    content = block.get("content") if isinstance(block, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # text blocks
        texts = [b.get("text") for b in content if isinstance(b, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n\n".join(texts)  # type: ignore[arg-type]
    return None


def _summary_pair(summary: str) -> tuple[Message, Message]:
    """The csum summary pair holding ``summary`` (its call id derived from the text, so
    porting twice gives the same chain)."""
    call_id = _SUMMARY_CALL_ID.generate(SUMMARIZATION_TOOL_NAME, seed=f"compaction\x1f{summary}")
    call = ToolCall(id=call_id, name=SUMMARIZATION_TOOL_NAME, arguments=SUMMARIZATION_TOOL_ARGS)
    result = ToolResult(tool_call_id=call_id, name=SUMMARIZATION_TOOL_NAME, content=summary)
    return trusted_message(Role.AI, (call,)), trusted_message(Role.TOOL, (result,))


def _flush(rest: list[Any], role: Role, out: list[Message]) -> None:
    """The parts gathered so far as a message of ``role`` (none when there are none)."""
    if rest:
        out.append(trusted_message(role, tuple(rest)))
        rest.clear()
