"""The history archive: what a compaction summarizes away stays retrievable, under
references derived from its content (recall, search, the ``recall`` tool a model calls),
and re-insertion puts archived lines a new question names back into the chain."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import count
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import regex
import xxhash
from pydantic import TypeAdapter

from cast import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    FAKE_GEMINI_SIGNATURE,
    IdTemplate,
    Message,
    ProviderProfile,
    Reasoning,
    ReasoningPolicy,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    get_provider,
)
from cast.internals import clip_utf8, utf8_len
from csum._checks import check_count
from csum.store_events import (
    EventSink,
    StoreClient,
    StoreEventKind,
    StoreSkippedError,
    message_search_text,
)
from csum.stores import ArchiveStore, open_archive
from csum.stores._protocol import ArchiveRecord

__all__ = [
    "ARCHIVE_LINE_PREFIX",
    "MAX_QUERY_CHARS",
    "RECALL_TOOL_DESCRIPTION",
    "RECALL_TOOL_NAME",
    "REINSERTED_HEADER",
    "ArchiveHit",
    "HistoryArchive",
    "Insertion",
    "RecallTool",
    "archive_line",
    "archived_references",
    "batch_reference",
    "is_reinserted",
    "message_json",
    "message_reference",
    "own_question",
    "question_identifiers",
    "recall_tool_definition",
    "recalled_positions",
    "recalled_text",
    "reinserted_part",
    "split_archive_line",
    "without_recalled",
]

RECALL_TOOL_NAME: Final = "recall_archived"
"""The name of the tool a model calls to read archived messages back."""
MAX_QUERY_CHARS: Final = 1000
"""Longest text :meth:`HistoryArchive.search` takes (an identifier, a path, an error
line); longer ones are a ``ValueError``, not a scan SQLite may refuse."""
_REFERENCE = re.compile(r"[0-9a-f]{16}")

ARCHIVE_LINE_PREFIX: Final = "[archived: "
"""Start of the line a summary ends with, naming the archived batch it replaced."""
_LINE = re.compile(r"\[archived: ([0-9a-f]{16}(?: [0-9a-f]{16})*)\]")

_MESSAGE_JSON: Final = TypeAdapter(Message)


def message_json(message: Message) -> bytes:
    """The JSON form of a message, as stored and hashed (``Message.model_dump_json``)."""
    return _MESSAGE_JSON.dump_json(message)


def message_reference(message: Message) -> str:
    """The stable reference of a message: 16 hex digits of xxh3-64 of its JSON form."""
    return xxhash.xxh3_64_hexdigest(message_json(message))


def batch_reference(references: Sequence[str]) -> str:
    """The reference of an ordered batch of messages (what one summary covers)."""
    return xxhash.xxh3_64_hexdigest(("batch\x1f" + " ".join(references)).encode("ascii"))


def archive_line(*references: str) -> str:
    """The line a summary carries: ``[archived: REF ...]``."""
    return f"{ARCHIVE_LINE_PREFIX}{' '.join(references)}]"


def split_archive_line(text: str) -> tuple[str, str]:
    """(summary, its final ``[archived: ...]`` line); ("", the line) when the text is
    that line alone; (text, "") when it has none."""
    at = text.rfind("\n" + ARCHIVE_LINE_PREFIX)
    start = at + 1 if at >= 0 else 0
    if (
        not text.startswith(ARCHIVE_LINE_PREFIX, start)
        or not text.endswith("]")
        or "\n" in text[start:]
    ):
        return text, ""
    return text[: max(at, 0)], text[start:]


def archived_references(text: str) -> list[str]:
    """Every archive reference named in ``text`` (a summary, a chain's text), in order."""
    return [ref for match in _LINE.finditer(text) for ref in match.group(1).split()]


def _check_query(text: object) -> None:
    """Refuse a search text no store can take (the reason, never the text, is said)."""
    if not isinstance(text, str):
        raise TypeError(f"the search query must be a str, not {type(text).__name__}")
    if not text.strip():
        raise ValueError("the search query must not be blank")
    if len(text) > MAX_QUERY_CHARS:
        raise ValueError(
            f"the search query is {len(text)} characters long: at most {MAX_QUERY_CHARS}"
        )
    if "\x00" in text:
        raise ValueError(f"the search query holds a NUL character at {text.index(chr(0))}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"the search query holds a lone surrogate at {exc.start}: not valid Unicode text"
        ) from None


@dataclass(frozen=True, slots=True)
class ArchiveHit:
    """A message found by :meth:`HistoryArchive.search`, with its lines that matched."""

    reference: str
    message: Message
    lines: tuple[str, ...]


class HistoryArchive(StoreClient):
    """The messages summarized away in one session, kept in ``store``.

    ``store``: an :class:`ArchiveStore`, a SQLite file path or a ``redis://`` URL.
    ``session`` (required: no shared default a second tenant could fall into) is all
    recall, search, re-insertion and deletion see. ``reinsert_bytes`` > 0 turns on
    re-insertion (:meth:`reinsert`) in the summarizer and the Compactor, up to that many
    bytes per call (less when the Compactor's budget leaves less room). ``on_event``
    hears what was archived and every store failure. After a failure while archiving or
    re-inserting (one ``archive_unavailable`` event), the store is left alone for
    ``breaker_seconds``: summaries carry no archive line and questions get nothing
    re-inserted. ``recall``, ``search`` and ``add`` always ask the store.
    """

    def __init__(
        self,
        store: ArchiveStore | str | Path,
        *,
        session: str,
        reinsert_bytes: int = 0,
        on_event: EventSink | None = None,
        breaker_seconds: float = 30.0,
    ) -> None:
        if not isinstance(session, str) or not session:
            raise ValueError(f"session must be a non-empty string, not {session!r}")
        if isinstance(reinsert_bytes, int) and reinsert_bytes < 0:
            raise ValueError(f"reinsert_bytes must be 0 (off) or positive, not {reinsert_bytes}")
        check_count("reinsert_bytes", reinsert_bytes, least=0)
        super().__init__(breaker_seconds, StoreEventKind.ARCHIVE_UNAVAILABLE, on_event)
        self.store: ArchiveStore = open_archive(store) if isinstance(store, str | Path) else store
        self.session = session
        self.reinsert_bytes = reinsert_bytes

    def __repr__(self) -> str:
        return f"HistoryArchive({self.store!r}, session={self.session!r})"

    async def add(self, messages: Iterable[Message]) -> str:
        """Archive ``messages`` as one batch; its reference. Store failures raise."""
        bodies = [message_json(m) for m in messages]
        records = [ArchiveRecord(xxhash.xxh3_64_hexdigest(body), body) for body in bodies]
        batch = batch_reference([r.reference for r in records])
        await self.store.put(self.session, batch, records)
        return batch

    async def add_summarized(
        self, messages: Sequence[Message], emit: EventSink | None = None
    ) -> str | None:
        """Archive what a summary replaces; the line the summary should end with, or
        None when the store fails (an event) or is skipped after a failure."""
        try:
            batch = await self._use(emit, "", partial(self.add, messages))
        except StoreSkippedError:
            return None
        self._emit(emit, StoreEventKind.ARCHIVED, batch, f"{len(messages)} messages")
        return archive_line(batch)

    async def recall(self, reference: str) -> list[Message]:
        """The messages under ``reference`` (a batch in order, or one message); [] if
        unknown. Anything but 16 hex digits (spaces around them aside) is a
        ``ValueError`` saying so."""
        if not isinstance(reference, str):
            raise TypeError(f"reference must be a str, not {type(reference).__name__}")
        wanted = reference.strip()
        if not _REFERENCE.fullmatch(wanted):
            raise ValueError(
                f"not an archive reference ({len(reference)} characters): "
                "a reference is 16 hex digits, as in an [archived: ...] line"
            )
        bodies = await self.store.get(self.session, wanted)
        return [Message.model_validate_json(body) for body in bodies]

    async def search(self, text: str, *, limit: int = 20) -> list[ArchiveHit]:
        """Archived messages containing ``text`` (case-insensitive substring), oldest
        first. A blank text, one holding NUL or a lone surrogate (no UTF-8 form), or one
        longer than :data:`MAX_QUERY_CHARS` is a ``ValueError`` naming what is wrong;
        ``limit`` must be a positive int."""
        check_count("limit", limit, type_error=False)
        return await self._search(text, limit)

    async def _search(self, text: str, limit: int) -> list[ArchiveHit]:
        """:meth:`search` with a limit known to be valid (re-insertion's constant, so a
        compaction does not enter csum._checks)."""
        _check_query(text)
        needle = text.casefold()
        hits = []
        for reference, body in await self.store.search(self.session, text, limit):
            message = Message.model_validate_json(body)
            searchable = message_search_text(message)
            lines = tuple(line for line in searchable.splitlines() if needle in line.casefold())
            hits.append(ArchiveHit(reference, message, lines))
        return hits

    async def delete_session(self) -> int:
        """Delete everything archived in this session; how many messages went."""
        return await self.store.delete_session(self.session)

    async def reinsert(
        self,
        messages: Sequence[Message],
        *,
        max_bytes: int | None = None,
        target: str | ProviderProfile | None = None,
    ) -> list[Message]:
        """``messages`` with the archived lines the last human message's identifiers name
        put back (:meth:`insertion_reporting`'s block; at most ``max_bytes``, default
        ``reinsert_bytes``): ``messages`` itself when nothing is (never mutated)."""
        limit = self.reinsert_bytes if max_bytes is None else max_bytes
        out = messages if isinstance(messages, list) else list(messages)
        insertion = await _insertion(self, out, max_bytes=limit, target=target)
        return out if insertion is None else insertion.into(out)

    async def insertion_reporting(
        self,
        messages: Sequence[Message],
        *,
        max_bytes: int,
        emit: EventSink | None = None,
        target: str | ProviderProfile | None = None,
    ) -> Insertion | None:
        """What :meth:`reinsert` would put back; None when the store fails (an event)."""
        find = partial(_insertion, self, messages, max_bytes=max_bytes, target=target)
        try:
            return await self._use(emit, "", find)
        except StoreSkippedError:
            return None


# -- re-insertion ----------------------------------------------------------------------------

REINSERTED_HEADER: Final = "[recalled from the history archive]"
"""Start of the first line of the text part re-insertion adds."""
_HEADER_TAIL: Final = (
    " quoted from archived messages, not words of this turn; each line starts [{mark}] "
    "(reference, the role it came from)"
)
_HEADER_MARK = regex.compile(r"each line starts \[([0-9a-f]{8})\] ")
_MARK_CHARS: Final = 11  # an entry's "[mark] " prefix


def _marker(entries: Sequence[str]) -> str:
    """A marker in none of ``entries`` (derived from them): text cannot imitate an entry."""
    body = "\n".join(entries)
    seeds = (f"{attempt}\x1f{body}".encode("utf-8", "surrogatepass") for attempt in count())
    return next(mark for mark in map(xxhash.xxh32_hexdigest, seeds) if mark not in body)


def reinserted_part(entries: Sequence[str]) -> TextPart:
    """The text part re-insertion adds: a header saying these are quotes, then each entry
    (one line, else ``ValueError``) behind a marker no entry holds."""
    for entry in entries:
        if len(entry.splitlines()) != 1 or "\n" in entry:
            raise ValueError(f"a re-inserted entry is one line: {entry[:40]!r}")
    mark = _marker(entries)
    header = REINSERTED_HEADER + _HEADER_TAIL.format(mark=mark)
    return TextPart(text="\n".join([header, *(f"[{mark}] {entry}" for entry in entries)]))


def is_reinserted(part: object) -> bool:
    """Whether ``part`` is a re-inserted block, by its exact shape: a header naming a
    marker, every further line starting with that marker, found nowhere else in it."""
    if type(part) is not TextPart or not part.text.startswith(REINSERTED_HEADER):
        return False
    header, _, rest = part.text.partition("\n")
    found = _HEADER_MARK.search(header)
    if found is None or not rest:
        return False
    prefix = f"[{found.group(1)}] ("
    return all(
        line.startswith(prefix) and found.group(1) not in line[len(prefix) :]
        for line in rest.split("\n")
    )


def own_question(question: Message) -> Message | None:
    """``question`` without the archived lines re-insertion put back into it (None:
    nothing of its own): how a question that leaves the chain is summarized. Anything
    but a :class:`~cast.Message` is a ``TypeError``."""
    if not isinstance(question, Message):
        raise TypeError(f"own_question takes a cast.Message, not {type(question).__name__}")
    parts = tuple(part for part in question.parts if not is_reinserted(part))
    if len(parts) == len(question.parts):
        return question
    return Message.from_parts(Role.HUMAN, parts) if parts else None


_Item = TypeVar("_Item")


def _recalled_at(messages: Sequence[object], index: int) -> int:
    """How many messages from ``index`` on re-insertion added (0, 1 or 2)."""
    message = messages[index]
    if type(message) is not Message or message.role is not Role.AI:
        return 0
    parts = message.parts
    if len(parts) == 1 and is_reinserted(parts[0]):
        return 1
    calls = [p for p in parts if type(p) is ToolCall]
    if (
        len(calls) != 1
        or calls[0].name != RECALL_TOOL_NAME
        or any(type(p) is TextPart and p.text for p in parts)
        or index + 1 >= len(messages)
    ):
        return 0
    answer = messages[index + 1]
    recalled = (
        type(answer) is Message
        and answer.role is Role.TOOL
        and len(answer.parts) == 1
        and type(result := answer.parts[0]) is ToolResult
        and result.tool_call_id == calls[0].id
        and is_reinserted(TextPart(text=result.content))
    )
    return 2 if recalled else 0


def recalled_positions(messages: Sequence[object]) -> list[int]:
    """Positions of the messages re-insertion added (recall pairs, assistant turns holding
    a block), in order; not one between two human messages (that would join them)."""
    removed: list[int] = []
    kept: object = None  # the last message not taken out
    index = 0
    while index < len(messages):
        added = _recalled_at(messages, index)
        after = messages[index + added] if index + added < len(messages) else None
        if added and not all(type(m) is Message and m.role is Role.HUMAN for m in (kept, after)):
            removed.extend(range(index, index + added))
            index += added
            continue
        kept = messages[index]
        index += 1
    return removed


def without_recalled(messages: Sequence[_Item]) -> list[_Item]:
    """``messages`` without the messages re-insertion added (the same list when none;
    anything not a :class:`~cast.Message` is kept)."""
    removed = set(recalled_positions(messages))
    if not removed:
        return messages if isinstance(messages, list) else list(messages)
    return [message for index, message in enumerate(messages) if index not in removed]


def recalled_text(messages: Sequence[Message]) -> str:
    """The re-inserted blocks of ``messages`` (the tool results of synthetic recall
    pairs and the assistant turns holding one), one per line group; "" when none."""
    blocks: list[str] = []
    for index, message in enumerate(messages):
        added = _recalled_at(messages, index)
        if added == 1:
            blocks.append(message.text)
        elif added == 2:
            blocks.append(messages[index + 1].tool_results[0].content)
    return "\n".join(blocks)


_TOKEN = regex.compile(r"[\w][\w./:\-]*+")
_KEBAB = regex.compile(r"[^\W\d_]{2,}(?:-[^\W\d_]{2,})+")
_MIN_LENGTH = 4
_SEARCH_LIMIT: Final = 12  # archived messages looked at per identifier
_WINDOW: Final = 400  # characters kept around a match (a third before, two thirds after)
_ELLIPSIS: Final = "…"


def _is_identifier(token: str) -> bool:
    """Whether a token is a path or a name a model cannot guess (dotted, snake, kebab, mixed)."""
    if len(token) < _MIN_LENGTH:
        return False
    if any(ch in token for ch in "_./:") or ("-" in token and any(c.isdigit() for c in token)):
        return True
    if _KEBAB.fullmatch(token):
        return True
    has_digit = any(ch.isdigit() for ch in token)
    has_alpha = any(ch.isalpha() for ch in token)
    camel = any(ch.isupper() for ch in token[1:]) and any(ch.islower() for ch in token)
    return (has_digit and has_alpha) or camel


def question_identifiers(text: str) -> list[str]:
    """The identifiers in ``text``, in order of first appearance, without trailing dots."""
    seen: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        token = match.group().rstrip(".:-")
        if _is_identifier(token):
            seen.setdefault(token, None)
    return list(seen)


def _bounded(identifier: str) -> regex.Pattern[str]:
    """The identifier as a whole token: no word character right before or after it."""
    return regex.compile(r"(?<!\w)" + regex.escape(identifier) + r"(?!\w)", regex.IGNORECASE)


def _span(line: str, start: int, end: int, folded: Sequence[str]) -> tuple[int, int]:
    """``start:end`` widened to the question's other identifiers nearby, within :data:`_WINDOW`."""
    lowered = line.casefold()
    others = sorted(
        (abs(at - start), at, at + len(ident))
        for ident in folded
        if (at := lowered.find(ident)) >= 0
    )
    for _, left, right in others:
        if max(end, right) - min(start, left) <= _WINDOW:
            start, end = min(start, left), max(end, right)
    return start, end


def _window(line: str, start: int, end: int) -> str:
    """``line`` stripped, or about :data:`_WINDOW` characters around ``start:end``, cuts marked."""
    if len(line) <= _WINDOW:
        return line.strip()
    spare = max(0, _WINDOW - (end - start))
    # What follows a name is usually what is said of it (key: value, name==version).
    # A window cut short at one end of the line reaches further at the other.
    left = max(0, start - spare // 3)
    right = min(len(line), max(end, left + _WINDOW))
    left = max(0, min(left, right - _WINDOW))
    text = line[left:right].strip()
    return f"{_ELLIPSIS if left else ''}{text}{_ELLIPSIS if right < len(line) else ''}"


def _candidates(
    identifier: str, hits: Sequence[ArchiveHit], folded: Sequence[str], chain: str
) -> list[str]:
    """The lines of ``hits`` naming ``identifier`` as a token, windowed, best first."""
    pattern = _bounded(identifier)
    found: list[tuple[tuple[int, int, int, int], str]] = []  # (rank, entry)
    seen: set[str] = set()
    for hit in hits:
        for line in hit.lines:
            match = pattern.search(line)
            if match is None:
                continue
            snippet = _window(line, *_span(line, match.start(), match.end(), folded))
            if snippet in seen or snippet.strip(_ELLIPSIS) in chain:
                continue
            seen.add(snippet)
            lowered = snippet.casefold()
            named = sum(1 for ident in folded if ident in lowered)
            rest = lowered
            for ident in folded:
                rest = rest.replace(ident, " ")
            question = snippet.rstrip(_ELLIPSIS).rstrip().endswith("?")
            no_value = not any(ch.isdigit() for ch in rest)
            # smaller is better: (question, -identifiers named, no value, order found)
            rank = (int(question), -named, int(no_value), len(found))
            found.append((rank, f"({hit.reference}, {_origin(hit.message, line)}) {snippet}"))
    return [entry for _, entry in sorted(found)]  # ranks differ: entries never compared


_NAME = regex.compile(r"[^\w.\-]+")
_SPEAKER: Final = {Role.HUMAN: "user", Role.TOOL: "tool result", Role.AI: "assistant"}


def _origin(message: Message, line: str) -> str:
    """Who said ``line`` in ``message`` (a tool's text stays a tool's)."""
    for part in message.parts:
        if isinstance(part, ToolCall) and line in f"{part.name} {part.arguments}":
            return f"assistant call {_NAME.sub('_', part.name)[:64]}"
        if isinstance(part, ToolResult) and line in part.content:
            return f"tool result of {_NAME.sub('_', part.name)[:64]}"
    return _SPEAKER.get(message.role, "system")


@dataclass(frozen=True, slots=True)
class Insertion:
    """What re-insertion puts back: ``messages`` go in at ``position`` of the chain (a
    recall pair right after the question, or an assistant turn right before it)."""

    position: int
    messages: tuple[Message, ...]

    def into(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with the insertion (a new list)."""
        at = self.position
        return [*messages[:at], *self.messages, *messages[at:]]


async def _insertion(
    archive: HistoryArchive,
    messages: Sequence[Message],
    *,
    max_bytes: int,
    target: str | ProviderProfile | None,
) -> Insertion | None:
    """The block of archived lines naming the last question's identifiers (None: none)."""
    humans = (i for i in range(len(messages) - 1, -1, -1) if messages[i].role is Role.HUMAN)
    index = next(humans, None)
    if max_bytes <= 0 or index is None:
        return None
    profile = get_provider(target) if isinstance(target, str) else target
    as_text = profile is not None and profile.tools_with_tool_history
    if any(is_reinserted(p) for p in messages[index].parts):
        return None  # served once already (a question of an earlier release)
    if as_text and (index == 0 or messages[index - 1].role is Role.SYSTEM):
        return None  # an assistant turn cannot open the chain
    if (as_text and _recalled_at(messages, index - 1)) or (
        not as_text and index + 1 < len(messages) and _recalled_at(messages, index + 1)
    ):
        return None  # served once already: a question gets one block, not one per run
    texts = [p.text for p in messages[index].parts if isinstance(p, TextPart)]
    identifiers = question_identifiers("\n".join(texts))
    if not identifiers:
        return None
    chain = "\n".join(message_search_text(m) for i, m in enumerate(messages) if i != index)
    folded = [ident.casefold() for ident in identifiers]
    lists: list[tuple[int, list[str]]] = []
    named: list[str] = []  # the identifiers that found any line
    for identifier in identifiers:
        hits = await archive._search(identifier, _SEARCH_LIMIT)
        found = _candidates(identifier, hits, folded, chain)
        if found:
            lists.append((len(hits), found))
            named.append(identifier)
    lists.sort(key=lambda item: item[0])  # the rarest identifier first (stable)
    header = utf8_len(REINSERTED_HEADER + _HEADER_TAIL.format(mark="0" * 8))
    chosen = _share(lists, max_bytes - header)
    if not chosen:
        return None
    block = reinserted_part(chosen).text
    if as_text:
        return Insertion(index, (Message.from_parts(Role.AI, (TextPart(text=block),)),))
    return Insertion(index + 1, _recall_pair(block, named, profile))


def _recall_pair(
    block: str, identifiers: Sequence[str], profile: ProviderProfile | None
) -> tuple[Message, Message]:
    """A synthetic ``recall_archived`` call shaped for the target, and its result ``block``."""
    template = IdTemplate(DEFAULT_TOOL_CALL_ID_TEMPLATE) if profile is None else profile.id_template
    call_id = template.generate(RECALL_TOOL_NAME, seed=block)
    policy = None if profile is None else profile.reasoning
    reasoning = None
    if policy is ReasoningPolicy.THOUGHT_SIGNATURE:
        reasoning = Reasoning(signature=FAKE_GEMINI_SIGNATURE.encode())
    elif policy is ReasoningPolicy.REASONING_CONTENT_REQUIRED:
        reasoning = Reasoning()
    query = json.dumps({"query": " ".join(identifiers)}, ensure_ascii=False)
    call = ToolCall(id=call_id, name=RECALL_TOOL_NAME, arguments=query, reasoning=reasoning)
    result = Message.tool(call_id, RECALL_TOOL_NAME, block)
    return Message.from_parts(Role.AI, (call,)), result


def _share(lists: Sequence[tuple[int, list[str]]], room: int) -> list[str]:
    """Entries taken in turns (each list's best, then second best...) while they fit."""
    chosen: dict[str, None] = {}
    depth = 0
    while room > 0 and any(depth < len(found) for _, found in lists):
        for _, found in lists:
            if depth >= len(found) or found[depth] in chosen:
                continue
            cost = utf8_len(found[depth]) + 1 + _MARK_CHARS
            if cost <= room:
                chosen[found[depth]] = None
                room -= cost
        depth += 1
    return list(chosen)


# -- the recall tool -------------------------------------------------------------------------

RECALL_TOOL_DESCRIPTION: Final = (
    "Fetch conversation history that was summarized away. Summaries end with "
    "'[archived: REFERENCE]': pass that reference to get the original messages back, "
    "or pass a query (an identifier, file path, error message) to get the archived "
    "lines containing it."
)
_PROPERTIES: Final = {
    "reference": "A reference from an '[archived: ...]' line (16 hex digits).",
    "query": "Text to find in the archived messages (case-insensitive substring).",
}

Provider = Literal["openai", "anthropic", "gemini"]


def recall_tool_definition(provider: Provider) -> dict[str, Any]:
    """The tool's definition as the provider's API takes it in its tool list: a Chat
    Completions function tool (``openai``), a Messages API tool (``anthropic``), a Tool
    holding one ``functionDeclarations`` entry, types in upper case (``gemini``)."""
    if provider not in ("openai", "anthropic", "gemini"):
        raise ValueError(f"unknown provider {provider!r}: expected openai, anthropic or gemini")
    gemini = provider == "gemini"
    kind = "STRING" if gemini else "string"
    properties = {name: {"type": kind, "description": text} for name, text in _PROPERTIES.items()}
    schema: dict[str, Any] = {"type": "OBJECT" if gemini else "object", "properties": properties}
    tool = {"name": RECALL_TOOL_NAME, "description": RECALL_TOOL_DESCRIPTION}
    if gemini:
        return {"functionDeclarations": [{**tool, "parameters": schema}]}
    schema["additionalProperties"] = False
    if provider == "openai":
        return {"type": "function", "function": {**tool, "parameters": schema}}
    return {**tool, "input_schema": schema}


def _render(reference: str, message: Message) -> str:
    lines = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(f"{message.role}: {part.text}")
        elif isinstance(part, ToolCall):
            lines.append(f"{message.role}: call {part.name}({part.arguments}) id={part.id}")
        elif isinstance(part, ToolResult):
            head = f"{message.role}: result of {part.name} ({part.tool_call_id}): "
            lines.append(head + part.content)
    return f"[{reference}] " + "\n".join(lines)


class RecallTool:
    """Answers calls of the ``recall`` tool from ``archive``: called with the tool call's
    arguments (JSON text or parsed), it returns the tool result text, at most
    ``max_bytes`` UTF-8 bytes. Bad arguments (not JSON, wrong types, a query
    :meth:`HistoryArchive.search` refuses, a reference not 16 hex digits) give a result
    starting ``error:`` saying what was wrong, without echoing it, so the model can
    retry; store failures propagate.
    """

    name = RECALL_TOOL_NAME

    def __init__(
        self, archive: HistoryArchive, *, max_bytes: int = 16384, max_hits: int = 20
    ) -> None:
        if max_bytes < 256:
            raise ValueError(f"max_bytes must be at least 256, not {max_bytes}")
        self.archive = archive
        self.max_bytes = max_bytes
        self.max_hits = max_hits

    async def __call__(self, arguments: str | Mapping[str, Any]) -> str:
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError as exc:
                return f"error: the arguments are not JSON ({exc.msg} at {exc.pos})"
        if not isinstance(arguments, Mapping):
            return "error: the arguments must be an object with 'reference' or 'query'"
        reference, query = arguments.get("reference"), arguments.get("query")
        for name, value in (("reference", reference), ("query", query)):
            if value is not None and not isinstance(value, str):
                return f"error: '{name}' must be a string"
        try:
            if reference and reference.strip():
                reference = reference.strip()
                messages = await self.archive.recall(reference)
                if not messages:
                    return f"nothing archived under {reference!r}"
                text = "\n\n".join(_render(message_reference(m), m) for m in messages)
            elif query and query.strip():
                hits = await self.archive.search(query, limit=self.max_hits)
                lines = [f"[{hit.reference}] {line}" for hit in hits for line in hit.lines]
                text = "\n".join(lines) if hits else f"no archived message contains {query!r}"
            else:
                return (
                    "error: give 'reference' (from an [archived: ...] line) or a non-empty 'query'"
                )
        except ValueError as exc:
            text = f"error: {exc}"
        size = utf8_len(text)
        if size <= self.max_bytes:
            return text
        note = f"\n[... cut: {size - self.max_bytes} more bytes; ask with a narrower query]"
        return clip_utf8(text, self.max_bytes - utf8_len(note)) + note
