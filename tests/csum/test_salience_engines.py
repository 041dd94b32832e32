"""The salience patterns' ``re`` twins (csum.clearing, csum.prompt: a faster engine for
the fact memory and the gist) find the same matches as the ``regex`` patterns on every
text both engines read alike, and that check refuses the characters they class apart."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.codecs import claude_code
from csum import clearing
from csum import prompt as _memory
from csum.clearing import reads_alike
from csum.store_events import message_strings
from tests.conftest import CLAUDE_CODE, corpus_files, real_cases

TWINS = [
    (clearing._PATH, clearing._FAST_PATH),
    (clearing._NAMED_NUMBER, clearing._FAST_NAMED_NUMBER),
    (clearing._HASH, clearing._FAST_HASH),
    (clearing._MIXED, clearing._FAST_MIXED),
    (_memory._IDENTIFIER, _memory._FAST_IDENTIFIER),
]


def spans(pattern: Any, text: str) -> list[tuple[int, int]]:
    return [match.span() for match in pattern.finditer(text)]


def assert_same(text: str) -> None:
    for slow, fast in TWINS:
        assert spans(slow, text) == spans(fast, text), slow.pattern


SHAPES = st.sampled_from(
    ["src/a.py:12", "v1.2.3", "count=42", "deadbeef1", "user_id_42", "a.b.c", "→", "é", "x"]
)


@given(st.lists(st.text() | SHAPES, max_size=20).map(" ".join))
def test_twins_match_alike_where_both_engines_read_alike(text: str) -> None:
    if reads_alike(text):
        assert_same(text)


@pytest.mark.parametrize("char", ["\u0301", "\u00b2", "\u203f", "\u200d"])
def test_characters_the_engines_class_apart_are_refused(char: str) -> None:
    """A combining mark, a superscript digit, a connector, a joiner: word or digit in one
    engine and not the other."""
    assert not reads_alike(f"path/a{char}b.py:1")


@pytest.mark.parametrize("path", real_cases(corpus_files(CLAUDE_CODE), CLAUDE_CODE))
def test_twins_match_alike_on_corpus_texts(path: Any) -> None:
    chain = claude_code.decode(json.loads(path.read_text("utf-8")))
    texts = [text for message in chain for text in message_strings(message)]
    read = 0
    for text in texts:
        if reads_alike(text):
            assert_same(text)
            read += 1
    assert read >= len(texts) * 0.9  # the fast engine reads nearly every real text
