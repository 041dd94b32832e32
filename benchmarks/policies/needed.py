"""Needed-later memory: the facts a real agent reused, and whether a policy sent them.

A recorded session is replayed as an agent loop (:func:`benchmarks.policies.harness.
run_policy`): before each AI message the chain so far goes to the policy, which returns
what it sends. The measure is taken from the session itself, independently of what the
library keeps (this module shares no code with ``csum``):

* **what the agent produced at a turn**: the AI message's text parts and its tool calls'
  arguments (the string values of JSON arguments; reasoning is not read);
* **its salient tokens** (:func:`salient_tokens`): paths and file names, URLs,
  identifiers (snake_case, camelCase, dotted and ``::`` names), numbers of three digits
  or more, versions, hex ids and UUIDs, tokens mixing letters and digits, error codes
  and exception names, and quoted strings (between backticks or double quotes in text,
  short single-line string values in arguments);
* **a needed fact** at that turn is such a token that
  1. occurs in an earlier tool result or human message (whole-word, see
     :func:`occurs`), outside the turn's *floor*, and
  2. does not occur in the floor.
  The **floor** is what every policy that keeps the newest turn must send verbatim,
  the same definition the harness's over-budget test uses: the system prompt, the
  newest human message before the turn, and everything from the newest AI message
  before the turn on (its tool results); when a human message is newer than every AI
  message, that message and everything after it. A fact in the floor is remembered by
  every valid policy, so it measures nothing;
* **remembered**: the fact occurs (whole-word) in any text of what the policy sent for
  that turn (text, tool-call arguments, tool results: kept verbatim, or inside a
  summary, gist or placeholder).

A fact's **age** is the number of AI messages between its newest occurrence outside the
floor (in any message) and the turn (at least 1: the floor holds the newest AI message):
1-5, 6-20 and 21+ turns are reported apart.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cast import Message, Role, TextPart, ToolCall, ToolResult

__all__ = [
    "AGE_BUCKETS",
    "NeededFact",
    "NeededMemory",
    "TurnFacts",
    "floor_start",
    "message_text",
    "needed_facts",
    "occurs",
    "salient_tokens",
]

AGE_BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("1-5", 1, 5),
    ("6-20", 6, 20),
    ("21+", 21, 1 << 30),
)
"""(label, first age, last age) of the reported age groups, in AI turns."""

_MAX_TOKEN = 120
_QUOTED_MAX = 80

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]{3,200}")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:[\w.@+-]*/)+[\w.@+-]+(?::\d+){0,2}|(?<![\w/])/[\w.@+-]{2,}")
_FILE = re.compile(r"\b[\w-]{2,}\.(?:[a-z]{1,5}|[A-Z]{1,5})(?::\d+){0,2}\b")
_SNAKE = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+\b")
_CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+\b")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b")
_MIXED = re.compile(r"\b(?=\w*[A-Za-z])(?=\w*\d)\w{4,}\b")
_VERSION = re.compile(r"\bv?\d+(?:\.\d+){1,3}\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d{3,}(?:[.,]\d+)*(?![\w])|(?<![\w.])\d+\.\d+(?![\w.])")
_ERROR = re.compile(
    r"\b[A-Z][A-Za-z]*(?:Error|Exception|Warning)\b|\b[A-Z]{1,6}\d{2,5}\b|\b[A-Z]+_[A-Z0-9_]+\b"
)
_QUOTED = re.compile(r"`([^`\n]{3,80})`|\"([^\"\n]{4,80})\"")
_WORD = re.compile(r"[A-Za-z0-9_]")
_TRAILING = ".,;:!?)]}'\"`"

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", _URL),
    ("path", _PATH),
    ("file", _FILE),
    ("uuid", _UUID),
    ("error", _ERROR),
    ("version", _VERSION),
    ("hex id", _HEX),
    ("identifier", _DOTTED),
    ("identifier", _SNAKE),
    ("identifier", _CAMEL),
    ("mixed id", _MIXED),
    ("number", _NUMBER),
)


def _keep_quoted(value: str) -> bool:
    """A quoted string worth counting: not a plain word (it holds a digit, a symbol or
    two words) and not blank."""
    value = value.strip()
    if len(value) < 4 or len(value) > _QUOTED_MAX:
        return False
    return not value.isalpha()


def salient_tokens(text: str, *, quoted: Iterable[str] = ()) -> dict[str, str]:
    """Token -> kind for ``text`` (first kind wins), plus the ``quoted`` strings that
    pass :func:`_keep_quoted` (kind "quoted")."""
    found: dict[str, str] = {}
    for kind, pattern in _KINDS:
        for match in pattern.finditer(text):
            token = match.group().rstrip(_TRAILING)
            if 3 <= len(token) <= _MAX_TOKEN and token not in found:
                found[token] = kind
    for match in _QUOTED.finditer(text):
        value = (match.group(1) or match.group(2) or "").strip()
        if _keep_quoted(value) and value not in found:
            found[value] = "quoted"
    for raw in quoted:
        value = raw.strip()
        if "\n" not in value and _keep_quoted(value) and value not in found:
            found[value] = "quoted"
    return found


def _json_strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


def produced(message: Message) -> dict[str, str]:
    """The salient tokens of what an AI message produced: its text and its calls'
    arguments (JSON string values; the raw arguments when they are not JSON)."""
    texts: list[str] = []
    values: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolCall):
            try:
                strings = _json_strings(json.loads(part.arguments or "{}"))
            except ValueError:
                strings = [part.arguments]
            texts.extend(strings)
            values.extend(strings)
    return salient_tokens("\n".join(texts), quoted=values)


def message_text(message: Message) -> str:
    """Every text of a message a reader of the chain sees: text parts, tool-call names
    and arguments, tool results (reasoning left out), one per line."""
    out: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append(part.text)
        elif isinstance(part, ToolCall):
            out.append(part.arguments)
        elif isinstance(part, ToolResult):
            content = part.content
            out.append(content if isinstance(content, str) else str(content))
    return "\n".join(out)


def _bounded(text: str, token: str, start: int) -> bool:
    end = start + len(token)
    if _WORD.match(token[0]) and start > 0 and _WORD.match(text[start - 1]):
        return False
    return not (_WORD.match(token[-1]) and end < len(text) and _WORD.match(text[end]))


def occurs(text: str, token: str) -> bool:
    """Whether ``token`` is in ``text`` as a whole word (no letter, digit or underscore
    touching an end of it that is itself one)."""
    at = text.find(token)
    while at >= 0:
        if _bounded(text, token, at):
            return True
        at = text.find(token, at + 1)
    return False


def _last_occurrence(text: str, token: str) -> int:
    at = text.rfind(token)
    while at >= 0:
        if _bounded(text, token, at):
            return at
        at = text.rfind(token, 0, at + len(token) - 1) if at > 0 else -1
    return -1


def floor_start(messages: Sequence[Message], turn: int) -> tuple[int | None, int]:
    """(index of the newest human message kept with the floor or None, index the floor's
    tail starts at) for the AI message at ``turn``: see the module doc."""
    last_ai: int | None = None
    for index in range(turn - 1, -1, -1):
        role = messages[index].role
        if role is Role.HUMAN:
            if last_ai is None:
                return None, index
            return index, last_ai
        if role is Role.AI and last_ai is None:
            last_ai = index
    return None, 0 if last_ai is None else last_ai


@dataclass(frozen=True, slots=True)
class NeededFact:
    """One fact the agent reused at a turn."""

    token: str
    kind: str
    age: int
    """AI messages between its newest occurrence outside the floor and the turn."""
    source: int
    """Index of the message that newest occurrence is in."""


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """The needed facts of one AI turn (``index``: the AI message's index)."""

    index: int
    facts: tuple[NeededFact, ...]


def needed_facts(messages: Sequence[Message]) -> list[TurnFacts]:
    """The needed facts of every AI message that follows something (the turns the
    harness hands to a policy), in order."""
    texts = [message_text(m) for m in messages]
    turn_of: list[int] = []
    turns = 0
    for message in messages:
        turn_of.append(turns)
        turns += message.role is Role.AI
    system = texts[0] if messages and messages[0].role is Role.SYSTEM else ""
    out: list[TurnFacts] = []
    for index, message in enumerate(messages):
        if message.role is not Role.AI or index == 0:
            continue
        human, tail = floor_start(messages, index)
        floor = "\n".join([system, texts[human] if human is not None else "", *texts[tail:index]])
        first = 1 if system else 0
        earlier = [i for i in range(first, tail) if i != human]
        sources = [i for i in earlier if messages[i].role in (Role.TOOL, Role.HUMAN)]
        source_text, _starts = _joined(texts, sources)
        any_text, any_starts = _joined(texts, earlier)
        facts: list[NeededFact] = []
        for token, kind in produced(message).items():
            if occurs(floor, token) or not occurs(source_text, token):
                continue
            at = _last_occurrence(any_text, token)
            where = earlier[bisect_right(any_starts, at) - 1]
            facts.append(NeededFact(token, kind, turn_of[index] - turn_of[where], where))
        out.append(TurnFacts(index, tuple(facts)))
    return out


def _joined(texts: Sequence[str], indices: Sequence[int]) -> tuple[str, list[int]]:
    starts: list[int] = []
    at = 0
    for i in indices:
        starts.append(at)
        at += len(texts[i]) + 1
    return "\n".join(texts[i] for i in indices), starts


@dataclass
class NeededMemory:
    """Counts of one policy on one session (or merged): needed and remembered facts,
    overall and by age group."""

    needed: int = 0
    remembered: int = 0
    by_age: dict[str, list[int]] = field(default_factory=dict)
    """Age label -> [needed, remembered]."""
    missed: list[tuple[int, NeededFact]] = field(default_factory=list)
    """(AI message index, fact) of each fact not sent, for inspection."""
    _texts: dict[int, tuple[Message, str]] = field(default_factory=dict, repr=False)

    def _text(self, message: Message) -> str:
        hit = self._texts.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        text = message_text(message)
        self._texts[id(message)] = (message, text)
        return text

    @property
    def share(self) -> float:
        return self.remembered / self.needed if self.needed else 0.0

    def add(self, turn: TurnFacts, payload: Sequence[Message]) -> None:
        """Count the facts of ``turn`` against what the policy sent for it."""
        if not turn.facts:
            return
        text = "\n".join(self._text(m) for m in payload)
        for fact in turn.facts:
            hit = occurs(text, fact.token)
            self.needed += 1
            self.remembered += hit
            label = next(name for name, low, high in AGE_BUCKETS if low <= max(1, fact.age) <= high)
            counts = self.by_age.setdefault(label, [0, 0])
            counts[0] += 1
            counts[1] += hit
            if not hit:
                self.missed.append((turn.index, fact))

    def merge(self, other: NeededMemory) -> None:
        self.needed += other.needed
        self.remembered += other.remembered
        for label, (n, r) in other.by_age.items():
            counts = self.by_age.setdefault(label, [0, 0])
            counts[0] += n
            counts[1] += r
        self.missed.extend(other.missed)
