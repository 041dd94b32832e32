"""An offline, deterministic summarizer: the default handler, no model and no network.

It reads the prompt back with :func:`csum.prompt.parse_prompt` and keeps whole lines
(or the part of a long line around what matters), never bare tokens, so a value stays
with its subject: a version with its package, a line number with its path, an error
with its cause, a constraint ("never X", "X must not") as the sentence it is. Each
line is scored by what it holds (strict error signals, test counts, constraints and
decisions, identifiers such as paths with lines, versions, codes like ``AB1234`` or
``K9QX2Z``, hashes, URLs, numbers with units), by where it sits (first and last lines
of an output say most) and by how much it repeats; lines are then packed by score per
byte. A message with its place on the next line (a compiler error and its ``-->
src/a.rs:4:5``) is one unit, written place first. JSON results are flattened to
``key=value`` lines, one per record. A tool
result's lines always come after the call that produced them (``name(arguments)``).
Summaries already in the prompt (an earlier summary being summarized again) come
first and keep their place. A long line is cut to a window around what matters, a
long path in it written by its last directories and file (``…/core/frame.py:12``).

The output lists, in the prompt's order: ``User:`` requests, earlier summaries, each
call with its kept result lines indented below it (not indented when the call is all
there is), and the kept lines of the agent's answers, sentence by sentence. Room goes
to what a result says: the call line names what ran in as few bytes as it can (a lone
identifier argument without its key, no ``| head -20`` stage, a multi-line command by
its first line, ``~/`` for a home directory, cut between words and a long path by its
leading directories: ``…/jobs/a_test.exs``), a name said again counts less, the
records of a JSON list share one line, and no word is cut in half to fill the room.
Every line names its paths whole (or by their last directories when too long, as
above): a line never leans on the line above for its directories, since it may be
packed without it when the summary is summarized again. When the prompt is
over twice the budget, an answer's long line is written by its clauses that carry
something (:mod:`csum.handlers._extractive_prose`), back whole if room is left; its
code fences are left out and its links written as their urls. It uses the budget,
and never more than ``max_bytes`` UTF-8 bytes.

Every regular expression here runs on bounded pieces (tokens of at most
:data:`_TOKEN_CAP` characters, lines of at most :data:`_LINE_SCAN` characters) with no
nested unbounded repetition, so the time is linear in the prompt's length; long runs
call a checkpoint between lines so cancellation is honoured.
"""

from __future__ import annotations

import heapq
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import pairwise
from typing import Any, Final

import anyio
import anyio.lowlevel
import anyio.to_thread
import regex

from cast import SUMMARIZATION_TOOL_NAME
from csum._pairs import SUMMARIZED_CONTENT_PREFIX
from csum.archive import ARCHIVE_LINE_PREFIX, split_archive_line
from csum.handlers._base import SummarizeHandler
from csum.handlers._extractive_code import (
    CodeMark,
    code_lines,
    declares_dependency,
    focus_bonus,
    focus_line,
    without_echo,
    written_lines,
)
from csum.handlers._extractive_prose import compact_prose, is_fence, plain_links
from csum.handlers._extractive_results import (
    amounts_bonus,
    is_amounts_object,
    is_contact,
    is_relevance_score,
    labelled_records,
    literal_records,
    take_documents,
    title_bonus,
)
from csum.handlers._extractive_runs import (
    braced_value_bonus,
    call_line,
    count_follows,
    drop_zero_counts,
    echoed_command_bonus,
    failure_header_bonus,
    favour_run_ends,
    fit_command,
    outcome_over_call,
    refusal_bonus,
    strip_banner,
    strip_colours,
    total_row_bonus,
)
from csum.handlers._extractive_salience import SECTION_BONUS, opens_section
from csum.prompt import CONTEXT_TAG, PromptEntry, PromptFormatError, parse_prompt

__all__ = ["extractive", "summarize_extractive"]

USER_PREFIX: Final = "User: "
"""Prefix of a request line in the summary."""
RESULT_INDENT: Final = "  "
"""Indent of a tool result's kept lines, under the call that produced them."""

_THREAD_THRESHOLD = 64 * 1024  # characters of prompt from which a worker thread is used
_CHECK_EVERY = 256  # lines between two cancellation checkpoints
_TOKEN_CAP = 256  # longer tokens are not classified (bounded work per token)
_CACHED_TOKEN = 64  # tokens up to this long have their class cached
_CACHED_LINE = 400  # lines up to this long have their signals cached
_LINE_SCAN = 2048  # characters of a line examined by the line-level patterns
_LINE_WINDOW = 220  # a longer line is cut to this many characters around what matters
_MIN_WINDOW = 80  # ... or fewer under a small budget, never below this
_DEFINITION_BONUS = 3.0  # score added to a file listing's definitions (def, class, fn) ...
_WRITTEN_BONUS = 6.0  # ... to its lines the call wrote (an edit's new lines) ...
_LISTING_EDGE_BONUS = 6.0  # ... and to its unnumbered first and last lines (file, outcome)
_RISING_SHARE = 0.9  # share of a listing's numbers that rise from line to line
_WRITTEN_MIN = 8  # characters a line of a call's arguments needs to be matched as written
_RANK_BONUS = 4.0  # score added to a list's first record, fading: 4, 2, 1.3 ...
_RECORD_LABEL = 40  # characters a label may take before a line's JSON list of records
_PROSE_SHARE = 0.8  # share of letters and spaces from which a tool's line reads as prose
_SENTENCE_MIN = 80  # a prose line longer than this is split into its sentences
_SENTENCE_PIECE = 12  # ... at sentence ends at least this far apart ("Edit applied.")
_CUT_SHARE = 0.9  # a line that does not fit is cut to the room if this share of it fits
_MIN_PIECE = 16  # below this many bytes of room, a cut line says too little
_ARG_CAP = 200
_CALL_SHARE = 0.5  # share of the budget the call line may take (it still comes first)
_MIN_CALL = 24  # ... but never less than this many bytes
_MIN_SHARED_CALL = 48  # ... nor, for each of several calls sharing a quarter, than this
_CALLS_SHARE = 0.25  # share of the budget the call lines of many calls share
_CODE_WEIGHT = 3.0  # score a call's code (a booking, an order) gives its best result line
_COST_BASE = 48  # bytes added to every line's cost when ranking: favours full lines a little
_FIELD_COST_BASE = 8  # ... and to a JSON field's: the fields of an open record come cheap
_JSON_LINE = 60  # characters of key=value pairs per line of a flattened JSON object
_JSON_RECORD = 400  # ... and of a record in a list, kept whole up to this
_PRIOR_SHARE = 0.6  # share of the budget earlier summaries may take before anything else
_PRIOR_KEEP_SCORE = 4.0  # an earlier summary's line scoring this keeps its place first ...
_PRIOR_SCORE = 100.0  # ... with this score (above any new line)
_USER_BONUS = 3.0  # score added to what the user said (requests, constraints)
_IDENT_WEIGHT = 1.5  # score per identifier in a line ...
_IDENT_CAP = 6.0  # ... up to this
_NAME_REPEAT = 1.0  # an identifier seen N times above counts 1 / (1 + this * N)
_PATH_WEIGHTS = (0, 1, 2)  # identifiers a path counts for: without, with a line number
_ERROR_SCORE = 6.0  # score added to a line with a strict error signal ...
_ERROR_CONTEXT = 3  # ... and to the next lines: 3, 2, 1
_HUNK_CONTEXT = 40  # bytes of a diff hunk header's context (the enclosing function) kept
_LOCATION_ABOVE = 2  # lines above an error looked at for its place (a path with a line)
_FIELD_REPEAT = 0.5  # a field's score is divided by 1 + this times its key's repeats
_OPENER_SHARE = 0.75  # a field opens its record's line if worth this share of the best
_FIELD_EARLY_BONUS = 1.0  # ... and, fading, to a JSON result's early fields
_EMPTY_FIELD = 0.2  # weight of a JSON field saying nothing (null, "", a relevance score)
_FILLER_SCORE = 0.1  # score of a line with nothing in it (read only to use the budget)
_EMPTY_EDGE_SCORE = 0.5  # ... or of such a line at an output's start or end
_FILLER_MAX = _EMPTY_EDGE_SCORE  # lines up to this score only take what is left at the end
_PENDING_SCORE = 3.0  # score added to a line saying what is still to do, and below it ...
_PENDING_LINES = 8  # ... to this many lines
_SAME_START = 32  # characters two lines share at their start to count as one repeated
_EDGE_BONUS = 0.5  # score added to an output's first and last two lines
_EARLY_BONUS = 3.0  # ... and, fading, to its early lines
_ELLIPSIS = "…"
_LIST_KEY = "\0"  # marks a list's path among the open records' paths
_LOCATION_TAIL = 48  # characters a location line may hold after its place
_LOCATION_WORDS = 2  # ... and words: more is a message of its own (grep's match)
_REPACKS = 3  # packings again with the bytes rendering saved
_COMPACT_SHARE = 0.5  # an answer's line longer than this share of the window is compacted
_COMPACT_RATIO = 2.0  # ... when the prompt is more than this many times the budget

_COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell", "bash", "commandline", "query"})
_QUIET_KEYS = frozenset(
    {"description", "timeout", "run_in_background", "dangerouslydisablesandbox", "replace_all"}
)
_FLAGS = frozenset({"true", "false", "null", "none", "True", "False", "None"})
_HUMAN_ROLES = frozenset({"human", "user"})
_PLAIN_TEXT_ROLE = "text"  # the role given to a prompt that is not ours

