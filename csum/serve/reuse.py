"""A reused request of a compacted conversation, sent without decoding its history: a
request whose first items hash as the stored :class:`~csum.serve.conversation.RawPrefix`
is sent as its encoded prefix plus its new items, decoded and encoded alone; anything
uncertain answers None and the request is decoded whole (the same bytes either way)."""

from __future__ import annotations

import json
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import xxhash

from cast import Message, ProviderProfile, Role, ToolCall, ToolResult
from csum.assemble import placed_for
from csum.config import Budget
from csum.serve.apis import Api
from csum.serve.body import ScannedBody
from csum.serve.conversation import RawPrefix, dumps, kept_of
from csum.tokens import EstimatedTokens

__all__ = [
    "SEEN_IN_ALL",
    "SEEN_PER_SCOPE",
    "Known",
    "RawHashes",
    "Seen",
    "SeenRequests",
    "Spliced",
    "composed",
    "fields_json",
    "matching",
    "opening_count",
    "raw_prefix",
    "spliced",
    "tokens_saved",
    "units",
]


def fields_json(fields: Mapping[str, Any]) -> dict[str, bytes]:
    """Each field as ``"name":value`` JSON text, as it stands in a dumped object."""
    return {key: dumps(key) + b":" + dumps(value) for key, value in fields.items()}


def composed(
    payload: Mapping[str, Any], api: Api, other: Mapping[str, bytes], history: Mapping[str, bytes]
) -> bytes:
    """``json.dumps`` of ``payload`` with its history replaced by ``history`` (JSON texts)."""
    pieces = api.merged({key: other.get(key, b"") for key in payload}, history)
    return b"{" + b",".join(pieces.values()) + b"}"


def opening_count(values: Sequence[Any]) -> int | None:
    """Items up to the first of the user's (the conversation's opening), or None."""
    return next((i + 1 for i, item in enumerate(values) if _role(item) == "user"), None)


class Spliced(TypedDict):
    """A reused request's body and its sizes (see :class:`csum.serve.compaction.Outcome`),
    and the body as an object when asked for (for a translation)."""

    body: bytes
    bytes_before: int
    bytes_after: int
    tokens_saved: int
    payload: dict[str, Any] | None


def units(messages: Iterable[Message], unit: str) -> int:
    """The size of ``messages`` in ``unit``: bytes, or tokens as the keepers count them."""
    return sum(m.size if unit == "bytes" else _COUNTER.count(m) for m in messages)


def tokens_saved(before: Sequence[Message], after: Sequence[Message]) -> int:
    """The tokens ``after`` takes less than ``before`` (0 when it takes more)."""
    return max(0, units(before, "tokens") - units(after, "tokens"))


def raw_prefix(
    hashes: RawHashes,
    history: Sequence[Message],
    sent: Sequence[Message],
    profile: ProviderProfile,
    unit: str,
) -> RawPrefix | None:
    """The raw prefix of a compaction of the request of ``hashes`` (its history decoded
    as ``history``) that sent ``sent`` (sized in ``unit``); None without spans or when a
    later turn could change the prefix's encoding."""
    api, scanned = hashes.api, hashes.scanned
    count = len(scanned.items or [])
    digest = hashes.digests([count])[count]
    kept = kept_of(sent)
    placed = placed_for(kept, profile)
    probe = Message.ai("probe")
    if digest is None or placed_for([*kept, probe], profile) != [*placed, probe]:
        return None
    encoded = api.encode(placed, api.history(scanned.payload) or {})
    items = encoded.get(api.list_key)
    if not isinstance(items, list):
        return None
    fields = {key: _text(value) for key, value in encoded.items() if key != api.list_key}
    values = scanned.payload[api.list_key]
    last = _role(values[-1]) if values else None
    tail = _role(items[-1]) if items else None
    sizes = units(kept, unit), sum(m.size for m in kept), sum(m.size for m in kept_of(history))
    body = ",".join(map(_text, items))
    calls = {part.id: part.name for m in history for part in m.parts if isinstance(part, ToolCall)}
    saved = tokens_saved(history, kept)
    return RawPrefix(count, digest, last, fields, body, tail, unit, *sizes, saved, calls)


def _text(value: Any) -> str:
    return dumps(value).decode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True)
class Known:
    """An earlier request a request is the same bytes as but for its items from ``fresh``."""

    seen: Seen = field(repr=False)
    fresh: int


