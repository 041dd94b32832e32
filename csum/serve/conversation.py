"""Conversation state: the chain the keeper sent for a conversation, found again on its
next request (by a hash of its opening, or of ``x-csum-conversation``, per tenant) so the
compacted prefix is sent byte for byte again; a key keeps the last few conversations
sharing an opening (:class:`ConversationStates`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import xxhash

import cast.codecs.native as native_codec
from cast import Message, Role
from csum.plan import is_breakpoint
from csum.serve.tenant import ANONYMOUS

__all__ = [
    "KEY_PREFIX",
    "STATES_PER_KEY",
    "STATES_VERSION",
    "STATE_VERSION",
    "ConversationState",
    "ConversationStates",
    "RawPrefix",
    "chain_hash",
    "conversation_key",
    "dumps",
    "kept_of",
]

STATE_VERSION = 3
"""Version of a stored state (others are ignored)."""
STATES_VERSION = 2
"""Version of the stored list of states (others are ignored)."""
STATES_PER_KEY = 4
"""States kept under one key (the least recently compacted evicted beyond)."""
KEY_PREFIX = "csum:serve:conversation:"
"""Prefix of the conversation keys in the store."""


def _unmarked(message: Message) -> Message:
    """``message`` without its cache markers (clients move them); itself without any."""
    parts = tuple(part for part in message.parts if not is_breakpoint(part))
    return message if len(parts) == len(message.parts) else message.evolve(parts=parts)


def chain_hash(messages: Sequence[Message]) -> str:
    """A hash of ``messages``' content, blind to cache markers (clients move them)."""
    payload = native_codec.encode(_unmarked(m) for m in messages)
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass"))


def kept_of(sent: Sequence[Message]) -> tuple[Message, ...]:
    """``sent`` without cache markers but on system messages (stale ones would add up
    past the provider's limit)."""
    return tuple(m if m.role is Role.SYSTEM else _unmarked(m) for m in sent)


def conversation_key(
    api: str, messages: Sequence[Message], header: str | None, tenant: str = ANONYMOUS
) -> str:
    """The store key of the conversation of ``messages`` on ``api`` for ``tenant``: from
    ``header`` when given, else from the opening (up to the first human message)."""
    if header:
        digest = xxhash.xxh3_128_hexdigest(header.encode("utf-8", "surrogatepass"))
        return f"{KEY_PREFIX}{tenant}:{api}:h:{digest}"
    end = next((i + 1 for i, m in enumerate(messages) if m.role is Role.HUMAN), len(messages))
    return f"{KEY_PREFIX}{tenant}:{api}:c:{chain_hash(messages[:end])}"


@dataclass(frozen=True, slots=True)
class RawPrefix:
    """What recognises a compacted history by its raw JSON text and sends its prefix again
    without decoding: the client's items (count, marker-blind ``digest``, last role), the
    compacted chain's JSON text (``fields``, ``body``, ``tail_role``) and its sizes."""

    items: int
    digest: str
    last_role: str | None
    fields: Mapping[str, str]
    body: str = field(repr=False)
    tail_role: str | None
    unit: str
    units: int
    sent_bytes: int
    history_bytes: int
    tokens_saved: int
    calls: Mapping[str, str] = field(default_factory=dict, repr=False)  # call id -> name

    def record(self) -> list[object]:
        """The stored form: the fields in their order."""
        return [getattr(self, name) for name in self.__slots__]

    @classmethod
    def from_record(cls, record: object) -> RawPrefix | None:
        """The prefix of a stored record; None when absent or not of this form."""
        if not isinstance(record, list) or len(record) != len(_RAW_TYPES):
            return None
        typed = all(isinstance(v, kind) for v, kind in zip(record, _RAW_TYPES, strict=True))
        return cls(*record) if typed else None


_ROLE = (str, type(None))
_RAW_TYPES: tuple[Any, ...] = (int, str, _ROLE, dict, str, _ROLE, str, int, int, int, int, dict)
"""The type of each field of a stored :class:`RawPrefix`, in their order."""


