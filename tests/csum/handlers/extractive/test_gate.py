"""The extractive handler's outputs pinned: one case in seven of the byte-identical gate
(``python -m benchmarks.extractive_gate`` runs them all) against the recorded digest."""

from __future__ import annotations

import json

from benchmarks.digest_gate import compare
from benchmarks.extractive_gate import DIGEST_PATH, digest
from tests.conftest import CLAUDE_CODE, FIDELITY, TAUBENCH, needs


@needs(TAUBENCH)
@needs(CLAUDE_CODE)
@needs(FIDELITY)
def test_summaries_are_those_recorded_in_the_digest() -> None:
    recorded = json.loads(DIGEST_PATH.read_text())
    found = digest(every=7)
    assert len(found) > 200
    assert compare(found, recorded) == []


def test_compare_names_a_case_that_differs_or_is_not_recorded() -> None:
    assert compare({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9"}) == [
        "b: differs",
        "c: not recorded",
    ]
