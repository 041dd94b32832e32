"""Reading and writing chain files for the command lines: JSON from a path or stdin,
format detection, and the byte-size units people type (``50KiB``, ``2MB``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import regex

from cast.errors import CodecError, InputError
from cast.messages import Message

__all__ = [
    "InputError",
    "decode_chain",
    "encode_chain",
    "format_size",
    "known_formats",
    "one_line",
    "parse_size",
    "read_json",
    "run_console",
    "write_json",
]


def read_json(source: str, stdin: TextIO | None = None) -> Any:
    """The JSON value in the file at ``source`` (``-`` reads standard input)."""
    where = "standard input" if source == "-" else source
    try:
        if source == "-":
            text = (stdin or sys.stdin).read()
        else:
            text = Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {where}: not UTF-8 text ({exc.reason})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        raise _too_deep(where) from exc


def _too_deep(what: str) -> InputError:
    return InputError(f"{what} is nested too deeply (beyond Python's recursion limit)")


def write_json(payload: Any, target: str | None, stdout: TextIO | None = None) -> None:
    """Write ``payload`` as indented JSON to the file ``target`` or standard output."""
    try:
        text = json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    except RecursionError as exc:
        raise _too_deep("the output chain") from exc
    if target is None or target == "-":
        (stdout or sys.stdout).write(text)
        return
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from exc


def known_formats() -> list[str]:
    """Every format name the command lines accept."""
    from cast.codecs import CODECS, NATIVE

    return [NATIVE, *CODECS]


def _codec(fmt: str) -> Any:
    from cast.codecs import get_codec

    try:
        return get_codec(fmt)
    except CodecError as exc:
        raise InputError(
            f"unknown format {fmt!r}; known formats: {', '.join(known_formats())}"
        ) from exc


def decode_chain(payload: Any, fmt: str | None = None) -> tuple[list[Message], str]:
    """The messages of a payload and the format they were read as (detected when
    ``fmt`` is None). Raises :class:`InputError` / :class:`CodecError` on bad input."""
    from cast.codecs import detect_format

    if fmt is None:
        try:
            fmt = detect_format(payload)
        except CodecError as exc:
            raise InputError(
                f"{exc.detail}; pass --format (one of {', '.join(known_formats())})"
            ) from exc
    codec = _codec(fmt)
    try:
        return list(codec.decode(payload)), fmt
    except RecursionError as exc:
        raise _too_deep(f"the {fmt} chain") from exc


def encode_chain(messages: Sequence[Message], fmt: str) -> Any:
    """The payload of ``messages`` in format ``fmt``."""
    codec = _codec(fmt)
    try:
        return codec.encode(list(messages))
    except RecursionError as exc:
        raise _too_deep(f"the chain converted to {fmt}") from exc


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
}
_MAX_SIZE = 2**63
_SIZE = regex.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """Bytes in a size such as ``50KiB``, ``2MB``, ``1.5MiB`` or ``4096``."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"invalid size {text!r}: use a number with B, KB, KiB, MB, MiB, GB or GiB")
    number = float(match.group(1)) * _UNITS[unit]
    if not number < _MAX_SIZE:  # inf too: float("9" * 400) overflows
        raise ValueError(f"invalid size {text!r}: too large")
    value = int(number)
    if value <= 0:
        raise ValueError(f"invalid size {text!r}: must be positive")
    return value


def format_size(size: int) -> str:
    """A byte count for people: ``812 B``, ``12.3 KiB``, ``4.0 MiB``."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def one_line(exc: BaseException) -> str:
    """An error's text on one line (file names, input text and handler replies may
    hold line breaks)."""
    return " ".join(str(exc).splitlines()) or type(exc).__name__


def run_console(main: Callable[[], int]) -> NoReturn:
    """Exit with ``main()``'s code; a closed stdout (``... | head``) ends quietly."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)
