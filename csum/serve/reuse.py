"""A request to compact as read (:class:`ReadRequest`), and its reuse: a compacted
conversation's request whose first items hash as the stored
:class:`~csum.serve.conversation.RawPrefix` is sent as its encoded prefix plus its new
items, decoded and encoded alone; anything uncertain answers None and the request is
decoded whole (the same bytes either way)."""

from __future__ import annotations

import json
import re
import threading
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

import xxhash

from cast import Message, ProviderProfile, Role, ToolCall, ToolResult
from csum.assemble import placed_for
from csum.config import Budget
from csum.serve.apis import Api
from csum.serve.body import ScannedBody, with_offsets
from csum.serve.conversation import RawPrefix, dumps, kept_of
from csum.tokens import EstimatedTokens, Meter

__all__ = [
    "SEEN_IN_ALL",
    "SEEN_PER_SCOPE",
    "ReadRequest",
    "Seen",
    "SeenRequests",
    "fields_json",
    "tokens_saved",
]


def fields_json(fields: Mapping[str, Any]) -> dict[str, bytes]:
    """Each field as ``"name":value`` JSON text, as it stands in a dumped object."""
    return {key: dumps(key) + b":" + dumps(value) for key, value in fields.items()}


def _composed(
    payload: Mapping[str, Any], api: Api, other: Mapping[str, bytes], history: Mapping[str, bytes]
) -> bytes:
    """``json.dumps`` of ``payload`` with its history replaced by ``history`` (JSON texts)."""
    pieces = api.merged({key: other.get(key, b"") for key in payload}, history)
    return b"{" + b",".join(pieces.values()) + b"}"


def tokens_saved(before: Sequence[Message], after: Sequence[Message]) -> int:
    """The tokens ``after`` takes less than ``before`` (0 when it takes more)."""
    tokens = Meter("tokens", _COUNTER).total
    return max(0, tokens(before) - tokens(after))


def _text(value: Any) -> str:
    return dumps(value).decode("utf-8", "surrogatepass")


