"""Decode fuzzing of every codec (issue 40, class 2): payloads built from each codec's
documented shapes (what its own ``encode`` writes for a chain holding every kind of
part, and the recorded examples in ``tests/fixtures/codecs``), then changed the way
providers and clients change them: extra keys on every object, values of other types,
keys dropped, items dropped, repeated or added. Decoding each must give a list of
messages or raise ``CodecError`` naming where (a path, or the message index), and
nothing else; ``detect_format`` on every tenth gives a format or a ``CodecError``.

Each Hypothesis example draws a seed and builds :data:`PER_EXAMPLE` payloads from it
with a seeded ``random.Random`` (cheap to build, so that 10,000 payloads per codec run
in the default suite in seconds); the ``slow``-marked test builds three times as many
(ten times as many took 15 minutes on two loaded cores).
A failure prints the payload and the seed.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cast import (
    BinaryPart,
    CodecError,
    ImagePart,
    Message,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
    port,
)
from cast.codecs import CODECS, NATIVE, codec_names, detect_format, get_codec

PER_EXAMPLE = 100
EXAMPLES = 100  # 100 x 100 = 10,000 payloads per codec in the default run
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "codecs"
TARGET = {  # the provider profile whose shape each codec's seed chain is ported to
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "openai_responses": "openai-responses",
    "claude_code": "anthropic",
    "openai_agents": "openai-responses",
}
KEYS = [
    "type", "role", "content", "text", "parts", "id", "name", "input", "arguments",
    "tool_calls", "tool_call_id", "tool_use_id", "function", "source", "data", "url",
    "image_url", "cache_control", "signature", "thinking", "message", "messages",
    "contents", "system", "functionCall", "functionResponse", "toolUse", "toolResult",
    "call_id", "output", "summary", "kind", "part_kind", "status", "index", "x-extra",
]  # fmt: skip
"""Keys the codecs read, and one none does: the extra keys added to objects."""


def _chain() -> list[Message]:
    """A chain holding every kind of part, to be written in each codec's own shape."""
    png = BinaryPart(mime_type="image/png", data=b"\x89PNG\r\n")
    call = ToolCall(id="call_1", name="lookup", arguments='{"q": "x"}')
    return [
        Message.system("be brief"),
        Message(role=Role.HUMAN, parts=[TextPart(text="what is this?"), png]),
        Message(
            role=Role.AI,
            parts=[
                TextPart(text="let me look", reasoning=Reasoning(content="hm", signature=b"sig")),
                call,
                ToolCall(id="call_2", name="search", arguments="{}"),
            ],
        ),
        Message(
            role=Role.TOOL, parts=[ToolResult(tool_call_id="call_1", name="lookup", content="a")]
        ),
        Message(
            role=Role.TOOL, parts=[ToolResult(tool_call_id="call_2", name="search", content="b")]
        ),
        Message(
            role=Role.HUMAN,
            parts=[ImagePart(url="https://example.com/a.png"), TextPart(text="and?")],
        ),
        Message.ai("done"),
    ]


def _seeds(codec: str) -> list[Any]:
    """Payloads in ``codec``'s documented shapes: its encoding of :func:`_chain` (ported
    to its provider first) and the recorded examples of ``tests/fixtures/codecs``."""
    chain = _chain()
    if codec in TARGET:
        chain = port(chain, TARGET[codec])
    module = get_codec(codec)
    if codec in ("claude_code", "claude_code_session"):  # a log has no system prompt
        chain = [m for m in chain if m.role is not Role.SYSTEM]
    seeds = [module.encode(chain)]
    prefix = {"openai": ("openai", "deepseek", "vllm"), "openai_agents": ("openai_responses",)}
    for path in sorted(FIXTURES.glob("*.json")):
        if path.stem.startswith(prefix.get(codec, (codec,))):
            payload = json.loads(path.read_text(encoding="utf-8"))
            try:
                module.decode(payload)
            except CodecError:
                continue
            seeds.append(payload)
    return seeds


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 7, 2**40, 1.5, float("1e308")])
    if kind in (3, 4, 5):
        return rng.choice(
            ["", "x", "text", "user", "assistant", "tool", "model", "{}", "Zm9v", "é😀"]
        )
    if kind == 6:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(KEYS): _random_json(rng, depth + 1) for _ in range(rng.randrange(3))}


