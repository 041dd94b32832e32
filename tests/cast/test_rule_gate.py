"""lint and port pinned: every (chain, target) case of the rule gate against the recorded
digest (``tests/support/rule_gate.py`` says what the cases are and records them)."""

from __future__ import annotations

import json

from benchmarks.digest_gate import compare
from cast.providers import Rule
from rule_gate import DIGEST_PATH, digest
from tests.conftest import CORPUS, PAYLOADS, needs


def test_lint_and_port_give_what_the_digest_recorded() -> None:
    """Without the shared corpus, the cases of the project's own chains are compared."""
    recorded = json.loads(DIGEST_PATH.read_text())
    found, _ = digest()
    assert len(found) >= 1_000
    assert compare(found, recorded) == []


@needs(CORPUS)
@needs(PAYLOADS)
def test_the_gate_covers_every_case_and_every_rule() -> None:
    recorded = json.loads(DIGEST_PATH.read_text())
    found, seen = digest()
    assert found.keys() == recorded.keys()
    assert sorted(set(Rule) - seen) == []  # every rule is reported somewhere in the gate


def test_compare_names_a_case_that_differs_or_is_not_recorded() -> None:
    assert compare({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9"}) == [
        "b: differs",
        "c: not recorded",
    ]
