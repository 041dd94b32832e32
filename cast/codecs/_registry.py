"""The codec registry: one registration per codec (name, detect, decode, encode, and
optionally a streaming encoder); detection by scores (docs/codecs.md#detect_format)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from cast.codecs._common import EVIDENCE, json_type
from cast.codecs._streaming import PayloadStream
from cast.errors import AmbiguousFormatError, CodecError
from cast.messages import Message

__all__ = [
    "AmbiguousFormatError",
    "Codec",
    "CodecDefinition",
    "MessagesTest",
    "PayloadTest",
    "StreamEncoder",
    "codec_names",
    "detect_format",
    "get_codec",
    "register_codec",
    "stream_encoder",
    "unregister_codec",
]

PayloadTest = Callable[[object], int]
"""How much a whole payload looks like a codec's format: 0, ``FITS`` or ``EVIDENCE``
(a bool is read as 0 or ``EVIDENCE``)."""
MessagesTest = Callable[[list[dict[str, Any]]], int]
"""How much a list of message objects (dicts) looks like a codec's format (as
:data:`PayloadTest`)."""
StreamEncoder = Callable[[Iterable[Message]], PayloadStream]
"""A codec's encoder that hands out the payload's list an item at a time; its
``whole()`` is what ``encode`` returns for the same messages."""


class Codec(Protocol):
    """What every codec provides."""

    def decode(self, payload: Any, /) -> list[Message]: ...

    def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any: ...


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    codec: Codec
    detect: PayloadTest | None
    detect_messages: MessagesTest | None
    encode_stream: StreamEncoder | None


_LOCK = threading.Lock()
_USER: dict[str, _Entry] = {}
_BUILTIN: dict[str, _Entry] = {}


def codec_key(name: str) -> str:
    """The registry's spelling of a codec name (lower case, ``-`` read as ``_``)."""
    return name.strip().lower().replace("-", "_")


def register_codec(
    codec: Codec,
    *,
    name: str | None = None,
    detect: PayloadTest | None = None,
    detect_messages: MessagesTest | None = None,
    encode_stream: StreamEncoder | None = None,
    builtin: bool = False,
) -> Codec:
    """Register ``codec`` (anything with ``decode`` and ``encode``) and return it.

    ``name`` defaults to ``codec.name``; ``detect``, ``detect_messages`` and
    ``encode_stream`` to the codec's methods of those names, when it has them (a codec
    without either test is reached by name only; one without ``encode_stream`` is
    encoded whole before it is written). A name already registered, built-in or not,
    raises ``ValueError``: :func:`unregister_codec` it first.
    """
    if not callable(getattr(codec, "decode", None)) or not callable(getattr(codec, "encode", None)):
        raise TypeError(f"a codec needs decode and encode methods; {codec!r} lacks one")
    label = name if name is not None else getattr(codec, "name", None)
    if not isinstance(label, str) or not label.strip():
        raise ValueError(f"a codec needs a non-empty name (pass name=...); got {label!r}")
    key = codec_key(label)
    if not key.isidentifier():
        raise ValueError(f"codec name {label!r} is not a word of letters, digits, _ and -")
    entry = _Entry(
        key,
        codec,
        detect if detect is not None else _method(codec, "detect"),
        detect_messages if detect_messages is not None else _method(codec, "detect_messages"),
        encode_stream if encode_stream is not None else _method(codec, "encode_stream"),
    )
    with _LOCK:
        if key in _USER or key in _BUILTIN:
            kind = "a built-in" if key in _BUILTIN else "a registered"
            raise ValueError(
                f"codec name {key!r} is already taken by {kind} codec; unregister it first"
            )
        (_BUILTIN if builtin else _USER)[key] = entry
    return codec


def unregister_codec(name: str) -> None:
    """Remove a codec registered by :func:`register_codec` (built-in ones included);
    an unknown name raises ``CodecError``."""
    key = _entry(name).name
    with _LOCK:
        (_USER if key in _USER else _BUILTIN).pop(key, None)


def _method(codec: object, attribute: str) -> Any:
    found = getattr(codec, attribute, None)
    return found if callable(found) else None


def _entries() -> list[_Entry]:
    """Every registration in detection order: users' first, then the built-in ones."""
    with _LOCK:
        return [*_USER.values(), *_BUILTIN.values()]