class ReadRequest:
    """A request to compact as read: its scan, history fields, budget and other fields'
    JSON text, and the marker-blind hashes of its history's raw text (its other fields,
    then its first items), each computed once, resumed from ``known`` (an earlier request
    it is the same bytes as but for its items from the count given). A hash is None: no
    spans, or a marker it cannot take out."""

    def __init__(
        self,
        scanned: ScannedBody,
        api: Api,
        history: dict[str, Any],
        budget: Budget,
        other: Mapping[str, bytes],
        *,
        known: tuple[Seen, int] | None = None,
    ) -> None:
        self.scanned, self.api, self.history, self.budget = scanned, api, history, budget
        self.payload: dict[str, Any] = scanned.payload
        self.other, self.known = other, known
        self._text, self._items = scanned.text, scanned.items
        self._head: list[tuple[str, tuple[int, int] | None, Any]] | None = None
        self._values: list[Any] = history[api.list_key]
        if scanned.fields is not None and scanned.items is not None:
            keys = [key for key in api.history_keys if key != api.list_key]
            self._head = [(key, scanned.fields.get(key), self.payload.get(key)) for key in keys]
        self.done: dict[int, str | None] = {}
        self._at: tuple[int, xxhash.xxh3_128] | None = None
        if known is not None:
            seen, fresh = known
            self.done = {n: d for n, d in seen.digests.items() if n <= fresh}
            self._at = seen.chain if seen.chain is not None and seen.chain[0] <= fresh else None

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

    def opening(self) -> tuple[str, int] | None:
        """The hash of the items up to the first of the user's (the conversation's
        opening) and their count; None without one."""
        found = enumerate(self._values)
        count = next((i + 1 for i, item in found if _role(item) == "user"), None)
        digest = None if count is None else self.digests([count])[count]
        return None if digest is None or count is None else (digest, count)

    def matching(self, prefixes: Sequence[tuple[int, RawPrefix | None]]) -> RawPrefix | None:
        """The raw prefix (of the longest state, by ``prefix_len``) the request's first
        items hash to; None when none does or a longer state without one might match
        once decoded."""
        digests = self.digests([raw.items for _, raw in prefixes if raw is not None])
        matched = [
            (n, raw) for n, raw in prefixes if raw is not None and digests[raw.items] == raw.digest
        ]
        found = max(matched, key=lambda pair: pair[0], default=None)  # the first of the longest
        if found is None or any(raw is None and length > found[0] for length, raw in prefixes):
            return None
        return found[1]

    def raw_prefix(
        self, history: Sequence[Message], sent: Sequence[Message], profile: ProviderProfile
    ) -> RawPrefix | None:
        """The raw prefix of a compaction of the request (its history decoded as
        ``history``) that sent ``sent``; None without spans or when a later turn could
        change the prefix's encoding."""
        api, values = self.api, self._values
        count = len(self._items or [])
        digest = self.digests([count])[count]
        kept = kept_of(sent)
        placed = placed_for(kept, profile)
        probe = Message.ai("probe")
        if digest is None or placed_for([*kept, probe], profile) != [*placed, probe]:
            return None
        encoded = api.encode(placed, self.history)
        items = encoded.get(api.list_key)
        if not isinstance(items, list):
            return None
        fields = {key: _text(value) for key, value in encoded.items() if key != api.list_key}
        last = _role(values[-1]) if values else None
        tail = _role(items[-1]) if items else None
        unit = self.budget.unit
        units = Meter(unit, _COUNTER).total(kept)
        sizes = units, sum(m.size for m in kept), sum(m.size for m in kept_of(history))
        body = ",".join(map(_text, items))
        calls = {
            part.id: part.name for m in history for part in m.parts if isinstance(part, ToolCall)
        }
        saved = tokens_saved(history, kept)
        return RawPrefix(count, digest, last, fields, body, tail, unit, *sizes, saved, calls)

    def encoded(
        self, sent: list[Message], *, as_object: bool = False
    ) -> tuple[bytes, dict[str, Any] | None]:
        """The body of the request with ``sent`` for its history, and as an object too
        with ``as_object``."""
        api = self.api
        encoded = api.encode(sent, self.history)
        body = _composed(self.payload, api, self.other, fields_json(encoded))
        return body, api.merged(self.payload, encoded) if as_object else None

    def spliced(
        self, raw: RawPrefix, profile: ProviderProfile, *, as_object: bool = False
    ) -> tuple[bytes, dict[str, Any] | None, int] | None:
        """The body of the request when its first items are ``raw``'s (the encoded prefix,
        then the new items alone), as an object too with ``as_object``, and the new items'
        bytes; None when that could differ or the chain is over the budget (the new items
        measured as the keepers do)."""
        api, budget = self.api, self.budget
        values = self._values[raw.items :]
        new: list[Message] = []
        if values:  # the new items' messages, unless they cannot follow the prefix as they are
            if _merges(values[0], raw.last_role):
                return None
            try:
                new = api.decode({api.list_key: values})
            except Exception:  # noqa: BLE001 -- the full path decides, and reports
                return None
            if any(m.role is Role.SYSTEM for m in new):
                return None
            new = [_named(m, raw.calls) for m in new]
        units = Meter(budget.unit, _COUNTER).total(new)  # as the keepers count them
        if budget.unit != raw.unit or raw.units + units > budget.limit:
            return None
        items: Any = []
        if new:
            encoded = api.encode(placed_for(new, profile), {"input": values})
            items = encoded.get(api.list_key)
            if set(encoded) != {api.list_key} or not isinstance(items, list):
                return None
        if items and _merges(items[0], raw.tail_role):
            return None
        items_json = b",".join(map(dumps, items)).decode("utf-8", "surrogatepass")
        listed = ",".join(part for part in (raw.body, items_json) if part)
        history = {**raw.fields, api.list_key: "[" + listed + "]"}
        pieces = {
            key: dumps(key) + b":" + text.encode("utf-8", "surrogatepass")
            for key, text in history.items()
        }
        payload = None
        if as_object:
            payload = api.merged(self.payload, {k: json.loads(v) for k, v in history.items()})
        return _composed(self.payload, api, self.other, pieces), payload, sum(m.size for m in new)

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
        """The hash ``at`` extended to ``stop`` items, cache markers out (None: one it can't)."""
        start, out = at[0], at[1].copy()
        if stop <= start:
            return out
        text, items = self._text, self._items or []
        done, end = items[start - 1][1] if start else items[0][0], items[stop - 1][1]
        while (found := text.find('"cache_control"', done, end)) >= 0:  # in a marked item
            index = bisect_right(items, found, start, stop, key=itemgetter(0)) - 1
            first, last = items[index]
            piece = _unmarked_text(text[first:last], self._values[index])
            if piece is None:
                return None
            out.update((text[done:first] + piece).encode("utf-8", "surrogatepass"))
            done = last
        out.update(text[done:end].encode("utf-8", "surrogatepass"))
        return out


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

    def remember(self, scope: Scope, read: ReadRequest, body: bytes) -> None:
        """Remember the request ``read`` (of ``body``) in ``scope``, in place of the one it
        was read against, to read the conversation's next one against it."""
        # skim reads the earlier body's bytes, not its text: the text is not kept
        scanned = replace(with_offsets(read.scanned, body, read.api.list_key), text="")
        seen = Seen(scanned, read.other, read.done, read.chain)
        replaces = None if read.known is None else read.known[0]
        with self._lock:
            kept = [(key, old) for key, old in self._seen if old is not replaces]
            in_scope = [i for i, (key, _) in enumerate(kept) if key == scope]
            for i in reversed(in_scope[: max(0, len(in_scope) + 1 - SEEN_PER_SCOPE)]):
                del kept[i]
            self._seen = [*kept, (scope, seen)][-SEEN_IN_ALL:]


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


_COUNTER = EstimatedTokens()  # the keepers' counter
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
