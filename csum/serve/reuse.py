"""A reused request of a compacted conversation, sent without decoding its history.

After a compaction the conversation state keeps, besides the chain sent, a
:class:`~csum.serve.conversation.RawPrefix`: a hash of the raw JSON text of the items
the client had sent, and the compacted chain as the gateway encodes it. A later request
whose first items hash the same (cache markers aside) is sent as that encoded prefix
plus its new items, decoded, measured and encoded alone: the cost grows with the new
messages only. Anything this cannot be sure of (a marker it cannot take out, a new
system message, a turn that would merge with the prefix's last one, a chain over the
budget) answers None, and the request takes the path that decodes it whole; the bytes
sent are the same either way (tests/csum/serve/test_serve_reuse.py replays real sessions).

The body sent is composed field by field as ``json.dumps`` writes the whole
(:func:`composed`), so the other fields' JSON, written once to measure the history's
share of the body, is written into the body as it is.
"""

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
    """The body ``json.dumps`` writes for ``payload`` with its history fields replaced
    by ``history`` (:meth:`Api.merged`'s order), from each field's JSON text."""
    pieces: list[bytes] = []
    for key in payload:
        if key not in api.history_keys:
            pieces.append(other[key])
        elif key in history:
            pieces.append(history[key])
    pieces.extend(text for key, text in history.items() if key not in payload)
    return b"{" + b",".join(pieces) + b"}"


def head_of(scanned: ScannedBody, api: Api) -> list[tuple[str, tuple[int, int] | None, Any]] | None:
    """The history's fields other than its list (name, span, value), for
    :func:`~csum.serve.conversation.raw_digests`; None without spans."""
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
        """The body as an object (for a translation): the request with its history
        fields read from their JSON text (:meth:`Api.merged`)."""
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
    """The raw prefix of a compaction of the request ``scanned`` whose state keeps
    ``sent``: the client's items hashed, ``sent`` encoded as the full path encodes it
    (``sizes``: unit, units and bytes of ``sent``, bytes of the history, tokens
    saved; ``calls``: the history's call names by id). None when the request has no
    spans or a later turn could change how the prefix is encoded (a summary last,
    which moves into the next user turn)."""
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
    """The hashes of a request's first items (:func:`~csum.serve.conversation.raw_digests`
    for each count asked), each computed once, and resumed from an earlier request's
    (:class:`Seen`) where the two are the same bytes: then the cost is in the items
    that differ from it only. Holds the hash of its items but the last one
    (:attr:`chain`), for the next request to resume from."""

    def __init__(self, scanned: ScannedBody, api: Api, known: Seen | None, fresh: int) -> None:
        self._scanned, self._api = scanned, api
        self._head = head_of(scanned, api)
        self.done: dict[int, str | None] = {} if known is None else known.digests_for(fresh)
        self._at: tuple[int, xxhash.xxh3_128] | None = None
        if known is not None and known.chain is not None and known.chain[0] <= fresh:
            self._at = known.chain

    def digests(self, counts: Sequence[int]) -> dict[int, str | None]:
        """The hash of the first ``n`` items for each ``n`` of ``counts`` (None: not
        hashable, see :func:`~csum.serve.conversation.raw_digests`)."""
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
    """The raw prefix the request's first items hash to (``hashes``), of the state with
    the longest compacted history; None when none does, or when a longer state without
    a raw prefix might match once decoded (then the full path decides)."""
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
    """A request read lately, to read the conversation's next one against
    (:func:`csum.serve.body.skim`): its scan, its other fields' JSON text
    (:func:`fields_json`) and the hashes of its first items (:class:`RawHashes`: by
    count, and the running one of its items but the last)."""

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
"""Requests remembered per endpoint, tenant and conversation header (conversations
sharing them: a request is read against each, the longest shared start wins)."""
SEEN_IN_ALL = 32
"""Requests a gateway remembers in all (the least recently read goes first)."""


class SeenRequests:
    """The requests of reused or compacted conversations read lately, in memory (a
    body is held with its parsed form, so a few dozen at most), by scope: endpoint,
    tenant and conversation header. Thread-safe: the gateway's workers share it."""

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
        """Remember ``seen`` in ``scope``, in place of the request of id ``replaces``
        (the one it was read against: its conversation's older request)."""
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
    """The body of a request whose first items are ``raw``'s: its encoded prefix, then
    the new items decoded and encoded alone. None when that could differ from the
    whole chain's encoding, or the chain is over the budget (it compacts)."""
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
    listed = ",".join(part for part in (raw.body, _items_json(items)) if part)
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


def _items_json(items: Sequence[Any]) -> str:
    """List items' JSON text, joined by commas."""
    return b",".join(map(dumps, items)).decode("utf-8", "surrogatepass")


def _decoded(api: Api, values: list[Any], raw: RawPrefix) -> list[Message] | None:
    """The new items' messages, None when they cannot be sent after the prefix as they
    are: a turn of the role that ends the prefix (the provider would merge the two), a
    system message, or items the codec does not read alone."""
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
    """``message`` with its tool results named as decoding them after the prefix's
    calls names them (decoded alone, a result of an earlier call has no name)."""
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
"""Item families a codec never merges with the same family before them (a tool result
is its own message)."""


def _role(item: object) -> str | None:
    """The family of a history item: its role, or for a Responses item without one
    ``function_call_output`` or ``assistant`` (calls, reasoning and hosted tool items
    join the AI message being read)."""
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
