"""Files for the command lines: bounded reads and atomic writes.

A command never leaves a half-written or truncated file behind: the output goes to a
temporary file in the target's folder, which is flushed, synced and then renamed over
the target (``os.replace``, atomic on POSIX and Windows). Until that rename the target
keeps its old bytes, whatever fails (a full disk, an unencodable character, Ctrl-C);
the temporary file is removed on every failure. So ``-o`` may name the input file.

Reads are bounded: an input larger than ``max_bytes`` is refused before it is read
(regular files) or as soon as the limit is passed (standard input, pipes, devices such
as ``/dev/zero``), so no input can exhaust memory by its size alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, TextIO

__all__ = ["DEFAULT_MAX_INPUT_BYTES", "InputTooLargeError", "read_bytes", "write_atomic"]

DEFAULT_MAX_INPUT_BYTES = 1 << 30
"""Inputs larger than this (1 GiB) are refused unless the caller raises the limit."""

_WRITE_BATCH = 1 << 16
"""Encoded chunks are joined into writes of about this many characters. The chunks of
``json``'s encoder are mostly a few characters each, so a batch holds about ten times
its length in string objects: 1 Mi characters cost 11 MB, 64 Ki well under one."""


class InputTooLargeError(OSError):
    """An input larger than the configured limit."""


def _too_large(where: str, max_bytes: int) -> str:
    return f"{where} is larger than the input limit of {max_bytes} bytes"


def _read_limited(stream: BinaryIO, where: str, max_bytes: int) -> bytes:
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputTooLargeError(_too_large(where, max_bytes))
    return data


def read_bytes(
    source: str, max_bytes: int = DEFAULT_MAX_INPUT_BYTES, *, stdin: TextIO | None = None
) -> bytes:
    """The bytes of the file ``source`` (``-``: standard input), at most ``max_bytes``.

    Raises :class:`InputTooLargeError` beyond the limit (checked from the file's size
    before reading when it is a regular file) and ``OSError`` when it cannot be read.
    ``stdin`` replaces ``sys.stdin``.
    """
    if source == "-":
        stream = stdin or sys.stdin
        binary = getattr(stream, "buffer", None)
        if binary is not None:
            return _read_limited(binary, "standard input", max_bytes)
        # A text stream without bytes underneath (tests): read characters, then encode.
        data = stream.read(max_bytes + 1).encode("utf-8", "surrogatepass")
        if len(data) > max_bytes:
            raise InputTooLargeError(_too_large("standard input", max_bytes))
        return data
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
    """Write the text ``chunks`` (UTF-8) to ``target`` atomically.

    The text goes to a temporary file next to the target (same folder, hence same
    file system), which is flushed and fsynced, given the target's permission bits
    (or the umask's default for a new file) and renamed over it. A symbolic link is
    followed: the file it points to is replaced, the link stays. On any failure,
    ``KeyboardInterrupt`` included, the temporary file is removed and the target is
    byte-identical to what it was; the exception propagates.
    """
    path = Path(os.path.realpath(target))
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temporary = _create_temporary(path)
    try:
        with open(temporary, "w", encoding="utf-8", errors="strict", newline="") as stream:
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
    _sync_folder(path.parent)


def _create_temporary(path: Path) -> Path:
    """A new empty file beside ``path`` (mode 0o666 less the umask, as ``open`` gives)."""
    for attempt in range(100):
        candidate = path.with_name(f".{path.name}.{os.getpid()}.{attempt}.tmp")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return candidate
    raise FileExistsError(f"cannot create a temporary file beside {path}")


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every system can)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
