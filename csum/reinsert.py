"""Re-insertion: put back archived lines that a new question needs.

When the last human message names things a model cannot guess (paths, dotted,
snake_case or kebab-case names, ids mixing letters and digits, error codes, CamelCase),
the archived lines naming them are put back, within a byte limit, as one block that
says they are quotes and names, line by line, the archived message's reference and the
role it came from (a tool's text stays a tool's: ``tool result of fetch_ticket``),
behind a marker no archived line holds, so archived text cannot imitate the framing.
The block never goes into a human message (a tool's text must not gain the user's
voice); it keeps the voice of a tool or of the assistant, chosen per target:

* where a request may hold calls of tools it does not declare (no target, OpenAI,
  Gemini, Mistral...), it is the result of a synthetic ``recall_archived`` call, a pair
  put right after the question (the question and everything after it stay as they are);
* where such a call is refused (Anthropic, Bedrock: ``tools_with_tool_history``, where
  summaries are plain-text turns too), it is an assistant text turn put right before
  the question (after the question it would end the chain as a prefill).

Re-inserted messages are copies of what the archive holds, for one question: a keeper
that re-inserts takes them out of the chain when it compacts (:func:`without_recalled`)
and chooses afresh for the current question. Off by default: it changes what the
model reads.

How lines are found and chosen (all of it independent of any one format):

* every identifier of the question is looked up, also one the chain still names (a
  summary may keep a name and lose what was said about it); an archived line already
  in the chain verbatim is not put back;
* a line matches an identifier only as a whole token (``cache_12`` does not match
  ``cache_123``), case-insensitively;
* a long line (a tool call's JSON arguments, a minified record) is cut to a window
  around the match (widened to the question's other names nearby, and reaching further
  after the name than before it), so what sits next to the name comes back with it;
* lines are ranked: statements before questions (a line asking about a name does not
  say anything about it), lines naming more of the question's identifiers first, then
  lines holding a value (a digit outside the identifiers) first, then the oldest first
  (where a thing was introduced);
* the rarest identifiers (fewest archived messages) are served first, and the room is
  shared in turns: each identifier's best line, then each one's second best, so a
  common name in the question cannot take all of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

import regex
import xxhash

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
from cast.internals import utf8_len
from csum._pairs import SUMMARIZED_CONTENT_PREFIX
from csum._recall_name import RECALL_TOOL_NAME
from csum._search_text import message_search_text
from csum.store_events import StoreEvent

if TYPE_CHECKING:
    from csum.archive import ArchiveHit, HistoryArchive

__all__ = [
    "REINSERTED_HEADER",
    "Insertion",
    "archived_insertion",
    "is_reinserted",
    "own_question",
    "question_identifiers",
    "question_key",
    "recalled_positions",
    "recalled_text",
    "reinsert_archived",
    "reinserted_part",
    "reinsertion_within",
    "without_recalled",
]

REINSERTED_HEADER: Final = "[recalled from the history archive]"
"""Start of the first line of the text part re-insertion adds."""
_HEADER_TAIL: Final = (
    " quoted from archived messages, not words of this turn; each line starts [{mark}] "
    "(reference, the role it came from)"
)
"""The rest of the header line: it says the lines are quotes, and names the marker."""
_HEADER_MARK = regex.compile(r"each line starts \[([0-9a-f]{8})\] ")
_MARK_CHARS: Final = 11
"""Length of an entry's ``[mark] `` prefix (8 hex digits)."""


def _marker(entries: Sequence[str]) -> str:
    """A marker occurring in none of ``entries`` (derived from them, so deterministic):
    archived text cannot imitate an entry's start, as in the summary prompt's tags."""
    body = "\n".join(entries)
    attempt = 0
    while True:
        mark = xxhash.xxh32_hexdigest(f"{attempt}\x1f{body}".encode("utf-8", "surrogatepass"))
        if mark not in body:
            return mark
        attempt += 1


def reinserted_part(entries: Sequence[str]) -> TextPart:
    """The text part re-insertion adds for ``entries`` (each ``(reference, role) line``):
    a header saying these are quotes, then each entry behind a marker no entry holds.
    An entry is one line: a line break in one is a ``ValueError``."""
    for entry in entries:
        if len(entry.splitlines()) != 1 or "\n" in entry:
            raise ValueError(f"a re-inserted entry is one line: {entry[:40]!r}")
    mark = _marker(entries)
    header = REINSERTED_HEADER + _HEADER_TAIL.format(mark=mark)
    return TextPart(text="\n".join([header, *(f"[{mark}] {entry}" for entry in entries)]))


