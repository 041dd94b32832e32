"""The ablation command: a zeroed weight comes back, the change is per part, the docs'
table is written between its markers only."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.ablation import END, START, ablate, markdown, write_docs, zeroed
from benchmarks.fidelity_items import ITEMS_PATH, load_items
from csum.handlers._extractive.weights import WEIGHTS, WHAT
from tests.conftest import FIDELITY, needs


def test_zeroed_sets_the_weight_to_zero_and_restores_it() -> None:
    weight = WEIGHTS["error"]
    with zeroed("error"):
        assert WEIGHTS["error"] == 0.0
    assert WEIGHTS["error"] == weight


def test_zeroed_restores_the_weight_when_the_run_fails() -> None:
    weight = WEIGHTS["early"]
    with pytest.raises(RuntimeError), zeroed("early"):
        raise RuntimeError
    assert WEIGHTS["early"] == weight


def test_an_unknown_feature_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no feature 'nope'; known: .*error"), zeroed("nope"):
        pass


@needs(FIDELITY)
def test_ablation_reports_each_part_and_the_identifiers_matter() -> None:
    items = load_items(ITEMS_PATH)[:12]
    (row,) = ablate(["identifier"], items)
    assert set(row.change) == {"A", "B", "C", "D", "E"}
    assert row.change["C"] == row.change["E"] == 0.0  # not loaded
    assert row.change["A"] + row.change["B"] < 0  # without identifiers facts are lost


@needs(FIDELITY)
def test_the_docs_table_replaces_only_what_lies_between_its_markers(tmp_path: Path) -> None:
    doc = tmp_path / "handlers.md"
    doc.write_text(f"before\n{START}\nold table\n{END}\nafter\n")
    items = load_items(ITEMS_PATH)[:2]
    write_docs(ablate(["edge"], items), doc)
    text = doc.read_text()
    assert text.startswith(f"before\n{START}")
    assert text.endswith(f"{END}\nafter\n")
    assert "old table" not in text
    assert f"| `edge` | {WEIGHTS['edge']:g} | {WHAT['edge']} |" in text
    assert markdown([])[0] == START
