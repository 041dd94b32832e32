"""A reused request of a compacted conversation, sent without decoding its history: a
request whose first items hash as the stored :class:`~csum.serve.conversation.RawPrefix`
is sent as its encoded prefix plus its new items, decoded and encoded alone; anything
uncertain answers None and the request is decoded whole (the same bytes either way)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import xxhash

from cast import Message, ProviderProfile, Role, ToolCall, ToolResult
from csum.assemble import placed_for
from csum.config import Budget
from csum.serve.apis import Api
from csum.serve.body import ScannedBody
from csum.serve.conversation import RawPrefix, raw_digests, raw_hash_extended, raw_head_hash
from csum.serve.translate.responses_as_sent import as_sent
from csum.tokens import TokenCounter

__all__ = [
    "SEEN_IN_ALL",
    "SEEN_PER_SCOPE",
    "RawHashes",
    "Seen",
    "SeenRequests",
    "Spliced",
    "call_names",
    "composed",
    "dumps",
    "fields_json",
    "head_of",
    "matching",
    "opening_count",
    "raw_prefix",
    "spliced",
]


def dumps(value: object) -> bytes:
    """``value`` as the gateway writes JSON: compact, not ASCII-escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def fields_json(fields: Mapping[str, Any]) -> dict[str, bytes]:
    """Each field as ``"name":value`` JSON text, as it stands in a dumped object."""
    return {key: dumps(key) + b":" + dumps(value) for key, value in fields.items()}


def composed(
    payload: Mapping[str, Any], api: Api, other: Mapping[str, bytes], history: Mapping[str, bytes]
) -> bytes:
    """``json.dumps`` of ``payload`` with its history replaced by ``history`` (JSON texts)."""
    pieces: list[bytes] = []
    for key in payload:
        if key not in api.history_keys:
            pieces.append(other[key])
        elif key in history:
            pieces.append(history[key])
    pieces.extend(text for key, text in history.items() if key not in payload)
    return b"{" + b",".join(pieces) + b"}"


def head_of(scanned: ScannedBody, api: Api) -> list[tuple[str, tuple[int, int] | None, Any]] | None:
    """The history's fields but its list (name, span, value); None without spans."""
    if scanned.fields is None or scanned.items is None:
        return None
    fields = scanned.fields
    return [
        (key, fields.get(key), scanned.payload.get(key))
        for key in api.history_keys
        if key != api.list_key
    ]


def opening_count(values: Sequence[Any]) -> int | None:
    """Items up to the first of the user's (the conversation's opening), or None."""
    return next((i + 1 for i, item in enumerate(values) if _role(item) == "user"), None)


@dataclass(frozen=True, slots=True)
class Spliced:
    """A reused request's body and its sizes (see :class:`csum.serve.compaction.Outcome`)."""

    body: bytes
    bytes_before: int
    bytes_after: int
    tokens_saved: int
    request: dict[str, Any] = field(repr=False)
    """The client's request the body replaces the history of."""
    history: dict[str, str] = field(repr=False)
    """Each history field's JSON text."""
    api: Api

    def payload(self) -> dict[str, Any]:
        """The body as an object (for a translation)."""
        fields = {key: json.loads(text) for key, text in self.history.items()}
        return self.api.merged(self.request, fields)


