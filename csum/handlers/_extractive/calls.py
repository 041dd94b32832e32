"""A call's line (``name(arguments)``) and what its arguments tell about its result."""

from __future__ import annotations

import json
from typing import Any

import regex

from csum.handlers._extractive.code_tools import without_echo
from csum.handlers._extractive.runs import fit_command
from csum.handlers._extractive.text import (
    _CODE,
    _ELLIPSIS,
    _HOME,
    _TOKEN,
    _TRAIL,
    _clip,
    _clip_middle,
    _identifiers,
    _one_line,
    _scalar_or_json,
)
from csum.handlers._extractive.weights import _LINE_SCAN, SHARES

_ARG_CAP = 200  # bytes a call line takes at most
_MIN_CALL = 24  # ... but never less than this many bytes
_MIN_SHARED_CALL = 48  # ... nor, for each of several calls sharing a quarter, than this

_STDERR_REDIRECT = regex.compile(r"[ ]?+(?:2>&1|2>[ ]?+/dev/null|&>[ ]?+/dev/null)(?=[ ;|)&]|$)")
# A pipeline's last stage that only shortens the output: "| head -20", "| tail -n 50".
_OUTPUT_LIMIT = regex.compile(r"[ ]?+\|[ ]?+(?:head|tail)(?:[ ]++-[nc]?+[ ]?+\d{1,9}+)?+[ ]*+$")
_HEREDOC = regex.compile(r"<<-?+[ ]?+['\"]?+\w{1,40}+['\"]?+[ ]*+$")  # "cat <<'EOF'" ending a line

_COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell", "bash", "commandline", "query"})
_QUIET_KEYS = frozenset(
    {"description", "timeout", "run_in_background", "dangerouslydisablesandbox", "replace_all"}
)
_FLAGS = frozenset({"true", "false", "null", "none", "True", "False", "None"})


def _arguments(args: str) -> dict[str, Any] | None:
    """A call's arguments as a JSON object (empty text: none); None when not one."""
    try:
        value = json.loads(args) if args.strip() else {}
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _render_call(name: str, args: str, value: dict[str, Any] | None, cap: int) -> str:
    """``name(command)``, ``name(key=value, ...)``, or ``name(value)`` for one telling argument."""
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
            # A multi-line text beside other arguments (an edit's text) is not what names it.
            continue
        elif lowered not in _QUIET_KEYS:
            keyed.append(f"{key}={_clip_middle(text, room)}")
            # A value that names itself without its key (an id, a path; no number) goes bare.
            telling = len(text) >= 5 and not any(c.isspace() for c in text)
            telling = telling and any(c.isalpha() for c in text) and text not in _FLAGS
            bare.append(_clip_middle(text, room) if telling else keyed[-1])
    line = f"{name}({', '.join(first + keyed)})"
    if len(line) > cap or (not first and len(bare) == 1):
        # Too long with its keys, or a lone argument: without their keys, the values densest
        # in identifiers first (a cut at the end loses the prose).
        bare.sort(key=lambda value: -_identifiers(value) / (len(value) + 8))
        line = f"{name}({', '.join(first + bare)})"
    return _clip(line, cap)


def _compact_command(command: str) -> str:
    """A shell command by what ran: no ``2>&1``, no last ``| head -20``, its first line."""
    lines = [line.strip() for line in command.strip().splitlines()[:3]]
    if len(lines) > 1:
        # Its first line says what ran, with the next when the first opens a quote or heredoc.
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


def _call_shows(head: str, pair: str) -> bool:
    """Whether the call line ``head`` shows the argument ``pair`` (``key=value``), keyed or not."""
    value = pair.split("=", 1)[1]
    if pair in head or head.endswith(f"({value})"):
        return True
    # A first argument of several, keyless: words (a query) only; a code needs its key.
    return " " in value and f"({value}, " in head


def _head_codes(head: str) -> int:
    """How many codes (``JG7FMM``, ``ORD7731QX``) a call line's arguments name."""
    _, _, args = head.partition("(")
    tokens = _TOKEN.finditer(args, endpos=_LINE_SCAN)
    return sum(bool(_CODE.fullmatch(t.group().rpartition("=")[2].strip(_TRAIL))) for t in tokens)


def _call_cap(calls: int, max_bytes: int) -> int:
    """Bytes a call line may take: half the budget for one call, a shared quarter for several."""
    cap = min(_ARG_CAP, int(max_bytes * SHARES["call"]))
    if calls > 1:
        return max(_MIN_SHARED_CALL, min(cap, int(max_bytes * SHARES["calls"]) // calls))
    return max(_MIN_CALL, cap)
