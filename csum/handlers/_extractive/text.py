"""Text helpers of the extractive handler: the regular expressions several modules share
(every pattern of the handler is linear: bounded input, no nested unbounded repetition),
identifiers, byte lengths, cuts between words, windows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache

import regex

from cast.internals import clip_utf8, utf8_len
from csum.handlers._extractive.weights import _LINE_SCAN, _PATH_WEIGHTS, _TOKEN_CAP, WEIGHTS

_CACHED_TOKEN = 64  # tokens up to this long have their class cached

_TOKEN = regex.compile(r"[^\s\"'`,;()\[\]{}<>|]++")
_TRAIL = ".,:;!?*"
_VERSION = regex.compile(r"v?+\d++(?:\.\d++)++(?:[-+.]?+[0-9A-Za-z]++)*+")
_CODE = regex.compile(r"(?=[A-Z]*+\d)(?=\d*+[A-Z])[A-Z0-9]{5,10}+")  # AB1234, K9QX2Z, 7RT0QA
_ID = regex.compile(r"[A-Za-z][A-Za-z0-9]*+(?:[_.-][A-Za-z0-9]++)++")  # user_id_42, pkg-1.2
_NAME = regex.compile(  # 20240131120000, App.Repo.Migrations.Init, db.internal.lan, f/3
    r"\d{6,40}+|[A-Za-z_]\w*+(?:\.\w++){2,}+(?:/\d++)?+|[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+/\d++"
)
_CAMEL = regex.compile(r"[A-Z]?+[a-z]++(?:[A-Z][a-z0-9]*+)++")  # SessionCache, getUserById
_HEX = regex.compile(r"(?:sha\d++:)?+(?=[0-9]*+[a-f])(?=[a-f]*+[0-9])[0-9a-f]{7,128}+")
_EXCEPTION_WORDS = ("Error", "Exception", "Exit", "Interrupt", "Fault")  # one in every match:
_EXCEPTION_NAME = regex.compile(
    r"(?:[A-Za-z_]\w*+\.)*+[A-Za-z_]\w*?(?:Error|Exception|Exit|Interrupt|Fault)\b"
)
_UNIT = regex.compile(
    r"(?i:\b\d+(?:[.,]\d+)?+[ ]?(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hours?|"
    r"days?|[KMGT]i?B|bytes?|%|tokens?|rows?|lines?|files?|items?|records?|req/s|"
    r"tests?|doctests?|passed|failed|failures?|errors?|warnings?|skipped)\b)"
    r"|[$€£][ ]?\d[\d,]*+(?:\.\d++)?+|(?i:\bport[ ]\d{2,5}\b)"
)
_COUNTS = regex.compile(
    r"(?i:\b\d+[ ](?:[a-z]+[ ]){0,2}(?:tests?|doctests?|passed|failed|failures?|errors?|skipped|"
    r"warnings?|examples?|specs?|issues?|suggestions?|problems?|vulnerabilit(?:y|ies)|"
    r"files?[ ]changed|insertions?|deletions?|matches)\b)|\b(?:Total errors|tests? passed)\b"
)
_ERROR = regex.compile(
    r"""
    ^[\W_]{0,6}(?:(?:FAILED|FAIL|ERROR|FATAL)\b(?:[:\]!]|[ ]\S)
        |(?:error|fatal|panic|Error|Fatal|Panic)(?:\[\w{1,16}\])?+(?:[:\]!]|[ ][^:\n]{1,80}:))
  | \b[A-Z]\w{0,80}(?:Error|Exception|Exit|Interrupt|Fault)\b(?=:|[ ]at[ ]|\)|$)
  | ^\W{0,6}\*\*[ ]\(\w{1,40}\)
  | (?i:\bexit(?:ed)?[ ](?:with[ ])?(?:code|status)[ ]?[1-9]\d{0,3}\b)
  | (?i:\b[1-9]\d{0,6}[ ](?:failed|failures?|errors)\b)
  | (?i:\bassertion\b[^\n]{0,80}\bfailed\b)
  | (?i:\b(?:failed|failure)[.:!]?\s*$)
  | (?i:\bnot[ ]found\b|\bpermission[ ]denied\b|\baccess[ ]denied\b|\bdenied\b|\btimed[ ]out\b
        |\btimeout[ ]error\b|\bno[ ]such[ ]file\b|\bsegmentation[ ]fault\b|\bconnection[ ]refused\b
        |\bcould[ ]not\b|\bunable[ ]to\b|\bfailed[ ]to\b)
    """,
    regex.VERBOSE,
)
_CONSTRAINT = regex.compile(
    r"(?i)\b(?:do[ ]not|don't|never|must|should[ ]not|shouldn't|avoid|cannot|can't|"
    r"may[ ]not|is[ ]required|decided|decision|prefer)\b"
)
_NUMBERED = regex.compile(r"^\s{0,8}\d{1,7}(?:→|:|\t)")  # a file listing: "  12→", "12:"
_BACKTICKED = regex.compile(r"`[^`\n]{2,200}+`")
# A home directory ("/home/ana/", "/Users/ana/"): "~/" says it in two bytes.
_HOME = regex.compile(r"(?<![\w.~-])/(?:home|Users)/[^/\s\"']{1,64}+/")
_WS = regex.compile(r"\s++")


def _identifiers(line: str, named: dict[str, int] | None = None) -> float:
    """How many identifiers a line holds; a name seen before (``named``) counts less."""
    if named is None:
        found: float = sum(weight for _, _, weight in _identifier_spans(line))
    else:
        found = 0.0
        for start, end, weight in _identifier_spans(line):
            token = line[start:end]
            seen = named.get(token, 0)
            named[token] = seen + 1
            found += weight / (1 + seen * WEIGHTS["name_repeat"])
    if line.find("`", 0, _LINE_SCAN) != -1:  # every quoted name starts with one
        found += len(_BACKTICKED.findall(line, endpos=_LINE_SCAN))
    return found + len(_UNIT.findall(line, endpos=_LINE_SCAN))


def _identifier_spans(line: str) -> Iterator[tuple[int, int, int]]:
    """(start, end, weight) of the line's identifiers, a path with a line weighing more."""
    for match in _TOKEN.finditer(line, endpos=_LINE_SCAN):
        token = match.group()
        weight = _cached_weight(token) if len(token) <= _CACHED_TOKEN else _token_weight(token)
        if weight:
            yield match.start(), match.end(), weight