def raw_prefix(
    api: Api,
    scanned: ScannedBody,
    sent: Sequence[Message],
    profile: ProviderProfile,
    *,
    sizes: tuple[str, int, int, int, int],
    calls: Mapping[str, str],
) -> RawPrefix | None:
    """The raw prefix of a compaction of ``scanned`` that sent ``sent`` (``sizes``: unit,
    units, bytes sent and of the history, tokens saved); None without spans or when a
    later turn could change the prefix's encoding."""
    head = head_of(scanned, api)
    if head is None or scanned.items is None:
        return None
    placed = placed_for(sent, profile)
    probe = Message.ai("probe")
    if placed_for([*sent, probe], profile) != [*placed, probe]:
        return None
    encoded = api.encode(placed)
    if api.name == "responses":  # the client's own items where the compaction kept them
        encoded = as_sent(api.history(scanned.payload) or {}, encoded)
    items = encoded.get(api.list_key)
    values = scanned.payload[api.list_key]
    count = len(scanned.items)
    digest = raw_digests(scanned.text, head, scanned.items, values, [count])[count]
    if digest is None or not isinstance(items, list):
        return None
    fields = {
        key: dumps(value).decode("utf-8", "surrogatepass")
        for key, value in encoded.items()
        if key != api.list_key
    }
    body = b",".join(map(dumps, items)).decode("utf-8", "surrogatepass")
    unit, units, sent_bytes, history_bytes, saved = sizes
    last = _role(values[-1]) if values else None
    tail = _role(items[-1]) if items else None
    return RawPrefix(
        count,
        digest,
        last,
        fields,
        body,
        tail,
        unit,
        units,
        sent_bytes,
        history_bytes,
        saved,
        dict(calls),
    )


class RawHashes:
    """The hashes of a request's first items, each computed once, resumed from an
    earlier request's (:class:`Seen`) where the two are the same bytes."""

    def __init__(self, scanned: ScannedBody, api: Api, known: Seen | None, fresh: int) -> None:
        self._scanned, self._api = scanned, api
        self._head = head_of(scanned, api)
        self.done: dict[int, str | None] = {} if known is None else known.digests_for(fresh)
        self._at: tuple[int, xxhash.xxh3_128] | None = None
        if known is not None and known.chain is not None and known.chain[0] <= fresh:
            self._at = known.chain

    def digests(self, counts: Sequence[int]) -> dict[int, str | None]:
        """The hash of the first ``n`` items for each ``n`` of ``counts`` (None: not hashable)."""
        for n in sorted(set(counts)):
            if n not in self.done:
                self.done[n] = self._digest(n)
        return {n: self.done[n] for n in counts}

    @property
    def chain(self) -> tuple[int, xxhash.xxh3_128] | None:
        """The hash of the request's items but its last one, with their count."""
        items = self._scanned.items
        if self._head is None or items is None or not items:
            return None
        self._moved(len(items) - 1)
        return self._at if self._at is not None and self._at[0] == len(items) - 1 else None

    def _digest(self, n: int) -> str | None:
        items = self._scanned.items
        if self._head is None or items is None or not 0 <= n <= len(items):
            return None
        last = len(items) - 1
        moved = self._moved(min(n, last))
        if moved is None or moved[0] > n:
            values = self._scanned.payload[self._api.list_key]
            return raw_digests(self._scanned.text, self._head, items, values, [n])[n]
        digest = self._extended(moved, n)
        return None if digest is None else digest.hexdigest()

    def _moved(self, n: int) -> tuple[int, xxhash.xxh3_128] | None:
        """The running hash, moved on to the first ``n`` items when it is not past them."""
        if self._at is None and self._head is not None:
            head = raw_head_hash(self._scanned.text, self._head)
            self._at = None if head is None else (0, head)
        if self._at is None or self._at[0] >= n:
            return self._at
        digest = self._extended(self._at, n)
        if digest is not None:
            self._at = (n, digest)
        return self._at

    def _extended(self, at: tuple[int, xxhash.xxh3_128], n: int) -> xxhash.xxh3_128 | None:
        items = self._scanned.items or []
        values = self._scanned.payload[self._api.list_key]
        return raw_hash_extended(at[1], self._scanned.text, items, values, start=at[0], stop=n)


