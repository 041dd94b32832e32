"""The clearing gist's outputs pinned: one text in three of the byte-identical gate
(``python -m benchmarks.gist_gate`` runs them all) against the recorded digest."""

from __future__ import annotations

import json

from benchmarks.digest_gate import compare
from benchmarks.gist_gate import DIGEST_PATH, LIMITS, digest
from tests.conftest import CLAUDE_CODE, TAUBENCH, needs


@needs(TAUBENCH)
@needs(CLAUDE_CODE)
def test_gists_are_those_recorded_in_the_digest() -> None:
    recorded = json.loads(DIGEST_PATH.read_text())
    found = digest(every=3)
    assert len(found) > 800
    assert compare(found, recorded) == []


def test_the_gate_covers_the_synthetic_kinds_and_three_limits() -> None:
    recorded = json.loads(DIGEST_PATH.read_text())
    for kind in ("empty", "huge log", "long line", "unicode 0", "traceback 0", "diff 0"):
        assert f"synthetic/{kind}" in recorded
    assert len(LIMITS) == 3
    assert 160 in LIMITS


def test_compare_names_a_case_that_differs_or_is_not_recorded() -> None:
    assert compare({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9"}) == [
        "b: differs",
        "c: not recorded",
    ]
