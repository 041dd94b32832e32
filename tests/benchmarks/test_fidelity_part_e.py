"""Part E of the fidelity set: a second fresh held-out part, from a recording of another
agent (aider's own chat log), labelled after all tuning on parts A, B and D."""

from __future__ import annotations

import json

import pytest

from benchmarks.fidelity import main
from benchmarks.fidelity_items import (
    DEV_PATH,
    FRESH_PATH,
    HELDOUT_PATH,
    Item,
    fact_kept,
    load_items,
    part_of,
)
from tests.benchmarks.test_fidelity_parts import check_report_row
from tests.conftest import FIDELITY, needs


def _everything() -> list[Item]:
    return load_items(heldout=HELDOUT_PATH, dev=DEV_PATH, fresh=FRESH_PATH)


def _fresh() -> list[Item]:
    return [i for i in _everything() if part_of(i) == "E"]


@needs(FIDELITY)
def test_part_e_is_large_sourced_and_from_another_recording() -> None:
    fresh, others = _fresh(), [i for i in _everything() if part_of(i) != "E"]
    assert len(fresh) >= 30
    assert sum(i.output_role == "ai" for i in fresh) >= 6  # answers too
    assert len({i.kind for i in fresh}) >= 6
    for item in fresh:
        assert 3 <= len(item.facts) <= 8, item.id
        assert {"repo", "commit", "path", "license", "where"} <= item.source.keys(), item.id
    # No repository of another part, no output repeated from another part.
    assert not {i.source["repo"] for i in fresh} & {i.source["repo"] for i in others}
    outputs = {i.output.strip() for i in others}
    assert not [i.id for i in fresh if i.output.strip() in outputs]


@needs(FIDELITY)
def test_every_part_e_fact_is_in_its_own_item() -> None:
    missing = [
        (item.id, what)
        for item in _fresh()
        for what, patterns in item.facts
        if not fact_kept(item.text, patterns)
    ]
    assert missing == []


@needs(FIDELITY)
def test_part_e_loads_last_and_is_left_out_as_asked(capsys: pytest.CaptureFixture[str]) -> None:
    without = load_items(heldout=HELDOUT_PATH, dev=DEV_PATH)
    everything = _everything()
    assert [i.id for i in everything[: len(without)]] == [i.id for i in without]
    ids = [json.loads(line)["id"] for line in FRESH_PATH.read_text("utf-8").splitlines()]
    assert [i.id for i in everything[len(without) :]] == ids
    assert len({i.id for i in everything}) == len(everything)
    with pytest.raises(ValueError, match="occurs twice"):
        load_items(dev=DEV_PATH, fresh=DEV_PATH)
    fresh_id, dev_id = ids[0], next(i.id for i in without if part_of(i) == "D")
    assert main(["--show", fresh_id]) == 0
    assert "--- extractive at" in capsys.readouterr().out
    for flags in (["--no-heldout"], ["--no-fresh"]):  # a tuner's run leaves E out
        with pytest.raises(SystemExit):
            main([*flags, "--show", fresh_id])
    assert main(["--no-fresh", "--show", dev_id]) == 0


@needs(FIDELITY)
def test_the_report_shows_part_e_and_counts_it_in_all() -> None:
    check_report_row("E", _fresh())
