"""Tool-call id templates: literal text with ``{r:LENGTH:CHARSET}`` random runs and
``{f}`` (the function name), or a regex (``IdTemplate.from_regex``, generated through
exrex). Seeded ids come from xxhash of the seed (stable everywhere; for regexes, for a
given exrex version); unseeded ones from the OS's cryptographic random source."""

from __future__ import annotations

import math
import random
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, ClassVar

import exrex
import regex
import xxhash

from cast.errors import IdTemplateError

__all__ = ["CHARSETS", "IdTemplate", "TemplateLike", "as_template"]

_DIGITS = "0123456789"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()

CHARSETS: dict[str, str] = {
    name: chars
    for short, long, chars in (
        ("d", "digit", _DIGITS),
        ("l", "lower", _LOWER),
        ("u", "upper", _UPPER),
        ("a", "alpha", _LOWER + _UPPER),
        ("x", "alnum", _DIGITS + _LOWER + _UPPER),
        ("h", "hex", "0123456789abcdef"),
        ("H", "HEX", "0123456789ABCDEF"),
        ("b", "base62", _DIGITS + _UPPER + _LOWER),
    )
    for name in (short, long)
}
"""Charset aliases of ``{r:N:CHARSET}`` and the characters each draws from, in order."""

_PLACEHOLDER = regex.compile(r"\{(?:r:(?P<len>[^:{}]*):(?P<cs>[^:{}]*)|(?P<f>f))\}")
_FUNCTION_NAME_PATTERN = r"[^\s]+?"
_MAX_ATTEMPTS = 64  # draws of a regex, or seeds of generate_unused, before giving up
_MAX_RUN_LENGTH = 4096

_Piece = str | tuple[int, str] | None
"""Literal text, a ``{r:N:charset}`` run as (N, characters), or None for ``{f}``."""


@lru_cache(maxsize=64)
def _translation(chars: str) -> tuple[bytes, bytes]:
    """A bytes.translate table of ``chars``, deleting the bytes that would bias it."""
    base = len(chars)
    accepted = 256 - 256 % base
    table = bytes(ord(chars[b % base]) if b < accepted else 0 for b in range(256))
    return table, bytes(range(accepted, 256))


def _seed_bytes(seed: object) -> bytes:
    if isinstance(seed, bytes):
        return seed
    if isinstance(seed, str):
        return seed.encode("utf-8", "surrogatepass")
    return repr(seed).encode("utf-8")


# exrex draws from module-level ``choice``/``randint``; they are swapped for a seeded or
# cryptographic generator for the duration of one call, under this lock.
_EXREX_LOCK = threading.Lock()


def _exrex_generate(pattern: str, rng: random.Random) -> str:
    with _EXREX_LOCK:
        saved = exrex.choice, exrex.randint
        exrex.choice, exrex.randint = rng.choice, rng.randint
        try:
            return str(exrex.getone(pattern))
        finally:
            exrex.choice, exrex.randint = saved


def _parse_template(pattern: str) -> tuple[_Piece, ...]:
    pieces: list[_Piece] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(pattern):
        if match.start() > pos:
            pieces.append(_literal(pattern, pattern[pos : match.start()]))
        if match.group("f"):
            pieces.append(None)
        else:
            length_text, charset = match.group("len"), match.group("cs")
            if not length_text.isdigit() or not 0 < int(length_text) <= _MAX_RUN_LENGTH:
                raise IdTemplateError(
                    f"id template {pattern!r}: length {length_text!r} in {match.group(0)} "
                    f"must be a whole number from 1 to {_MAX_RUN_LENGTH}"
                )
            if charset not in CHARSETS:
                raise IdTemplateError(
                    f"id template {pattern!r}: unknown charset {charset!r} in {match.group(0)};"
                    f" known charsets: {', '.join(CHARSETS)}"
                )
            pieces.append((int(length_text), CHARSETS[charset]))
        pos = match.end()
    if pos < len(pattern):
        pieces.append(_literal(pattern, pattern[pos:]))
    if not pieces:
        raise IdTemplateError("id template is empty")
    return tuple(pieces)


def _literal(pattern: str, text: str) -> str:
    # A brace outside a placeholder is a placeholder mistyped ("{r:24}", "{r:24:x"), not
    # literal text: accepting it would silently produce constant ids.
    if "{" in text or "}" in text:
        raise IdTemplateError(
            f"id template {pattern!r}: {text!r} holds a brace outside a placeholder; "
            "placeholders are {r:LENGTH:CHARSET} and {f}"
        )
    return text


def _pieces_regex(pieces: tuple[_Piece, ...], function_name: str | None) -> str:
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(regex.escape(piece))
        elif piece is not None:
            out.append(f"[{regex.escape(piece[1])}]{{{piece[0]}}}")
        elif function_name is None:
            out.append(_FUNCTION_NAME_PATTERN)
        else:
            out.append(regex.escape(function_name))
    return "".join(out)


