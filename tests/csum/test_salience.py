"""The shared salience patterns (:mod:`csum.clearing`): reading many lines in one pass
finds, for each line, exactly what reading it alone finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from csum.clearing import ERROR_LINE, error_words, tokens_of_lines


def tokens(line: str) -> list[tuple[str, str]]:
    return tokens_of_lines([line])[0]


_PIECES = st.sampled_from(
    [
        "a", "Z", "x1", "v2.0.1", "3", "42", "\u0663", "\uff14", "_", "-", ".", "/", ":", "=",
        "$", "%", '"', "'", "`", ")", "]", "}", "[", "<", "~", ",", ";", "!", "?", " ", "\t",
        "http://", "https://a.b/c", "src/app.py:12", "deadbeef", "0a1b2c3d4e", "é", "文",
        "Error", "ValueError", "failed", "not found", "No such file", "Traceback", "FAIL",
        "count = 3", "12 files", "50%", "\x1b", "\u00a0", "\u2028",
    ]
)  # fmt: skip
_LINES = st.lists(st.lists(_PIECES, max_size=30).map("".join), max_size=12).map(
    lambda lines: [" ".join(line.split()) for line in lines]  # as the gist cleans them
)


@settings(max_examples=300, deadline=None)
@given(_LINES)
def test_reading_lines_together_finds_what_reading_each_alone_finds(lines: list[str]) -> None:
    assert tokens_of_lines(lines) == [tokens(line) for line in lines]
    expected = [(m.group() if (m := ERROR_LINE.search(line)) else None) for line in lines]
    assert error_words(lines) == expected


def test_a_line_without_what_a_kind_needs_has_none_of_it() -> None:
    assert tokens("no digits and no slashes here") == []
    assert tokens("open src/app.py then https://example.com/x in v1.2.3") == [
        ("src/app.py", "path"),
        ("https://example.com/x", "url"),
        ("v1.2.3", "id"),
    ]
    assert tokens_of_lines([]) == []
    assert error_words(["", "ok", "x failed"]) == [None, None, "failed"]