def codec_names() -> tuple[str, ...]:
    """Every registered codec's name, in detection order."""
    return tuple(entry.name for entry in _entries())


def _entry(name: str) -> _Entry:
    if not isinstance(name, str):
        raise CodecError(f"a codec name is a str, not {type(name).__name__}")
    key = codec_key(name)
    with _LOCK:
        entry = _USER.get(key) or _BUILTIN.get(key)
    if entry is None:
        raise CodecError(f"unknown codec {name!r}; expected one of {', '.join(codec_names())}")
    return entry


def get_codec(name: str) -> Codec:
    """The codec registered as ``name`` (``-`` may stand for ``_``, any case)."""
    return _entry(name).codec


def stream_encoder(name: str) -> StreamEncoder | None:
    """The item-by-item encoder of the codec registered as ``name``, or None when it
    has none (it is then encoded whole); an unknown name raises ``CodecError``."""
    return _entry(name).encode_stream


def detect_format(payload: object) -> str:
    """Which codec ``payload`` is for, from what only one format has.

    Returns a registered codec's name; raises :class:`CodecError` when the shape fits
    none of them, and :class:`AmbiguousFormatError` (a ``CodecError``) naming the
    formats when two or more fit equally and read it differently. A list of plain-text
    user/assistant messages fits OpenAI and Anthropic alike (both decode it the same
    way): it is ``openai``.
    """
    entries = _entries()
    found = _best(payload, [(entry, entry.detect) for entry in entries])
    if not found:
        dicts = _message_objects(payload)
        found = _best(dicts, [(entry, entry.detect_messages) for entry in entries])
    if not found:
        raise CodecError("cannot detect the format: no registered codec takes this payload")
    if len(found) == 1:
        return found[0].name
    return _settle(payload, found)


def _best(value: object, tests: list[tuple[_Entry, Any]]) -> list[_Entry]:
    """The entries whose test gives ``value`` the highest score above 0, in order."""
    best, found = 0, []
    for entry, test in tests:
        if test is None:
            continue
        score = test(value)
        score = EVIDENCE if score is True else int(score)
        if score > best:
            best, found = score, [entry]
        elif score == best and score > 0:
            found.append(entry)
    return found


def _settle(payload: object, entries: list[_Entry]) -> str:
    """The tied entry that reads ``payload`` (the first, when the others read it alike)."""
    readings: list[tuple[_Entry, object]] = []
    for entry in entries:
        try:
            readings.append((entry, entry.codec.decode(payload)))
        except CodecError:
            continue
    if not readings:
        return entries[0].name  # decoding it says what is wrong, and where
    first = readings[0][1]
    if all(messages == first for _, messages in readings[1:]):
        return readings[0][0].name
    raise AmbiguousFormatError(tuple(entry.name for entry, _ in readings))


def _message_objects(payload: object) -> list[dict[str, Any]]:
    """The dicts of a list payload, or of a dict payload's ``"messages"`` list."""
    if isinstance(payload, dict):
        messages = payload.get("messages")
        if not isinstance(messages, list):
            raise CodecError("cannot detect the format: no messages, contents or input field")
        payload = messages
    if not isinstance(payload, list):
        raise CodecError(f"cannot detect the format of a JSON {json_type(payload)}")
    dicts = [item for item in payload if isinstance(item, dict)]
    if not dicts:
        raise CodecError("cannot detect the format of a list without message objects")
    return dicts


class CodecDefinition:
    """Base class of a codec registered by subclassing: give the subclass a ``name``
    and ``decode`` / ``encode`` methods (``detect`` / ``detect_messages`` optional),
    and it is registered as an instance when the class is defined. An
    ``encode_stream`` method (see :data:`StreamEncoder`) lets the command lines write
    the payload an item at a time.

    ``class Draft(CodecDefinition, register=False)`` defines one without registering it.
    """

    name: ClassVar[str] = ""

    def __init_subclass__(cls, *, register: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if register:
            register_codec(cls())

    def decode(self, payload: Any, /) -> list[Message]:
        """The messages of ``payload``; raise ``CodecError`` for a malformed one."""
        raise NotImplementedError(f"{type(self).__name__} defines no decode")

    def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any:
        """The payload holding ``messages``."""
        raise NotImplementedError(f"{type(self).__name__} defines no encode")