@dataclass(frozen=True, slots=True, init=False, repr=False)
class IdTemplate:
    """A tool-call id format: ``matches`` checks an id, ``generate`` makes a new one.

    Build from the template language (``IdTemplate("call_{r:24:x}")``) or from a regular
    expression (``IdTemplate.from_regex(r"[a-zA-Z0-9]{9}")``). Immutable and hashable.
    """

    DEFAULT_FUNCTION_NAME: ClassVar[str] = "function"

    pattern: str
    is_regex: bool
    regex: Any = field(compare=False)
    _pieces: tuple[_Piece, ...] = field(compare=False)

    def __init__(self, pattern: str | IdTemplate) -> None:
        if isinstance(pattern, IdTemplate):  # a copy
            self._set(*(getattr(pattern, name) for name in IdTemplate.__slots__))
        elif isinstance(pattern, str):
            pieces = _parse_template(pattern)
            self._set(pattern, False, regex.compile(_pieces_regex(pieces, None)), pieces)
        else:
            raise TypeError(
                f"id template must be a str or IdTemplate, not {type(pattern).__name__}"
            )

    def _set(self, *values: Any) -> None:
        """Set the fields, in order (the instance is frozen after)."""
        for name, value in zip(IdTemplate.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    @classmethod
    def from_regex(cls, expression: str) -> IdTemplate:
        """A template whose ids are the full matches of a regular expression."""
        try:
            compiled = regex.compile(expression)
        except regex.error as exc:
            raise IdTemplateError(f"invalid id regex {expression!r}: {exc}") from exc
        self = cls.__new__(cls)
        self._set(expression, True, compiled, ())
        return self

    def __repr__(self) -> str:
        factory = "IdTemplate.from_regex" if self.is_regex else "IdTemplate"
        return f"{factory}({self.pattern!r})"

    @property
    def uses_function_name(self) -> bool:
        """True when the template contains ``{f}``."""
        return None in self._pieces

    def matches(self, value: str, function_name: str | None = None) -> bool:
        """Whether ``value`` is an id of this format.

        With ``function_name``, ``{f}`` must be exactly that name; without it, ``{f}``
        accepts any run of non-space characters.
        """
        if function_name is not None and None in self._pieces:
            # An empty name stands for none, as in ``generate``.
            name = function_name or self.DEFAULT_FUNCTION_NAME
            return _named_regex(self._pieces, name).fullmatch(value) is not None
        return self.regex.fullmatch(value) is not None

    def generate(self, function_name: str | None = None, *, seed: object = None) -> str:
        """A new id of this format. The same seed always gives the same id.

        ``seed`` may be a str, bytes or int. Without one the id is drawn from a
        cryptographic random source. ``{f}`` becomes ``function_name`` (or the word
        ``function`` when none is given).
        """
        if self.is_regex:
            rng: random.Random = (
                random.SystemRandom()
                if seed is None
                else random.Random(xxhash.xxh3_64_intdigest(_seed_bytes(seed)))
            )
            for _ in range(_MAX_ATTEMPTS):
                value = _exrex_generate(self.pattern, rng)
                if self.regex.fullmatch(value) is not None:
                    return value
            raise IdTemplateError(f"cannot generate an id that fully matches {self.pattern!r}")
        if seed is None:
            return self._fill(lambda _: secrets.token_bytes(32), function_name)
        # Seeded byte blocks: xxh3-128 digests of the seed under counters 0, 1, ...
        return self._fill(partial(xxhash.xxh3_128_digest, _seed_bytes(seed)), function_name)

    def generate_unused(
        self, function_name: str | None = None, *, seed: str, used: set[str]
    ) -> str:
        """A seeded id not in ``used``, which it joins: the first of the seeds
        ``f"{seed}\x1f{attempt}"`` (attempt 0, 1, ...) that gives one; after 64 used
        ids, :class:`IdTemplateError` (a template too small for the chain)."""
        for attempt in range(_MAX_ATTEMPTS):
            value = self.generate(function_name, seed=f"{seed}\x1f{attempt}")
            if value not in used:
                used.add(value)
                return value
        raise IdTemplateError(
            f"id template {self.pattern!r} keeps producing ids already used in the chain"
        )

    def _fill(self, block: Callable[[int], bytes], function_name: str | None) -> str:
        """The id, each run drawn without bias from the blocks ``block(0)``, ``block(1)``..."""
        counter = 0
        out: list[str] = []
        for piece in self._pieces:
            if isinstance(piece, str):
                out.append(piece)
            elif piece is None:
                out.append(function_name or self.DEFAULT_FUNCTION_NAME)
            else:
                length, chars = piece
                table, delete = _translation(chars)
                drawn = b""
                while len(drawn) < length:
                    drawn += block(counter).translate(table, delete)
                    counter += 1
                out.append(drawn[:length].decode("ascii"))
        return "".join(out)

    @property
    def capacity(self) -> int | None:
        """How many distinct ids the random runs can produce (None for regex form)."""
        if self.is_regex:
            return None
        return int(math.prod(len(p[1]) ** p[0] for p in self._pieces if type(p) is tuple))


@lru_cache(maxsize=1024)
def _named_regex(pieces: tuple[_Piece, ...], function_name: str) -> Any:
    return regex.compile(_pieces_regex(pieces, function_name))


TemplateLike = str | IdTemplate
"""Where a template is taken, a template string or an :class:`IdTemplate` is accepted."""


_template_from_string = lru_cache(maxsize=256)(IdTemplate)


def as_template(template: TemplateLike) -> IdTemplate:
    """The :class:`IdTemplate` for a template string or template."""
    if isinstance(template, str):
        return _template_from_string(template)
    return template if isinstance(template, IdTemplate) else IdTemplate(template)
