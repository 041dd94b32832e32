"""Conversation state: the chain the keeper sent for a conversation, found again on its
next request (by a hash of its opening, or of ``x-csum-conversation``, per tenant) so the
compacted prefix is sent byte for byte again; a key keeps the last few conversations
sharing an opening (:class:`ConversationStates`)."""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    "RawPrefix",
    "chain_hash",
    "conversation_key",
    "kept_of",
    "raw_digests",
    "raw_hash_extended",
    "raw_head_hash",
    "raw_prefixes",
    "without_cache_points",
]

STATE_VERSION = 3
"""Version of a stored state (1, ``sent`` as a list, still read; others ignored)."""
STATES_VERSION = 2
"""Version of the stored list of states (a record of version 1 is one state)."""
STATES_PER_KEY = 4
"""States kept under one key (the least recently compacted evicted beyond)."""
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
    """A hash of ``messages``' content, blind to cache markers (clients move them)."""
    payload = native_codec.encode(without_cache_points(m) for m in messages)
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass"))


def kept_of(sent: Sequence[Message]) -> tuple[Message, ...]:
    """``sent`` without cache markers but on system messages (stale ones would add up
    past the provider's limit)."""
    return tuple(m if m.role is Role.SYSTEM else without_cache_points(m) for m in sent)


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


_MARKER = re.compile(r'"cache_control"[ \t\n\r]*:[ \t\n\r]*\{[^{}]*\}')
_SPACE = " \t\n\r"


def _without_markers(text: str) -> str:
    """``text`` without its ``cache_control`` fields and the comma joining each."""
    pieces: list[str] = []
    at = 0
    found = text.find('"cache_control"')
    while found >= 0:
        marker = _MARKER.match(text, found)
        if marker is None:
            found = text.find('"cache_control"', found + 1)
            continue
        start, end = found, marker.end()
        before = len(text[at:start].rstrip(_SPACE)) + at
        if before > at and text[before - 1] == ",":
            start = before - 1  # ``, "cache_control": {...}``
        else:
            after = len(text) - len(text[end:].lstrip(_SPACE))
            if text.startswith(",", after):
                end = after + 1  # ``"cache_control": {...},`` first in its object
        pieces.append(text[at:start])
        at = end
        found = text.find('"cache_control"', at)
    pieces.append(text[at:])
    return "".join(pieces)


def _blocks_unmarked(value: Any) -> Any:
    """``value`` without ``cache_control`` on its (and its tool results') content blocks."""
    if isinstance(value, list):
        return [_blocks_unmarked(block) for block in value]
    if not isinstance(value, dict):
        return value
    out = {k: v for k, v in value.items() if k != "cache_control"}
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_blocks_unmarked(block) for block in content]
    return out


def _unmarked_text(text: str, value: Any) -> str | None:
    """The JSON ``text`` of ``value`` without its cache markers; None when that is not
    ``value`` without them (a ``cache_control`` elsewhere)."""
    if '"cache_control"' not in text:
        return text
    stripped = _without_markers(text)
    try:
        same = json.loads(stripped) == _blocks_unmarked(value)
    except ValueError:
        return None
    return stripped if same else None


def raw_digests(
    text: str,
    head: Sequence[tuple[str, tuple[int, int] | None, Any]],
    items: Sequence[tuple[int, int]],
    values: Sequence[Any],
    counts: Iterable[int],
) -> dict[int, str | None]:
    """For each count ``n``: a marker-blind hash of the raw text of the history's other
    fields (``head``: name, span or None, value) and of its first ``n`` ``items`` (spans
    in ``text``; ``values`` parsed); None: a marker it cannot take out."""
    out: dict[int, str | None] = dict.fromkeys(counts, None)
    digest = raw_head_hash(text, head)
    if digest is None:
        return out
    for n in sorted({n for n in out if 0 < n <= len(items)}):
        region = _unmarked_region(text, items[:n], values)
        if region is not None:
            whole = digest.copy()
            whole.update(region.encode("utf-8", "surrogatepass"))
            out[n] = whole.hexdigest()
    if 0 in out:
        out[0] = digest.hexdigest()
    return out


def raw_head_hash(
    text: str, head: Sequence[tuple[str, tuple[int, int] | None, Any]]
) -> xxhash.xxh3_128 | None:
    """The hash :func:`raw_digests` starts from: the history's other fields."""
    digest = xxhash.xxh3_128()
    for name, span, value in head:
        piece = "\x01" if span is None else _unmarked_text(text[span[0] : span[1]], value)
        if piece is None:
            return None
        digest.update(f"{name}\x00{piece}\x00".encode("utf-8", "surrogatepass"))
    return digest


def raw_hash_extended(
    digest: xxhash.xxh3_128,
    text: str,
    items: Sequence[tuple[int, int]],
    values: Sequence[Any],
    *,
    start: int,
    stop: int,
) -> xxhash.xxh3_128 | None:
    """``digest`` (:func:`raw_digests`' for ``start`` items) extended to ``stop`` items."""
    out = digest.copy()
    if stop <= start:
        return out
    region = _unmarked_region(text, items[start:stop], values[start:stop])
    if region is None:
        return None
    if start > 0:  # the separator before the first of them
        out.update(text[items[start - 1][1] : items[start][0]].encode("utf-8", "surrogatepass"))
    out.update(region.encode("utf-8", "surrogatepass"))
    return out


