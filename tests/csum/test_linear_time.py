"""Functions that run on user content take time linear in it, for adversarial inputs too.

Each family builds an input of size n and of size 8n; the time of the larger divided by
the time of the smaller must stay under 30 (linear: about 8; quadratic: about 64). Times
are CPU times of this process, best of 3, with the garbage collector on; only ratios
between sizes are asserted, never absolute times. The families: planted prompt markers
(every marker candidate ``messages_to_prompt`` would try, in its content), long runs of
one character class, repeated separators, nested brackets, on the prompt renderer and
parser, id templates, the image placeholder of data URLs, chain file reading and size
parsing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cast import IdTemplate, Message
from cast.chainio import parse_size, read_json
from cast.messages import ImagePart, Role, TextPart
from csum.prompt import _marker, messages_to_prompt, summary_request

SCALE = 8
LIMIT = 30.0
MIN_SECONDS = 0.01


def _best(func: Callable[[], object]) -> float:
    # CPU time of this process: other processes on a shared machine do not count.
    start = time.process_time()
    func()
    return time.process_time() - start


def _ratio(small: Callable[[], object], large: Callable[[], object]) -> float:
    """Best large time / best small time, the runs interleaved so that load from other
    processes falls on both sizes alike."""
    smalls, larges = [], []
    for _ in range(3):
        smalls.append(_best(small))
        larges.append(_best(large))
    return min(larges) / min(smalls)


def assert_linear(make: Callable[[int], Callable[[], object]], n: int) -> None:
    """Time grows about linearly from size n to 8n, n doubled first until the small
    run takes 10 ms (below that, timer noise and CPU caches dominate). On a shared
    machine one round can be disturbed: up to three rounds, the lowest ratio counts
    (a quadratic function gives about 64 in every round)."""
    small = make(n)
    small()  # warm caches (compiled patterns, imports)
    while min(_best(small) for _ in range(3)) < MIN_SECONDS and n < 1 << 23:
        n *= 2
        small = make(n)
    large = make(n * SCALE)
    ratios = []
    for _ in range(3):
        ratios.append(_ratio(small, large))
        if ratios[-1] < LIMIT:
            return
    raise AssertionError(f"time grew {min(ratios):.1f}x for {SCALE}x the input (n={n})")


def _planted_markers(count: int) -> str:
    """A text of fixed length holding every marker candidate ``messages_to_prompt``
    tries before the ``count``-th: the attack of a tool result full of markers."""
    length = count * 10
    sizes = f"1,{length}"
    text = " ".join(_marker(sizes, k) for k in range(count))
    return (text + " " * length)[:length]


def test_planted_markers_cost_one_extra_rendering() -> None:
    def make(n: int) -> Callable[[], object]:
        message = Message.ai(_planted_markers(n))
        return lambda: messages_to_prompt([], [message])

    assert_linear(make, 2_000)


def test_planted_markers_prompt_is_still_exact() -> None:
    text = _planted_markers(3_000)
    request = summary_request([], [Message.ai(text)])
    assert request.prompt.count(text) == 1
    assert request.summarized[0].content == text


@pytest.mark.parametrize(
    "unit",
    [
        pytest.param("a", id="one-character-run"),
        pytest.param("<", id="open-brackets"),
        pytest.param("</", id="closing-tag-starts"),
        pytest.param('"', id="quotes"),
        pytest.param("_0123abcd", id="marker-shaped"),
        pytest.param("[{(", id="nested-brackets"),
        pytest.param("a.", id="repeated-separators"),
    ],
)
def test_a_request_and_its_entries_are_linear(unit: str) -> None:
    def make(n: int) -> Callable[[], object]:
        text = unit * (n // len(unit))
        messages = [
            Message(role=Role.AI, parts=[TextPart(text=text)]),
            Message.tool("call_1", "bash", text),
        ]

        def run() -> object:
            return summary_request([Message.human(text)], messages).entries

        return run

    assert_linear(make, 200_000)


@pytest.mark.parametrize(
    ("pattern", "prefix", "unit", "tail"),
    [
        pytest.param("functions.{f}:{r:6:d}", "functions.", "a:", "x", id="kimi-name-run"),
        pytest.param("functions.{f}:{r:6:d}", "functions.", ":1", " ", id="kimi-separators"),
        pytest.param("regex:[a-zA-Z0-9_-]+", "toolu_", "a", "!", id="anthropic-one-class-run"),
        pytest.param("{f}_{r:8:h}", "", "_a", "_", id="name-then-run"),
        pytest.param("{f}_{r:8:h}", "", "_abcdef0", "_", id="name-then-hex-runs"),
    ],
)
def test_id_template_matching_is_linear(pattern: str, prefix: str, unit: str, tail: str) -> None:
    template = (
        IdTemplate.from_regex(pattern[6:]) if pattern.startswith("regex:") else IdTemplate(pattern)
    )

    def make(n: int) -> Callable[[], object]:
        value = prefix + unit * (n // len(unit)) + tail
        return lambda: template.matches(value)

    assert_linear(make, 50_000)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(";", id="parameters-without-comma"),
        pytest.param("a", id="mime-without-comma"),
        pytest.param(";a=b", id="parameter-runs"),
    ],
)
def test_data_url_placeholder_is_linear(body: str) -> None:
    def make(n: int) -> Callable[[], object]:
        image = Message(role=Role.HUMAN, parts=[ImagePart(url="data:" + body * (n // len(body)))])
        return lambda: messages_to_prompt([image], [])

    assert_linear(make, 200_000)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 500 + "]" * 500, id="nested-brackets"),
        pytest.param('["' + "\\ud800" * 200 + '"]', id="lone-surrogates"),
        pytest.param("[" + "1," * 500 + "1]", id="repeated-separators"),
    ],
)
def test_reading_a_chain_file_is_linear(tmp_path: Path, text: str) -> None:
    def make(n: int) -> Callable[[], object]:
        path = tmp_path / f"chain{n}.json"
        path.write_text("[" + ",".join([text] * n) + "]", encoding="utf-8")
        return lambda: read_json(str(path))

    assert_linear(make, 200)


def test_size_parsing_is_linear() -> None:
    def make(n: int) -> Callable[[], object]:
        text = " " * n + "1" * 30 + " " * n + "x"

        def run() -> object:
            with pytest.raises(ValueError, match="invalid size"):
                parse_size(text)
            return None

        return run

    assert_linear(make, 100_000)
