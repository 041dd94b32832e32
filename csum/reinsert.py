"""Re-insertion: put back archived lines that a new question needs.

When the last human message mentions identifiers (paths, dotted or snake_case names,
ids mixing letters and digits, error codes) that the chain no longer holds but the
archive does, the archived lines containing them are added to that message, within a
byte limit. Off by default: it changes what the model reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import regex

from cast import Message, Role, TextPart, utf8_len

if TYPE_CHECKING:
    from csum.archive import HistoryArchive

__all__ = ["REINSERTED_HEADER", "question_identifiers", "reinsert_archived"]

REINSERTED_HEADER: Final = "[recalled from the history archive]"
"""First line of the text part re-insertion adds."""

_TOKEN = regex.compile(r"[\w][\w./:\-]*+")
"""Candidate identifiers: a word character then word characters and ``./:-`` (possessive,
so matching is linear in the text)."""
_MIN_LENGTH = 4
_HITS_PER_IDENTIFIER = 5


def _is_identifier(token: str) -> bool:
    """Whether a token looks like something a model cannot guess: a path, a dotted or
    snake_case name, or a mix of letters and digits."""
    if len(token) < _MIN_LENGTH:
        return False
    if any(ch in token for ch in "_./:") or ("-" in token and any(c.isdigit() for c in token)):
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


async def reinsert_archived(
    archive: HistoryArchive, messages: Sequence[Message], *, max_bytes: int
) -> list[Message]:
    """``messages`` with the archived lines the last human message needs appended to it
    as one text part of at most ``max_bytes`` UTF-8 bytes.

    Only identifiers found nowhere else in the chain are looked up. Returns
    ``messages`` itself (as a list, not copied) when nothing is added; never mutates it.
    """
    out = messages if isinstance(messages, list) else list(messages)
    index = _last_human(out)
    if max_bytes <= 0 or index is None:
        return out
    from csum.archive import message_search_text

    # The question is the human's own text; lines re-inserted before count as the chain.
    texts = [p.text for p in out[index].parts if isinstance(p, TextPart)]
    question = "\n".join(t for t in texts if not t.startswith(REINSERTED_HEADER))
    earlier = [t for t in texts if t.startswith(REINSERTED_HEADER)]
    rest = "\n".join([*(message_search_text(m) for i, m in enumerate(out) if i != index), *earlier])
    missing = [ident for ident in question_identifiers(question) if ident not in rest]
    if not missing:
        return out
    lines: dict[str, None] = {}
    used = utf8_len(REINSERTED_HEADER)
    full = False
    for identifier in missing:
        for hit in await archive.search(identifier, limit=_HITS_PER_IDENTIFIER):
            for line in hit.lines:
                entry = f"({hit.reference}) {line.strip()}"
                if entry in lines:
                    continue
                cost = utf8_len(entry) + 1
                if used + cost > max_bytes:
                    full = True
                    break
                lines[entry] = None
                used += cost
            if full:
                break
        if full:
            break
    if not lines:
        return out
    text = "\n".join([REINSERTED_HEADER, *lines])
    human = out[index]
    new = Message.from_parts(Role.HUMAN, (*human.parts, TextPart(text=text)))
    return [*out[:index], new, *out[index + 1 :]]
