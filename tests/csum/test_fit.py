"""An oversized summary is fitted to its cap part by part, never cut off at the end."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cast.internals import utf8_len
from csum._fit import fit_joined

# What a model writes under csum's structured prompt, about a real Claude Code session
# of the corpus (spotter: adding OpenTelemetry to a Phoenix app).
STRUCTURED = """Task: add OpenTelemetry tracing to the spotter Phoenix app. The user said: never \
commit without running mix test; do not touch the Oban config.
Decisions: use opentelemetry_phoenix and opentelemetry_bandit; the stdout exporter only in \
dev, because the collector is not deployed yet.
Files:
- mix.exs:52 added opentelemetry 1.7.0, opentelemetry_api 1.5.0, opentelemetry_exporter 1.10.0
- config/runtime.exs:18 exporter set to :otel_exporter_stdout for dev
- lib/spotter/application.ex:14 OpentelemetryPhoenix.setup(adapter: :bandit)
Commands:
- mix deps.get: 17 new packages, ok
- mix test --seed 0: crashed, Could not start application opentelemetry
- mix test: 373 tests, 0 failures
Errors:
- (BadMapError) expected a map, got: :otel_exporter_stdout in otel_configuration.erl:213; \
cause: the exporter must be a {module, config} tuple; fixed in config/runtime.exs:18
Identifiers: branch spotter-gqc, issue spotter-4te, migration 20260211203856
Pending: wire the trace id into the transcript renderer; ask the user about sampling."""


def test_a_summary_that_fits_is_returned_unchanged() -> None:
    assert fit_joined([STRUCTURED], utf8_len(STRUCTURED)) == STRUCTURED


@pytest.mark.parametrize("cap", [200, 400, 700])
def test_every_part_keeps_its_heading_line_under_a_tight_cap(cap: int) -> None:
    fitted = fit_joined([STRUCTURED], cap)
    assert utf8_len(fitted) <= cap
    if cap >= 400:  # room for every heading line (cut where needed): the last parts stay
        assert "Pending:" in fitted
        assert "Identifiers:" in fitted
    # a plain cut of the first bytes would have kept neither
    assert "Pending:" not in STRUCTURED.encode()[:cap].decode("utf-8", "ignore")


def test_kept_lines_are_whole_and_in_order() -> None:
    fitted = fit_joined([STRUCTURED], 900)
    original = STRUCTURED.split("\n")
    positions = []
    for line in fitted.split("\n"):
        if line.endswith("…"):
            assert any(o.startswith(line[:-1].rstrip()) for o in original)
            positions.append(next(i for i, o in enumerate(original) if o.startswith(line[:-1])))
        else:
            positions.append(original.index(line))
    assert positions == sorted(positions)
    # each part's first items come before any part's later items are taken
    assert "- mix.exs:52" in fitted
    assert "- mix deps.get" in fitted
    assert "Pending: wire the trace id" in fitted


def test_an_answer_without_headings_is_cut_after_a_whole_line() -> None:
    text = "\n".join(f"line {i}: the build step {i} passed in {i * 7} ms" for i in range(40))
    fitted = fit_joined([text], 300)
    assert utf8_len(fitted) <= 300
    assert text.startswith(fitted)
    assert text[len(fitted)] == "\n"


def test_a_single_huge_line_is_cut_between_words_and_marked() -> None:
    text = "word " * 10_000
    fitted = fit_joined([text], 120)
    assert utf8_len(fitted) <= 120
    assert fitted.endswith("…")
    assert fitted[:-1].rstrip() == fitted[:-1]
    assert fitted.startswith("word word")


@given(st.text(min_size=1, max_size=400), st.integers(min_value=0, max_value=300))
def test_the_cap_always_holds_and_the_text_is_not_invented(text: str, cap: int) -> None:
    fitted = fit_joined([text], cap)
    assert utf8_len(fitted) <= cap
    kept = set(text.split("\n"))
    for line in fitted.split("\n"):
        assert line in kept or line.endswith("…") or text.startswith(line) or not line


@given(st.text(max_size=300), st.integers(min_value=0, max_value=300))
def test_fitting_is_idempotent(text: str, cap: int) -> None:
    once = fit_joined([text], cap)
    assert fit_joined([once], cap) == once


def test_joined_summaries_each_keep_their_head() -> None:
    first = STRUCTURED
    second = (
        "Task: fix the flaky vitest run.\nCommands:\n- npx vitest run: 12 passed\nPending: none"
    )
    fitted = fit_joined([first, second, "Files: assets/js/app.js:40 renamed the hook"], 600)
    assert utf8_len(fitted) <= 600
    assert "Task: fix the flaky vitest run." in fitted
    assert "Files: assets/js/app.js:40 renamed the hook" in fitted
    assert fit_joined(["a", "b"], 10) == "a\nb"