def matching(
    prefixes: Sequence[tuple[int, int, RawPrefix | None]],
    scanned: ScannedBody,
    api: Api,
    hashes: RawHashes,
) -> RawPrefix | None:
    """The raw prefix (of the longest state) the request's first items hash to; None when
    none does or a longer state without one might match once decoded."""
    if head_of(scanned, api) is None or scanned.items is None or not prefixes:
        return None
    digests = hashes.digests([raw.items for _, _, raw in prefixes if raw is not None])
    found: tuple[int, RawPrefix] | None = None
    for _, length, raw in prefixes:
        matched = raw is not None and digests.get(raw.items) == raw.digest
        if matched and raw is not None and (found is None or length > found[0]):
            found = (length, raw)
    if found is None:
        return None
    if any(raw is None and length > found[0] for _, length, raw in prefixes):
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

    def digests_for(self, fresh: int) -> dict[int, str | None]:
        """The hashes still right for a request whose first ``fresh`` items are these."""
        return {n: digest for n, digest in self.digests.items() if n <= fresh}


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
        self._seen: OrderedDict[tuple[str, str, str | None, int], Seen] = OrderedDict()
        self._lock = threading.Lock()
        self._count = 0

    def recent(self, scope: Scope) -> list[tuple[int, Seen]]:
        """The scope's requests, the most recent first (each with its id)."""
        with self._lock:
            found = [
                (key[3], seen) for key, seen in reversed(self._seen.items()) if key[:3] == scope
            ]
        return found[:SEEN_PER_SCOPE]

    def remember(self, scope: Scope, seen: Seen, replaces: int | None) -> None:
        """Remember ``seen`` in ``scope``, in place of the request ``replaces``."""
        with self._lock:
            if replaces is not None:
                self._seen.pop((*scope, replaces), None)
            self._count += 1
            self._seen[(*scope, self._count)] = seen
            in_scope = [key for key in self._seen if key[:3] == scope]
            for key in in_scope[: max(0, len(in_scope) - SEEN_PER_SCOPE)]:
                del self._seen[key]
            while len(self._seen) > SEEN_IN_ALL:
                self._seen.popitem(last=False)


def spliced(
    api: Api,
    scanned: ScannedBody,
    raw: RawPrefix,
    profile: ProviderProfile,
    *,
    measure: tuple[Budget, TokenCounter],
    other: Mapping[str, bytes],
) -> Spliced | None:
    """The body of a request whose first items are ``raw``'s: the encoded prefix, then
    the new items alone; None when that could differ or the chain is over the budget."""
    values = scanned.payload[api.list_key][raw.items :]
    new = _decoded(api, values, raw)
    if new is None:
        return None
    budget, counter = measure
    if budget.unit != raw.unit:
        return None
    units = sum(m.size if budget.unit == "bytes" else counter.count(m) for m in new)
    if raw.units + units > budget.limit:
        return None
    items = _encoded(api, new, values, profile)
    if items is None or (items and _merges(items[0], raw.tail_role)):
        return None
    items_json = b",".join(map(dumps, items)).decode("utf-8", "surrogatepass")
    listed = ",".join(part for part in (raw.body, items_json) if part)
    history = {**raw.fields, api.list_key: "[" + listed + "]"}
    pieces = {
        key: (dumps(key).decode() + ":" + text).encode("utf-8", "surrogatepass")
        for key, text in history.items()
    }
    new_bytes = sum(m.size for m in new)
    return Spliced(
        composed(scanned.payload, api, other, pieces),
        raw.history_bytes + new_bytes,
        raw.sent_bytes + new_bytes,
        raw.tokens_saved,
        scanned.payload,
        history,
        api,
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


def call_names(messages: Sequence[Message]) -> dict[str, str]:
    """The name of the latest tool call of each id in ``messages``."""
    return {part.id: part.name for m in messages for part in m.parts if isinstance(part, ToolCall)}


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
    encoded = api.encode(placed_for(new, profile))
    if api.name == "responses":
        encoded = as_sent({"input": values}, encoded)
    items = encoded.get(api.list_key)
    if set(encoded) != {api.list_key} or not isinstance(items, list):
        return None
    return items


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
