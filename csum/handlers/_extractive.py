"""An offline, deterministic summarizer: the default handler, no model and no network.

It reads the prompt back with :func:`csum.prompt.parse_prompt` and extracts what an
agent needs to carry on: the user's requests, the final answer, error lines with
their causes, technical identifiers (paths, URLs, hosts and ports, commands, versions,
hashes, ids, numbers with units), each tool call with its key arguments and outcome,
and the first sentence of every answer. Candidates are ranked in that
order and packed greedily into ``max_bytes`` UTF-8 bytes, a bound never exceeded.
A text that is not such a prompt is read as plain text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import anyio.lowlevel
import anyio.to_thread
import regex

from csum.handlers._base import SummarizeHandler
from csum.prompt import PromptEntry, PromptFormatError, parse_prompt

__all__ = [
    "ACTIONS",
    "ANSWERS",
    "CATEGORY_ORDER",
    "ERRORS",
    "IDENTIFIERS",
    "REQUESTS",
    "extractive",
    "summarize_extractive",
]

REQUESTS: Final = "Requests"
ACTIONS: Final = "Actions"
ERRORS: Final = "Errors"
IDENTIFIERS: Final = "Identifiers"
ANSWERS: Final = "Answers"
CATEGORY_ORDER: Final = (REQUESTS, ACTIONS, ERRORS, IDENTIFIERS, ANSWERS)
"""Output lines, in order; each category appears only when it has items."""

# Priorities: lower is packed first.
# Identifiers outrank actions: an agent can redo an action, not recover a lost hash.
_P_REQUEST, _P_FINAL_ANSWER, _P_ERROR, _P_IDENT, _P_ACTION = 0, 1, 2, 3, 4
_P_ANSWER, _P_REASONING_IDENT, _P_CALL_ID = 5, 6, 7

_ACTION_CAP = 240
_ERROR_CAP = 240
_ANSWER_CAP = 240
_IDENT_CAP = 160
_ARG_CAP = 80
_COMMAND_ARG_CAP = 200
_OUTCOME_CAP = 100
_MIN_CLIP = 24  # below this many bytes of room, a clipped item says too little
_ERRORS_PER_ENTRY_HEAD = 2
_ERRORS_PER_ENTRY_TAIL = 3
_ELLIPSIS = "…"
_THREAD_THRESHOLD = 64 * 1024  # characters of prompt from which a worker thread is used

_COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell", "bash", "commandline", "args"})
_HUMAN_ROLES = frozenset({"human", "user"})
_PLAIN_TEXT_ROLE = "text"  # the role given to a prompt that is not ours
_AI_ROLES = frozenset({"ai", "assistant", _PLAIN_TEXT_ROLE})

_IDENTIFIER = regex.compile(
    r"""
    (?!(?<=\w)\w)  # no identifier starts inside a word: skip those positions at once
    (?:
    (?P<url>\b(?:https?|wss?|ftp|file|s3|gs|git|ssh|postgres(?:ql)?|mysql|redis|mongodb|amqp)
        ://[^\s<>"'`\\]+)
  | (?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)
  | (?P<ip>\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b)
  | (?P<hostport>\b(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):\d{2,5}\b)
  | (?P<portproto>\b\d{1,5}/(?:tcp|udp|sctp)\b)
  | (?P<winpath>\b[A-Za-z]:\\[^\s<>"'`|*?]+)
  | (?P<path>(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)*/?|\b[\w.@+-]+(?:/[\w.@+-]+)+/?)
  | (?P<file>\b[\w-]+(?:\.[\w-]+)*\.(?i:py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ya?ml
        |toml|md|rst|txt|go|rs|c|h|cc|cpp|hpp|java|kt|rb|php|swift|sh|bash|zsh|ps1|cfg|ini
        |conf|lock|html?|css|scss|sql|csv|tsv|log|xml|proto|tf|env|gradle|dockerfile
        |pem|key|crt|tar|gz|zip|whl|so|dll|exe)\b)
  | (?P<pin>\b[A-Za-z][\w.-]*(?:==|>=|<=|~=|!=|@)v?\d+(?:\.\d+)+[\w.+-]*)
  | (?P<envassign>\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*=[^\s,;'"`]+)
  | (?P<product>\b[A-Za-z][\w-]*[/_]v?\d+(?:\.\d+)+[\w.+-]*
        |\b[A-Z][\w-]+[ ]v?\d+\.\d+(?:\.\d+)*[a-z0-9]*\b)
  | (?P<version>\bv?\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z]+)*\b|\bv\d+(?:\.\d+)?\b)
  | (?P<hash>\b(?:sha(?:1|256|512):)?(?=[0-9]*[a-f])(?=[a-f]*[0-9])[0-9a-f]{7,128}\b)
  | (?P<upperid>\b[A-Z]{2,}[A-Z0-9]*-[A-Za-z0-9]{2,}(?:-[A-Za-z0-9]+)*\b)
  | (?P<id>\b(?=[A-Za-z0-9_-]*\d)[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+\b)
  | (?P<constant>\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\bE[A-Z]{4,}\b)
  | (?P<status>(?i:\b(?:HTTP(?:/\d(?:\.\d)?)?|status(?:[ ]code)?)[ ]?:?[ ]?[1-5]\d\d\b))
  | (?P<port>(?i:\bport[ ]\d{2,5}\b))
  | (?P<money>[$€£][ ]?\d[\d,]*(?:\.\d+)?)
  | (?P<quantity>(?<![\w.])\d+(?:[.,]\d+)?[ ]?(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?
        |h|hrs?|hours?|days?|weeks?|[KMGTP]i?B|[kKMGT]b(?:ps|it/s)|bytes?|B|%|px|rem|em
        |[kMG]?Hz|°[CF]|tokens?|rows?|lines?|files?|tests?|passed|failed|errors?|warnings?
        |skipped|items?|records?|requests?|req/s|rps|qps|cores?|CPUs?|GPUs?|x)(?![\w]))
  | (?P<code>`[^`\n]{2,160}`)
  | (?P<flag>(?<![\w-])--[A-Za-z][\w-]+(?:=[^\s,;'"`]+)?)
    )
    """,
    regex.VERBOSE,
)
_TRAILING_PUNCTUATION = ".,;:!?)]}'\""
_SHELL_LINE = regex.compile(r"(?m)^[ \t]*[$#>][ ]+(\S.*)$")

_ERROR_LINE = regex.compile(
    r"""
    (?i:\b(?:errors?|exceptions?|fail(?:ed|ure|ures|s)?|fatal|panic(?:ked)?|denied
        |refused|forbidden|unauthori[sz]ed|not[ ]found|no[ ]such[ ]file|cannot|can't
        |could[ ]not|couldn't|unable[ ]to|timed[ ]out|segmentation[ ]fault|core[ ]dumped
        |aborted|killed|exit(?:ed)?[ ](?:with[ ])?(?:code|status)[ ]?[1-9]\d*|errno)\b)
  | \b[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b
  | \bE[A-Z]{4,}\b
    """,
    regex.VERBOSE,
)
_CAUSE_LINE = regex.compile(r"(?i)\b(?:caused[ ]by|because|due[ ]to|reason:|hint:)")
_EXPLICIT_CAUSE = regex.compile(r"(?i)\bcaused[ ]by\b")
_CAUSE_WINDOW = 3  # a "because" line counts as a cause this many lines after an error
_TRACEBACK_HEADER = regex.compile(r"^\s*Traceback \(most recent call last\)")
_FRAME_LINE = regex.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_EXCEPTION_LINE = regex.compile(r"^\s*[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b")
_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+(?=[\"'`(\[]?[A-Z0-9])")


@dataclass(frozen=True, slots=True)
class _Candidate:
    priority: int
    seq: int
    category: str
    text: str
    clippable: bool


@dataclass(slots=True)
class _Candidates:
    items: list[_Candidate] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)

    def add(
        self, priority: int, category: str, text: str, *, cap: int, clippable: bool = True
    ) -> None:
        text = _clip(_one_line(text), cap)
        if not text or (category, text) in self.seen:
            return
        self.seen.add((category, text))
        self.items.append(_Candidate(priority, len(self.items), category, text, clippable))


# --- text helpers -------------------------------------------------------------------


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


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


def _clean(text: str) -> str:
    # Lone surrogates cannot be encoded; the output must be valid UTF-8.
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _first_sentence(text: str) -> str:
    line = _first_line(text)
    return _SENTENCE_END.split(line, maxsplit=1)[0] if line else ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


# --- extraction ---------------------------------------------------------------------


def _identifiers(text: str) -> Iterable[str]:
    for match in _IDENTIFIER.finditer(text, concurrent=True):
        kind = match.lastgroup
        value = match.group()
        if kind in ("url", "path", "winpath", "hostport", "file", "pin", "envassign"):
            value = value.rstrip(_TRAILING_PUNCTUATION)
        if kind == "path" and not _looks_like_path(value):
            continue
        if kind == "code":
            value = value.strip("`").strip()
            if len(value) < 2:
                continue
        if value:
            yield value
    for match in _SHELL_LINE.finditer(text):
        yield match.group(1)


def _looks_like_path(value: str) -> bool:
    # "and/or" or "km/h" are prose; paths are rooted, have a suffix or several parts.
    if value.startswith(("/", "~/", "./", "../")):
        return len(value) > 1
    last = value.rstrip("/").rsplit("/", 1)[-1]
    return "." in last or value.count("/") >= 2


def _error_lines(text: str) -> list[str]:
    """Error lines and the cause lines just after them; an exception line gets the
    location of the traceback frame above it."""
    found: list[str] = []
    location = ""
    since_error = _CAUSE_WINDOW + 1  # lines since the last error line
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        since_error += 1
        frame = _FRAME_LINE.match(line)
        if frame is not None:
            location = f"{frame.group('file')}:{frame.group('line')}"
            continue
        if _TRACEBACK_HEADER.match(line):
            continue
        if _ERROR_LINE.search(line):
            if location and _EXCEPTION_LINE.match(line):
                line = f"{location}: {line}"
                location = ""
            found.append(line)
            since_error = 0
        elif _CAUSE_LINE.search(line) and (
            since_error <= _CAUSE_WINDOW or _EXPLICIT_CAUSE.search(line)
        ):
            found.append(line)
    if len(found) > _ERRORS_PER_ENTRY_HEAD + _ERRORS_PER_ENTRY_TAIL:
        found = found[:_ERRORS_PER_ENTRY_HEAD] + found[-_ERRORS_PER_ENTRY_TAIL:]
    return found


def _render_args(args: str) -> str:
    """Tool-call arguments as ``key=value`` pairs, each value shortened."""
    try:
        value = json.loads(args)
    except (ValueError, RecursionError):
        return _clip(_one_line(args), _ARG_CAP)
    if not isinstance(value, dict):
        return _clip(_one_line(args), _ARG_CAP)
    rendered: list[str] = []
    for key, item in value.items():
        if isinstance(item, str):
            text = _one_line(item)
        else:
            try:
                text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
            except (ValueError, RecursionError):
                text = "…"
        cap = _COMMAND_ARG_CAP if str(key).lower() in _COMMAND_KEYS else _ARG_CAP
        rendered.append(f"{key}={_clip(text, cap)}")
    return ", ".join(rendered)


def _outcome(content: str) -> str:
    if not content.strip():
        return "(empty)"
    errors = _error_lines(content)
    if errors:
        # The last error line proper, rather than a "caused by" line after it.
        proper = [line for line in errors if _ERROR_LINE.search(line)] or errors
        line = _one_line(proper[-1])
        if not line.lower().startswith("error"):
            line = "error: " + line
        return _clip(line, _OUTCOME_CAP)
    return _clip(_one_line(_first_line(content)), _OUTCOME_CAP)


@dataclass(slots=True)
class _Action:
    name: str
    args: str
    outcome: str | None = None


def _collect(entries: tuple[PromptEntry, ...], max_bytes: int) -> _Candidates:
    """Rank everything worth keeping; the packer decides what fits."""
    cands = _Candidates()
    requests = [e for e in entries if e.role in _HUMAN_ROLES and e.kind == "text"]
    answers = [e for e in entries if e.role in _AI_ROLES and e.kind == "text" and e.content]
    has_ai = any(e.role not in _HUMAN_ROLES for e in entries)
    share = max_bytes * (35 if has_ai else 70) // 100
    request_cap = max(64, min(600, share // max(1, len(requests))))
    for entry in requests:
        cands.add(_P_REQUEST, REQUESTS, entry.content, cap=request_cap)
    if answers:
        final = _first_sentence(answers[-1].content)
        cands.add(_P_FINAL_ANSWER, ANSWERS, final, cap=_ANSWER_CAP)

    actions: list[_Action] = []
    pending: dict[str, list[_Action]] = {}
    for entry in entries:
        if entry.kind == "tool_call":
            action = _Action(entry.name, entry.args)
            actions.append(action)
            pending.setdefault(entry.call_id, []).append(action)
        elif entry.kind == "tool_result":
            waiting = pending.get(entry.call_id)
            if waiting:
                waiting.pop(0).outcome = _outcome(entry.content)
            else:
                actions.append(_Action(entry.name or "tool", "", _outcome(entry.content)))
        # The agent's own words about errors are answers; errors come from the tools.
        if entry.kind == "tool_result" or entry.role == _PLAIN_TEXT_ROLE:
            for line in _error_lines(entry.content):
                cands.add(_P_ERROR, ERRORS, line, cap=_ERROR_CAP)
    for action in actions:
        outcome = action.outcome if action.outcome is not None else "(no result)"
        text = f"{action.name}({_render_args(action.args)}) -> {outcome}"
        cands.add(_P_ACTION, ACTIONS, text, cap=_ACTION_CAP)

    for entry in entries:
        priority = _P_REASONING_IDENT if entry.kind == "reasoning" else _P_IDENT
        for source in (entry.content, entry.args):
            for ident in _identifiers(source):
                cands.add(priority, IDENTIFIERS, ident, cap=_IDENT_CAP, clippable=False)
    for entry in answers[:-1]:
        cands.add(_P_ANSWER, ANSWERS, _first_sentence(entry.content), cap=_ANSWER_CAP)
    for entry in entries:
        if entry.call_id:
            cands.add(_P_CALL_ID, IDENTIFIERS, entry.call_id, cap=_IDENT_CAP, clippable=False)
    return cands


# --- packing ------------------------------------------------------------------------


def _pack(cands: list[_Candidate], max_bytes: int) -> str:
    """Greedy by priority within ``max_bytes``; rendered in category order."""
    chosen: dict[str, list[str]] = {category: [] for category in CATEGORY_ORDER}
    used = 0  # bytes of the rendering, counting a newline after every line
    kept_text = ""  # everything kept so far, to skip identifiers already said
    for cand in sorted(cands, key=lambda c: (c.priority, c.seq)):
        text = cand.text
        if cand.category == IDENTIFIERS and text in kept_text:
            continue  # already said, inside a request, an action or a longer identifier
        items = chosen[cand.category]
        if cand.category == IDENTIFIERS:
            overhead = len(IDENTIFIERS) + 3 if not items else 2  # "Identifiers: " + "\n"
        else:
            overhead = (len(cand.category) + 2 if not items else 0) + 3  # "- " + "\n"
        size = _utf8_len(text)
        if used + overhead + size > max_bytes:
            room = max_bytes - used - overhead
            if not cand.clippable or room < _MIN_CLIP:
                continue
            text = _clip(text, room)
            size = _utf8_len(text)
        items.append(text)
        used += overhead + size
        kept_text += "\n" + text
    lines: list[str] = []
    for category in CATEGORY_ORDER:
        items = chosen[category]
        if not items:
            continue
        if category == IDENTIFIERS:
            lines.append(f"{IDENTIFIERS}: " + ", ".join(items))
        else:
            lines.append(f"{category}:")
            lines.extend(f"- {item}" for item in items)
    if not lines and cands:
        # Not even one item fits: say as much of the most important one as fits.
        first = min(cands, key=lambda c: (c.priority, c.seq))
        lines.append(f"{first.category}: {first.text}")
    return _clip_bytes("\n".join(lines), max_bytes)


def summarize_extractive(prompt: str, max_bytes: int = 4096) -> str:
    """The extractive summary of ``prompt``, synchronously (see :func:`extractive`)."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
    prompt = _clean(prompt)
    try:
        entries = parse_prompt(prompt).entries
    except PromptFormatError:
        entries = (PromptEntry("messages", 0, _PLAIN_TEXT_ROLE, "text", content=prompt),)
    cands = _collect(entries, max_bytes)
    if not cands.items:
        return _clip_bytes("(nothing to summarize)", max_bytes)
    return _pack(cands.items, max_bytes)


def extractive(max_bytes: int = 4096) -> SummarizeHandler:
    """The offline handler: summaries of at most ``max_bytes`` UTF-8 bytes.

    Deterministic: the same prompt always gives the same summary. Reads prompts made
    by :func:`csum.prompt.messages_to_prompt`, and any other text as plain text.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")

    async def summarize(prompt: str) -> str:
        if len(prompt) >= _THREAD_THRESHOLD:
            # Long prompts take a while: keep the event loop free, and let concurrent
            # calls overlap (the regex scans release the GIL).
            return await anyio.to_thread.run_sync(summarize_extractive, prompt, max_bytes)
        await anyio.lowlevel.checkpoint()
        return summarize_extractive(prompt, max_bytes)

    summarize.__qualname__ = f"extractive({max_bytes})"
    return summarize
