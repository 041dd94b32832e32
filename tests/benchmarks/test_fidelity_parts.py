"""The fidelity set's parts: A and B (tuned on / held out by CRC), the fresh part C and the
development part D."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fidelity import PART_NAMES, main, markdown, render, run
from benchmarks.fidelity_items import (
    DEV_PATH,
    HELDOUT_PATH,
    ITEMS_PATH,
    Item,
    half,
    load_items,
    part_of,
)
from tests.conftest import FIDELITY, needs


@needs(FIDELITY)
def test_part_c_is_large_sourced_and_fresh() -> None:
    tuned = load_items()
    fresh = [i for i in load_items(heldout=HELDOUT_PATH) if part_of(i) == "C"]
    assert len(fresh) >= 24
    assert sum(i.output_role == "ai" for i in fresh) >= 5  # answers too
    for item in fresh:
        assert 3 <= len(item.facts) <= 8, item.id
        assert {"repo", "commit", "path", "license"} <= item.source.keys(), item.id
    # other transcripts than A and B: no (repository, file) in common, no text repeated
    tuned_files = {(i.source["repo"], i.source["path"]) for i in tuned}
    assert not tuned_files & {(i.source["repo"], i.source["path"]) for i in fresh}
    tuned_outputs = {i.output.strip() for i in tuned}
    assert not [i.id for i in fresh if i.output.strip() in tuned_outputs]


@needs(FIDELITY)
def test_every_part_c_fact_is_in_its_own_item() -> None:
    fresh = [i for i in load_items(heldout=HELDOUT_PATH) if part_of(i) == "C"]
    assert run(fresh).unlabelled == []


@needs(FIDELITY)
def test_parts_are_assigned_as_documented() -> None:
    plain = load_items()
    both = load_items(heldout=HELDOUT_PATH)
    assert [i.id for i in both[: len(plain)]] == [i.id for i in plain]  # default unchanged
    assert all(part_of(i) == half(i) in {"A", "B"} for i in plain)
    assert {part_of(i) for i in plain} == {"A", "B"}
    assert {part_of(i) for i in both[len(plain) :]} == {"C"}
    held_ids = [json.loads(line)["id"] for line in HELDOUT_PATH.read_text().splitlines()]
    assert [i.id for i in both[len(plain) :]] == held_ids


@needs(FIDELITY)
def test_ids_are_unique_across_the_files(tmp_path: Path) -> None:
    both = load_items(heldout=HELDOUT_PATH)
    assert len({i.id for i in both}) == len(both)
    with pytest.raises(ValueError, match="occurs twice"):
        load_items(heldout=ITEMS_PATH)


@needs(FIDELITY)
def test_the_report_shows_part_c_and_counts_it_in_all() -> None:
    fresh = [i for i in load_items(heldout=HELDOUT_PATH) if part_of(i) == "C"]
    items = [*load_items()[:4], *fresh[:4]]  # a few of each keep the test quick
    result = run(items)
    lines = render(result, items)
    row = next(line for line in lines if line.startswith("| C (fresh, labelled after tuning)"))
    assert row.split("|")[2].strip() == "4"
    total = next(line for line in lines if line.startswith("| all |"))
    assert total.split("|")[2].strip() == "8"
    assert result.items == 8
    assert "Part C (4 items" in markdown(result, items)
    assert not any(line.startswith("| C ") for line in render(run(items[:4]), items[:4]))


# --- part D: the development set (for tuning; C stays held out) ---------------------------


def _dev_items() -> list[Item]:
    return [i for i in load_items(heldout=HELDOUT_PATH, dev=DEV_PATH) if part_of(i) == "D"]


@needs(FIDELITY)
def test_part_d_is_large_sourced_and_from_other_files() -> None:
    dev = _dev_items()
    assert len(dev) >= 30
    assert sum(i.output_role == "ai" for i in dev) >= 6  # answers too
    for kinds, least in (
        ({"file edit"}, 4),
        ({"file read"}, 4),
        ({"directory listing"}, 4),
        ({"web search", "web fetch"}, 4),
    ):
        assert sum(i.kind in kinds for i in dev) >= least, kinds
    for item in dev:
        assert 3 <= len(item.facts) <= 8, item.id
        assert {"repo", "commit", "path", "license"} <= item.source.keys(), item.id
    # no (repository, file) shared with A, B or C, and no output repeated
    others = load_items(heldout=HELDOUT_PATH)
    other_files = {(i.source["repo"], i.source["path"]) for i in others}
    assert not other_files & {(i.source["repo"], i.source["path"]) for i in dev}
    other_outputs = {i.output.strip() for i in others}
    assert not [i.id for i in dev if i.output.strip() in other_outputs]


@needs(FIDELITY)
def test_every_part_d_fact_is_in_its_own_item() -> None:
    assert run(_dev_items()).unlabelled == []


@needs(FIDELITY)
def test_part_d_loads_after_c_with_unique_ids() -> None:
    with_c = load_items(heldout=HELDOUT_PATH)
    everything = load_items(heldout=HELDOUT_PATH, dev=DEV_PATH)
    assert [i.id for i in everything[: len(with_c)]] == [i.id for i in with_c]
    dev_ids = [json.loads(line)["id"] for line in DEV_PATH.read_text().splitlines()]
    assert [i.id for i in everything[len(with_c) :]] == dev_ids
    assert {part_of(i) for i in everything[len(with_c) :]} == {"D"}
    assert len({i.id for i in everything}) == len(everything)
    without_c = load_items(dev=DEV_PATH)  # what --no-heldout loads: A, B and D
    assert {part_of(i) for i in without_c} == {"A", "B", "D"}
    with pytest.raises(ValueError, match="occurs twice"):
        load_items(heldout=HELDOUT_PATH, dev=HELDOUT_PATH)


@needs(FIDELITY)
def test_the_command_line_drops_only_the_part_asked(capsys: pytest.CaptureFixture[str]) -> None:
    dev_id = _dev_items()[0].id
    held_id = next(i.id for i in load_items(heldout=HELDOUT_PATH) if part_of(i) == "C")
    assert main(["--no-heldout", "--show", dev_id]) == 0  # D stays with --no-heldout
    assert "--- extractive at" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--no-heldout", "--show", held_id])
    with pytest.raises(SystemExit):
        main(["--no-dev", "--show", dev_id])
    assert "no item with id" in capsys.readouterr().err


def check_report_row(part: str, chosen: list[Item]) -> None:
    """With three items of ``part`` beside three of A/B, the report has a row of three
    for it, an "all" row of six, and its note in the docs section."""
    items = [*load_items()[:3], *chosen[:3]]  # a few of each keep the test quick
    result = run(items)
    lines = render(result, items)
    row = next(line for line in lines if line.startswith(f"| {PART_NAMES[part]} |"))
    assert row.split("|")[2].strip() == "3"
    total = next(line for line in lines if line.startswith("| all |"))
    assert total.split("|")[2].strip() == "6"
    assert f"Part {part} (3 items" in markdown(result, items)


@needs(FIDELITY)
def test_the_report_shows_part_d_and_counts_it_in_all() -> None:
    check_report_row("D", _dev_items())
