"""The command lines' consuming decode (``decode_chain(..., owned=True)``): the same
messages as ``decode_chain`` on real payloads, each raw message released as soon as it is
decoded, and ``decode_chain`` (the library path) still leaving its payload untouched."""

from __future__ import annotations

import copy
import json
import weakref
from typing import Any, ClassVar

import pytest

from cast.chainio import _SINGLE_PASS_DECODERS, decode_chain
from cast.codecs import claude_code, detect_format
from tests.conftest import (
    CLAUDE_CODE,
    CORPUS,
    PAYLOADS,
    TAUBENCH,
    corpus_files,
    missing,
    real_cases,
)


def _payloads() -> list[tuple[str, Any, str]]:
    """Real payloads of every format, with it: the corpus's provider payloads, the tau-bench chains
    and the Claude Code sessions as Messages API bodies."""
    out = [
        (path.name, json.loads(path.read_text("utf-8")), path.parent.name)
        for path in PAYLOADS.glob("*/*.json")
    ]
    out += [
        (path.name, json.loads(path.read_text("utf-8")), "openai")
        for path in corpus_files(TAUBENCH)
    ]
    for path in corpus_files(CLAUDE_CODE, "claudecode_spotter_*.json")[:4]:
        log = json.loads(path.read_text("utf-8"))
        api = {"system": "s", "messages": claude_code.to_api_messages(log)}
        out.append((path.name, api, "anthropic"))
    return out


CASES = real_cases([pytest.param(n, p, g, id=n) for n, p, g in _payloads()], CORPUS, arity=3)


@pytest.mark.parametrize(("name", "payload", "given"), CASES)
def test_owned_decode_gives_the_same_messages(name: str, payload: Any, given: str) -> None:
    kept = copy.deepcopy(payload)
    expected, fmt = decode_chain(payload, given)
    assert payload == kept  # the library path never changes its input
    owned = copy.deepcopy(payload)
    messages, owned_fmt = decode_chain(owned, given, owned=True)
    assert (messages, owned_fmt) == (expected, fmt)
    if fmt in _SINGLE_PASS_DECODERS:
        items = owned if isinstance(owned, list) else owned["messages"]
        assert all(item is None for item in items)  # nothing of the raw chain is left


class _Raw(dict[str, Any]):
    """A raw message that can be watched with a weak reference; every read of its role
    records how many raw messages are still alive."""

    alive: ClassVar[list[weakref.ref[_Raw]]] = []
    counts: ClassVar[list[int]] = []

    def get(self, key: str, default: Any = None) -> Any:
        if key == "role":
            _Raw.counts.append(sum(ref() is not None for ref in _Raw.alive))
        return super().get(key, default)


def _watched(items: list[Any]) -> list[Any]:
    raws = [_Raw(item) for item in items]
    _Raw.alive = [weakref.ref(raw) for raw in raws]
    _Raw.counts = []
    return raws


def _openai() -> list[Any]:
    return json.loads(corpus_files(TAUBENCH)[0].read_text("utf-8")) if TAUBENCH.is_dir() else []


@pytest.mark.parametrize("fmt", sorted(_SINGLE_PASS_DECODERS))
def test_each_raw_message_is_released_once_decoded(fmt: str) -> None:
    fixtures = sorted((PAYLOADS / fmt).glob("*.json")) if fmt != "openai" else []
    bodies = [json.loads(path.read_text("utf-8")) for path in fixtures]
    bodies = [b for b in bodies if isinstance(b, dict) and len(b.get("messages", [])) >= 3]
    if fmt == "openai":
        bodies = [{"messages": _openai()}] if TAUBENCH.is_dir() else []
    if not bodies:
        source = TAUBENCH if fmt == "openai" else PAYLOADS / fmt
        pytest.skip(missing(source) if not source.is_dir() else f"no {fmt} payload of 3+ messages")
    body = bodies[0]
    body["messages"] = _watched(body["messages"])
    count = len(body["messages"])
    assert detect_format(body) == fmt
    _Raw.counts.clear()  # detection reads roles too
    messages, _ = decode_chain(body, fmt, owned=True)
    assert len(_Raw.counts) == count
    # While message i is decoded, the raw messages before it are gone.
    assert _Raw.counts == [count - i for i in range(count)]
    assert messages