def _token_weight(raw: str) -> int:
    """A token's weight as an identifier (0: none; see :func:`_identifier_spans`)."""
    token = raw.strip(_TRAIL)
    if len(token) < 3 or len(token) > _TOKEN_CAP:
        return 0
    kind = _path_kind(token)
    if kind:
        return _PATH_WEIGHTS[kind]
    # Each pattern is tried only on a token holding what all its matches hold: same answer.
    identifier = (
        "://" in token
        or "=" in token[1:]
        or ("." in token and _VERSION.fullmatch(token))
        or (5 <= len(token) <= 10 and _CODE.fullmatch(token))
        or _HEX.fullmatch(token)
        or (
            any(c in token for c in "_.-")
            and _ID.fullmatch(token)
            and ("_" in token or any(c.isdigit() for c in token))
        )
        or (any(word in token for word in _EXCEPTION_WORDS) and _EXCEPTION_NAME.fullmatch(token))
        or _NAME.fullmatch(token)
        or (not token.islower() and not token.isupper() and _CAMEL.fullmatch(token))
    )
    return 1 if identifier else 0


# Tokens recur: short ones are classified once (at most 8192, under a megabyte).
_cached_weight = lru_cache(maxsize=8192)(_token_weight)


def _path_kind(token: str) -> int:
    """0: not a path; 1: a path; 2: a path with a line (``src/a.py:12``)."""
    head, _, rest = token.partition(":")
    if len(head) == 1 and rest.startswith("\\"):  # C:\dir\file
        head, _, rest = rest.partition(":")
        head = token[:2] + head
    with_line = rest[:1].isdigit() and rest.split(":", 1)[0].isdigit()
    if "/" not in head and "\\" not in head:
        last = head.rsplit(".", 1)
        named = len(last) == 2 and last[1].isalnum() and 0 < len(last[1]) <= 8
        return 2 if named and with_line and last[0] else 0
    if head.startswith(("/", "~/", "./", "../")):
        plain = len(head) > 1
    else:
        plain = head.count("/") >= 2 or "." in head.rsplit("/", 1)[-1]
    if not plain:
        return 0
    return 2 if with_line else 1


_ELLIPSIS = "…"


