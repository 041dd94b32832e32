"""Streamed encoding (``cast.codecs._streaming``, ``cast.chainio.write_chain``): the text
written a payload item at a time is byte for byte what ``json.dumps(encode(...))``
gives, for every target format on real chains; the file is still written atomically;
the owned writer releases each message once it is written."""

from __future__ import annotations

import io
import json
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import LostCompactionWarning, _port, chainio
from cast.chainio import decode_chain, known_formats, write_chain, write_owned_chain
from cast.codecs import _common, claude_code, get_codec, stream_encoder
from cast.codecs._streaming import PayloadStream, iter_indented_json
from cast.errors import ChainError
from cast.messages import Message, Role, TextPart, ToolCall, ToolResult
from cast.providers import PROVIDERS
from tests.conftest import CLAUDE_CODE, PAYLOADS, TAUBENCH, corpus_files, needs

EXAMPLE = Path(__file__).resolve().parents[3] / "csum" / "examples" / "claude_code_session.json"
"""The project's own Claude Code recording (``tests/support/record_example.py``): there in a fresh
clone, where the corpus is not."""
STREAMED = ["openai", "anthropic", "bedrock", "gemini"]
"""The formats whose codec encodes a message at a time."""


def _chains() -> list[tuple[str, list[Message]]]:
    """The decoded messages of the bundled example, every provider payload of the corpus,
    the tau-bench chains and the main Claude Code sessions (as Messages API bodies)."""
    out = [(EXAMPLE.name, decode_chain(json.loads(EXAMPLE.read_text("utf-8")), "anthropic")[0])]
    out += [
        (
            f"{path.parent.name}/{path.name}",
            decode_chain(json.loads(path.read_text("utf-8")), path.parent.name)[0],
        )
        for path in sorted(PAYLOADS.glob("*/*.json"))
    ]
    out += [
        (path.name, decode_chain(json.loads(path.read_text("utf-8")))[0])
        for path in corpus_files(TAUBENCH)
    ]
    for path in corpus_files(CLAUDE_CODE, "claudecode_spotter_*.json"):
        if "sub_agent" in path.name:
            continue
        log = json.loads(path.read_text("utf-8"))
        body = {"system": "s", "messages": claude_code.to_api_messages(log)}
        out.append((path.name, decode_chain(body, "anthropic")[0]))
    return out


CHAINS = _chains()


def _expected(messages: list[Message], fmt: str) -> str | Exception:
    """The library's text: ``encode`` then one ``json.dumps`` (or the error it raises)."""
    try:
        return json.dumps(get_codec(fmt).encode(messages), ensure_ascii=False, indent=2) + "\n"
    except Exception as exc:  # whatever the codec raises, the writer must raise too
        return exc


def _written(messages: list[Message], fmt: str, target: Path) -> str | Exception:
    try:
        write_chain(messages, fmt, str(target))
    except Exception as exc:
        return exc
    return target.read_text("utf-8")


def _ported(messages: list[Message], fmt: str) -> list[Message]:
    provider = fmt.replace("_", "-")
    if provider not in PROVIDERS:
        return messages
    # An encrypted compaction item (Responses) cannot go elsewhere: the documented note.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LostCompactionWarning)
        return _port.port(messages, provider, encrypted_compaction="note")


@needs(PAYLOADS)
@needs(CLAUDE_CODE)
def test_the_real_chains_are_there() -> None:
    names = [name for name, _ in CHAINS]
    assert len([n for n in names if "/" in n]) >= 50
    assert any(n.startswith("claudecode_") for n in names)


@pytest.mark.parametrize(("name", "messages"), CHAINS, ids=[n for n, _ in CHAINS])
def test_written_text_is_the_libraries_json_for_every_format(
    name: str, messages: list[Message], tmp_path: Path
) -> None:
    """As decoded (some formats refuse some chains: the same error either way) and as
    ported to the target (what ``cast convert`` writes)."""
    written = set()
    for fmt in known_formats():
        for chain in (messages, _ported(messages, fmt)):
            expected = _expected(chain, fmt)
            got = _written(chain, fmt, tmp_path / "out.json")
            if isinstance(expected, Exception):
                assert isinstance(got, Exception), fmt
                assert (type(got), str(got)) == (type(expected), str(expected)), fmt
                continue
            assert got == expected, fmt
            written.add(fmt)
    assert written >= set(STREAMED)  # ported, every chain goes to the streamed formats


def test_standard_output_gets_the_same_text(capsys: pytest.CaptureFixture[str]) -> None:
    messages = next(m for name, m in CHAINS if name == EXAMPLE.name)
    for fmt in STREAMED:
        chain = _ported(messages, fmt)
        write_chain(chain, fmt, None)
        assert capsys.readouterr().out == _expected(chain, fmt)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300)