def _mutate(value: Any, rng: random.Random, rate: float) -> Any:
    """``value`` changed as providers and clients change payloads (see the module)."""
    if rng.random() < rate / 4:
        return _random_json(rng)
    if isinstance(value, dict):
        out = {k: _mutate(v, rng, rate) for k, v in value.items() if rng.random() > rate / 4}
        while rng.random() < rate:  # extra keys, the way providers extend objects
            out[rng.choice(KEYS)] = _random_json(rng)
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            if rng.random() < rate / 4:
                continue
            out.append(_mutate(item, rng, rate))
            if rng.random() < rate / 8:
                out.append(copy.deepcopy(out[-1]))
        if rng.random() < rate / 4:
            out.insert(rng.randrange(len(out) + 1), _random_json(rng))
        return out
    return value


def _check(codec: str, payload: Any) -> None:
    """A result, or a CodecError naming where (the path of the field; an error about the
    payload as a whole has an empty path and no message index); any other exception
    fails the test."""
    outcome = _decoded(codec, payload)
    if isinstance(outcome, CodecError):  # one about a message names the field (its path)
        assert outcome.path or outcome.index is None, (
            f"{codec}: CodecError without a path: {outcome!r} for {json.dumps(payload)[:2000]}"
        )
        assert str(outcome)
    else:
        assert isinstance(outcome, list)
        assert all(type(m) is Message for m in outcome)


def _decoded(codec: str, payload: Any) -> list[Message] | CodecError:
    try:
        return get_codec(codec).decode(payload)
    except CodecError as error:
        return error
    except Exception as error:  # what the law forbids
        raise AssertionError(
            f"{codec}: {type(error).__name__}: {error} for {json.dumps(payload)[:2000]}"
        ) from error


def _check_detection(payload: Any) -> None:
    """Detection gives a format or raises CodecError (AmbiguousFormatError is one)."""
    try:
        assert detect_format(payload) in codec_names()
    except CodecError:
        return
    except Exception as error:
        raise AssertionError(
            f"detect_format: {type(error).__name__}: {error} for {json.dumps(payload)[:2000]}"
        ) from error


_SEEDS: dict[str, list[Any]] = {}


def _fuzz(codec: str, seed: int, rate: float) -> None:
    seeds = _SEEDS.get(codec)
    if seeds is None:
        seeds = _SEEDS[codec] = _seeds(codec)
    rng = random.Random(seed)
    for index in range(PER_EXAMPLE):
        payload = _mutate(rng.choice(seeds), rng, rate)
        _check(codec, payload)
        if index % 10 == 0:
            _check_detection(payload)


FUZZED = [*CODECS, NATIVE]


@pytest.mark.parametrize("codec", FUZZED)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), rate=st.sampled_from([0.05, 0.15, 0.4]))
def test_decode_gives_messages_or_a_codec_error(codec: str, seed: int, rate: float) -> None:
    _fuzz(codec, seed, rate)


@pytest.mark.slow
@pytest.mark.parametrize("codec", FUZZED)
@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), rate=st.sampled_from([0.02, 0.1, 0.25, 0.6]))
def test_decode_gives_messages_or_a_codec_error_long(codec: str, seed: int, rate: float) -> None:
    _fuzz(codec, seed, rate)


def test_every_codec_has_seeds_in_its_shapes() -> None:
    for codec in FUZZED:
        seeds = _seeds(codec)
        assert seeds, codec
        for seed in seeds:
            assert get_codec(codec).decode(seed), codec