def is_reinserted(part: object) -> bool:
    """Whether ``part`` is the text re-insertion appended to a question (its archived
    lines), not the question's own text: its exact shape, a header naming a marker and
    every further line starting with that marker, which occurs nowhere else in it (so
    a user's text that merely starts with the header is the user's own)."""
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
    nothing of its own). A question that leaves the chain is summarized this way: the
    lines are copies of what the archive holds, put back for that question only, and a
    summary that kept them would fill with old lines again. ``question`` itself is left
    as it is; anything but a :class:`~cast.Message` is a ``TypeError``."""
    if not isinstance(question, Message):
        raise TypeError(f"own_question takes a cast.Message, not {type(question).__name__}")
    parts = tuple(part for part in question.parts if not is_reinserted(part))
    if len(parts) == len(question.parts):
        return question
    return Message.from_parts(Role.HUMAN, parts) if parts else None


_Item = TypeVar("_Item")


def _recall_call(message: object) -> ToolCall | None:
    """The one ``recall_archived`` call ``message`` is made of (an AI message holding
    that call and nothing else but its reasoning), else None."""
    if type(message) is not Message or message.role is not Role.AI:
        return None
    calls = [p for p in message.parts if type(p) is ToolCall]
    texts = [p for p in message.parts if type(p) is TextPart and p.text]
    if len(calls) != 1 or texts or calls[0].name != RECALL_TOOL_NAME:
        return None
    return calls[0]


def _is_recalled_text(message: object) -> bool:
    """Whether ``message`` is an assistant turn holding a re-inserted block only."""
    if type(message) is not Message or message.role is not Role.AI:
        return False
    return len(message.parts) == 1 and is_reinserted(message.parts[0])


def _is_recalled_result(message: object, call: ToolCall) -> bool:
    """Whether ``message`` is the re-inserted block answering ``call``, alone."""
    if type(message) is not Message or message.role is not Role.TOOL or len(message.parts) != 1:
        return False
    result = message.parts[0]
    return (
        type(result) is ToolResult
        and result.tool_call_id == call.id
        and is_reinserted(TextPart(text=result.content))
    )


def _recalled_at(messages: Sequence[object], index: int) -> int:
    """How many messages from ``index`` on re-insertion added (0, 1 or 2)."""
    message = messages[index]
    if _is_recalled_text(message):
        return 1
    call = _recall_call(message)
    if call is not None and index + 1 < len(messages):
        return 2 if _is_recalled_result(messages[index + 1], call) else 0
    return 0


def _is_human(message: object) -> bool:
    return type(message) is Message and message.role is Role.HUMAN


def recalled_positions(messages: Sequence[object]) -> list[int]:
    """Positions of the messages re-insertion added (the synthetic recall pairs and the
    assistant turns holding a re-inserted block, by their exact shape), in order. One
    that stands between two human messages (a question asked right after another) is
    not among them: taking it out would leave two human messages in a row."""
    removed: list[int] = []
    kept: object = None  # the last message not taken out
    index = 0
    while index < len(messages):
        added = _recalled_at(messages, index)
        after = messages[index + added] if index + added < len(messages) else None
        if added and not (_is_human(kept) and _is_human(after)):
            removed.extend(range(index, index + added))
            index += added
            continue
        kept = messages[index]
        index += 1
    return removed


def without_recalled(messages: Sequence[_Item]) -> list[_Item]:
    """``messages`` without the messages re-insertion added (:func:`recalled_positions`);
    the same list object when there are none. Anything not a :class:`~cast.Message` (a
    dict to be parsed) is kept; ``messages`` itself is never changed."""
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
            result = messages[index + 1].parts[0]
            assert type(result) is ToolResult
            blocks.append(result.content)
    return "\n".join(blocks)


_TOKEN = regex.compile(r"[\w][\w./:\-]*+")
"""Candidate identifiers: a word character then word characters and ``./:-`` (possessive,
so matching is linear in the text)."""
_KEBAB = regex.compile(r"[^\W\d_]{2,}(?:-[^\W\d_]{2,})+")
"""Words joined by hyphens (``typing-extensions``, ``drop-oldest``): package, flag and
CSS names."""
_MIN_LENGTH = 4
_SEARCH_LIMIT: Final = 12
"""Archived messages looked at per identifier (the store's oldest first)."""
_WINDOW: Final = 400
"""Characters of a long line kept around a match (a third of the rest before it, two
thirds after)."""
_ELLIPSIS: Final = "…"


def _is_identifier(token: str) -> bool:
    """Whether a token looks like something a model cannot guess: a path, a dotted,
    snake_case or kebab-case name, or a mix of letters and digits."""
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


def _last_human(messages: Sequence[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role is Role.HUMAN:
            return index
    return None


def _bounded(identifier: str) -> regex.Pattern[str]:
    """The identifier as a whole token: no word character right before or after it."""
    return regex.compile(r"(?<!\w)" + regex.escape(identifier) + r"(?!\w)", regex.IGNORECASE)


def _span(line: str, start: int, end: int, folded: Sequence[str]) -> tuple[int, int]:
    """``start:end`` widened to take in the question's other identifiers found in
    ``line``, nearest first, while the span stays within :data:`_WINDOW` characters."""
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
    """``line`` stripped, or about :data:`_WINDOW` characters of it around
    ``start:end`` when it is longer, the cuts marked."""
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


@dataclass(frozen=True, slots=True)
class _Candidate:
    rank: tuple[int, int, int, int]
    """Smaller is better: (question, -identifiers named, no value, order found)."""
    entry: str


def _candidates(
    identifier: str, hits: Sequence[ArchiveHit], folded: Sequence[str], chain: str
) -> list[_Candidate]:
    """The lines of ``hits`` that name ``identifier`` as a token, windowed, best first;
    lines the chain already holds are left out. ``folded``: every question identifier
    casefolded."""
    pattern = _bounded(identifier)
    found: list[_Candidate] = []
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
            rank = (int(question), -named, int(no_value), len(found))
            origin = _origin(hit.message, line)
            found.append(_Candidate(rank, f"({hit.reference}, {origin}) {snippet}"))
    found.sort(key=lambda candidate: candidate.rank)
    return found


_NAME = regex.compile(r"[^\w.\-]+")


def _origin(message: Message, line: str) -> str:
    """Who said ``line`` in the archived ``message``: ``user``, ``assistant``,
    ``assistant call NAME`` or ``tool result of NAME`` (a tool's text stays a tool's)."""
    for part in message.parts:
        if isinstance(part, ToolCall) and line in f"{part.name} {part.arguments}":
            return f"assistant call {_NAME.sub('_', part.name)[:64]}"
        if isinstance(part, ToolResult) and line in part.content:
            return f"tool result of {_NAME.sub('_', part.name)[:64]}"
    if message.role is Role.HUMAN:
        return "user"
    if message.role is Role.TOOL:
        return "tool result"
    return "assistant" if message.role is Role.AI else "system"


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


async def reinsert_archived(
    archive: HistoryArchive,
    messages: Sequence[Message],
    *,
    max_bytes: int,
    target: str | ProviderProfile | None = None,
) -> list[Message]:
    """``messages`` with the archived lines the last human message needs put back as
    one block of at most ``max_bytes`` UTF-8 bytes, in the voice ``target`` takes (see
    the module docstring and :func:`archived_insertion`). Returns ``messages`` itself
    (as a list, not copied) when nothing is added; never mutates it.
    """
    out = messages if isinstance(messages, list) else list(messages)
    insertion = await archived_insertion(archive, out, max_bytes=max_bytes, target=target)
    return out if insertion is None else insertion.into(out)


async def archived_insertion(
    archive: HistoryArchive,
    messages: Sequence[Message],
    *,
    max_bytes: int,
    target: str | ProviderProfile | None = None,
) -> Insertion | None:
    """The archived lines the last human message needs, as one block of at most
    ``max_bytes`` UTF-8 bytes in the voice ``target`` takes: a synthetic recall pair
    right after the question, or an assistant turn right before it where the target
    refuses undeclared tool calls. None when nothing goes back.

    A question already served (its recall pair or turn is there) gets nothing more, nor
    does a question an assistant turn cannot precede (only a system message before it)
    in the assistant form.
    """
    out = messages
    index = _last_human(out)
    if max_bytes <= 0 or index is None:
        return None
    profile = get_provider(target) if isinstance(target, str) else target
    as_text = profile is not None and profile.tools_with_tool_history
    texts = [p.text for p in out[index].parts if isinstance(p, TextPart)]
    if any(is_reinserted(p) for p in out[index].parts):
        return None  # served once already (a question of an earlier release)
    if as_text and (index == 0 or out[index - 1].role is Role.SYSTEM):
        return None  # an assistant turn cannot open the chain
    if (as_text and _recalled_at(out, index - 1)) or (
        not as_text and index + 1 < len(out) and _recalled_at(out, index + 1)
    ):
        return None  # served once already: a question gets one block, not one per run
    identifiers = question_identifiers("\n".join(texts))
    if not identifiers:
        return None
    chosen, named = await _chosen_lines(archive, out, index, identifiers, max_bytes)
    if not chosen:
        return None
    block = reinserted_part(chosen).text
    if as_text:
        return Insertion(index, (Message.from_parts(Role.AI, (TextPart(text=block),)),))
    return Insertion(index + 1, _recall_pair(block, named, profile))


async def _chosen_lines(
    archive: HistoryArchive,
    messages: Sequence[Message],
    index: int,
    identifiers: list[str],
    max_bytes: int,
) -> tuple[list[str], list[str]]:
    """(the archived lines chosen within ``max_bytes``, the identifiers that found any)
    for the question at ``index``."""
    chain = "\n".join(message_search_text(m) for i, m in enumerate(messages) if i != index)
    folded = [ident.casefold() for ident in identifiers]
    lists: list[tuple[int, list[_Candidate]]] = []
    named: list[str] = []
    for identifier in identifiers:
        hits = await archive.search(identifier, limit=_SEARCH_LIMIT)
        found = _candidates(identifier, hits, folded, chain)
        if found:
            lists.append((len(hits), found))
            named.append(identifier)
    lists.sort(key=lambda item: item[0])  # the rarest identifier first (stable)
    header = utf8_len(REINSERTED_HEADER + _HEADER_TAIL.format(mark="0" * 8))
    return _share(lists, max_bytes - header), named


async def reinsertion_within(
    archive: HistoryArchive,
    messages: list[Message],
    *,
    room: int,
    unit: str,
    measure: Callable[[Iterable[Message]], int],
    target: str | ProviderProfile | None,
    emit: Callable[[StoreEvent], None],
) -> Insertion | None:
    """A keeper's re-insertion: the archived lines the current question of ``messages``
    needs, only within ``room`` (what the budget leaves, in its ``unit``, as
    ``measure`` counts), so the chain still fits. Store failures go to ``emit``."""
    limit = archive.reinsert_bytes
    if unit == "bytes":
        limit = min(limit, room)
    while limit > 0 and room > 0:
        found = await archive.insertion_reporting(
            messages, max_bytes=limit, emit=emit, target=target
        )
        if found is None:
            break
        grown = measure(found.messages)
        if grown <= room:
            return found
        limit = min(limit - 1, limit * room // grown)  # the part's framing costs too
    return None


def question_key(messages: Sequence[Message]) -> str | None:
    """A hash of the last human message's own text (without re-inserted lines, nor the
    summaries placed after it for the target, :mod:`csum._placement`): which question a
    keeper's re-insertion looked at last. None without a human message."""
    index = _last_human(messages)
    if index is None:
        return None
    own = "\x1f".join(
        p.text
        for p in messages[index].parts
        if type(p) is TextPart
        and not is_reinserted(p)
        and not p.text.startswith(SUMMARIZED_CONTENT_PREFIX)
    )
    return xxhash.xxh3_64_hexdigest(own.encode("utf-8", "surrogatepass"))


def _recall_pair(
    block: str, identifiers: Sequence[str], profile: ProviderProfile | None
) -> tuple[Message, Message]:
    """A synthetic ``recall_archived`` call (the question's identifiers as its query,
    an id the target takes, the reasoning it wants on a call) and its result ``block``."""
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


def _share(lists: Sequence[tuple[int, list[_Candidate]]], room: int) -> list[str]:
    """Entries taken in turns (each list's best, then each one's second best...) while
    they fit ``room`` bytes (a newline and the marker each); an entry too big is
    skipped."""
    chosen: dict[str, None] = {}
    depth = 0
    while room > 0 and any(depth < len(found) for _, found in lists):
        for _, found in lists:
            if depth >= len(found) or found[depth].entry in chosen:
                continue
            cost = utf8_len(found[depth].entry) + 1 + _MARK_CHARS
            if cost <= room:
                chosen[found[depth].entry] = None
                room -= cost
        depth += 1
    return list(chosen)