# --- patterns (all linear: bounded input, no nested unbounded repetition) -----------

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
# A line that says it is a warning ("Warning: could not open the cache"): not an error.
_WARNING = regex.compile(r"\W{0,6}+(?i:warn(?:ing)?+)\b")
_EXIT_STATUS = regex.compile(
    r"(?i)\W{0,6}+exit(?:ed)?+[ ](?:with[ ])?+(?:code|status)[ ]?+\d{1,4}+\W{0,6}+"
)
_OUTCOME = regex.compile(r"(?i)\b(?:passed|passing|failed|failing|failures?|errors?|skipped)\b")
_PENDING = regex.compile(
    r"(?i)\b(?:next[ ]steps?|remaining[ ](?:tasks?|work|items?|steps?)|still[ ](?:to[ ]do|pending)"
    r"|(?:tasks?|work|items?)[ ](?:left|pending|remaining)|to[ ]do:|todo:|not[ ]yet[ ]done)"
)
_CAUSE = regex.compile(r"(?i)\b(?:caused[ ]by|because|due[ ]to|reason:|hint:|expected[ ])")
_CONSTRAINT = regex.compile(
    r"(?i)\b(?:do[ ]not|don't|never|must|should[ ]not|shouldn't|avoid|cannot|can't|"
    r"may[ ]not|is[ ]required|decided|decision|prefer)\b"
)
_CODE_LINE = regex.compile(
    r"""
    ^\s{0,40}(?:def|class|import|from|return|const|let|var|function|fn|pub|if|elif|else
        |for|while|try|except|catch|case|switch|defp?|defmodule|end|@\w+|\#include)\b
  | ^\s{0,40}[.#][\w-]{1,60}[ ]?\{
  | ^\s{0,40}[\w-]{1,40}:[ ][^;]{0,200};\s*$
  | [{;]\s*$
    """,
    regex.VERBOSE,
)
_LONG_LISTING = regex.compile(  # ls -l: mode, links, owner, group, size, date, name
    r"^(?P<type>[-dlcbps])[rwxsStT-]{9}+[@+.]?+[ ]++\d++[ ]++\S++[ ]++(?:\S++[ ]++)?+"
    r"\d++(?:,[ ]*+\d++)?+[ ]++\w{3}+[ ]++\d{1,2}+[ ]++(?:\d{1,2}:\d{2}|\d{4})[ ]++"
    r"(?P<name>.{1,400}+)$"
)
_TOTAL_LINE = regex.compile(r"total[ ]\d{1,12}+")
_NUMBERED = regex.compile(r"^\s{0,8}\d{1,7}(?:→|:|\t)")  # a file listing: "  12→", "12:"
_DEFINITION = regex.compile(  # what a file defines: "def f(", "pub async fn g", "class A"
    r"\s{0,40}+(?:(?:export|pub(?:\([a-z]{1,8}+\))?+|public|private|protected|static|async"
    r"|abstract|default)[ ]++){0,3}+(?:def|defp|defmodule|defmacro|class|function|fn|func"
    r"|struct|enum|trait|interface|impl|type|module)[ <]++[A-Za-z_]"
)
_EMPTY_NUMBERED = regex.compile(r"\d{1,7}(?:→|:|\t)?+\s*+")
_FRAME = regex.compile(r'^\s*File "([^"]{1,400})", line (\d{1,7})')
_KEY_VALUE = regex.compile(r"[A-Za-z_][\w.-]{0,80}+=[^=\s]")
_BACKTICKED = regex.compile(r"`[^`\n]{2,200}+`")
_DIFF_LINE = regex.compile(r"^(?:@@[ ]-\d|[+-](?![+-]{2}[ ])\S?)")
_HUNK = regex.compile(r"@@[ ]-\d{1,9}+(?:,\d{1,9}+)?+[ ]\+\d{1,9}+(?:,\d{1,9}+)?+[ ]@@")
_DIFF_FILE = regex.compile(r"^\+\+\+[ ](?!/dev/null)")  # "+++ b/src/a.py": the file changed
_DIFF_NOISE = regex.compile(r"^(?:diff[ ]--git[ ]|---[ ]|index[ ][0-9a-f]{4,40}+\.\.)")
_MARKDOWN = regex.compile(r"\*\*|^#{1,6}[ ]|^[ ]*[-*+][ ](?=\S)")
# "__bold words__": a pair around a phrase (a dunder like __init__ holds no space).
_UNDERSCORE_BOLD = regex.compile(r"(?<!\w)__(?=\S)([^_\n]*?[ ][^_\n]*?)(?<=\S)__(?!\w)")
# JSON keys (of at most _TOKEN_CAP characters) that say what kind of value a field holds.
_ID_KEY = regex.compile(
    r"(?i:(?:^|[_-])(?:id|ids|number|no|code|ref|name|status|state|type|error|reason))$"
    r"|(?:Id|Ids|Number|Code|Ref|Name|Status|State|Type|Error|Reason)$"
)
_AMOUNT_KEY = regex.compile(
    r"(?i:amount|price|total|balance|cost|fee|count|quantity|qty|size|limit|remaining|paid"
    r"|refund|score)s?$"
)
_TIME_KEY = regex.compile(r"(?i:_at|_on|time|timestamp|created|updated)$|At$")
_WORD_VALUE = regex.compile(r"[A-Za-z][A-Za-z_ -]{0,23}")
_DIGITS = regex.compile(r"\d++")
_VALUES = regex.compile(r"=[^ ()]*+")  # a field's values, to compare its keys alone
_DATE = regex.compile(r"\d{4}-\d{2}-\d{2}\b")
_STDERR_REDIRECT = regex.compile(r"[ ]?+(?:2>&1|2>[ ]?+/dev/null|&>[ ]?+/dev/null)(?=[ ;|)&]|$)")
# A pipeline's last stage that only shortens the output: "| head -20", "| tail -n 50".
_OUTPUT_LIMIT = regex.compile(r"[ ]?+\|[ ]?+(?:head|tail)(?:[ ]++-[nc]?+[ ]?+\d{1,9}+)?+[ ]*+$")
_HEREDOC = regex.compile(r"<<-?+[ ]?+['\"]?+\w{1,40}+['\"]?+[ ]*+$")  # "cat <<'EOF'" ending a line
_BARE_TAG = regex.compile(r"</?+[A-Za-z][\w:-]{0,40}+[ ]?+/?+>")
# The end of a sentence: its mark, spaces, then a capital, a digit or a quote.
_SENTENCE_END = regex.compile(r"(?<=[a-z0-9)\]`*][.!?])[ ]++(?=[A-Z0-9\"'`(*])")
# A home directory ("/home/ana/", "/Users/ana/"): "~/" says it in two bytes.
_HOME = regex.compile(r"(?<![\w.~-])/(?:home|Users)/[^/\s\"']{1,64}+/")
# A line naming a place: spaces or box rules, maybe an arrow, "at" or "in", then a token.
_LOCATION_LINE = regex.compile(
    r"[\s│┃║|>\u203a»•·]{0,40}+(?:-->[ ]?+|at[ ]++|in[ ]++)?+([^\s\"'`,;()\[\]{}<>|]++)"
)
_WS = regex.compile(r"\s++")
_LONE_CALL = regex.compile(r"[A-Za-z_][\w.:-]{0,80}+\(.*(?:\)|…)$")  # "bash(ls -la)"
# Leading box rules and quote marks (no information), a trailing printed "\r".
_DECORATION = regex.compile(r"^[\s│┃║|>\u203a»•·]{1,12}+(?=\S)|(?:\\r){1,4}+$")
_WORDS = regex.compile(r"\w++")
# A log line's clock time and routine level: the same on every line, not what it says.
_LOG_PREFIX = regex.compile(
    r"^(?:\d{4}-\d{2}-\d{2}[T ])?+\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?+(?:Z|[+-]\d{2}:?\d{2})?+[ ]"
    r"(?:\[?(?i:info|debug|trace|notice)\]?:?[ ])?+"
)


# --- text helpers -------------------------------------------------------------------


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _clip_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` UTF-8 bytes."""
    if limit <= 0:
        return ""
    if _utf8_len(text) <= limit:
        return text
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def _clip(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes, ending with an ellipsis when it was cut."""
    if _utf8_len(text) <= limit:
        return text
    return _clip_bytes(text, limit - len(_ELLIPSIS.encode("utf-8"))).rstrip() + _ELLIPSIS


def _clip_whole_words(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes, cut only between words ("" when not even its
    first word fits): a path or a code cut inside says nothing, or something wrong."""
    clipped = _clip(text, limit)
    if clipped == text:
        return text
    space = clipped.rfind(" ", 0, len(clipped) - 1)
    if space <= 0:
        return ""
    return clipped[:space].rstrip(" ,;:=") + _ELLIPSIS


def _clip_at_word_end(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` bytes that does not end inside a
    word ("... cut its", not "... cut its benc"); cut at the byte when a word longer than
    half the room would be lost."""
    clipped = _clip_bytes(text, limit)
    if clipped == text:
        return text
    if not clipped or not _in_word(text, len(clipped)):
        return clipped.rstrip()
    space = clipped.rfind(" ")
    return clipped[:space].rstrip() if space > len(clipped) // 2 else clipped


def _clean(text: str) -> str:
    # Lone surrogates cannot be encoded; the output must be valid UTF-8.
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _one_line(text: str) -> str:
    return _WS.sub(" ", text).strip()


# --- scoring ------------------------------------------------------------------------


def _identifiers(line: str, named: dict[str, int] | None = None) -> float:
    """How many identifiers the line holds (paths, versions, codes, ids, URLs...); with
    ``named`` (how often each was seen in the lines above), a name said again counts
    less each time (a column list repeated, the same host on every line)."""
    if named is None:
        found: float = sum(weight for _, _, weight in _identifier_spans(line))
    else:
        found = 0.0
        for start, end, weight in _identifier_spans(line):
            token = line[start:end]
            seen = named.get(token, 0)
            named[token] = seen + 1
            found += weight / (1 + seen * _NAME_REPEAT)
    found += len(_BACKTICKED.findall(line, endpos=_LINE_SCAN))
    return found + len(_UNIT.findall(line, endpos=_LINE_SCAN))


def _identifier_spans(line: str) -> Iterator[tuple[int, int, int]]:
    """Where the line's identifiers are: (start, end, weight), a path with a line
    number weighing 3 (where to look next)."""
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
    identifier = (
        "://" in token
        or "=" in token[1:]
        or _VERSION.fullmatch(token)
        or _CODE.fullmatch(token)
        or _HEX.fullmatch(token)
        or (_ID.fullmatch(token) and any(c.isdigit() for c in token))
        or (_ID.fullmatch(token) and "_" in token)
        or _EXCEPTION_NAME.fullmatch(token)
        or _NAME.fullmatch(token)
        or (not token.islower() and not token.isupper() and _CAMEL.fullmatch(token))
    )
    return 1 if identifier else 0


# Tokens recur (a name on many lines, a summary summarized again): short ones are
# classified once; the cache holds at most 8192 of them (under a megabyte).
_cached_weight = lru_cache(maxsize=8192)(_token_weight)


def _path_kind(token: str) -> int:
    """0: not a path; 1: a path; 2: a path with a line (``src/a.py:12``,
    ``lib/x.ex:12:5:pattern``)."""
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


def _score(
    line: str,
    *,
    listing: bool,
    diff: bool,
    prose: bool = False,
    named: dict[str, int] | None = None,
) -> float:
    """How much a line is worth keeping (0: not at all): what its identifiers are worth
    (less for names said above, with ``named``), then what its kind earns."""
    scan = line[:_LINE_SCAN]
    score = min(_IDENT_CAP, _IDENT_WEIGHT * _identifiers(scan, named))
    signals = _cached_signals if len(scan) <= _CACHED_LINE else _line_signals
    verdict, earned = signals(scan, listing, diff, prose)
    return verdict if verdict is not None else score + earned


def _line_signals(scan: str, listing: bool, diff: bool, prose: bool) -> tuple[float | None, float]:
    """What a line's kind earns, apart from its identifiers: (the whole score when its
    kind alone says it, else None; what it adds to its identifiers' score)."""
    earned = 0.0
    if diff:
        if _DIFF_FILE.match(scan):
            return 9.0, 0.0  # which file a hunk changes: said once, by this line
        if _DIFF_NOISE.match(scan):
            return 0.0, 0.0  # the same file again, or blob hashes
        if _DIFF_LINE.match(scan):
            # The hunk's place, then what it adds (the new code), then what it removes.
            earned += 4.0 if scan.startswith("@@") else 3.5 if scan.startswith("+") else 2.0
    code = listing or bool(_CODE_LINE.search(scan))
    if not code and not _WARNING.match(scan) and _ERROR.search(scan):
        earned += _ERROR_SCORE
    if _COUNTS.search(scan):
        # In an answer, "3 tests added" counts work done; what was run and how it went
        # ("297 passed, 0 failures") is a result, as in any tool output.
        earned += 5.0 if not prose or _OUTCOME.search(scan) else 3.0
    if _CONSTRAINT.search(scan) and not code:
        earned += 4.0
    if _CAUSE.search(scan):
        earned += 2.0
    return None, earned + _class_bonus(scan) + _run_bonus(scan, code=code)


