"""Chain files for the command lines: bounded reads, JSON (JSON lines for ``.jsonl``)
from a path or stdin, large files parsed a piece at a time, atomic writes, format
detection, and the byte-size units people type (``50KiB``, ``2MB``)."""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TextIO

import pydantic_core
import regex

from cast.ast import collector_paused
from cast.codecs import NATIVE, codec_names, detect_format, get_codec, stream_encoder
from cast.codecs._common import iter_messages
from cast.codecs._streaming import iter_indented_json
from cast.errors import AmbiguousFormatError, CodecError, InputError, install_hint
from cast.messages import Message

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "JSON_LINES_SUFFIX",
    "InputError",
    "InputTooLargeError",
    "add_input_limit_argument",
    "decode_chain",
    "encode_chain",
    "format_size",
    "install_hint",
    "known_formats",
    "load_json_file",
    "one_line",
    "parse_size",
    "read_bytes",
    "read_json",
    "read_json_lines",
    "run_command",
    "run_console",
    "write_atomic",
    "write_chain",
    "write_json",
    "write_owned_chain",
]


# -- bounded reads and atomic writes ---------------------------------------------------------

DEFAULT_MAX_INPUT_BYTES = 1 << 30
"""Inputs larger than this (1 GiB) are refused unless the caller raises the limit."""

# Chunks are joined into writes of about this many characters: json's chunks are a few
# characters each, so a batch costs about ten times its length in string objects.
_WRITE_BATCH = 1 << 16


class InputTooLargeError(OSError):
    """An input larger than the configured limit."""


def _read_limited(stream: BinaryIO, where: str, max_bytes: int) -> bytes:
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputTooLargeError(f"{where} is larger than the input limit of {max_bytes} bytes")
    return data


