"""The clearing benchmark's pieces (``python -m benchmarks.bench_clearing``): its
baseline pass writes placeholders without a gist and puts the gist back."""

from __future__ import annotations

import csum.clearing
from benchmarks.bench_clearing import no_gist, pass_times, synthetic_turns, tiled
from csum.clearing import gist


def test_the_empty_gist_baseline_leaves_the_gist_as_it_was() -> None:
    chain = tiled(synthetic_turns(20), 30)
    assert len(chain) >= 30
    assert len(pass_times(chain, 2, with_gist=False)) == 2
    assert csum.clearing.gist is gist
    assert no_gist("line 1 of a log") == ""
    assert len(pass_times(chain, 1, with_gist=True)) == 1