class RawHashes:
    """The marker-blind hashes of the raw text of a request's history: its other fields,
    then its first items; each computed once, resumed from an earlier request's
    (``known``) where the two are the same bytes. None: no spans, or a marker it
    cannot take out."""

    def __init__(self, scanned: ScannedBody, api: Api, known: Known | None) -> None:
        self.scanned, self.api = scanned, api
        self._text, self._items = scanned.text, scanned.items
        self._head: list[tuple[str, tuple[int, int] | None, Any]] | None = None
        self._values: list[Any] = []
        if scanned.fields is not None and scanned.items is not None:
            spans, payload = scanned.fields, scanned.payload
            keys = [key for key in api.history_keys if key != api.list_key]
            self._head = [(key, spans.get(key), payload.get(key)) for key in keys]
            self._values = payload[api.list_key]
        self.done: dict[int, str | None] = {}
        self._at: tuple[int, xxhash.xxh3_128] | None = None
        if known is not None:
            self.done = {n: d for n, d in known.seen.digests.items() if n <= known.fresh}
            chain = known.seen.chain
            self._at = chain if chain is not None and chain[0] <= known.fresh else None

    def digests(self, counts: Sequence[int]) -> dict[int, str | None]:
        """The hash of the first ``n`` items for each ``n`` of ``counts`` (None: not hashable)."""
        for n in sorted(set(counts)):
            if n not in self.done:
                self.done[n] = self._digest(n)
        return {n: self.done[n] for n in counts}

    @property
    def chain(self) -> tuple[int, xxhash.xxh3_128] | None:
        """The hash of the request's items but its last one, with their count."""
        items = self._items
        if self._head is None or not items:
            return None
        self._moved(len(items) - 1)
        return self._at if self._at is not None and self._at[0] == len(items) - 1 else None

    def _digest(self, n: int) -> str | None:
        items = self._items
        if self._head is None or items is None or not 0 <= n <= len(items):
            return None
        moved = self._moved(min(n, len(items) - 1))
        if moved is not None and moved[0] > n:  # resumed past them: from the start
            moved = self._start()
        digest = None if moved is None else self._extended(moved, n)
        return None if digest is None else digest.hexdigest()

    def _start(self) -> tuple[int, xxhash.xxh3_128] | None:
        """The hash of the history's other fields (``\x01`` for one absent)."""
        digest = xxhash.xxh3_128()
        for name, span, value in self._head or ():
            piece = "\x01" if span is None else _unmarked_text(self._text[span[0] : span[1]], value)
            if piece is None:
                return None
            digest.update(f"{name}\x00{piece}\x00".encode("utf-8", "surrogatepass"))
        return 0, digest

    def _moved(self, n: int) -> tuple[int, xxhash.xxh3_128] | None:
        """The running hash, moved on to the first ``n`` items when it is not past them."""
        if self._at is None:
            self._at = self._start()
        if self._at is None or self._at[0] >= n:
            return self._at
        digest = self._extended(self._at, n)
        if digest is not None:
            self._at = (n, digest)
        return self._at

    def _extended(self, at: tuple[int, xxhash.xxh3_128], stop: int) -> xxhash.xxh3_128 | None:
        """The hash ``at`` (of its count of items) extended to ``stop`` items."""
        start, out = at[0], at[1].copy()
        if stop <= start:
            return out
        text, items = self._text, self._items or []
        region = _unmarked_region(text, items[start:stop], self._values[start:stop])
        if region is None:
            return None
        if start > 0:  # the separator before the first of them
            out.update(text[items[start - 1][1] : items[start][0]].encode("utf-8", "surrogatepass"))
        out.update(region.encode("utf-8", "surrogatepass"))
        return out


def matching(
    prefixes: Sequence[tuple[int, RawPrefix | None]], hashes: RawHashes
) -> RawPrefix | None:
    """The raw prefix (of the longest state, by ``prefix_len``) the request's first items
    hash to; None when none does or a longer state without one might match once decoded."""
    digests = hashes.digests([raw.items for _, raw in prefixes if raw is not None])
    matched = [
        (n, raw) for n, raw in prefixes if raw is not None and digests[raw.items] == raw.digest
    ]
    found = max(matched, key=lambda pair: pair[0], default=None)  # the first of the longest
    if found is None or any(raw is None and length > found[0] for length, raw in prefixes):
        return None
    return found[1]


@dataclass(frozen=True, slots=True)
class Seen:
    """A request read lately, to read the conversation's next one against: its scan,
    its other fields' JSON text and the hashes of its first items."""

    scanned: ScannedBody = field(repr=False)
    other: Mapping[str, bytes] = field(repr=False)
    digests: Mapping[int, str | None]
    chain: tuple[int, xxhash.xxh3_128] | None = field(default=None, repr=False)


Scope = tuple[str, str, str | None]
"""Endpoint, tenant and conversation header of a request."""
SEEN_PER_SCOPE = 4
"""Requests remembered per scope (a request is read against each; the longest start wins)."""
SEEN_IN_ALL = 32
"""Requests a gateway remembers in all (the least recently read goes first)."""