def _unmarked_region(
    text: str, items: Sequence[tuple[int, int]], values: Sequence[Any]
) -> str | None:
    """The text ``items`` span, without their cache markers (None: one it cannot)."""
    start, end = items[0][0], items[-1][1]
    region = text[start:end]
    if '"cache_control"' not in region:
        return region
    starts = [first for first, _ in items]
    found = re.finditer('"cache_control"', region)  # a needle that cannot overlap itself
    marked = sorted({bisect_right(starts, start + m.start()) - 1 for m in found})
    pieces: list[str] = []
    at = start
    for index in marked:
        first, last = items[index]
        stripped = _unmarked_text(text[first:last], values[index])
        if stripped is None:
            return None
        pieces.extend((text[at:first], stripped))
        at = last
    pieces.append(text[at:end])
    return "".join(pieces)


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

    def record(self) -> dict[str, object]:
        return {
            "c": dict(self.calls),
            "n": self.items,
            "h": self.digest,
            "r": self.last_role,
            "f": dict(self.fields),
            "b": self.body,
            "tr": self.tail_role,
            "u": self.unit,
            "s": [self.units, self.sent_bytes, self.history_bytes, self.tokens_saved],
        }

    @classmethod
    def from_record(cls, record: object) -> RawPrefix | None:
        """The prefix of a stored record; None when absent or not of this form."""
        if not isinstance(record, dict):
            return None
        try:
            units, sent, history, saved = (int(v) for v in record["s"])
            fields = {str(k): str(v) for k, v in record["f"].items()}
            calls = {str(k): str(v) for k, v in record.get("c", {}).items()}
            return cls(
                int(record["n"]),
                str(record["h"]),
                record.get("r"),
                fields,
                str(record["b"]),
                record.get("tr"),
                str(record["u"]),
                units,
                sent,
                history,
                saved,
                calls,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


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
    ) -> ConversationState:
        """The state once ``history`` was sent as ``sent`` (see :func:`kept_of`)."""
        return cls(len(history), chain_hash(history), kept_of(sent), dict(depths or {}))

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
            "sent": _dumps(native_codec.encode(self.sent)).decode("utf-8", "surrogatepass"),
            "d": dict(self.depths),
        }
        if self.raw is not None:
            record["raw"] = self.raw.record()
        return record

    def to_bytes(self) -> bytes:
        """The stored form (JSON)."""
        return _dumps(self.record())

    @classmethod
    def from_bytes(cls, data: bytes) -> ConversationState | None:
        """The state stored as ``data``; None for another version (``ValueError``: damaged)."""
        return cls.from_record(json.loads(data.decode("utf-8", "surrogatepass")))

    @classmethod
    def from_record(cls, record: object) -> ConversationState | None:
        """The state of a decoded record; None for another version."""
        if not isinstance(record, dict) or record.get("v") not in (1, STATE_VERSION):
            return None
        count, digest, sent = record.get("n"), record.get("h"), record.get("sent")
        if isinstance(sent, str):
            sent = json.loads(sent)
        if not isinstance(count, int) or count < 0 or not isinstance(digest, str):
            raise ValueError("damaged conversation state: bad n or h field")
        depths = record.get("d", {})  # absent in records written before depths were kept
        if not isinstance(depths, dict) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in depths.values()
        ):
            raise ValueError("damaged conversation state: bad d field")
        raw = RawPrefix.from_record(record.get("raw"))
        return cls(count, digest, tuple(native_codec.decode(sent)), depths, raw)


@dataclass(frozen=True, slots=True)
class ConversationStates:
    """The states stored under one key, most recently compacted first."""

    states: tuple[ConversationState, ...] = ()

    def match(self, history: Sequence[Message]) -> tuple[int, list[Message]] | None:
        """(index, ``history`` rebuilt) of the longest state ``history`` starts with, or None."""
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
        """These states with ``state`` first, in place of the one at ``replacing``."""
        others = [s for i, s in enumerate(self.states) if i != replacing]
        return ConversationStates((state, *others)[:STATES_PER_KEY])

    def to_bytes(self) -> bytes:
        """The stored form (JSON)."""
        return _dumps({"v": STATES_VERSION, "states": [s.record() for s in self.states]})

    @classmethod
    def from_bytes(cls, data: bytes) -> ConversationStates:
        """The states stored as ``data`` (``ValueError``: a damaged record)."""
        found = [ConversationState.from_record(s) for s in _stored_states(data)]
        return cls(tuple(s for s in found if s is not None))


def _stored_states(data: bytes) -> list[Any]:
    """The state records stored as ``data`` (a version 1 record is one state)."""
    record = json.loads(data.decode("utf-8", "surrogatepass"))
    if isinstance(record, dict) and record.get("v") == STATES_VERSION:
        states = record.get("states")
        if not isinstance(states, list):
            raise ValueError("damaged conversation states: bad states field")
        return states[:STATES_PER_KEY]
    return [record]


def raw_prefixes(data: bytes) -> list[tuple[int, int, RawPrefix | None]]:
    """(index, ``prefix_len``, raw prefix) of each state stored as ``data``, without
    decoding their chains (``ValueError``: a damaged record)."""
    out: list[tuple[int, int, RawPrefix | None]] = []
    index = 0
    for state in _stored_states(data):
        if not isinstance(state, dict) or state.get("v") not in (1, STATE_VERSION):
            continue
        count = state.get("n")
        if not isinstance(count, int):
            raise ValueError("damaged conversation state: bad n field")  # noqa: TRY004
        out.append((index, count, RawPrefix.from_record(state.get("raw"))))
        index += 1
    return out


def _dumps(record: object) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
