"""Conversation state: what the keeper sent last time for a conversation, found again
on its next request so the compacted prefix is sent byte for byte again.

Clients resend their whole, uncompacted history on every request. After a compaction
the gateway stores, under the conversation's key, the length and hash of the history
it compacted and the chain it sent instead (:class:`ConversationState`). A later
request whose history starts with that same history is rebuilt as *that chain + the
new messages*, so the upstream sees the same prefix again (its prompt cache keeps
hitting) and the Compactor only compacts again when the rebuilt chain outgrows the
budget. The key is the tenant's (a keyed hash of the client's credential, see
:mod:`csum.serve.tenant`) and, within it, a hash of the conversation's opening (its
messages up to the first human message), or of the value of the
``x-csum-conversation`` header when sent. Several conversations of a tenant can share
an opening (agents with one first prompt): a key holds the states of the last
:data:`STATES_PER_KEY` of them (:class:`ConversationStates`), each with the hash of the
whole history it compacted, so each finds its own and a history that matches none is
compacted afresh.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import xxhash

import cast.codecs.native as native_codec
from cast import Message, ProviderPart, Role
from csum.serve.tenant import ANONYMOUS

__all__ = [
    "KEY_PREFIX",
    "STATES_PER_KEY",
    "STATES_VERSION",
    "STATE_VERSION",
    "ConversationState",
    "ConversationStates",
    "chain_hash",
    "conversation_key",
    "without_cache_points",
]

STATE_VERSION = 1
"""Version of the stored form; a record of another version is ignored."""
STATES_VERSION = 2
"""Version of the stored list of states (a record of version 1 is one state)."""
STATES_PER_KEY = 4
"""States kept under one key: conversations sharing an opening (and a tenant) beyond
this many evict the least recently compacted one."""
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


def conversation_key(
    api: str, messages: Sequence[Message], header: str | None, tenant: str = ANONYMOUS
) -> str:
    """The store key of the conversation ``messages`` belong to on endpoint ``api``, in
    the scope of ``tenant`` (:func:`csum.serve.tenant.tenant_of`): from ``header`` when
    given, else from the opening (up to the first human message)."""
    if header:
        digest = xxhash.xxh3_128_hexdigest(header.encode("utf-8", "surrogatepass"))
        return f"{KEY_PREFIX}{tenant}:{api}:h:{digest}"
    end = next((i + 1 for i, m in enumerate(messages) if m.role is Role.HUMAN), len(messages))
    return f"{KEY_PREFIX}{tenant}:{api}:c:{chain_hash(messages[:end])}"


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

    def record(self) -> dict[str, object]:
        """The stored form, as a JSON object."""
        return {
            "v": STATE_VERSION,
            "n": self.prefix_len,
            "h": self.prefix_hash,
            "sent": native_codec.encode(self.sent),
            "d": dict(self.depths),
        }

    def to_bytes(self) -> bytes:
        """The stored form (JSON)."""
        return _dumps(self.record())

    @classmethod
    def from_bytes(cls, data: bytes) -> ConversationState | None:
        """The state stored as ``data``; None for another version. Raises ``ValueError``
        for a damaged record."""
        return cls.from_record(json.loads(data.decode("utf-8", "surrogatepass")))

    @classmethod
    def from_record(cls, record: object) -> ConversationState | None:
        """The state of a decoded record; None for another version."""
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


@dataclass(frozen=True, slots=True)
class ConversationStates:
    """The states stored under one key, most recently compacted first: conversations
    that share an opening each find their own (:meth:`match`)."""

    states: tuple[ConversationState, ...] = ()

    def match(self, history: Sequence[Message]) -> tuple[int, list[Message]] | None:
        """(index of the state, ``history`` rebuilt on it) for the state whose
        compacted history ``history`` starts with (the longest when several do);
        None when none does."""
        best: tuple[int, list[Message]] | None = None
        best_len = -1
        for index, state in enumerate(self.states):
            if state.prefix_len <= best_len:
                continue
            rebuilt = state.rebuilt(history)
            if rebuilt is not None:
                best, best_len = (index, rebuilt), state.prefix_len
        return best

    def with_state(self, state: ConversationState, replacing: int | None) -> ConversationStates:
        """These states with ``state`` first, in place of the one at ``replacing`` (the
        one its conversation was rebuilt on), at most :data:`STATES_PER_KEY`."""
        others = [s for i, s in enumerate(self.states) if i != replacing]
        return ConversationStates((state, *others)[:STATES_PER_KEY])

    def to_bytes(self) -> bytes:
        """The stored form (JSON)."""
        return _dumps({"v": STATES_VERSION, "states": [s.record() for s in self.states]})

    @classmethod
    def from_bytes(cls, data: bytes) -> ConversationStates:
        """The states stored as ``data`` (a single-state record of version 1 reads as
        one state; another version as none). Raises ``ValueError`` for a damaged
        record."""
        record = json.loads(data.decode("utf-8", "surrogatepass"))
        if isinstance(record, dict) and record.get("v") == STATES_VERSION:
            states = record.get("states")
            if not isinstance(states, list):
                raise ValueError("damaged conversation states: bad states field")
            found = [ConversationState.from_record(s) for s in states[:STATES_PER_KEY]]
            return cls(tuple(s for s in found if s is not None))
        single = ConversationState.from_record(record)
        return cls(() if single is None else (single,))


def _dumps(record: object) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