def _clip(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes, ending with an ellipsis when it was cut."""
    if utf8_len(text) <= limit:
        return text
    return clip_utf8(text, limit - len(_ELLIPSIS.encode("utf-8"))).rstrip() + _ELLIPSIS


def _clip_whole_words(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes, cut between words ("" when no word fits)."""
    clipped = _clip(text, limit)
    if clipped == text:
        return text
    space = clipped.rfind(" ", 0, len(clipped) - 1)
    if space <= 0:
        return ""
    return clipped[:space].rstrip(" ,;:=") + _ELLIPSIS


def _clip_at_word_end(text: str, limit: int) -> str:
    """The longest prefix within ``limit`` bytes not ending inside a (short) word."""
    clipped = clip_utf8(text, limit)
    if clipped == text:
        return text
    if not clipped or not _in_word(text, len(clipped)):
        return clipped.rstrip()
    space = clipped.rfind(" ")
    return clipped[:space].rstrip() if space > len(clipped) // 2 else clipped


def _one_line(text: str) -> str:
    """``text`` with each run of whitespace one space, stripped."""
    if text.isprintable() and "  " not in text:
        return text.strip()
    return _WS.sub(" ", text).strip()


def _in_word(text: str, index: int) -> bool:
    """Whether a cut before ``text[index]`` falls inside a word, a version, a path or a code."""
    before, after = text[index - 1], text[index]
    if _word_char(before):
        return _word_char(after) or (
            after in _JOINERS and index + 1 < len(text) and _word_char(text[index + 1])
        )
    return before in _JOINERS and _word_char(after) and index > 1 and _word_char(text[index - 2])


_JOINERS = frozenset("./:-")  # marks that join the parts of one token: 1.2.3, a/b.py:4


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _window(line: str, limit: int) -> str:
    """``line`` cut to about ``limit`` characters around its first strong signal."""
    if len(line) <= limit:
        return line
    found = (pattern.search(line[:_LINE_SCAN]) for pattern in (_ERROR, _COUNTS, _CONSTRAINT, _UNIT))
    anchor = next((match.start() for match in found if match is not None), 0)
    # Keep the start (the subject) when the signal is near it; else centre on it.
    start = (
        0 if anchor + limit // 8 < limit else max(0, min(anchor - limit // 4, len(line) - limit))
    )
    end = start + limit
    # Between words, so that no code, path or word is shown in part ("BA…", "…mnants").
    reach = limit // 4
    if start and _in_word(line, start):
        start = next((i for i in range(start, start + reach) if not _in_word(line, i)), start)
    if len(line) - end <= reach:
        end = len(line)  # a few more characters end the line: better than a cut word
    if 0 < end < len(line) and _in_word(line, end):  # at a space, else outside a word
        space = line.rfind(" ", max(1, end - reach), end)
        outside = (i for i in range(end - 1, max(0, end - reach), -1) if not _in_word(line, i))
        end = space if space > 0 else next(outside, end)
    piece = line[start:end].rstrip()
    return (_ELLIPSIS if start else "") + piece + (_ELLIPSIS if end < len(line) else "")


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return _one_line(value)
    return json.dumps(value)


def _shorten_paths(line: str, width: int) -> str:
    """A long line with its long paths by their last directories (``…/jobs/a_test.exs:12``)."""
    if len(line) <= width:
        return line
    pieces: list[str] = []
    done = 0
    for match in _TOKEN.finditer(line, endpos=_LINE_SCAN):
        token = match.group()
        if len(token) <= width // 2 or len(token) > _TOKEN_CAP or not _path_kind(token):
            continue
        tail = _path_tail(token, width // 2)
        if tail:
            pieces += [line[done : match.start()], tail]
            done = match.end()
    return "".join(pieces) + line[done:] if pieces else line


def _clip_middle(text: str, limit: int, *, head_share: float = 1 / 3) -> str:
    """``text`` within ``limit`` characters, its middle cut, whole words when possible."""
    if len(text) <= limit or limit < 12:
        return text
    whole = _clip_middle_words(text, limit, head_share)
    # Each ellipsis past the first takes two bytes more than the one the caller counted.
    over = utf8_len(whole) - len(whole) - 2
    if over > 0:
        whole = _clip_middle_words(text, limit - over, head_share)
    if whole:
        return whole
    tail = int((limit - 1) * (1 - head_share))
    return text[: limit - 1 - tail] + _ELLIPSIS + text[len(text) - tail :]


def _clip_middle_words(text: str, limit: int, head_share: float) -> str:
    """Whole words from both ends of ``text`` within ``limit``; "" when the end keeps nothing."""
    if len(text) > 2 * _LINE_SCAN:  # its ends are all that can be kept: bounded work
        text = text[:_LINE_SCAN] + " " + text[-_LINE_SCAN:]
    words = text.split(" ")
    head: list[str] = []
    used = -1
    for word in words:
        if used + 1 + len(word) > int(limit * head_share):
            break
        head.append(word)
        used += 1 + len(word)
    rest = words[len(head) :]
    # The next argument whole when it fits, else a path's file and nearest directories
    # (then "…" for the rest).
    more = 2 if len(rest) > 1 else 0
    room = limit - max(0, used) - 1 - more
    path = "" if not rest else rest[0] if len(rest[0]) <= room else _path_tail(rest[0], room)
    if path:
        return " ".join([*head, path] + ([_ELLIPSIS] if more else []))
    room = limit - max(0, used) - 2  # the ellipsis and a space
    tail: list[str] = []
    for word in reversed(rest):
        if len(word) + 1 > room:
            tail.append(_path_tail(word, room))
            break
        tail.append(word)
        room -= len(word) + 1
    tail = [word for word in tail if word]
    if not tail:  # what does not fit whole is left out
        return " ".join([*head, _ELLIPSIS]) if head else ""
    return " ".join([*head, _ELLIPSIS + " " + " ".join(tail[::-1])]).replace(
        _ELLIPSIS + " " + _ELLIPSIS, _ELLIPSIS
    )


def _path_tail(word: str, room: int) -> str:
    """A path within ``room`` as ``…/`` and its last components; "" when that does not fit."""
    if "/" not in word[:-1] or "://" in word:
        return ""
    parts = word.rstrip("/").split("/")
    kept: list[str] = []
    size = 1 + (word[-1] == "/")
    for part in reversed(parts[1:]):
        if size + 1 + len(part) > room or not part:
            break
        kept.append(part)
        size += 1 + len(part)
    if not kept:
        return ""
    return _ELLIPSIS + "/" + "/".join(kept[::-1]) + ("/" if word[-1] == "/" else "")