# Lines recur (a summary's lines when it is summarized again, a log's repeated lines):
# short ones have their signals cached, at most 4,096 of them (about two megabytes).
_cached_signals = lru_cache(maxsize=4096)(_line_signals)


def _run_bonus(scan: str, *, code: bool) -> float:
    """Score a command's line earns by its kind (:mod:`._extractive_runs`); a refusal
    only outside code (``raise ValueError("invalid id")`` is code, not an outcome)."""
    bonus = braced_value_bonus(scan) + failure_header_bonus(scan) + total_row_bonus(scan)
    return bonus if code else bonus + refusal_bonus(scan)


# --- line classes -------------------------------------------------------------------
# Kinds of lines that say more (or less) than their identifiers alone tell: a package
# pinned to a version, a named measurement, a place given as "line N of FILE", a
# one-line JSON record; and routine log lines, whose timings and counts are routine.

_PIN = regex.compile(  # numpy==1.26.4, left-pad@1.3.0, serde 1.0.197, "Python 3.11.7"
    r"(?<![\w.-])[A-Za-z][\w.-]{0,80}+(?:(?:==|>=|<=|~=|!=|=|@)v?+\d++(?:\.\d++)++"
    r"|[ ]v?+\d++\.\d++\.\d++(?![.\d]))"  # three parts: "Trying 10.0.0.7" is an address
)
_MEASURED = regex.compile(  # a number with a unit of time, size, share or rate
    r"(?i:\b\d+(?:[.,]\d+)?+[ ]?(?:ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hours?"
    r"|[KMGT]i?B|bytes|%|req/s|ops/s|rps|qps|tok/s|tokens/s)(?![\w/]))"
)
_MEASURE_NAME = regex.compile(  # ... in a line that says it is a measurement of something
    r"(?i:\b(?:measured|latency|throughput|p\d{2}|peak|average|mean|median|rss|usage"
    r"|benchmark(?:ed)?)\b)"
)
_LOCATED = regex.compile(  # "line 12 of src/a.py", "config.yaml, line 3", "a.py at line 7"
    r"(?i:\bline[ ]\d{1,7}[ ](?:of|in)[ ][\w./\\-]{1,200}\.\w{1,8}\b"
    r"|[\w./\\-]{1,200}\.\w{1,8},?[ ](?:at[ ])?line[ ]\d{1,7}\b)"
)
_ROUTINE_LOG = regex.compile(  # "2024-05-02 14:03 INFO", "12:00:01.5 [debug]", "[INFO] "
    r"^\W{0,4}(?:(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?+)?+)?+"
    r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?+)(?:Z|[+-]\d{2}:?\d{2})?+\]?[ ]{1,4}+"
    r"\[?(?i:info|debug|trace|notice|verbose)\]?:?(?:[ ]|$)"
    r"|\[(?:INFO|DEBUG|TRACE|NOTICE)\][ ]|(?:INFO|DEBUG|TRACE):[ ])"
)
_CLASS_BONUS = 3.0  # score added to a pin, a named measurement or a "line N of FILE"
_RECORD_BONUS = 1.5  # ... and to a one-line JSON record (its fields count too)


def _class_bonus(scan: str) -> float:
    """Score a line earns by its kind: a package pinned to a version, a measurement
    with its name, a place given in words (``line 12 of src/a.py``)."""
    bonus = 0.0
    if _PIN.search(scan) or declares_dependency(scan):
        bonus += _CLASS_BONUS
    if _MEASURED.search(scan) and _MEASURE_NAME.search(scan):
        bonus += _CLASS_BONUS
    if _LOCATED.search(scan):
        bonus += _CLASS_BONUS
    return bonus


def _undecorated(line: str) -> str:
    """``line`` without its leading box rules, quote marks or bullets and a trailing
    escaped carriage return (:data:`_DECORATION`); read only when it may hold them."""
    if line[:1].isalnum() and not line.endswith("\\r"):
        return line
    return _DECORATION.sub("", line)


def _is_routine_log(line: str) -> bool:
    """Whether ``line`` is a log line at a routine level (INFO, DEBUG, TRACE...)."""
    return _ROUTINE_LOG.match(line[:_LINE_SCAN]) is not None


def _log_message(line: str) -> str:
    """A routine log line without its time and level (scored on what it says: the
    clock's numbers are no count of tests)."""
    match = _ROUTINE_LOG.match(line[:_LINE_SCAN])
    return line if match is None else line[match.end() :]


def _routine_score(line: str, score: float) -> float:
    """A routine log line's score without what its numbers with units earned: timings
    and counts are what such lines always print. What it names (a migration, a
    module), an error, a test count or a constraint in it still counts."""
    scan = line[:_LINE_SCAN]
    found = _identifiers(scan)
    numbers = len(_UNIT.findall(scan, endpos=_LINE_SCAN))
    earned = min(_IDENT_CAP, _IDENT_WEIGHT * found) - min(
        _IDENT_CAP, _IDENT_WEIGHT * (found - numbers)
    )
    return max(0.0, score - earned - _class_bonus(scan))


def _record_text(line: str) -> str | None:
    """A one-line JSON object of scalars as ``key=value`` fields (its keys kept, its
    quotes and braces dropped); None for any other line."""
    text = line.strip()
    if len(text) > _LINE_SCAN or not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or len(value) < 2:
        return None
    if any(isinstance(item, dict | list) for item in value.values()):
        return None
    return " ".join(f"{key}={_scalar(item)}" for key, item in value.items())


# --- candidates ---------------------------------------------------------------------


@dataclass(slots=True)
class _Line:
    block: int
    order: int
    text: str
    score: float
    tier: int = 1  # 0: an earlier summary's line, packed before anything else
    taken: bool = False
    group: str | None = None  # a JSON record's path: its fields share one line
    whole: str | None = None  # the line before it was compacted, when it was


@dataclass(slots=True)
class _Block:
    """A unit of the output: an optional head line and its body lines."""

    head: str = ""
    head_score: float = 0.0
    indent: str = ""
    head_taken: bool = False
    lines: list[_Line] = field(default_factory=list)


def _in_word(text: str, index: int) -> bool:
    """Whether a cut before ``text[index]`` falls inside a word: between two of its
    letters, digits or underscores, or at a dot, slash, colon or dash joining two of
    them, so a version, path or code is never shown in part (``v2`` of ``v2.10.1``,
    ``lib/a`` of ``lib/a.rb:7``)."""
    before, after = text[index - 1], text[index]
    if _word_char(before):
        return _word_char(after) or (
            after in _JOINERS and index + 1 < len(text) and _word_char(text[index + 1])
        )
    return before in _JOINERS and _word_char(after) and index > 1 and _word_char(text[index - 2])


_JOINERS = frozenset("./:-")  # marks that join the parts of one token: 1.2.3, a/b.py:4


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _cut_between_words(text: str, end: int, reach: int) -> int:
    """Where to end a cut of ``text`` made at ``end``: there when that is not inside a
    word, else at the nearest space before it, or else the nearest mark between a word
    and what is not one, within ``reach`` characters; ``end`` when there is none (a
    single token longer than that, such as a hash, is cut inside)."""
    if end >= len(text) or end <= 0 or not _in_word(text, end):
        return end
    space = text.rfind(" ", max(1, end - reach), end)
    if space > 0:
        return space
    return next((i for i in range(end - 1, max(0, end - reach), -1) if not _in_word(text, i)), end)


def _window(line: str, limit: int) -> str:
    """``line`` cut to about ``limit`` characters around its first strong signal, its
    ends between words (:func:`_cut_between_words`); shown to its end when that is at
    most a quarter of the window further."""
    if len(line) <= limit:
        return line
    scan = line[:_LINE_SCAN]
    anchor = 0
    for pattern in (_ERROR, _COUNTS, _CONSTRAINT, _UNIT):
        match = pattern.search(scan)
        if match is not None:
            anchor = match.start()
            break
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
    end = _cut_between_words(line, end, reach)
    piece = line[start:end].rstrip()
    return (_ELLIPSIS if start else "") + piece + (_ELLIPSIS if end < len(line) else "")


@dataclass(frozen=True, slots=True)
class _Field:
    """One ``key=value`` of a flattened JSON result: fields of one record share a line
    headed by the record's path (``group``), so the path is written once."""

    group: str
    text: str
    weight: float


def _restates(parent: str, value: object) -> bool:
    """Whether ``value`` only repeats the key its record is filed under (``"id"`` equal to
    it, or ``"source": "paypal"`` under ``paypal_5521904``)."""
    if not parent or not isinstance(value, str) or not value:
        return False
    return value == parent or parent.startswith((value + "_", value + "-"))


def _field_weight(key: str, value: object) -> float:
    """How much a field says: identifiers and codes most, then what a key marks as an id,
    a name, a state or an amount; timestamps and empty values least."""
    if value is None or value in ("", [], {}) or is_relevance_score(key, value):
        return _EMPTY_FIELD  # nothing, or a search hit's relevance (its place says it)
    key = key[:_TOKEN_CAP]
    text = value if isinstance(value, str) else _scalar_or_json(value)
    weight = 1.0
    if isinstance(value, bool):
        weight = 0.8
    elif isinstance(value, int | float):
        if _AMOUNT_KEY.search(key):
            weight += 1.5
    elif _DATE.match(text):
        weight += 1.0
    elif _has_digit_and_letter(text[:_TOKEN_CAP]) and not is_contact(key, text):
        weight += 2.0  # an id or a code: user_42, ORD7731QX, K9QX2Z
    elif _WORD_VALUE.fullmatch(text):
        weight += 1.0  # a state or a choice: active, economy, yes
    if _ID_KEY.search(key):
        weight += 1.0
    weight += title_bonus(key)
    if _TIME_KEY.search(key):
        weight -= 1.0  # when a record was made says little about what it is
    if len(text) > _JSON_LINE:
        weight -= 0.5  # prose: said better by the fields around it
    if _ERROR.search(text[:_LINE_SCAN]):
        weight += 3.0
    return max(0.2, weight)


