"""Codecs are registrations: a user's codec, registered by a call or by subclassing,
is found by name, by ``detect_format`` and by the command line, like a built-in one;
one with a streaming encoder is written item by item, like the built-in ones."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cast
import cast.cli
from cast import Message, Role
from cast.chainio import known_formats, write_chain, write_json
from cast.codecs import (
    CODECS,
    NATIVE,
    CodecDefinition,
    PayloadStream,
    codec_names,
    detect_format,
    get_codec,
    register_codec,
    stream_encoder,
    unregister_codec,
)
from cast.errors import CodecError

SPEAKERS = {"user": Role.HUMAN, "bot": Role.AI}


class Transcript:
    """A toy format: ``{"turns": [{"speaker": "user" | "bot", "says": text}]}``."""

    name = "transcript"

    def detect(self, payload: object) -> bool:
        return isinstance(payload, dict) and isinstance(payload.get("turns"), list)

    def decode(self, payload: Any, /) -> list[Message]:
        messages = []
        for index, turn in enumerate(payload["turns"]):
            if turn.get("speaker") not in SPEAKERS:
                raise CodecError("expected speaker user or bot", path=f"turns[{index}].speaker")
            says = turn["says"]
            human = SPEAKERS[turn["speaker"]] is Role.HUMAN
            messages.append(Message.human(says) if human else Message.ai(says))
        return messages

    def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any:
        turns = []
        for item in messages:
            message = Message.model_validate(item)
            speaker = "user" if message.role is Role.HUMAN else "bot"
            text = "".join(getattr(p, "text", "") for p in message.parts)
            turns.append({"speaker": speaker, "says": text})
        return {"turns": turns}


PAYLOAD = {"turns": [{"speaker": "user", "says": "hi"}, {"speaker": "bot", "says": "hello"}]}


@pytest.fixture
def transcript() -> Iterator[Transcript]:
    codec = register_codec(Transcript())
    assert isinstance(codec, Transcript)
    yield codec
    unregister_codec("transcript")


def test_a_registered_codec_is_found_by_name_and_by_shape(transcript: Transcript) -> None:
    assert get_codec("Transcript") is transcript
    assert codec_names()[0] == "transcript"  # users' codecs are tried first
    assert "transcript" in known_formats()
    assert "transcript" not in CODECS  # the built-in names stay what they are
    assert detect_format(PAYLOAD) == "transcript"
    messages = get_codec(detect_format(PAYLOAD)).decode(PAYLOAD)
    assert [m.role for m in messages] == [Role.HUMAN, Role.AI]
    assert transcript.encode(messages) == PAYLOAD
    # Built-in payloads are still detected as before.
    assert detect_format({"messages": [{"role": "user", "content": "hi"}]}) == "openai"


def test_without_the_codec_the_payload_is_not_detected() -> None:
    with pytest.raises(CodecError, match="no messages, contents or input field"):
        detect_format(PAYLOAD)
    with pytest.raises(CodecError, match="unknown codec 'transcript'"):
        get_codec("transcript")


def test_a_user_codec_goes_through_cast_convert(transcript: Transcript, tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(PAYLOAD), encoding="utf-8")
    out = io.StringIO()
    code = cast.cli.main(["convert", str(source), "--to", "anthropic"], stdout=out)
    assert code == 0
    assert json.loads(out.getvalue())["messages"][0] == {"role": "user", "content": "hi"}
    anthropic = tmp_path / "anthropic.json"
    anthropic.write_text(out.getvalue(), encoding="utf-8")
    back = io.StringIO()
    code = cast.cli.main(["convert", str(anthropic), "--to", "transcript"], stdout=back)
    assert code == 0
    assert json.loads(back.getvalue()) == PAYLOAD


def test_a_codec_error_of_a_user_codec_reaches_the_command_line(
    transcript: Transcript, tmp_path: Path
) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps({"turns": [{"speaker": "cat", "says": "?"}]}), encoding="utf-8")
    err = io.StringIO()
    assert cast.cli.main(["inspect", str(source)], stdout=io.StringIO(), stderr=err) != 0
    assert "turns[0].speaker" in err.getvalue()


def test_a_subclass_registers_itself() -> None:
    class Shout(CodecDefinition):
        name = "shout"

        def decode(self, payload: Any, /) -> list[Message]:
            return [Message.human(str(payload).upper())]

        def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any:
            return " ".join(Message.model_validate(m).parts[0].text for m in messages)  # type: ignore[union-attr]

    try:
        codec = get_codec("shout")
        assert isinstance(codec, Shout)
        assert codec.encode(codec.decode("hey")) == "HEY"
        # No detect test: it is reached by name only.
        assert detect_format([{"role": "user", "content": "hi"}]) == "openai"
    finally:
        unregister_codec("shout")

    class Draft(CodecDefinition, register=False):
        name = "draft"

    assert "draft" not in codec_names()


@pytest.mark.parametrize("name", ["transcript", "TRANSCRIPT", "openai", "openai-responses", NATIVE])
def test_a_name_clash_is_a_clear_error(transcript: Transcript, name: str) -> None:
    with pytest.raises(ValueError, match=r"already taken by a (built-in|registered) codec"):
        register_codec(Transcript(), name=name)
    assert get_codec("transcript") is transcript


def test_a_built_in_name_clash_names_the_built_in() -> None:
    with pytest.raises(ValueError, match="'openai' is already taken by a built-in codec"):
        register_codec(Transcript(), name="OpenAI")


@pytest.mark.parametrize(
    ("codec", "name", "error"),
    [
        (object(), "x", "needs decode and encode"),
        (Transcript(), "", "non-empty name"),
        (Transcript(), "two words", "not a word"),
    ],
)
def test_bad_registrations_say_what_is_wrong(codec: Any, name: str, error: str) -> None:
    with pytest.raises((TypeError, ValueError), match=error):
        register_codec(codec, name=name)
    assert name not in codec_names()


def test_unregistering_an_unknown_codec_is_an_error() -> None:
    with pytest.raises(CodecError, match="unknown codec 'nothing'"):
        unregister_codec("nothing")


def test_register_codec_is_offered_at_the_top_level() -> None:
    assert cast.register_codec is register_codec
    assert cast.unregister_codec is unregister_codec


# -- streaming encoders: part of the registration -------------------------------------------


class StreamedTranscript(Transcript):
    """The toy format with an item-by-item encoder, counting what each encoder did."""

    name = "streamed_transcript"

    def __init__(self) -> None:
        self.whole = 0
        self.streamed: list[str] = []

    def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any:
        self.whole += 1
        return super().encode(messages)

    def encode_stream(self, messages: Iterable[Message], /) -> PayloadStream:
        def turns() -> Iterator[dict[str, str]]:
            for message in messages:
                turn = super(StreamedTranscript, self).encode([message])["turns"][0]
                self.streamed.append(turn["says"])
                yield turn

        return PayloadStream("turns", turns())


def _written(messages: list[Message], fmt: str, path: Path) -> Any:
    write_chain(messages, fmt, str(path))
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_codec_with_a_stream_encoder_is_written_item_by_item(tmp_path: Path) -> None:
    codec = register_codec(StreamedTranscript())
    assert isinstance(codec, StreamedTranscript)
    try:
        assert stream_encoder("Streamed-Transcript") == codec.encode_stream
        messages = Transcript().decode(PAYLOAD)
        assert _written(messages, "streamed_transcript", tmp_path / "out.json") == PAYLOAD
        assert codec.streamed == ["hi", "hello"]
        assert codec.whole == 0  # never encoded whole
        expected = io.StringIO()
        write_json(PAYLOAD, None, expected)  # the same bytes as the whole payload's
        assert (tmp_path / "out.json").read_text(encoding="utf-8") == expected.getvalue()
    finally:
        unregister_codec("streamed_transcript")


def test_a_codec_without_one_is_encoded_whole(transcript: Transcript, tmp_path: Path) -> None:
    assert stream_encoder("transcript") is None
    messages = transcript.decode(PAYLOAD)
    assert _written(messages, "transcript", tmp_path / "out.json") == PAYLOAD


def test_the_stream_encoder_can_be_given_by_the_call(tmp_path: Path) -> None:
    streamed = StreamedTranscript()
    register_codec(Transcript(), name="given", encode_stream=streamed.encode_stream)
    try:
        assert _written(Transcript().decode(PAYLOAD), "given", tmp_path / "out.json") == PAYLOAD
        assert streamed.streamed == ["hi", "hello"]
    finally:
        unregister_codec("given")


def test_a_subclass_with_a_stream_encoder_is_written_item_by_item(tmp_path: Path) -> None:
    class Lines(CodecDefinition):
        name = "lines"

        def decode(self, payload: Any, /) -> list[Message]:
            return [Message.human(line) for line in payload["lines"]]

        def encode(self, messages: Iterable[Message | dict[str, Any]], /) -> Any:
            raise AssertionError("written item by item, never whole")

        def encode_stream(self, messages: Iterable[Message], /) -> PayloadStream:
            return PayloadStream("lines", (m.parts[0].text for m in messages))  # type: ignore[union-attr]

    try:
        payload = {"lines": ["a", "b"]}
        assert _written(Lines().decode(payload), "lines", tmp_path / "out.json") == payload
    finally:
        unregister_codec("lines")


def test_the_built_in_stream_encoders_are_registered() -> None:
    from cast.codecs import anthropic, bedrock, gemini, openai

    assert stream_encoder("openai") is openai._encode_stream
    assert stream_encoder("anthropic") == anthropic._BLOCKS.stream
    assert stream_encoder("bedrock") == bedrock._BLOCKS.stream
    assert stream_encoder("gemini") == gemini._BLOCKS.stream
    assert stream_encoder("langchaingo") is None
    with pytest.raises(CodecError, match="unknown codec 'nothing'"):
        stream_encoder("nothing")
