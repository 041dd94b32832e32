"""Prose for the extractive handler: an answer's long line cut to its clauses that carry
something (an identifier, a number, a cause or a constraint; the subject), so that more
fits a small budget; markdown fences and links written plainly."""

from __future__ import annotations

from typing import Final

import regex

from csum.handlers._extractive.text import _ELLIPSIS, _identifier_spans

# Clause marks of prose and of markdown list items ("`Name` — what it does").
_CLAUSE_MARK = regex.compile(r"(?<=\S)[,;:](?=[ ])|[ ][\u2014\u2013-](?=[ ])")
# Quoted and bracketed stretches: a mark inside them separates no clauses.
_OPENERS: Final = {"`": "`", "(": ")", "[": "]", '"': '"'}
# A clause saying why, when, under what condition, or forbidding: its words are the fact.
_KEEP_CLAUSE = regex.compile(
    r"(?i)^\W{0,3}(?:where|because|since|so|unless|if|when|until|but|however|except"
    r"|due[ ]to|caused[ ]by|instead)\b"
    r"|\b(?:do[ ]not|don't|never|must|should[ ]not|shouldn't|avoid|cannot|can't|may[ ]not"
    r"|not|no|only|required|decided|decision|prefer|fail(?:s|ed)?|error)\b"
)
_DIGIT = regex.compile(r"\d")
# A number and the words it counts ("6 new parser tests", "3 failed checks"): one signal.
_MEASURE = regex.compile(r"\d[\w.,%]*+(?:[ ][A-Za-z][\w-]*+){1,3}")
_SHORT_TAIL = 3  # words after a clause's last signal kept whole when no more follow
_MIN_SAVING = 12  # a compact form saving fewer characters than this is not worth its "…"


def compact_prose(line: str) -> str:
    """``line`` cut to its clauses that carry something; itself when that saves little."""
    clauses = _clauses(line)
    if not any(_signal_end(clause) is not None for clause, _ in clauses):
        return line  # nothing in it to keep a compact form for
    pieces: list[str] = []
    for index, (clause, mark) in enumerate(clauses):
        body = clause.strip()
        if not body:
            continue
        if _KEEP_CLAUSE.search(body):
            pieces.append(body + mark)
            continue
        cut = _signal_end(body)
        if cut is None:  # dropped (but the first): a run of them said by one "…"
            if index == 0 or not (pieces and pieces[-1].endswith(_ELLIPSIS)):
                pieces.append(body + mark if index == 0 else _ELLIPSIS)
        elif cut < len(body):
            pieces.append(body[:cut].rstrip(" ,;:") + _ELLIPSIS)
        else:
            pieces.append(body + mark)
    text = " ".join(pieces).replace(" " + _ELLIPSIS, _ELLIPSIS)
    return text if len(line) - len(text) >= _MIN_SAVING else line


def _clauses(line: str) -> list[tuple[str, str]]:
    """``line`` as (clause, the mark ending it) pairs, split outside quotes and brackets."""
    closed = _quoted(line)
    out: list[tuple[str, str]] = []
    start = 0
    for match in _CLAUSE_MARK.finditer(line):
        if match.start() in closed:
            continue
        mark = match.group().strip()
        text = line[start : match.start()]
        out.append((text, mark if mark in ",;:" else " " + mark))
        start = match.end()
    out.append((line[start:], ""))
    return out


def _quoted(line: str) -> set[int]:
    """Positions of ``line`` inside backticks, quotes or brackets."""
    inside: set[int] = set()
    closer = ""
    start = 0
    for position, char in enumerate(line):
        if closer:
            if char == closer:
                inside.update(range(start, position))
                closer = ""
        elif char in _OPENERS:
            closer = _OPENERS[char]
            start = position
    return inside


def _signal_end(clause: str) -> int | None:
    """Where a clause's kept words end (its last signal's word, or its end); None: no signal."""
    last = max((end for _, end, _ in _identifier_spans(clause)), default=-1)
    for pattern in (_DIGIT, _MEASURE):
        for match in pattern.finditer(clause):
            last = max(last, match.end())
    tick = clause.rfind("`")
    if tick > 0 and clause.count("`") >= 2:
        last = max(last, tick + 1)
    if last < 0:
        return None
    words = clause[last:].split(" ")
    if len(words) <= 1 + _SHORT_TAIL:
        return len(clause)  # a short predicate ("has been updated") is the message
    return last + len(words[0])


# A markdown code block's fence: three backticks or tildes and maybe a language.
_FENCE = regex.compile(r"[ ]{0,3}+(?:```|~~~)[\w+.-]{0,40}+\s*+")
# A markdown link: [text](url); the text has no brackets, the url no spaces.
_LINK = regex.compile(r"\[([^\[\]\n]{1,200}+)\]\((https?://[^\s()]{1,2000}+)\)")
# Query parameters that only tag where a click came from (utm_source=...).
_TRACKING = regex.compile(r"[?&]utm_[a-z]{1,20}+=[^&#\s]{0,200}+")


def is_fence(line: str) -> bool:
    """Whether ``line`` is a markdown code block's fence (```` ```python ````)."""
    return _FENCE.fullmatch(line[:64]) is not None


def plain_links(line: str) -> str:
    """Markdown links as ``text (url)`` (the url alone when the text is its host), untracked."""
    if "](" not in line:
        return line
    return _LINK.sub(_plain_link, line)


def _plain_link(match: regex.Match[str]) -> str:
    text, url = match.group(1).strip(), match.group(2)
    if "utm_" in url:  # its tracking parameters dropped
        url = _TRACKING.sub("", url)
        if "?" not in url and "&" in url:
            url = url.replace("&", "?", 1)
    if text.lower().removeprefix("www.") in url.lower():
        return url
    return f"{text} ({url})"
