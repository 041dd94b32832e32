"""Conversation state: what the keeper sent last time for a conversation, found again
on its next request so the compacted prefix is sent byte for byte again.

Clients resend their whole, uncompacted history on every request. After a compaction
the gateway stores, under the conversation's key, the length and hash of the history
it compacted and the chain it sent instead (:class:`ConversationState`). A later
request whose history starts with that same history is rebuilt as *that chain + the
new messages*, so the upstream sees the same prefix again (its prompt cache keeps
hitting) and the Compactor only compacts again when the rebuilt chain outgrows the
budget. The key is a hash of the conversation's opening (its messages up to the first
human message), or of the value of the ``x-csum-conversation`` header when sent;
the stored hash of the whole compacted history guards against two conversations
sharing an opening: a history that does not match is compacted afresh.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import xxhash

import cast.codecs.native as native_codec
from cast import Message, ProviderPart, Role

__all__ = [
    "KEY_PREFIX",
    "STATE_VERSION",
    "ConversationState",
    "chain_hash",
    "conversation_key",
    "without_cache_points",
]

STATE_VERSION = 1
"""Version of the stored form; a record of another version is ignored."""
KEY_PREFIX = "csum:serve:conversation:"
"""Prefix of the conversation keys in the store."""


def _is_cache_point(part: object) -> bool:
    """An Anthropic ``cache_control`` marker (clients move it from turn to turn)."""
    return (
        isinstance(part, ProviderPart)
        and part.provider == "anthropic"
        and part.kind == "cache_control"
    )


def without_cache_points(message: Message) -> Message:
    """``message`` without its ``cache_control`` markers (itself when it has none)."""
    if not any(map(_is_cache_point, message.parts)):
        return message
    return message.evolve(parts=tuple(p for p in message.parts if not _is_cache_point(p)))


def chain_hash(messages: Sequence[Message]) -> str:
    """A hash of ``messages``' content, blind to cache markers (Claude Code moves its
    ``cache_control`` to the newest turn on every request)."""
    payload = native_codec.encode(without_cache_points(m) for m in messages)
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass"))


def conversation_key(api: str, messages: Sequence[Message], header: str | None) -> str:
    """The store key of the conversation ``messages`` belong to on endpoint ``api``:
    from ``header`` when given, else from the opening (up to the first human message)."""
    if header:
        digest = xxhash.xxh3_128_hexdigest(header.encode("utf-8", "surrogatepass"))
        return f"{KEY_PREFIX}{api}:h:{digest}"
    end = next((i + 1 for i, m in enumerate(messages) if m.role is Role.HUMAN), len(messages))
    return f"{KEY_PREFIX}{api}:c:{chain_hash(messages[:end])}"


@dataclass(frozen=True, slots=True)
class ConversationState:
    """After a compaction: the history compacted (its length in messages and hash), the
    chain sent in its place and the depth of each summary in it (the keeper's
    ``summary_depths``, so ``max_depth`` holds across requests)."""

    prefix_len: int
    prefix_hash: str
    sent: tuple[Message, ...]
    depths: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def after(
        cls,
        history: Sequence[Message],
        sent: Sequence[Message],
        depths: Mapping[str, int] | None = None,
    ) -> ConversationState:
        """The state once ``history`` was sent as ``sent``. Cache markers are taken out
        of ``sent`` except on system messages: the client puts its own on the newest
        turn, and stale ones would add up past the provider's limit (4 on Anthropic)."""
        kept = tuple(m if m.role is Role.SYSTEM else without_cache_points(m) for m in sent)
        return cls(len(history), chain_hash(history), kept, dict(depths or {}))

    def rebuilt(self, history: Sequence[Message]) -> list[Message] | None:
        """``history`` with its compacted prefix replaced by what was sent; None when
        ``history`` does not start with the compacted history."""
        count = self.prefix_len
        if len(history) < count or chain_hash(history[:count]) != self.prefix_hash:
            return None
        return [*self.sent, *history[count:]]

    def to_bytes(self) -> bytes:
        """The stored form (JSON)."""
        record = {
            "v": STATE_VERSION,
            "n": self.prefix_len,
            "h": self.prefix_hash,
            "sent": native_codec.encode(self.sent),
            "d": dict(self.depths),
        }
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ConversationState | None:
        """The state stored as ``data``; None for another version. Raises ``ValueError``
        for a damaged record."""
        record = json.loads(data.decode("utf-8", "surrogatepass"))
        if not isinstance(record, dict) or record.get("v") != STATE_VERSION:
            return None
        count, digest, sent = record.get("n"), record.get("h"), record.get("sent")
        if not isinstance(count, int) or count < 0 or not isinstance(digest, str):
            raise ValueError("damaged conversation state: bad n or h field")
        depths = record.get("d", {})  # absent in records written before depths were kept
        if not isinstance(depths, dict) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in depths.values()
        ):
            raise ValueError("damaged conversation state: bad d field")
        return cls(count, digest, tuple(native_codec.decode(sent)), depths)