@given(
    key=st.text(),
    items=st.lists(_JSON, max_size=5),
    tail=st.dictionaries(st.text(), _JSON, max_size=3),
    indent=st.sampled_from([2, 4, 0, "\t"]),
)
def test_indented_text_is_json_dumps_of_the_whole_payload(
    key: str, items: list[Any], tail: dict[str, Any], indent: int | str
) -> None:
    tail.pop(key, None)
    encoder = json.JSONEncoder(ensure_ascii=False, indent=indent)
    whole = PayloadStream(key, iter(items), dict(tail)).whole()
    stream = PayloadStream(key, iter(items), dict(tail))
    assert "".join(iter_indented_json(stream, encoder)) == encoder.encode(whole)


def test_an_encoder_without_indent_is_refused() -> None:
    with pytest.raises(ValueError, match="indent"):
        next(iter_indented_json(PayloadStream("k", iter([])), json.JSONEncoder()))


def _turns(count: int) -> list[Message]:
    out = [Message.from_parts(Role.SYSTEM, [TextPart(text="be brief")])]
    for i in range(count):
        out.append(Message.from_parts(Role.HUMAN, [TextPart(text=f"question {i} ✓")]))
        call = ToolCall(id=f"call_{i}", name="look", arguments=json.dumps({"i": i}))
        out.append(Message.from_parts(Role.AI, [call]))
        result = ToolResult(tool_call_id=f"call_{i}", name="look", content=f"answer {i}")
        out.append(Message.from_parts(Role.TOOL, [result]))
        out.append(Message.from_parts(Role.AI, [TextPart(text=f"done {i}")]))
    return out


def _stream_encoder(fmt: str) -> Any:
    encoder = stream_encoder(fmt)
    assert encoder is not None
    return encoder


@pytest.mark.parametrize("fmt", STREAMED)
def test_items_come_as_the_messages_are_read(fmt: str) -> None:
    """The first item is out after a few messages, not after the whole chain."""
    messages = _turns(50)
    read = 0

    def counting() -> Iterator[Message]:
        nonlocal read
        for message in messages:
            read += 1
            yield message

    items = _stream_encoder(fmt)(counting()).items
    next(items)
    assert read <= 4
    assert sum(1 for _ in items) > 50


@pytest.mark.parametrize("fmt", STREAMED)
def test_the_owned_writer_releases_each_message_once_written(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the file is written, the messages already written are gone: half-way
    through, about half of them are alive; by the last chunk, none but the last few."""
    messages = _turns(40)
    expected = _expected(list(messages), fmt)
    refs = [weakref.ref(m) for m in messages]
    alive: list[int] = []

    def watching(target: str, chunks: Iterator[str]) -> None:
        texts = []
        for chunk in chunks:
            alive.append(sum(ref() is not None for ref in refs))
            texts.append(chunk)
        Path(target).write_text("".join(texts), encoding="utf-8")

    monkeypatch.setattr(chainio, "write_atomic", watching)
    write_owned_chain(messages, fmt, str(tmp_path / "out.json"))
    assert messages == []
    assert (tmp_path / "out.json").read_text("utf-8") == expected
    assert any(0.25 * len(refs) <= count <= 0.75 * len(refs) for count in alive)
    assert alive[-1] <= 3
    assert all(ref() is None for ref in refs)


def test_a_failing_encode_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """Gemini takes a system instruction only first: the error comes after many items
    were already streamed into the temporary file."""
    target = tmp_path / "chain.json"
    target.write_bytes(b'{"old": true}\n')
    messages = [*_turns(40), Message.from_parts(Role.SYSTEM, [TextPart(text="late")])]
    with pytest.raises(ChainError, match="system instruction only before the first message"):
        write_chain(messages, "gemini", str(target))
    assert target.read_bytes() == b'{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.json"]


def test_an_interrupt_mid_stream_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "chain.json"
    target.write_bytes(b"[1]\n")
    calls = 0
    original = _common.write_blocks

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 60:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(_common, "write_blocks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_chain(_turns(40), "gemini", str(target))
    assert calls == 60
    assert target.read_bytes() == b"[1]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.json"]


def test_convert_that_fails_mid_stream_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    """The command line: many contents are streamed before the late system message
    fails the Gemini encoding; ``-o`` keeps its bytes and no temporary file is left."""
    from cast.cli import main

    chain = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(200)
    ]
    chain.append({"role": "system", "content": "late"})
    source = tmp_path / "chain.json"
    source.write_text(json.dumps(chain), encoding="utf-8")
    out = tmp_path / "out.json"
    out.write_bytes(b"kept\n")
    errors = io.StringIO()
    argv = ["convert", str(source), "--to", "gemini", "--no-port", "-o", str(out)]
    assert main(argv, stderr=errors) == 2
    assert "messages[200]: Gemini takes a system instruction only" in errors.getvalue()
    assert out.read_bytes() == b"kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.json", "out.json"]
