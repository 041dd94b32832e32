"""The extractive handler's one weight table: every feature has its weight and its
description, and a weight is what the handler reads (zeroing it turns its feature off)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from csum.handlers._extractive.features import LINE_FEATURES, _score, clear_caches
from csum.handlers._extractive.weights import WEIGHTS, WHAT


@pytest.fixture
def restore_weights() -> Iterator[None]:
    saved = dict(WEIGHTS)
    yield
    WEIGHTS.update(saved)
    clear_caches()


def test_every_feature_has_a_weight_and_every_weight_a_description() -> None:
    assert set(LINE_FEATURES) <= set(WEIGHTS)
    assert set(WHAT) == set(WEIGHTS)
    assert all(WHAT[name].strip() for name in WHAT)


@pytest.mark.parametrize(
    ("feature", "line"),
    [
        ("error", "ERROR: connection refused by db.internal"),
        ("counts", "297 passed, 0 failures in 4.2s"),
        ("constraint", "we must never push to the main branch directly"),
        ("pin", "pinned numpy==1.26.4 in the lock file"),
    ],
)
def test_a_zeroed_weight_takes_its_features_score_away(
    feature: str, line: str, restore_weights: None
) -> None:
    before = _score(line, listing=False, diff=False)
    weight = WEIGHTS[feature]
    assert weight > 0
    WEIGHTS[feature] = 0.0
    clear_caches()
    assert _score(line, listing=False, diff=False) == pytest.approx(before - weight)


def test_a_users_line_in_an_earlier_summary_earns_the_user_weight() -> None:
    """The user's lines rank above the same words elsewhere: what was asked and agreed
    is what the Compactor's memory is asked about later."""
    from csum.handlers._extractive.rendering import USER_PREFIX, _prior_line

    line = "keep the staging database untouched until friday"
    plain = _prior_line(line).score
    said = _prior_line(USER_PREFIX + line).score
    assert said > plain
    assert said == pytest.approx(WEIGHTS["user"] + _score(line, listing=False, diff=False))