def _has_digit_and_letter(text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _flatten_json(
    value: object,
    path: str,
    out: list[_Field],
    *,
    depth: int = 0,
    said: frozenset[str] = frozenset(),
    parent: str = "",
) -> None:
    """Every scalar as a ``key=value`` field of its record (``path``); a small object of
    scalars (``paypal_1(amount=41)``) and a list of scalars are one field of the record
    holding them. Fields that repeat the record's key, or the call's own arguments
    (``said``, on the line above), are left out."""
    if depth > 12:
        out.append(_Field(path, "…", 0.2))
        return
    if isinstance(value, dict):
        for name, item in value.items():
            key = str(name)
            if isinstance(item, dict) and all(
                not isinstance(v, dict | list) for v in item.values()
            ):
                inner = [f"{k}={_scalar(v)}" for k, v in item.items() if not _restates(key, v)]
                weight = max((_field_weight(str(k), v) for k, v in item.items()), default=0.2)
                weight += amounts_bonus(key, item)
                out.append(_Field(path, f"{key}({' '.join(inner)})", weight))
            elif isinstance(item, list) and all(not isinstance(v, dict | list) for v in item):
                text = f"{key}={','.join(_scalar(v) for v in item)}"
                weight = max((_field_weight(key, v) for v in item), default=0.2)
                out.append(_Field(path, text, weight + (0.5 if len(item) > 1 else 0.0)))
            elif isinstance(item, dict | list):
                continue
            elif not _restates(parent, item):
                text = f"{key}={_scalar(item)}"
                if text not in said:
                    out.append(_Field(path, text, _field_weight(key, item)))
        for key, item in value.items():
            if isinstance(item, list) and any(isinstance(v, dict | list) for v in item):
                child = f"{path}.{key}" if path else str(key)
                _flatten_json(item, child, out, depth=depth + 1, said=said)
            elif isinstance(item, dict) and any(isinstance(v, dict | list) for v in item.values()):
                child = f"{path}.{key}" if path else str(key)
                _flatten_json(item, child, out, depth=depth + 1, said=said, parent=str(key))
    elif isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            text = ",".join(_scalar(v) for v in value)
            out.append(_Field(path, text, max((_field_weight("", v) for v in value), default=0.2)))
            return
        for index, item in enumerate(value):
            _flatten_json(item, f"{path}[{index}]", out, depth=depth + 1, said=said)
    else:
        out.append(_Field(path, _scalar(value), _field_weight("", value)))


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return _one_line(value)
    return json.dumps(value)


def _json_fields(
    content: str, said: frozenset[str] = frozenset(), documents: list[str] | None = None
) -> list[_Field] | None:
    """The fields of a JSON result, or None when ``content`` is not a JSON object or list;
    ``documents`` gets the texts it holds (:func:`take_documents`), left out of them."""
    text = content.strip()
    if not text or text[0] not in "{[":
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | list):
        return None
    out: list[_Field] = []
    try:
        if documents is not None:
            value = take_documents(value, documents)
        _flatten_json(value, "", out, said=said)
    except RecursionError:
        return None
    return out


def _literal_fields(value: object) -> list[tuple[str, str]]:
    """An object's fields as (record path, ``key=value``), as a JSON result's are."""
    out: list[_Field] = []
    try:
        _flatten_json(value, "", out)
    except RecursionError:
        return []
    return [(item.group, item.text) for item in out]


def _split_lines(text: str) -> list[str]:
    """Lines, also splitting at escaped newlines (``\\n``) of an output printed as a string."""
    lines = text.splitlines()
    if "\\n" not in text:
        return lines
    return [piece for line in lines for piece in line.split("\\n")]


def _sentences(lines: list[str], *, prose_only: bool = False) -> list[str]:
    """Prose lines split into their sentences, each a unit of its own: a paragraph's
    one sentence that matters is kept without the others; with ``prose_only``, only the
    lines that read as prose (mostly words, not code, not a numbered listing's)."""
    out: list[str] = []
    for line in lines:
        if len(line) <= _SENTENCE_MIN or (prose_only and not _is_prose(line)):
            out.append(line)
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line, endpos=4 * _LINE_SCAN):
            if match.start() - start >= _SENTENCE_PIECE and not count_follows(
                line[match.end() : match.end() + _SENTENCE_MIN]
            ):
                out.append(line[start : match.start()])
                start = match.end()
        out.append(line[start:])
    return out


def _reshape(lines: list[str], ranks: dict[str, int]) -> list[str]:
    """A tool's lines with two shapes made compact: a long listing's entry
    (``drwxr-xr-x 2 ann staff 64 May 2 10:01 src``) as its name alone, a directory's
    marked ``/`` (the mode, owner, size and date columns say little and cost most of the
    line); and a line holding a JSON list of records (a web search's ``Links: [{"title":
    ..., "url": ...}]``) as one line per record, so that each record is kept or dropped
    whole, with its keys; ``ranks`` gets each such record's place in its list (a search
    lists its best matches first)."""
    out: list[str] = []
    for line in lines:
        entry = _LONG_LISTING.match(line, endpos=_LINE_SCAN)
        if entry is not None:
            if entry.group("name") not in (".", ".."):
                directory = entry.group("type") == "d"
                out.append(entry.group("name") + ("/" if directory else ""))
            continue
        if _TOTAL_LINE.fullmatch(line):
            continue  # "total 48": the listing's blocks
        records = _record_list(line)
        if records is None:
            out.append(line)
            continue
        if not records[0].startswith("{"):
            out.append(records.pop(0))  # the list's label
        for rank, record in enumerate(records):
            ranks.setdefault(record, rank)
            out.append(record)
    return out


