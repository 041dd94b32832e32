"""The extractive handler's regular expressions: all linear (bounded input, no nested
unbounded repetition)."""

from __future__ import annotations

import regex

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
# A word every match of _ERROR holds, in one of its cases: a line without one is not read
# by _ERROR (the same result, found sooner).
_ERROR_NEEDS = regex.compile(
    r"(?i:fail|error|fatal|panic|exception|exit|interrupt|fault|\*\*[ ]\(|assertion"
    r"|not[ ]found|denied|timed[ ]out|timeout|no[ ]such[ ]file|refused|could[ ]not|unable[ ]to)"
)
# A line that says it is a warning ("Warning: could not open the cache"): not an error.
_WARNING = regex.compile(r"\W{0,6}+(?i:warn(?:ing)?+)\b")
_EXIT_STATUS = regex.compile(
    r"(?i)\W{0,6}+exit(?:ed)?+[ ](?:with[ ])?+(?:code|status)[ ]?+\d{1,4}+\W{0,6}+"
)
_OUTCOME = regex.compile(r"(?i)\b(?:passed|passing|failed|failing|failures?|errors?|skipped)\b")
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
_EMPTY_NUMBERED = regex.compile(r"\d{1,7}(?:→|:|\t)?+\s*+")
_BACKTICKED = regex.compile(r"`[^`\n]{2,200}+`")
_DIFF_LINE = regex.compile(r"^(?:@@[ ]-\d|[+-](?![+-]{2}[ ])\S?)")
_HUNK = regex.compile(r"@@[ ]-\d{1,9}+(?:,\d{1,9}+)?+[ ]\+\d{1,9}+(?:,\d{1,9}+)?+[ ]@@")
_DIFF_FILE = regex.compile(r"^\+\+\+[ ](?!/dev/null)")  # "+++ b/src/a.py": the file changed
_DIFF_NOISE = regex.compile(r"^(?:diff[ ]--git[ ]|---[ ]|index[ ][0-9a-f]{4,40}+\.\.)")
_MARKDOWN = regex.compile(r"\*\*|^#{1,6}[ ]|^[ ]*[-*+][ ](?=\S)")
# "__bold words__": a pair around a phrase (a dunder like __init__ holds no space).
_UNDERSCORE_BOLD = regex.compile(r"(?<!\w)__(?=\S)([^_\n]*?[ ][^_\n]*?)(?<=\S)__(?!\w)")
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
_DECORATION_HEAD = regex.compile(r"[\s│┃║|>\u203a»•·]{1,12}+(?=\S)")  # its first form
_WORDS = regex.compile(r"\w++")
# A log line's clock time and routine level: the same on every line, not what it says.
_LOG_PREFIX = regex.compile(
    r"^(?:\d{4}-\d{2}-\d{2}[T ])?+\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?+(?:Z|[+-]\d{2}:?\d{2})?+[ ]"
    r"(?:\[?(?i:info|debug|trace|notice)\]?:?[ ])?+"
)
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
# What every match of a pattern below holds, looked for first: a line without it is not
# read by the pattern (the same result, found sooner).
_PIN_NEEDS = regex.compile(r"\d\.\d")  # each of _PIN's versions has two parts at least
_LOCATED_NEEDS = regex.compile(r"(?i:line[ ]\d)")  # both of _LOCATED's forms say it
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
