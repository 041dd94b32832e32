"""lint and port pinned: every (chain, target) case of the rule gate against the recorded
digest (``tests/rule_gate.py`` says what the cases are and records them)."""

from __future__ import annotations

import json

from benchmarks.digest_gate import compare
from cast.providers import Rule
from rule_gate import DIGEST_PATH, digest


def test_lint_and_port_give_what_the_digest_recorded() -> None:
    recorded = json.loads(DIGEST_PATH.read_text())
    found, seen = digest()
    assert len(found) >= 4_000
    assert compare(found, recorded) == []
    assert sorted(set(Rule) - seen) == []  # every rule is reported somewhere in the gate


def test_compare_names_a_case_that_differs_or_is_not_recorded() -> None:
    assert compare({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9"}) == [
        "b: differs",
        "c: not recorded",
    ]