class SeenRequests:
    """The requests of reused or compacted conversations read lately, by scope
    (endpoint, tenant, conversation header); thread-safe."""

    def __init__(self) -> None:
        self._seen: list[tuple[Scope, Seen]] = []  # the least recently read first
        self._lock = threading.Lock()

    def recent(self, scope: Scope) -> list[Seen]:
        """The scope's requests, the most recent first."""
        with self._lock:
            return [seen for key, seen in reversed(self._seen) if key == scope][:SEEN_PER_SCOPE]

    def remember(self, scope: Scope, seen: Seen, replaces: Seen | None) -> None:
        """Remember ``seen`` in ``scope``, in place of the request ``replaces``."""
        with self._lock:
            kept = [(key, old) for key, old in self._seen if old is not replaces]
            in_scope = [i for i, (key, _) in enumerate(kept) if key == scope]
            for i in reversed(in_scope[: max(0, len(in_scope) + 1 - SEEN_PER_SCOPE)]):
                del kept[i]
            self._seen = [*kept, (scope, seen)][-SEEN_IN_ALL:]


def spliced(
    api: Api,
    scanned: ScannedBody,
    raw: RawPrefix,
    profile: ProviderProfile,
    *,
    budget: Budget,
    other: Mapping[str, bytes],
    as_object: bool = False,
) -> Spliced | None:
    """The body of a request whose first items are ``raw``'s: the encoded prefix, then
    the new items alone; None when that could differ or the chain is over the budget
    (the new items measured as the keepers do). ``as_object``: with the body as an object."""
    values = scanned.payload[api.list_key][raw.items :]
    new = _decoded(api, values, raw)
    if new is None or budget.unit != raw.unit:
        return None
    if raw.units + units(new, budget.unit) > budget.limit:
        return None
    items = _encoded(api, new, values, profile)
    if items is None or (items and _merges(items[0], raw.tail_role)):
        return None
    items_json = b",".join(map(dumps, items)).decode("utf-8", "surrogatepass")
    listed = ",".join(part for part in (raw.body, items_json) if part)
    history = {**raw.fields, api.list_key: "[" + listed + "]"}
    pieces = {
        key: dumps(key) + b":" + text.encode("utf-8", "surrogatepass")
        for key, text in history.items()
    }
    new_bytes = sum(m.size for m in new)
    payload = None
    if as_object:
        payload = api.merged(scanned.payload, {k: json.loads(v) for k, v in history.items()})
    return Spliced(
        body=composed(scanned.payload, api, other, pieces),
        bytes_before=raw.history_bytes + new_bytes,
        bytes_after=raw.sent_bytes + new_bytes,
        tokens_saved=raw.tokens_saved,
        payload=payload,
    )


def _decoded(api: Api, values: list[Any], raw: RawPrefix) -> list[Message] | None:
    """The new items' messages; None when they cannot follow the prefix as they are."""
    if not values:
        return []
    if _merges(values[0], raw.last_role):
        return None
    try:
        new = api.decode({api.list_key: values})
    except Exception:  # noqa: BLE001 -- the full path decides, and reports
        return None
    if any(m.role is Role.SYSTEM for m in new):
        return None
    return [_named(m, raw.calls) for m in new]


def _named(message: Message, calls: Mapping[str, str]) -> Message:
    """``message`` with its tool results named after the prefix's calls."""
    if message.role is not Role.TOOL or not calls:
        return message
    parts = tuple(
        part.model_copy(update={"name": calls[part.tool_call_id]})
        if isinstance(part, ToolResult) and not part.name and part.tool_call_id in calls
        else part
        for part in message.parts
    )
    return message if parts == message.parts else message.evolve(parts=parts)


def _encoded(
    api: Api, new: list[Message], values: list[Any], profile: ProviderProfile
) -> list[Any] | None:
    if not new:
        return []
    encoded = api.encode(placed_for(new, profile), {"input": values})
    items = encoded.get(api.list_key)
    if set(encoded) != {api.list_key} or not isinstance(items, list):
        return None
    return items


_MARKER = re.compile(
    r'(,[ \t\n\r]*)?"cache_control"[ \t\n\r]*:[ \t\n\r]*\{[^{}]*\}(?(1)|(?:[ \t\n\r]*,)?)'
)
"""A ``cache_control`` field and the comma joining it (before it, else after it)."""


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
    stripped = _MARKER.sub("", text)
    try:
        same = json.loads(stripped) == _blocks_unmarked(value)
    except ValueError:
        return None
    return stripped if same else None


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


_COUNTER = EstimatedTokens()  # the keepers' counter, for a reused request's new messages
_UNMERGED = frozenset({"tool", "function_call_output"})
"""Item families a codec never merges with the same family before them."""


def _role(item: object) -> str | None:
    """A history item's role, or for a Responses item without one its family."""
    if not isinstance(item, dict):
        return None
    role = item.get("role")
    if role is not None:
        return str(role)
    return "function_call_output" if item.get("type") == "function_call_output" else "assistant"


def _merges(item: object, role: str | None) -> bool:
    """Whether ``item`` may merge with an item of family ``role`` before it."""
    family = _role(item)
    return role is not None and family == role and family not in _UNMERGED
