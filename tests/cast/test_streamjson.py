"""Large files parsed a piece at a time (``cast.chainio.load_json_file``): the same value as the
whole-file reader on real and generated JSON at every chunk size, and None (the
whole-file reader takes over, with its exact errors and surrogate repair) otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import chainio
from cast.chainio import load_json_file
from cast.errors import InputError
from tests.conftest import CLAUDE_CODE, PAYLOADS, TAUBENCH, corpus_files

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    ROOT / "csum" / "examples" / "claude_code_session.json",  # the project's own recording
    *sorted(PAYLOADS.glob("*/*.json")),
    *corpus_files(TAUBENCH)[:3],
    *corpus_files(CLAUDE_CODE)[:2],
]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_real_files_read_the_same_in_pieces(path: Path, chunk: int) -> None:
    expected = json.loads(path.read_text("utf-8"))
    if "\\ud8" in path.read_text("utf-8").lower():
        pytest.skip("holds an escaped surrogate")
    assert load_json_file(str(path), chunk) == expected


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)))
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(
    value=st.lists(_VALUES, max_size=6) | st.dictionaries(st.text(max_size=5), _VALUES),
    chunk=st.integers(1, 64),
    indent=st.sampled_from([None, 1]),
)
def test_any_array_or_object_reads_the_same_in_pieces(
    tmp_path_factory: pytest.TempPathFactory, value: Any, chunk: int, indent: int | None
) -> None:
    path = tmp_path_factory.mktemp("j") / "value.json"
    path.write_text(json.dumps(value, ensure_ascii=False, indent=indent), encoding="utf-8")
    assert load_json_file(str(path), chunk) == value


@pytest.mark.parametrize(
    "text",
    [
        '[{"a": 1}, {"b": 2}',  # cut short
        '[{"a": 1},]',  # trailing comma
        '{"messages": [1, 2]} x',  # extra data
        '{"a" 1}',  # no colon
        '"just a string"',  # a scalar
        '\ufeff[{"a": 1}]',  # byte-order mark
        '[{"a": "\\ud800"}]',  # a lone surrogate, escaped
        "[" * 100_000 + "]" * 100_000,  # deeper than the recursion limit
    ],
)
def test_unusual_text_is_left_to_the_whole_file_reader(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    assert load_json_file(str(path), 3) is None


def test_invalid_utf8_is_left_to_the_whole_file_reader(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b'[{"a": "\xff"}]')
    assert load_json_file(str(path), 3) is None


def test_read_json_streams_large_files_and_keeps_its_errors_and_repairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(chainio, "STREAM_MIN_BYTES", 0)
    good = tmp_path / "good.json"
    good.write_text('{"messages": [{"role": "user", "content": "hé"}]}', encoding="utf-8")
    assert chainio.read_json(str(good)) == {"messages": [{"role": "user", "content": "hé"}]}
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user",\n "content": }]', encoding="utf-8")
    with pytest.raises(InputError, match="line 2 column 13"):
        chainio.read_json(str(bad))
    lone = tmp_path / "lone.json"
    lone.write_text('[{"role": "user", "content": "a\\ud800"}]', encoding="utf-8")
    assert chainio.read_json(str(lone)) == [{"role": "user", "content": "a\ufffd"}]
    assert "lone surrogates (first at [0].content)" in capsys.readouterr().err
    too_big = tmp_path / "big.json"
    too_big.write_text("[" + "1," * 100 + "1]", encoding="utf-8")
    with pytest.raises(InputError, match="input limit"):
        chainio.read_json(str(too_big), max_bytes=50)