@dataclass(frozen=True, slots=True)
class ConversationState:
    """After a compaction: the history compacted (length, hash), the chain sent in its
    place and the depth of each summary in it."""

    prefix_len: int
    prefix_hash: str
    sent: tuple[Message, ...]
    depths: Mapping[str, int] = field(default_factory=dict)
    raw: RawPrefix | None = None

    @classmethod
    def after(
        cls,
        history: Sequence[Message],
        sent: Sequence[Message],
        depths: Mapping[str, int] | None = None,
        raw: RawPrefix | None = None,
    ) -> ConversationState:
        """The state once ``history`` was sent as ``sent`` (see :func:`kept_of`)."""
        return cls(len(history), chain_hash(history), kept_of(sent), dict(depths or {}), raw)

    def rebuilt(self, history: Sequence[Message]) -> list[Message] | None:
        """``history`` with its compacted prefix replaced by what was sent, or None."""
        count = self.prefix_len
        if len(history) < count or chain_hash(history[:count]) != self.prefix_hash:
            return None
        return [*self.sent, *history[count:]]

    def record(self) -> dict[str, object]:
        """The stored form, as a JSON object (the chain sent as JSON text)."""
        record: dict[str, object] = {
            "v": STATE_VERSION,
            "n": self.prefix_len,
            "h": self.prefix_hash,
            "sent": dumps(native_codec.encode(self.sent)).decode("utf-8", "surrogatepass"),
            "d": dict(self.depths),
        }
        if self.raw is not None:
            record["raw"] = self.raw.record()
        return record

    @classmethod
    def from_record(cls, record: object, *, chain: bool = True) -> ConversationState | None:
        """The state of a decoded record, its chain sent left empty without ``chain``
        (not decoded); None for another version (``ValueError``: damaged)."""
        if not isinstance(record, dict) or record.get("v") != STATE_VERSION:
            return None
        count, digest, sent = record.get("n"), record.get("h"), record.get("sent")
        if (
            not isinstance(count, int)
            or count < 0
            or not (isinstance(digest, str) and isinstance(sent, str))
        ):
            raise ValueError("damaged conversation state: bad n, h or sent field")
        depths = record.get("d")
        if not isinstance(depths, dict) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in depths.values()
        ):
            raise ValueError("damaged conversation state: bad d field")
        raw = RawPrefix.from_record(record.get("raw"))
        chain_sent = tuple(native_codec.decode(json.loads(sent))) if chain else ()
        return cls(count, digest, chain_sent, depths, raw)


@dataclass(frozen=True, slots=True)
class ConversationStates:
    """The states stored under one key, most recently compacted first."""

    states: tuple[ConversationState, ...] = ()

    def match(self, history: Sequence[Message]) -> tuple[int, list[Message]] | None:
        """(index, ``history`` rebuilt) of the longest state ``history`` starts with, or None."""
        longest_first = sorted(enumerate(self.states), key=lambda pair: -pair[1].prefix_len)
        for index, state in longest_first:  # the first of equally long ones
            rebuilt = state.rebuilt(history)
            if rebuilt is not None:
                return index, rebuilt
        return None

    def with_state(self, state: ConversationState, replacing: int | None) -> ConversationStates:
        """These states with ``state`` first, in place of the one at ``replacing``."""
        others = [s for i, s in enumerate(self.states) if i != replacing]
        return ConversationStates((state, *others)[:STATES_PER_KEY])

    def to_bytes(self) -> bytes:
        """The stored form (JSON)."""
        return dumps({"v": STATES_VERSION, "states": [s.record() for s in self.states]})

    @classmethod
    def from_bytes(cls, data: bytes, *, chains: bool = True) -> ConversationStates:
        """The states stored as ``data`` (none for another version), their chains sent
        left empty without ``chains`` (``ValueError``: a damaged record)."""
        record = json.loads(data.decode("utf-8", "surrogatepass"))
        if not isinstance(record, dict) or record.get("v") != STATES_VERSION:
            return cls()
        records = record.get("states")
        if not isinstance(records, list):
            raise ValueError("damaged conversation states: bad states field")  # noqa: TRY004 (a damaged record)
        found = [ConversationState.from_record(s, chain=chains) for s in records[:STATES_PER_KEY]]
        return cls(tuple(s for s in found if s is not None))


def dumps(value: object) -> bytes:
    """``value`` as the gateway writes JSON: compact, not ASCII-escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")