def _record_list(line: str) -> list[str] | None:
    """The records of a line holding a JSON list of objects (after an optional label),
    each as a one-line JSON object; None for any other line."""
    start = line.find("[{", 0, _RECORD_LABEL)
    if start < 0 or len(line) > 16 * _LINE_SCAN or not line.rstrip().endswith("}]"):
        return None
    try:
        value = json.loads(line[start:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return None
    label = line[:start].strip()
    return ([label] if label else []) + [json.dumps(item, ensure_ascii=False) for item in value]


def _is_prose(line: str) -> bool:
    """Whether a line reads as prose: mostly letters and spaces, not numbered, not code."""
    scan = line[:_LINE_SCAN]
    if _NUMBERED.match(scan) or _CODE_LINE.search(scan):
        return False
    wordy = sum(1 for c in scan if c.isalpha() or c == " ")
    return wordy >= _PROSE_SHARE * len(scan)


def _body_lines(
    content: str,
    block: int,
    check: Callable[[], None],
    *,
    tool: bool,
    width: int,
    said: frozenset[str] = frozenset(),
    written: frozenset[str] = frozenset(),
    focus: int | None = None,
    compact: bool = False,
) -> Iterator[_Line]:
    """The scored lines of one text (a tool result, an answer, a request); ``said``:
    ``key=value`` pairs the call line already shows; ``written``: lines the call wrote;
    ``compact``: long lines in their compact form (:func:`_compact_answer_line`)."""
    if tool:
        content = strip_colours(content)
    documents: list[str] = []
    fields = _json_fields(content, said, documents) if tool else None
    if fields is not None:
        yield from _field_lines(fields, block, check, width)
        # A page or a file inside the JSON: its lines, scored as a tool's output's are.
        after = len(fields)
        for document in documents:
            read = list(_body_lines(document, block, check, tool=True, width=width))
            for piece in read:
                piece.order += after
                yield piece
            after += len(read) + 1
        return
    raw = _split_lines(content)
    listing = False
    diff = False
    ranks: dict[str, int] = {}  # a record's place in its list
    marks: dict[str, CodeMark] = {}  # what the code tools' rules say of a line
    if not tool:
        raw = _sentences(raw)
    else:
        listing = sum(1 for line in raw[:50] if _NUMBERED.match(line)) >= min(5, len(raw))
        diff = any(line.startswith(("@@ -", "diff --git")) for line in raw[:200])
        raw, marks = code_lines(raw)
        if not diff:
            # A tool's prose (an agent's report, a fetched page, a tool's closing
            # advice) is split into sentences as an answer is; its code, logs and
            # listings are not (their lines are units already).
            raw = _sentences(literal_records(raw, _literal_fields), prose_only=True)
            raw = labelled_records(raw, ranks)
        if not diff and not listing:
            raw = _reshape(raw, ranks)
    places: dict[int, str] = {}  # a message's place, from the line below it
    numbered_span = _numbered_span(raw) if listing else None
    if tool and not listing and not diff:
        raw = _two_line_records(raw, check, width, places)
    seen: dict[str, int] = {}
    shapes: dict[str, int] = {}
    frame = ""
    after_error = 0
    above: list[_Line] = []  # the last lines yielded, for an error's location above it
    named: dict[str, int] = {}  # identifiers seen so far, and how often
    pending = 0
    last = len(raw) - 1
    opens = True  # whether the next line opens a section (after a blank line, a heading)
    for order, original in enumerate(raw):
        if order % _CHECK_EVERY == 0:
            check()
        line = original[: 4 * _LINE_SCAN]
        opening, opens = opens, opens_section(line)
        # What is still to do ("Next steps", "remaining tasks") is what the agent needs
        # next: a line saying so and the lines listed below it rank up, until a heading.
        if _PENDING.search(line[:_LINE_SCAN]):
            pending = _PENDING_LINES
        elif line.lstrip().startswith("#"):
            pending = 0
        if not tool:
            if is_fence(line):
                continue  # a code block's fence ("```python"): it says nothing
            # Markdown's marks, and its links as their url ("[a.com](https://a.com/x)").
            line = plain_links(_UNDERSCORE_BOLD.sub(r"\1", _MARKDOWN.sub("", line)))
        mark = marks.get(original)
        bare = _undecorated(line)
        routine = _is_routine_log(bare) and not (mark and mark.news)
        record = _record_text(line)
        if record is not None:
            line = record
            bare = _undecorated(line)
        line = _one_line(bare)
        if line[:1].isdigit():
            line = _LOG_PREFIX.sub("", line, count=1)
        if "/home/" in line or "/Users/" in line:
            line = _HOME.sub("~/", line)
        if tool and not diff:
            line = drop_zero_counts(strip_banner(line))
        if len(line) < 2 or not any(c.isalnum() for c in line[:200]):
            continue
        if line[0] == "<" and not any(c.isalnum() for c in _BARE_TAG.sub("", line[:200])):
            continue  # markup alone ("</output>"): it says nothing
        if listing and len(line) <= 12 and _EMPTY_NUMBERED.fullmatch(line):
            continue  # a file's empty line: its number alone
        if diff and line.startswith("@@"):
            line = _hunk_header(line)
        if seen.get(line):
            continue
        seen[line] = 1
        scored = _log_message(line) if routine else line
        score = _score(scored, listing=listing, diff=diff, prose=not tool, named=named)
        if mark is not None:
            score = max(0.0, score + mark.bonus)
        if routine:
            score = _routine_score(scored, score)
        elif record is not None:
            score += _RECORD_BONUS
        if numbered_span is not None:
            score += _listing_bonus(original, order, numbered_span, written, focus)
        if tool and not diff:
            score += echoed_command_bonus(line, order)
        rank = ranks.get(original)
        if rank is not None:
            score += _RANK_BONUS / (1 + rank)
        if pending and not listing:
            score += _PENDING_SCORE
            pending -= 1
        # The lines just below an error say what it was (the assertion, left and right,
        # the failing input): worth more while short, fading.
        if score >= _ERROR_SCORE and not listing and _ERROR.search(line[:_LINE_SCAN]):
            # An exit status alone ("Exit code 2") says how it ended, not what follows.
            after_error = 0 if _EXIT_STATUS.fullmatch(line[:80]) else _ERROR_CONTEXT
            if tool:
                _locate_error(above)
        elif after_error and len(line) <= _LINE_WINDOW:
            score += after_error
            after_error -= 1
        else:
            after_error = 0
        located = _FRAME.match(original)
        if located is not None:
            frame = f"{located.group(1)}:{located.group(2)}"
        elif frame and _EXCEPTION_NAME.match(line) and ":" in line[:120]:
            line = f"{frame}: {line}"
            frame = ""
            score += 2.0
        # The first and last lines of an output say most (commands, totals, verdicts).
        edge = not listing and (order < 2 or order >= last - 1)
        # Repeated shapes (the same line but for its numbers) are worth less each time.
        shape = _WORDS.sub("w", line[:120])
        repeats = shapes.get(shape, 0)
        shapes[shape] = repeats + 1
        # A progress line printed again with its status ("Opening connection to h:
        # Trying", then ": Done"): the same start as an earlier line.
        start = "\0" + line[:_SAME_START] if len(line) > _SAME_START else ""
        if start:
            repeats = max(repeats, shapes.get(start, 0))
            shapes[start] = shapes.get(start, 0) + 1
        if mark is None or not mark.distinct:
            score /= 1 + repeats / 2
        placed = False  # whether where the line sits adds to its score
        if score > 0:
            if mark is None or not mark.placeless:
                score += (_EDGE_BONUS if edge else 0.0) + _EARLY_BONUS / (1 + order / 10)
                placed = True
        else:
            # A line with nothing in it is kept only when room is left (an edge line
            # first), so that the budget is used.
            score = _EMPTY_EDGE_SCORE if edge else _FILLER_SCORE / (1 + order / 100)
        if order in places:
            line = _place_first(line, places[order])
        text = _shorten_paths(line, width)
        if placed and opening and order and len(text) <= width:
            # A section's first line says what it is about (a format-free prior), when
            # it is shown whole: a window of it may have left out what it was about.
            score += SECTION_BONUS
        item = _Line(block, order, _window(text, width), score)
        if mark is not None:
            item.group = mark.group
        if compact and len(text) > _COMPACT_SHARE * width:
            # An answer's long sentence by its clauses that carry something (its
            # identifiers, numbers, causes and constraints): more of them fit. Its
            # whole form comes back if room is left.
            short = _window(_compact_answer_line(text), width)
            if short != item.text:
                item.text, item.whole = short, item.text
        above = [*above[1 - _LOCATION_ABOVE :], item] if _LOCATION_ABOVE > 1 else [item]
        yield item


def _compact_answer_line(line: str) -> str:
    """An answer's line in its compact form (:func:`compact_prose`), unless it reports
    an error: an error keeps its whole message."""
    if _ERROR.search(line[:_LINE_SCAN]):
        return line
    return compact_prose(line[: 4 * _LINE_SCAN], _identifier_spans)


def _numbered_span(raw: list[str]) -> tuple[int, int] | None:
    """The first and last numbered line of a file listing, whose numbers rise line by
    line; None when they do not (clock times ``16:45:25`` opening log lines look
    numbered too, and are no file)."""
    orders: list[int] = []
    numbers: list[int] = []
    for order, line in enumerate(raw):
        match = _NUMBERED.match(line)
        if match is not None:
            orders.append(order)
            numbers.append(int(line[: match.end()].strip(" \t→:")))
    rising = sum(1 for a, b in pairwise(numbers) if b > a)
    if not orders or rising < _RISING_SHARE * (len(numbers) - 1):
        return None
    return orders[0], orders[-1]


def _listing_bonus(
    line: str,
    order: int,
    numbered_span: tuple[int, int],
    written: frozenset[str],
    focus: int | None = None,
) -> float:
    """What a line of a numbered file listing (a read, an edit's echo) is worth beyond
    its identifiers: its definitions say what the file holds, the lines the call wrote
    what it changed, and the unnumbered lines before and after the numbered ones
    (``numbered_span``: the first and last numbered line) which file it is and how the
    tool ended (``[File: a.py (23 lines total)]``, ``Edit applied.``), fading from the
    output's start and from the listing's end; and the lines near the one the call
    asked to see (``focus``, :func:`focus_bonus`)."""
    numbered = _NUMBERED.match(line)
    if numbered is None:
        first, last = numbered_span
        distance = order if order < first else order - last - 1
        return _LISTING_EDGE_BONUS / (1 + distance) if distance >= 0 else 0.0
    body = line[numbered.end() : numbered.end() + _LINE_SCAN]
    bonus = _DEFINITION_BONUS if _DEFINITION.match(body) else 0.0
    if written and body.strip() in written:
        bonus += _WRITTEN_BONUS
    if focus is not None:
        bonus += focus_bonus(line[: numbered.end()], focus)
    return bonus


def _location(line: str) -> str | None:
    """The place a line names when it names little else: a path with a line number,
    maybe after an arrow, ``at`` or ``in``, and a short tag (``test/a_test.exs:142``,
    ``--> src/main.rs:4:5``, ``lib/a.ex:9:5 #(App.start)``); None for any other line,
    such as grep's ``src/a.py:12: words of the match``, which says its own message."""
    match = _LOCATION_LINE.match(line, endpos=_LINE_SCAN)
    if match is None or len(line) - match.end() > _LOCATION_TAIL:
        return None
    if len(line[match.end() :].split(None, _LOCATION_WORDS)) > _LOCATION_WORDS:
        return None
    token = match.group(1).strip(_TRAIL)
    if len(token) > _TOKEN_CAP or _path_kind(token) != 2:
        return None
    return line[match.start(1) :].strip()


def _message_line(line: str, room: int) -> bool:
    """Whether a line could be what a location line locates: it says something, names
    no place of its own, and fits with the place in one window (``room`` characters)."""
    return (
        len(line.strip()) < room
        and any(c.isalnum() for c in line[:200])
        and not any(w == _PATH_WEIGHTS[2] for _, _, w in _identifier_spans(line))
    )


def _two_line_records(
    raw: list[str], check: Callable[[], None], width: int, places: dict[int, str]
) -> list[str]:
    """Tool output lines with a message and, on the next line, its place (a linter
    finding, a compiler error and its ``-->``, a failing test's header and its
    ``path:line``) joined into one unit, kept or left together, as either alone says
    half; only when both fit in one window (``width``). The message comes first, to be
    scored as it reads; ``places`` gets each joined line's place, by its index, to be
    written first (:func:`_place_first`)."""
    out: list[str] = []
    for index, line in enumerate(raw):
        if index % _CHECK_EVERY == 0:
            check()
        place = _location(line)
        if (
            place is not None
            and out
            and len(out) - 1 not in places
            and _message_line(out[-1], width - len(place))
        ):
            out[-1] = f"{out[-1].strip()} {place}"
            places[len(out) - 1] = _HOME.sub("~/", _one_line(place))
            continue
        out.append(line)
    return out


def _shorten_paths(line: str, width: int) -> str:
    """A line too long for its window with each path longer than half of it written by
    its last directories and file (``…/jobs/a_test.exs:12``), so that the window shows
    the file and what the line says of it, not leading directories cut inside."""
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


def _place_first(line: str, place: str) -> str:
    """A joined message and place as ``place message``: a compiler's own order, and the
    place survives a cut at the end."""
    if not line.endswith(" " + place):
        return line
    return f"{place} {line[: -len(place) - 1]}"


def _hunk_header(line: str) -> str:
    """A diff hunk's header as its place and the name of what encloses it:
    ``@@ -140,7 +140,8 @@ def apply_discounts(…``, not the whole signature."""
    match = _HUNK.match(line)
    if match is None:
        return line
    context = line[match.end() :].strip()
    cut = context.find("(")
    if cut > 0:
        context = context[: cut + 1] + _ELLIPSIS
    return f"{match.group().strip()} {_clip_whole_words(context, _HUNK_CONTEXT) or ''}".strip()


def _locate_error(above: list[_Line]) -> None:
    """The lines just above an error that name a place (``test/a_test.exs:142``, the
    failing test's file and line) say where it is: they rank up with it."""
    for line in above:
        if any(weight == _PATH_WEIGHTS[2] for _, _, weight in _identifier_spans(line.text)):
            line.score += _ERROR_CONTEXT


def _field_lines(
    fields: list[_Field], block: int, check: Callable[[], None], width: int
) -> Iterator[_Line]:
    """The scored fields of a JSON result, each a unit of its record's line."""
    repeats: dict[str, int] = {}
    shapes: dict[str, int] = {}
    for order, item in enumerate(fields):
        if order % _CHECK_EVERY == 0:
            check()
        text = _one_line(item.text)
        # The same field in many records (a currency, a shared origin) says it once.
        seen = repeats.get(text, 0)
        repeats[text] = seen + 1
        # The same key in record after record (flights[3].price, gift_card_N(amount)) is
        # worth less each time: room goes to other kinds of fields first.
        shape = _DIGITS.sub("0", item.group) + "|" + _DIGITS.sub("0", _VALUES.sub("", text[:200]))
        alike = shapes.get(shape, 0)
        shapes[shape] = alike + 1
        if alike and is_amounts_object(text):
            alike = 0  # ... but what the records are compared by (each one's prices) not
        score = item.weight / (1 + seen) / (1 + alike * _FIELD_REPEAT)
        if item.weight > _EMPTY_FIELD:  # an empty field or a relevance: only to fill
            score += _FIELD_EARLY_BONUS / (1 + order / 10)
        yield _Line(block, order, _window(text, width), score, group=item.group)


# --- collection ---------------------------------------------------------------------


def _arguments(args: str) -> dict[str, Any] | None:
    """A call's arguments as a JSON object (empty text: none); None when they are not
    one. Parsed once per call, for its line, its pairs and the lines it writes."""
    try:
        value = json.loads(args) if args.strip() else {}
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _render_call(name: str, args: str, value: dict[str, Any] | None, cap: int) -> str:
    """``name(command)`` for a command-like call, else ``name(key=value, ...)``; a call
    with one telling argument (an id, a path) as ``name(value)``: its name says what the
    value is. ``value``: ``args`` parsed (:func:`_arguments`)."""
    if value is None:
        return _clip(f"{name}({_one_line(args)})", cap)
    first: list[str] = []
    keyed: list[str] = []
    bare: list[str] = []
    room = cap - len(name) - 4  # the parentheses, and the ellipsis's two extra bytes
    for key, item in value.items():
        text = _HOME.sub("~/", _one_line(item)) if isinstance(item, str) else _scalar_or_json(item)
        lowered = str(key).lower()
        if lowered in _COMMAND_KEYS and isinstance(item, str):
            command = fit_command(_compact_command(item), room)
            first.insert(0, _clip_middle(command, room, head_share=0.75))
        elif isinstance(item, str) and "\n" in item.strip() and len(value) > 1:
            # A text of several lines beside other arguments (an edit's old and new
            # text, a file's content) is what the call writes, not what names it: the
            # other arguments (the path) do, and the result echoes what changed.
            continue
        elif lowered not in _QUIET_KEYS:
            keyed.append(f"{key}={_clip_middle(text, room)}")
            bare.append(_clip_middle(text, room) if _telling(text) else keyed[-1])
    line = f"{name}({', '.join(first + keyed)})"
    if len(line) > cap or (not first and len(bare) == 1):
        # Too long with its keys, or a lone argument: identifiers say more than their
        # keys in the same room (the call's name, or the result, names the keys again);
        # those densest in identifiers first, so a cut at the end loses the prose.
        line = f"{name}({', '.join(first + _identifiers_first(bare))})"
    return _clip(line, cap)


def _telling(text: str) -> bool:
    """Whether an argument's value says what it is without its key: an identifier
    (``ORD7731QX``, ``/src/app.py``), not a bare number or flag."""
    return (
        len(text) >= 5
        and any(c.isalpha() for c in text)
        and text not in _FLAGS
        and not any(c.isspace() for c in text)
    )


def _compact_command(command: str) -> str:
    """A shell command as short as it can be while still naming what ran: where its
    error output went (``2>&1``) and a last stage that only shortens its output
    (``| head -20``, ``| tail -n 50``) say nothing about what ran, and a command of
    several lines (a commit message's body, a heredoc) is named by its first."""
    lines = [line.strip() for line in command.strip().splitlines()[:3]]
    if len(lines) > 1:
        # A commit message's body, a heredoc, a script: its first line says what ran,
        # with the next when the first opens a quote or a heredoc (``-m "$(cat <<'EOF'``,
        # then the subject).
        head = lines[0]
        if lines[1] and (_HEREDOC.search(head) or head.count('"') % 2 or head.count("'") % 2):
            head = f"{head} {lines[1]}"
        command = head + _ELLIPSIS
    command = _HOME.sub("~/", _STDERR_REDIRECT.sub("", _one_line(without_echo(command)))).strip()
    for _ in range(4):  # "| tail -50 | head -5" at most: bounded work
        match = _OUTPUT_LIMIT.search(command)
        if match is None or match.start() == 0:
            break
        command = command[: match.start()].rstrip()
    return command


def _identifiers_first(values: list[str]) -> list[str]:
    """Argument values densest in identifiers (``user_42``, ``K9QX2Z``) first, prose
    last: a call line cut at its end then loses the prose."""
    return sorted(values, key=lambda value: -_identifiers(value) / (len(value) + 8))


def _argument_pairs(value: dict[str, Any] | None) -> frozenset[str]:
    """A call's scalar arguments (parsed, :func:`_arguments`) as ``key=value`` (as its
    flattened result writes them)."""
    if value is None:
        return frozenset()
    return frozenset(
        f"{key}={_scalar(item)}" for key, item in value.items() if not isinstance(item, dict | list)
    )


def _written_lines(value: dict[str, Any] | None) -> frozenset[str]:
    """The lines a call (its arguments parsed, :func:`_arguments`) writes (an edit's new
    text less what its old text held, a file's content), stripped: in a numbered listing
    of the result, the lines it changed."""
    return written_lines(value, _WRITTEN_MIN, 16 * _LINE_SCAN)


def _call_shows(head: str, pair: str) -> bool:
    """Whether the call line ``head`` shows the argument ``pair`` (``key=value``): with
    its key, as the call's lone argument (``get_order(ORD7731QX)``, whose name says
    what the value is), or as words leading several (``search(latest tokio, depth=2)``:
    a result echoing its query says it again)."""
    value = pair.split("=", 1)[1]
    if pair in head or head.endswith(f"({value})"):
        return True
    # A first argument of several shown without its key: words (a search's query) are
    # shown whole; a code still needs its key, which the result's field gives.
    return " " in value and f"({value}, " in head


def _clip_middle(text: str, limit: int, *, head_share: float = 1 / 3) -> str:
    """``text`` within ``limit`` characters, its middle cut: a path keeps its file name,
    a command (``head_share`` 3/4) its program and first arguments. Words are kept whole
    (:func:`_clip_middle_words`) when that keeps something at both ends."""
    if len(text) <= limit or limit < 12:
        return text
    whole = _clip_middle_words(text, limit, head_share)
    # Each ellipsis past the first takes two bytes more than the one the caller counted.
    over = _utf8_len(whole) - len(whole) - 2
    if over > 0:
        whole = _clip_middle_words(text, limit - over, head_share)
    if whole:
        return whole
    tail = int((limit - 1) * (1 - head_share))
    return text[: limit - 1 - tail] + _ELLIPSIS + text[len(text) - tail :]


def _clip_middle_words(text: str, limit: int, head_share: float) -> str:
    """``text`` within ``limit`` characters as whole words from its start (up to
    ``head_share`` of the room), an ellipsis, and whole words from its end, a path
    standing for itself by its last directories and file (``…/jobs/sync_test.exs``): a
    path, an id or a version cut inside names something that does not exist. "" when
    the end would keep nothing."""
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
    # The next argument, a path: its file and nearest directories (then "…" for the rest).
    more = 2 if len(rest) > 1 else 0
    room = limit - max(0, used) - 1 - more
    path = _path_tail(rest[0], room) if rest else ""
    if rest and len(rest[0]) <= room:
        path = rest[0]  # whole when it fits
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
    if len(head) + len(tail) == len(words):  # nothing left out but a path's directories
        return " ".join(head + tail[::-1])
    return " ".join([*head, _ELLIPSIS + " " + " ".join(tail[::-1])]).replace(
        _ELLIPSIS + " " + _ELLIPSIS, _ELLIPSIS
    )


def _path_tail(word: str, room: int) -> str:
    """A path within ``room`` characters as ``…/`` and its last components, the file
    at least; "" when that does not fit or ``word`` is not a path."""
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


def _scalar_or_json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return "…"


def _is_prior_summary(entry: PromptEntry) -> bool:
    if entry.kind == "tool_result" and entry.name == SUMMARIZATION_TOOL_NAME:
        return True
    return entry.kind == "text" and entry.content.startswith(SUMMARIZED_CONTENT_PREFIX)


def _collect(
    entries: tuple[PromptEntry, ...], max_bytes: int, check: Callable[[], None]
) -> list[_Block]:
    blocks: list[_Block] = []
    calls: dict[str, str] = {}
    arguments: dict[str, frozenset[str]] = {}
    written: dict[str, frozenset[str]] = {}
    focus: dict[str, int | None] = {}  # the line each call asked to see
    requests = [
        e
        for e in entries
        if e.role in _HUMAN_ROLES and e.kind == "text" and e.section != CONTEXT_TAG
    ]
    request_cap = max(48, min(600, max_bytes * 35 // 100 // max(1, len(requests))))
    call_count = _call_count(entries)
    call_cap = _call_cap(call_count, max_bytes)
    lone_cut = ""  # the line of a prompt's only call, cut to its share
    width = max(_MIN_WINDOW, min(_LINE_WINDOW, max_bytes // 3))
    # Room for less than the prompt says: an answer's long lines in their compact form.
    tight = sum(_utf8_len(e.content) + _utf8_len(e.args) for e in entries) > (
        _COMPACT_RATIO * max_bytes
    )
    for entry in entries:
        check()
        if entry.kind == "tool_call":
            if entry.name != SUMMARIZATION_TOOL_NAME:
                parsed = _arguments(entry.args)
                render = partial(_render_call, entry.name, entry.args, parsed)
                capped = render(call_cap)
                calls[entry.call_id] = call_line(capped, render, max_bytes, call_count)
                lone_cut = capped if call_count == 1 else ""
                arguments[entry.call_id] = _argument_pairs(parsed)
                written[entry.call_id] = _written_lines(parsed)
                focus[entry.call_id] = focus_line(parsed)
            continue
        if _is_prior_summary(entry):
            text = entry.content.removeprefix(SUMMARIZED_CONTENT_PREFIX)
            blocks.extend(_prior_blocks(text, len(blocks), call_cap))
        elif entry.section == CONTEXT_TAG:
            # The user's messages given as context stay in the chain beside the summary
            # (the instructions say not to summarize them): repeating them wastes it.
            continue
        elif entry.kind == "text" and entry.role in _HUMAN_ROLES:
            block = _Block()
            # An earlier summary of the user's messages ends with the line naming their
            # archived batch: it stays as it was and first, as in any earlier summary.
            text, archived = split_archive_line(entry.content.rstrip())
            for item in _body_lines(text, len(blocks), check, tool=False, width=width):
                if not item.text.startswith(USER_PREFIX):  # an earlier summary's line stays
                    item.text = USER_PREFIX + item.text
                item.score += _USER_BONUS  # what the user said: requests, constraints
                block.lines.append(item)
            if block.lines:
                first = min(block.lines, key=lambda ln: ln.order)
                cut = _clip_whole_words(first.text, request_cap) or _clip(first.text, request_cap)
                if cut != first.text:  # whole again if room is left at the end
                    first.text, first.whole = cut, first.text
                first.tier = 0  # the request itself comes first
            if archived:
                last = max((ln.order for ln in block.lines), default=-1) + 1
                block.lines.append(_Line(len(blocks), last, archived, _PRIOR_SCORE, tier=0))
            if block.lines:
                blocks.append(block)
        elif entry.kind == "tool_result":
            head = calls.pop(entry.call_id, "") or _render_call(
                entry.name or "tool", "", {}, call_cap
            )
            block = _Block(head=head, head_score=4.0, indent=RESULT_INDENT)
            block.lines = list(
                _body_lines(
                    entry.content,
                    len(blocks),
                    check,
                    tool=True,
                    width=width,
                    said=frozenset(
                        p for p in arguments.pop(entry.call_id, frozenset()) if _call_shows(head, p)
                    ),
                    written=written.pop(entry.call_id, frozenset()),
                    focus=focus.pop(entry.call_id, None),
                )
            )
            if not block.lines:
                outcome = "(empty)" if not entry.content.strip() else _first_line(entry.content)
                block.lines.append(_Line(len(blocks), 0, _window(outcome, 100), 0.5))
            favour_run_ends(block.lines)
            _credit_codes(block)
            blocks.append(block)
        elif entry.kind in ("text", "reasoning") and entry.content.strip():
            block = _Block()
            weight = 0.4 if entry.kind == "reasoning" else 1.0
            lines = _body_lines(
                entry.content, len(blocks), check, tool=False, width=width, compact=tight
            )
            for item in lines:
                item.score *= weight
                block.lines.append(item)
            blocks.append(block)
    for head in calls.values():  # calls without a result
        blocks.append(
            _Block(
                head=head,
                head_score=3.0,
                indent=RESULT_INDENT,
                lines=[_Line(len(blocks), 0, "(no result)", 3.0)],
            )
        )
    _drop_lone_indent(blocks)
    outcome_over_call(blocks, max_bytes, _utf8_len, lone_cut)
    return blocks


def _drop_lone_indent(blocks: list[_Block]) -> None:
    """A call alone in its summary needs no indent to tell its result lines from other
    blocks' lines: two bytes a line saved for what the result says."""
    if len(blocks) == 1:
        blocks[0].indent = ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return _one_line(line)
    return ""


# --- earlier summaries --------------------------------------------------------------


def _take_prior_rest(
    firsts: list[tuple[_Block, _Line]],
    room: int,
    cost: Callable[[_Block, _Line], int],
    take: Callable[[_Block, _Line], None],
) -> None:
    """After the requests: the rest of the earlier summaries' kept lines, still in
    their order (the older first), not the shortest first."""
    for block, line in firsts:
        if line.taken or line.score < _PRIOR_SCORE:
            continue
        need = cost(block, line)
        if need <= room:
            take(block, line)
            room -= need


def _head_codes(head: str) -> int:
    """How many codes (``JG7FMM``, ``HAT028``, ``ORD7731QX``: a booking, an order, a
    flight) a call line's arguments name."""
    _, _, args = head.partition("(")
    return sum(
        1
        for match in _TOKEN.finditer(args, endpos=_LINE_SCAN)
        if _CODE.fullmatch(match.group().rpartition("=")[2].strip(_TRAIL))
    )


def _credit_codes(block: _Block) -> None:
    """A call naming codes is worth its line even when its result says little: its
    best result line earns what the codes are worth, so the call line comes with it."""
    codes = _head_codes(block.head)
    if codes and block.lines:
        best = max(block.lines, key=lambda line: line.score)
        best.score += min(_IDENT_CAP, _CODE_WEIGHT * codes)


def _call_cap(calls: int, max_bytes: int) -> int:
    """Bytes a call line may take: up to half the budget for a single call; the call
    lines of several ``calls`` (earlier summaries' included, :func:`_call_count`) share
    a quarter of it, so that what the calls returned has the room."""
    cap = min(_ARG_CAP, int(max_bytes * _CALL_SHARE))
    if calls > 1:
        return max(_MIN_SHARED_CALL, min(cap, int(max_bytes * _CALLS_SHARE) // calls))
    return max(_MIN_CALL, cap)


def _call_count(entries: tuple[PromptEntry, ...]) -> int:
    """How many call lines the summary may hold: the prompt's calls and those of the
    earlier summaries in it."""
    calls = sum(1 for e in entries if e.kind == "tool_call")
    return calls + sum(_prior_calls(e.content) for e in entries if _is_prior_summary(e))


def _prior_calls(text: str) -> int:
    """How many call lines an earlier summary holds (lines with lines indented below)."""
    rows = [row for row in text.splitlines() if row.strip()]
    return sum(
        1
        for row, below in pairwise(rows)
        if not row.startswith(RESULT_INDENT) and below.startswith(RESULT_INDENT)
    )


def _prior_blocks(text: str, first: int, call_cap: int) -> list[_Block]:
    """An earlier summary (``text``, as this handler wrote it) read back as blocks
    numbered from ``first``: a line with lines indented below it is a call heading
    its result lines again, other lines stand alone.

    Each line is scored by what it says, as a new line would be. A line that still
    holds a strong signal (:data:`_PRIOR_KEEP_SCORE`: an error, a constraint, a count,
    several identifiers), and the archive line, keeps its place before anything new
    (tier 0), so summarizing again never ranks the earlier facts below new noise.
    The rest competes with the new lines by its score: once the summary is full, new
    facts take the room of earlier lines that said nothing much.
    """
    rows = [line.rstrip() for line in text.splitlines() if line.strip()]
    if (
        len(rows) > 1
        and _LONE_CALL.match(rows[0][:_LINE_SCAN]) is not None
        and not any(row.startswith(RESULT_INDENT) for row in rows)
    ):
        # A call alone in its summary is written without indents: its lines are its
        # result's, as they would be indented under it among other blocks.
        rows = [rows[0], *(RESULT_INDENT + row for row in rows[1:])]
    blocks: list[_Block] = []
    loose: _Block | None = None  # consecutive lines with no call above them
    for order, row in enumerate(rows):
        indented = row.startswith(RESULT_INDENT)
        if indented and blocks and blocks[-1].head:
            block = blocks[-1]
            block.lines.append(_prior_line(first + len(blocks) - 1, order, row[2:]))
            continue
        following = rows[order + 1] if order + 1 < len(rows) else ""
        if not indented and following.startswith(RESULT_INDENT):
            # The calls' share may be smaller now: cut at the end, as a call line is
            # (its command's start and its identifiers come first).
            head = _clip(row, call_cap)
            blocks.append(_Block(head=head, indent=RESULT_INDENT))
            loose = None
            continue
        if loose is None:
            loose = _Block()
            blocks.append(loose)
        loose.lines.append(_prior_line(first + len(blocks) - 1, order, row))
    for block in blocks:
        # A call naming codes keeps its first line first, as a new one earns it a place.
        if block.head and block.lines and _head_codes(block.head):
            block.lines[0].tier, block.lines[0].score = 0, _PRIOR_SCORE
    return [block for block in blocks if block.lines]


def _prior_content(line: str) -> float:
    """What an earlier summary's line says, scored as a new line would be."""
    text = line.removeprefix(USER_PREFIX)
    if not _is_routine_log(text):
        return _score(text, listing=False, diff=False)
    message = _log_message(text)
    return _routine_score(message, _score(message, listing=False, diff=False))


def _prior_line(block: int, order: int, text: str) -> _Line:
    if text.startswith(ARCHIVE_LINE_PREFIX):
        return _Line(block, order, text, _PRIOR_SCORE, tier=0)
    content = _prior_content(text)
    if content >= _PRIOR_KEEP_SCORE:
        return _Line(block, order, text, _PRIOR_SCORE, tier=0)
    if text.startswith(USER_PREFIX):
        content += _USER_BONUS
    return _Line(block, order, text, content if content > 0 else _FILLER_SCORE)


# --- packing ------------------------------------------------------------------------


def _cost(block: _Block, line: _Line, opened: set[tuple[int, str]]) -> int:
    """Bytes ``line`` adds to the summary: with its block's head and indent, or, for a
    field of a record whose line is already open, only a space and itself."""
    cost = _utf8_len(line.text) + 1
    if line.group is None or (line.block, line.group) not in opened:
        listed = _list_item(line.group) if line.group else None
        if listed is not None and (line.block, _LIST_KEY + listed[0]) in opened:
            cost += _utf8_len(listed[1]) + 3  # "; [3]: " after its list's other records
        else:
            cost += _utf8_len(block.indent) + (_utf8_len(line.group) + 2 if line.group else 0)
    if block.head and not block.head_taken:
        cost += _utf8_len(block.head) + 1
    return cost


def _widen(ranked: list[tuple[_Block, _Line]], room: int) -> int:
    """Compacted lines taken back to their whole form, the best first, while ``room``
    bytes allow; the bytes that took."""
    spent = 0
    for _, line in ranked:
        if not line.taken or line.whole is None:
            continue
        extra = _utf8_len(line.whole) - _utf8_len(line.text)
        if extra <= room - spent:
            line.text = line.whole
            spent += extra
    return spent


def _list_item(group: str) -> tuple[str, str] | None:
    """A record of a list as its list's path and its index (``flights[3]``: ``flights``,
    ``[3]``); None for any other record."""
    if not group.endswith("]"):
        return None
    start = group.rfind("[")
    if start <= 0 or not group[start + 1 : -1].isdigit():
        return None
    return group[:start], group[start:]


def _dedup_key(line: _Line) -> str:
    return line.text if line.group is None else f"{line.group}\0{line.text}"


def _render(block: _Block, kept: list[_Line], indent: str) -> Iterator[str]:
    """The kept lines in their order; the fields of one record on one line, and the
    records of one list on one line, its path written once
    (``flights[0]: flight_number=HAT1 date=...; [2]: flight_number=HAT7``)."""
    records: dict[str, list[str]] = {}
    lists: dict[str, list[str]] = {}
    for line in kept:
        if line.group is not None:
            if line.group not in records:
                listed = _list_item(line.group)
                if listed is not None:
                    lists.setdefault(listed[0], []).append(line.group)
            records.setdefault(line.group, []).append(line.text)
    for line in kept:
        if line.group is None:
            yield indent + line.text
        elif line.group in records:
            listed = _list_item(line.group)
            if listed is None:
                prefix = f"{line.group}: " if line.group else ""
                yield indent + prefix + " ".join(records.pop(line.group))
                continue
            pieces = []
            for index, group in enumerate(lists.pop(listed[0])):
                label = group if index == 0 else group[len(listed[0]) :]
                pieces.append(f"{label}: " + " ".join(records.pop(group)))
            yield indent + "; ".join(pieces)


def _opener(group: list[tuple[int, _Line]]) -> int:
    """The field that opens its record's line: of the fields worth nearly as much as the
    best one (an id, a code, a name), the one with the most score per byte."""
    best = max(line.score for _, line in group)
    near = [(index, line) for index, line in group if line.score >= _OPENER_SHARE * best]
    return max(near, key=lambda pair: pair[1].score / (_utf8_len(pair[1].text) + 8))[0]


def _pack(blocks: list[_Block], max_bytes: int) -> str:
    """Earlier summaries and requests first, then lines by score per byte; the budget is
    filled with a cut line when a whole one no longer fits."""
    used = -1  # each line is counted with its newline; the last one has none
    opened: set[tuple[int, str]] = set()

    def take(block: _Block, line: _Line) -> None:
        nonlocal used
        used += _cost(block, line, opened)
        line.taken = True
        block.head_taken = block.head_taken or bool(block.head)
        if line.group is not None:
            opened.add((line.block, line.group))
            listed = _list_item(line.group)
            if listed is not None:
                opened.add((line.block, _LIST_KEY + listed[0]))

    prior_room = int(max_bytes * _PRIOR_SHARE)
    everything = [(block, line) for block in blocks for line in block.lines]
    firsts = [(b, ln) for b, ln in everything if ln.tier == 0]
    for block, line in firsts:  # in order, up to their share of the budget
        cost = _cost(block, line, opened)
        if used + cost <= prior_room or (
            line.text.startswith(USER_PREFIX) and used + cost <= max_bytes
        ):
            take(block, line)
    _take_prior_rest(firsts, max_bytes - used, partial(_cost, opened=opened), take)

    def priority(block: _Block, line: _Line) -> float:
        base = _COST_BASE if line.group is None else _FIELD_COST_BASE
        bonus = 8.0 if line.tier == 0 else 0.0
        # A line's head counts as unpaid (a static order); a field's head not at all, so
        # that an opened record's fields, which cost only themselves, come next.
        head = _utf8_len(block.head) + 1 if block.head else 0
        if line.group is not None or not block.head_taken:
            head = 0
        cost = _cost(block, line, opened) + head
        if line.group is not None and block.head and not block.head_taken:
            cost -= _utf8_len(block.head) + 1
        return (line.score + bonus) / (cost + base)

    candidates = [(b, ln) for b, ln in everything if not ln.taken]
    by_group: dict[tuple[int, str], list[int]] = {}
    by_list: dict[tuple[int, str], list[int]] = {}
    for index, (_, line) in enumerate(candidates):
        if line.group is not None:
            by_group.setdefault((line.block, line.group), []).append(index)
            listed = _list_item(line.group)
            if listed is not None:
                by_list.setdefault((line.block, listed[0]), []).append(index)
    # A record's line starts with its best field (its id, its name): another field waits
    # until that one is in, so no line holds a price without what it is the price of.
    openers = {_opener([(i, candidates[i][1]) for i in indices]) for indices in by_group.values()}
    heap = [
        (-priority(b, ln), ln.block, ln.order, index) for index, (b, ln) in enumerate(candidates)
    ]
    heapq.heapify(heap)
    said = {_dedup_key(line) for _, line in firsts if line.taken}
    ranked: list[tuple[_Block, _Line]] = []
    while heap:
        negative, _, _, index = heapq.heappop(heap)
        block, line = candidates[index]
        if line.taken or -negative < priority(block, line) - 1e-12:
            continue  # taken, or a fresher entry (its record's line is open) is queued
        waiting = (
            line.group is not None
            and (line.block, line.group) not in opened
            and index not in openers
        )
        if waiting:
            continue  # queued again when its record's line opens
        ranked.append((block, line))
        if _dedup_key(line) in said or line.score <= _FILLER_MAX:
            continue  # said already, or a filler: only for what is left at the end
        cost = _cost(block, line, opened)
        if used + cost > max_bytes:
            # Most of a better line says more than a worse one whole: cut it to the room.
            room = max_bytes - used - (cost - _utf8_len(line.text))
            if line.group is not None or room < max(_MIN_PIECE, _CUT_SHARE * _utf8_len(line.text)):
                continue
            piece = _clip_whole_words(line.text, room)
            if not piece or _score(piece, listing=False, diff=False) <= 0:
                continue  # what fits of it says nothing ("Total Cost…" of "Total Cost: $105")
            line.text = piece
        said.add(_dedup_key(line))
        newly_open = line.group is not None and (line.block, line.group) not in opened
        listed = _list_item(line.group) if line.group else None
        list_opens = listed is not None and (line.block, _LIST_KEY + listed[0]) not in opened
        take(block, line)
        if newly_open:
            # The rest of this record's fields now cost only themselves: queue them again.
            assert line.group is not None
            requeue = list(by_group[(line.block, line.group)])
            if list_opens:
                # ... and the other records of its list no longer need their path.
                assert listed is not None
                requeue += by_list.get((line.block, listed[0]), [])
            for other in requeue:
                b, ln = candidates[other]
                if not ln.taken:
                    heapq.heappush(heap, (-priority(b, ln), ln.block, ln.order, other))
    # Fill what is left with the best lines that did not fit, cut to the room.
    for block, line in ranked:
        if line.taken or line.group is not None or _dedup_key(line) in said:
            continue  # a field cut in its value says nothing
        if line.score <= _FILLER_MAX:
            continue
        cost = _cost(block, line, opened)
        room = max_bytes - used - (cost - _utf8_len(line.text))
        if room < _MIN_PIECE:
            continue
        piece = _clip_whole_words(line.text, room)
        if not piece or _score(piece, listing=False, diff=False) <= 0:
            continue  # what fits of it says nothing
        line.text = piece
        said.add(_dedup_key(line))
        take(block, line)
        if max_bytes - used < _MIN_PIECE:
            break
    used += _widen([*firsts, *ranked], max_bytes - used)
    # Then lines with nothing in them, whole, so that the budget is used.
    for block, line in ranked:
        if line.taken or line.score > _FILLER_MAX or _dedup_key(line) in said:
            continue
        if used + _cost(block, line, opened) <= max_bytes:
            said.add(_dedup_key(line))
            take(block, line)
    out: list[str] = []
    shown = [block for block in blocks if any(line.taken for line in block.lines)]
    for block in shown:
        kept = sorted((line for line in block.lines if line.taken), key=lambda ln: ln.order)
        # A call alone in the summary (the others' lines were all repeats or left out):
        # its result lines need no indent. The bytes were counted with it: only shorter.
        indent = "" if len(shown) == 1 else block.indent
        if block.head:
            out.append(block.head)
        out.extend(_render(block, kept, indent))
    if not out and blocks:
        # Not even one line fits: as much of the most important one as fits.
        block, line = min(everything, key=lambda pair: (pair[1].tier, -pair[1].score))
        text = block.head or line.text
        out.append(_clip_at_word_end(text, max_bytes))
    return _clip_bytes("\n".join(out), max_bytes)


# --- entry points ---------------------------------------------------------------------


class _StoppedError(Exception):
    """The caller gave up (cancelled): stop working."""


def _summarize(prompt: str, max_bytes: int, check: Callable[[], None]) -> str:
    prompt = _clean(prompt)
    try:
        entries = parse_prompt(prompt).entries
    except PromptFormatError:
        entries = (PromptEntry("messages", 0, _PLAIN_TEXT_ROLE, "text", content=prompt),)
    blocks = _collect(entries, max_bytes, check)
    if not any(block.lines for block in blocks):
        return _clip_bytes("(nothing to summarize)", max_bytes)
    return _pack_to_fill(blocks, max_bytes, check)


def _pack_to_fill(blocks: list[_Block], max_bytes: int, check: Callable[[], None]) -> str:
    """:func:`_pack`, again with a larger virtual budget while rendering saved bytes the
    cost model cannot see (a call alone in the summary writes its lines without their
    indent), halving the step back when a packing comes out too long: the best summary
    within ``max_bytes``, never more."""
    texts = [(line, line.text) for block in blocks for line in block.lines]
    best = _pack(blocks, max_bytes)
    fits, over = max_bytes, 0  # the largest virtual budget that fitted; the least that did not
    for _ in range(_REPACKS):
        left = max_bytes - _utf8_len(best)
        virtual = fits + left if not over else (fits + over) // 2
        if (not over and left < _MIN_PIECE) or virtual <= fits:
            break
        check()
        for line, text in texts:  # undo the last packing: nothing taken, nothing cut
            line.text = text
            line.taken = False
        for block in blocks:
            block.head_taken = False
        candidate = _pack(blocks, virtual)
        if _utf8_len(candidate) > max_bytes:
            over = virtual
        else:
            fits = virtual
            if _utf8_len(candidate) >= _utf8_len(best):
                best = candidate
    return best


def _never() -> None:
    return None


def summarize_extractive(prompt: str, max_bytes: int = 4096) -> str:
    """The extractive summary of ``prompt``, synchronously (see :func:`extractive`).

    Raises ``ValueError`` when ``max_bytes`` is not a positive int and ``TypeError``
    when ``prompt`` is not a str."""
    _check_max_bytes(max_bytes)
    _check_prompt(prompt)
    return _summarize(prompt, max_bytes, _never)


def _check_max_bytes(max_bytes: object) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")


def _check_prompt(prompt: object) -> None:
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")


DEFAULT_EXTRACTIVE_BYTES = 4096
"""Summary size of ``extractive()`` used on its own (the Summarizer, a fallback)."""


def extractive(max_bytes: int | None = None) -> SummarizeHandler:
    """The offline handler: summaries of at most ``max_bytes`` UTF-8 bytes.

    Without ``max_bytes``, a :class:`~csum.Compactor` given this handler sizes its
    summaries itself, exactly as the Compactor's own default handler (its
    ``summary_ratio`` of the budget: one default whether the handler is named or not);
    used elsewhere, summaries are at most :data:`DEFAULT_EXTRACTIVE_BYTES`.

    Deterministic: the same prompt always gives the same summary. Reads prompts made
    by :func:`csum.prompt.messages_to_prompt`, and any other text as plain text. Long
    prompts are summarized in a worker thread that stops at its next checkpoint when
    the caller is cancelled. Raises ``ValueError`` when ``max_bytes`` is not a positive
    int; the handler raises ``TypeError`` for a prompt that is not a str.
    """
    sized_by_caller = max_bytes is None
    size = DEFAULT_EXTRACTIVE_BYTES if max_bytes is None else max_bytes
    _check_max_bytes(size)

    async def summarize(prompt: str) -> str:
        _check_prompt(prompt)
        await anyio.lowlevel.checkpoint()
        if len(prompt) < _THREAD_THRESHOLD:
            return _summarize(prompt, size, _never)
        stop = threading.Event()

        def check() -> None:
            if stop.is_set():
                raise _StoppedError

        try:
            return await anyio.to_thread.run_sync(
                partial(_summarize, prompt, size, check), abandon_on_cancel=True
            )
        finally:
            stop.set()  # a cancelled call's thread stops at its next checkpoint

    summarize.__qualname__ = f"extractive({size})"
    if sized_by_caller:
        summarize.sized_by_compactor = True  # type: ignore[attr-defined]
    return summarize