def read_bytes(source: str, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file ``source`` (``-``: standard input), at most ``max_bytes``.

    Raises :class:`InputTooLargeError` beyond the limit (checked from the file's size
    before reading when it is a regular file) and ``OSError`` when it cannot be read.
    """
    if source == "-":
        binary = getattr(sys.stdin, "buffer", None)
        if binary is None:  # a text stream without bytes underneath (tests)
            binary = io.BytesIO(sys.stdin.read(max_bytes + 1).encode("utf-8", "surrogatepass"))
        return _read_limited(binary, "standard input", max_bytes)
    with open(source, "rb") as stream:
        info = os.fstat(stream.fileno())
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", source)
        if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
            raise InputTooLargeError(
                f"{source} is {info.st_size} bytes, larger than the input limit of "
                f"{max_bytes} bytes"
            )
        return _read_limited(stream, source, max_bytes)


def write_atomic(target: str | os.PathLike[str], chunks: Iterable[str]) -> None:
    """Write the text ``chunks`` (UTF-8) to ``target`` atomically: to a temporary file
    beside it, flushed, fsynced, given the target's permission bits and renamed over it
    (a symbolic link is followed). On any failure, ``KeyboardInterrupt`` included, the
    temporary file is removed and the target is left as it was; the exception propagates.
    """
    path = Path(os.path.realpath(target))
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temporary, stream = _create_temporary(path)
    try:
        with stream:
            batch: list[str] = []
            pending = 0
            for chunk in chunks:
                batch.append(chunk)
                pending += len(chunk)
                if pending >= _WRITE_BATCH:
                    stream.write("".join(batch))
                    batch.clear()
                    pending = 0
            stream.write("".join(batch))
            stream.flush()
            if mode is not None:
                os.chmod(stream.fileno(), mode)
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename made durable (not every system can)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _create_temporary(path: Path) -> tuple[Path, TextIO]:
    """A new file beside ``path``, open for UTF-8 text (mode 0o666 less the umask)."""
    for attempt in range(100):
        candidate = path.with_name(f".{path.name}.{os.getpid()}.{attempt}.tmp")
        with contextlib.suppress(FileExistsError):
            return candidate, open(candidate, "x", encoding="utf-8", newline="")
    raise FileExistsError(f"cannot create a temporary file beside {path}")


# -- large files a piece at a time ----------------------------------------------------------

CHUNK_CHARS = 1 << 20
"""Characters read at a time (a value longer than this is read in doubling chunks)."""

_DECODER = json.JSONDecoder()
_WHITESPACE = regex.compile(r"[ \t\n\r]*")
_ESCAPED_SURROGATE = regex.compile(r"\\u[dD][89a-fA-F]")


class _NeedsWholeFileError(Exception):
    """The text needs the whole-file reader (an error, or a case it handles)."""


def load_json_file(path: str, chunk_chars: int = CHUNK_CHARS) -> Any | None:
    """The JSON value of the UTF-8 file at ``path``, read a chunk at a time: each element
    of the top-level array (or of an array a top-level member holds) is parsed by itself,
    so the text and the value are never both whole in memory. None when the file must be
    read whole instead (a syntax error, a byte-order mark, an escaped surrogate...)."""
    try:
        with open(path, encoding="utf-8", newline="") as stream:
            reader = _Reader(stream, chunk_chars)
            if reader.peek() not in ("[", "{"):
                return None  # a scalar (or a byte-order mark): nothing to stream
            value = reader.container()
            return value if reader.peek() == "" else None  # None: extra data after the value
    except (_NeedsWholeFileError, UnicodeDecodeError, RecursionError, OSError):
        return None


class _Reader:
    """A cursor over text read from ``stream`` on demand."""

    def __init__(self, stream: TextIO, chunk_chars: int) -> None:
        self.stream = stream
        self.chunk_chars = chunk_chars
        self.text = ""
        self.pos = 0
        self.ended = False

    def _more(self, chars: int) -> None:
        chunk = self.stream.read(chars)
        if not chunk:
            self.ended = True
            return
        self.text = self.text[self.pos :] + chunk
        self.pos = 0

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the file)."""
        while True:
            match = _WHITESPACE.match(self.text, self.pos)
            assert match is not None  # the pattern matches the empty string
            self.pos = match.end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if self.ended:
                return ""
            self._more(self.chunk_chars)

    def _expect(self, allowed: str) -> str:
        char = self.peek()
        if char == "" or char not in allowed:
            raise _NeedsWholeFileError
        self.pos += 1
        return char

    def container(self) -> Any:
        """The array or object at the cursor, each element (and non-array member) parsed whole."""
        is_object = self.text[self.pos] == "{"
        close = "}" if is_object else "]"
        self.pos += 1
        out: Any = {} if is_object else []
        if self.peek() == close:
            self.pos += 1
            return out
        while True:
            if not is_object:
                self.peek()
                out.append(self._value())
            elif self.peek() != '"':
                raise _NeedsWholeFileError
            else:
                key = self._value()
                self._expect(":")
                out[key] = self.container() if self.peek() == "[" else self._value()
            if self._expect("," + close) == close:
                return out

    def _value(self) -> Any:
        """One whole JSON value starting at the cursor (whitespace already skipped)."""
        chars = self.chunk_chars
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError:
                if self.ended:
                    raise _NeedsWholeFileError from None
                self._more(chars)  # the value may go on past the text read so far
                chars *= 2
                continue
            if len(self.text) - end < 8 and not self.ended:
                self._more(chars)  # a number may go on: "12" of "1234", "0" of "0.5"
                continue
            if _ESCAPED_SURROGATE.search(self.text, self.pos, end) is not None:
                raise _NeedsWholeFileError  # the whole-file reader repairs lone surrogates
            # Parsed again by pydantic-core, as the whole-file reader does: it shares
            # repeated short strings, which makes a chain's value a fifth smaller.
            del value
            try:
                value = pydantic_core.from_json(self.text[self.pos : end])
            except ValueError:
                raise _NeedsWholeFileError from None
            self.pos = end
            return value


# -- JSON and chains --------------------------------------------------------------------------


def read_json(source: str, *, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> Any:
    """The JSON value in the file at ``source`` (``-`` reads standard input; ``.jsonl``:
    :func:`read_json_lines`), at most ``max_bytes``. Lone surrogates (``"\\ud800"``, which
    no UTF-8 text can carry) become U+FFFD, with a warning on standard error. Files of
    :data:`STREAM_MIN_BYTES` or more are parsed a piece at a time (half the memory).
    """
    where = "standard input" if source == "-" else source
    if source.endswith(JSON_LINES_SUFFIX):
        return read_json_lines(source, max_bytes=max_bytes)
    if source != "-" and _streamable(source, max_bytes):
        with collector_paused():
            value = load_json_file(source)
        if value is not None:
            return value
    data = _read_input(source, max_bytes)
    try:
        # pydantic-core parses the bytes without an intermediate str: for text with
        # one astral character a str costs 4 bytes per character, the bytes one.
        with collector_paused():
            return pydantic_core.from_json(data)
    except ValueError:
        pass  # the json module gives the exact error, decodes surrogates, nests deeper
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {where}: not UTF-8 text ({exc.reason})") from exc
    del data
    try:
        with collector_paused(), _depth_checked(where):
            value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if _ESCAPED_SURROGATE.search(text) is None:
        return value
    del text
    replaced: list[str] = []
    with _depth_checked(where):
        value = _replace_lone_surrogates(value, "", replaced)
    if replaced:
        noun = "string holds" if len(replaced) == 1 else "strings hold"
        print(
            f"warning: {where}: {len(replaced)} {noun} lone surrogates (first at "
            f"{replaced[0] or 'the top level'}); each was replaced by U+FFFD",
            file=sys.stderr,
        )
    return value


JSON_LINES_SUFFIX = ".jsonl"
"""Files named so hold one JSON value per line (agents' session files)."""


def read_json_lines(source: str, *, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> list[Any]:
    """The values of the JSON lines file ``source``, one per non-blank line.

    Raises :class:`InputError` naming the file and line when it cannot be read, is not
    UTF-8 or a line is not JSON."""
    data = _read_input(source, max_bytes)
    values: list[Any] = []
    with collector_paused():
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                values.append(pydantic_core.from_json(line))
            except ValueError:
                values.append(_json_line(line, source, number))
    return values


def _read_input(source: str, max_bytes: int) -> bytes:
    try:
        return read_bytes(source, max_bytes)
    except InputTooLargeError as exc:
        raise InputError(f"{exc} (raise it with --max-input-bytes)") from exc
    except OSError as exc:
        where = "standard input" if source == "-" else source
        raise InputError(f"cannot read {where}: {exc.strerror or exc}") from exc


def _json_line(line: bytes, source: str, number: int) -> Any:
    """One line the fast parser refused: the json module's value or exact error."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {source}: line {number} is not UTF-8 text") from exc
    try:
        with _depth_checked(f"{source} line {number}"):
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source} is not JSON lines: {exc.msg} at line {number} column {exc.colno}"
        ) from exc


STREAM_MIN_BYTES = 16 * 1024 * 1024
"""Files at least this large are parsed a piece at a time (:func:`load_json_file`):
the text read whole would cost as much memory again as the parsed chain."""


def _streamable(source: str, max_bytes: int) -> bool:
    try:
        info = os.stat(source)
    except OSError:
        return False  # read_bytes reports it
    return stat.S_ISREG(info.st_mode) and STREAM_MIN_BYTES <= info.st_size <= max_bytes


_LONE_SURROGATE = regex.compile("[\ud800-\udfff]")


def _replace_lone_surrogates(value: Any, path: str, replaced: list[str]) -> Any:
    """``value`` with lone surrogates made U+FFFD; changed paths go to ``replaced``."""
    if isinstance(value, str):
        if value.isascii() or _LONE_SURROGATE.search(value) is None:
            return value
        replaced.append(path)
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [
            _replace_lone_surrogates(item, f"{path}[{index}]", replaced)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            key_path = f"{path}.{{key}}" if path else "{key}"
            new_key = _replace_lone_surrogates(key, key_path, replaced)
            inner = f"{path}.{new_key}" if path else new_key
            out[new_key] = _replace_lone_surrogates(item, inner, replaced)
        return out
    return value


@contextlib.contextmanager
def _depth_checked(what: str) -> Iterator[None]:
    """A RecursionError as an InputError saying ``what`` is nested too deeply."""
    try:
        yield
    except RecursionError as exc:
        raise InputError(f"{what} is nested too deeply (beyond Python's recursion limit)") from exc


def write_json(payload: Any, target: str | None, stdout: TextIO | None = None) -> None:
    """Write ``payload`` as indented JSON to the file ``target`` (atomically, so it may
    be the input file; a list to a ``.jsonl`` file one item per line, anything else there
    an :class:`InputError`) or standard output (once the text is whole)."""
    if _json_lines(target, isinstance(payload, list)):
        lines = (json.dumps(item, ensure_ascii=False) + "\n" for item in payload)
        _write_text(lines, target, stdout, "the output chain", final_newline=False)
        return
    _write_text(_ENCODER.iterencode(payload), target, stdout, "the output chain")


def _json_lines(target: str | None, listed: bool) -> bool:
    """Whether ``target`` is a JSON lines file; ``InputError`` when the payload is no list."""
    if target is None or not target.endswith(JSON_LINES_SUFFIX):
        return False
    if not listed:
        raise InputError(
            f"cannot write {target}: a JSON lines file holds a list, one item per line, and "
            f"this format's payload is one JSON object; write it to a .json file"
        )
    return True


def write_chain(
    messages: Iterable[Message], fmt: str, target: str | None, stdout: TextIO | None = None
) -> None:
    """Write ``messages`` encoded in format ``fmt``: the same bytes as
    ``write_json(encode_chain(messages, fmt), target, stdout)``. Codecs with an
    ``encode_stream`` encode a message at a time, so the encoded chain is never whole in
    memory; the file is still replaced only once the whole chain was encoded and synced.
    """
    try:
        encode_stream = stream_encoder(fmt)
    except CodecError:  # an unknown format: encode_chain says
        encode_stream = None
    if encode_stream is None:
        write_json(encode_chain(messages, fmt), target, stdout)
        return
    _json_lines(target, listed=False)  # a streamed payload is an object
    chunks = iter_indented_json(encode_stream(iter_messages(messages)), _ENCODER)
    _write_text(chunks, target, stdout, f"the chain converted to {fmt}")


def write_owned_chain(
    messages: list[Message], fmt: str, target: str | None, stdout: TextIO | None = None
) -> None:
    """:func:`write_chain` for a list the caller owns and will not read again: emptied as
    it is encoded, each message released once written."""
    write_chain(_ReleasingList.taking(messages), fmt, target, stdout)


def _write_text(
    chunks: Iterator[str],
    target: str | None,
    stdout: TextIO | None,
    what: str,
    *,
    final_newline: bool = True,
) -> None:
    """Write ``chunks`` and a line break to ``target`` (atomically) or standard output."""
    to_stdout = target is None or target == "-"
    try:
        with _depth_checked(what):
            if to_stdout:
                text = "".join(chunks) + ("\n" if final_newline else "")
                if _LONE_SURROGATE.search(text):  # UTF-8 encodes every other code point
                    text.encode("utf-8")  # raises the UnicodeEncodeError reported below
            else:
                assert target is not None
                write_atomic(target, itertools.chain(chunks, ("\n",) if final_newline else ()))
    except UnicodeEncodeError as exc:
        where = "standard output" if to_stdout else target
        raise InputError(
            f"cannot write {where}: the text holds {exc.object[exc.start : exc.end]!r}, "
            f"which UTF-8 cannot encode ({exc.reason}); nothing was written"
        ) from exc
    except OSError as exc:
        raise InputError(
            f"cannot write {target}: {exc.strerror or exc}; the file was left as it was"
        ) from exc
    if to_stdout:  # a closed pipe (BrokenPipeError) is left to run_console
        (stdout or sys.stdout).write(text)


_ENCODER = json.JSONEncoder(ensure_ascii=False, indent=2)


def add_input_limit_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--max-input-bytes`` option every command reading a chain file takes."""
    parser.add_argument(
        "--max-input-bytes",
        type=parse_size,
        default=DEFAULT_MAX_INPUT_BYTES,
        metavar="SIZE",
        help="refuse inputs larger than this, e.g. 2GiB (default: 1GiB)",
    )


def known_formats() -> list[str]:
    """Every format name the command lines accept: chaincast's own, then every
    registered codec (users' ones included), in detection order."""
    return [NATIVE, *(name for name in codec_names() if name != NATIVE)]


def _codec(fmt: str) -> Any:
    try:
        return get_codec(fmt)
    except CodecError as exc:
        raise InputError(
            f"unknown format {fmt!r}; known formats: {', '.join(known_formats())}"
        ) from exc


def decode_chain(
    payload: Any, fmt: str | None = None, *, owned: bool = False, option: str = "--format"
) -> tuple[list[Message], str]:
    """The messages of a payload and the format they were read as (detected when ``fmt``
    is None; ``option`` names the format's option in the error when detection cannot
    tell). Raises :class:`InputError` / :class:`CodecError` on bad input. An ``owned``
    payload (the caller will not read it again) has its message list emptied as it is
    decoded, each raw message released once decoded."""
    if fmt is None:
        try:
            fmt = detect_format(payload)
        except AmbiguousFormatError as exc:
            choices = " or ".join(f"{option} {name}" for name in exc.formats)
            raise InputError(f"{exc.detail}; name one: {choices}") from exc
        except CodecError as exc:
            known = ", ".join(known_formats())
            raise InputError(f"{exc.detail}; pass {option} (one of {known})") from exc
    if owned and fmt in _SINGLE_PASS_DECODERS:
        if isinstance(payload, list):
            payload = _ReleasingList.taking(payload)
        elif isinstance(payload, dict) and isinstance(payload.get("messages"), list):
            payload["messages"] = _ReleasingList.taking(payload["messages"])
    codec = _codec(fmt)
    with _depth_checked(f"the {fmt} chain"):
        return list(codec.decode(payload)), fmt


# Formats whose decoder reads the message list once, front to back, and keeps no raw
# message once it is decoded (tests/cast/test_chainio_owned.py holds them to it).
_SINGLE_PASS_DECODERS = frozenset({"openai", "anthropic", "bedrock"})


class _ReleasingList(list[Any]):
    """A list whose iteration hands out each item and then forgets it (sets it None)."""

    @classmethod
    def taking(cls, items: list[Any]) -> _ReleasingList:
        """The items of ``items``, which is left empty (so it holds no reference)."""
        taken = cls(items)
        items.clear()
        return taken

    def __iter__(self) -> Iterator[Any]:
        for index in range(len(self)):
            item = self[index]
            self[index] = None
            yield item
            del item


def encode_chain(messages: Iterable[Message], fmt: str) -> Any:
    """The payload of ``messages`` in format ``fmt``."""
    codec = _codec(fmt)
    with _depth_checked(f"the chain converted to {fmt}"):
        return codec.encode(list(messages))


_UNITS = {"": 1, "b": 1} | {
    f"{prefix}{suffix}": base**power
    for power, prefix in enumerate("kmg", start=1)
    for suffix, base in (("", 1000), ("b", 1000), ("ib", 1024))
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
    power = min(3, (size.bit_length() - 1) // 10)  # 1024**power <= size (but GiB is the last)
    return f"{size / 1024**power:.1f} {('KiB', 'MiB', 'GiB')[power - 1]}"


def one_line(exc: BaseException) -> str:
    """An error's text on one line (file names, input text and handler replies may
    hold line breaks)."""
    return " ".join(str(exc).splitlines()) or type(exc).__name__


def run_command(
    parser: argparse.ArgumentParser,
    commands: Mapping[str, Callable[[argparse.Namespace, TextIO, TextIO], int]],
    argv: Sequence[str] | None,
    streams: tuple[TextIO | None, TextIO | None],
    failures: Sequence[tuple[tuple[type[Exception], ...], int, str]],
) -> int:
    """Run a command line in-process on ``streams`` (stdout, stderr): ``argv`` parsed,
    ``commands[args.command](args, out, err)`` run, an exception of ``failures`` (kinds, exit
    code, label) said as ``PROG COMMAND: LABEL: text`` (users' mistakes get no traceback)."""
    out = streams[0] or sys.stdout
    err = streams[1] or sys.stderr
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # argparse prints
            args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        with contextlib.redirect_stderr(err):  # warnings about the input
            return commands[args.command](args, out, err)
    except Exception as exc:
        for kinds, code, label in failures:
            if isinstance(exc, kinds):
                print(f"{parser.prog} {args.command}: {label}: {one_line(exc)}", file=err)
                return code
        raise


def run_console(main: Callable[[], int]) -> NoReturn:
    """Exit with ``main()``'s code; a closed stdout (``... | head``) ends quietly, Ctrl-C
    with one line and status 130 (files are written atomically: none is changed)."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:
        program = getattr(main, "__module__", "").partition(".")[0] or "chaincast"
        print(f"{program}: interrupted; no file was changed", file=sys.stderr)
        code = EXIT_INTERRUPTED
    sys.exit(code)


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""
