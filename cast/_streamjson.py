"""Reading a large JSON file a piece at a time, so its text and its parsed value are
never both whole in memory.

Parsing a 100 MB chain in one call holds the file's bytes next to the parsed value
(about twice the file): together the peak memory of every command. Here the file is
read in chunks of text and each element of the top-level array (or of an array held by
a member of the top-level object: the ``messages``, ``contents`` or ``input`` of a
request body) is found by the ``json`` module's decoder and parsed by itself with
pydantic-core (as a whole file is), so only a chunk of text is alive next to the value
being built. Anything unusual (a syntax error,
invalid UTF-8, a byte-order mark, an escaped surrogate, nesting too deep) gives None:
the caller then reads the file whole, which reports errors exactly and repairs lone
surrogates.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

import pydantic_core
import regex

__all__ = ["load_json_file"]

CHUNK_CHARS = 1 << 20
"""Characters read at a time (a value longer than this is read in doubling chunks)."""

_DECODER = json.JSONDecoder()
_WHITESPACE = regex.compile(r"[ \t\n\r]*")
_ESCAPED_SURROGATE = regex.compile(r"\\u[dD][89a-fA-F]")


class _NeedsWholeFileError(Exception):
    """The text needs the whole-file reader (an error, or a case it handles)."""


def load_json_file(path: str, chunk_chars: int = CHUNK_CHARS) -> Any | None:
    """The JSON value of the UTF-8 file at ``path``, read a chunk at a time; None when
    the file must be read whole instead (see the module's docstring)."""
    try:
        with open(path, encoding="utf-8", newline="") as stream:
            return _Reader(stream, chunk_chars).document()
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

    def _peek(self) -> str:
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
        char = self._peek()
        if char == "" or char not in allowed:
            raise _NeedsWholeFileError
        self.pos += 1
        return char

    def document(self) -> Any:
        first = self._peek()
        if first == "[":
            value: Any = self._array()
        elif first == "{":
            value = self._object()
        else:
            raise _NeedsWholeFileError  # a scalar (or a byte-order mark): nothing to stream
        if self._peek() != "":
            raise _NeedsWholeFileError  # extra data after the value
        return value

    def _object(self) -> dict[str, Any]:
        self.pos += 1
        out: dict[str, Any] = {}
        if self._peek() == "}":
            self.pos += 1
            return out
        while True:
            if self._peek() != '"':
                raise _NeedsWholeFileError
            key = self._value()
            self._expect(":")
            out[key] = self._array() if self._peek() == "[" else self._value()
            if self._expect(",}") == "}":
                return out

    def _array(self) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        if self._peek() == "]":
            self.pos += 1
            return out
        while True:
            self._peek()
            out.append(self._value())
            if self._expect(",]") == "]":
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
