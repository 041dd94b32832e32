"""The fidelity benchmark: its labelled set, its fact rule and its baselines."""

from __future__ import annotations

import pytest

from benchmarks.fidelity import head, head_tail, markdown, random_lines, render, run, size_band
from benchmarks.fidelity_items import (
    BUDGETS,
    RULE_VERSION,
    SHORT,
    WINDOW,
    Item,
    fact_kept,
    load_items,
    plain_form,
)
from tests.conftest import FIDELITY, needs


@needs(FIDELITY)
def test_the_set_is_large_varied_and_sourced() -> None:
    items = load_items()
    assert len(items) >= 40
    prefixes = {item.id.split("-")[0] for item in items}
    # both corpus folders and other transcripts (SWE-agent, mini-swe-agent)
    assert prefixes == {"cc", "tb", "swe", "mswe"}
    assert len({item.id for item in items}) == len(items)
    for item in items:
        assert item.facts, item.id
        assert {"repo", "commit", "path", "license"} <= item.source.keys(), item.id
    assert sum(item.output_role == "ai" for item in items) >= 5  # answers too


@needs(FIDELITY)
def test_every_fact_is_in_its_own_item() -> None:
    result = run(load_items())
    assert result.unlabelled == []


def test_a_value_counts_only_near_its_subject() -> None:
    far = "opentelemetry_api is new\n" + "x" * 100 + "\nversion 1.5.0"
    assert not fact_kept(far, ["opentelemetry_api", "1.5.0"])
    assert fact_kept("opentelemetry_api 1.5.0", ["opentelemetry_api", "1.5.0"])
    assert fact_kept("a=1 HAT033 economy=135", ["HAT033", r"re:economy\W+135"])
    assert not fact_kept("HAT033 business=135", ["HAT033", r"re:economy\W+135"])


def test_formatting_a_fact_does_not_need_is_read_away() -> None:
    """A JSON field flattened to key=value, an aligned status line with its spaces
    collapsed and a bold value unmarked still hold their facts; other text does not."""
    label = '"request_id": "3b2f7385-b01d"'
    assert fact_kept("results[0]: url=https://x.dev request_id=3b2f7385-b01d", [label])
    assert not fact_kept("request_id=3b2f7385-b01d", [label], exact_form=True)
    assert not fact_kept("request_id=3b2f7385-b01e", [label])
    assert fact_kept("Changes not staged:\nmodified: Justfile", ["modified:   Justfile"])
    assert fact_kept("The mean of value in data.csv is 100.0", ["data.csv** is **100.0"])
    assert not fact_kept("modified Justfile", ["modified:   Justfile"])
    assert plain_form('{"a": 1,  "b" : "x"}') == plain_form("{a=1, b=x}") == "{a=1, b=x}"
    far = '"package": "httpx"\n' + "x" * 100 + '\n"version": "0.27.0"'
    assert not fact_kept(far, ['"package": "httpx"', '"version": "0.27.0"'])
    assert plain_form("a:  1\n\n  b") == "a=1\nb"  # line breaks stay (rule 2)


# --- counting rule 2 (issue 30): each of these holds under rule 2 and not under rule 1 ---


def test_parts_count_on_one_line_or_within_80_characters() -> None:
    assert RULE_VERSION == 2
    assert WINDOW == 80
    subject, value = "opentelemetry_api is new", "version 1.5.0"
    patterns = ["opentelemetry_api", "1.5.0"]
    assert fact_kept(f"{subject}\n{'x' * 60}\n{value}", patterns)  # 61 characters apart
    assert not fact_kept(f"{subject}\n{'x' * 90}\n{value}", patterns)  # rule 1: 300
    assert fact_kept(f"{subject} {'x ' * 150}{value}", patterns)  # one line: any distance
    # a heap of bare keywords on separate lines no longer counts as an association
    assert not fact_kept(
        "HAT033\n" + "HAT088\n" * 12 + "economy: 135", ["HAT033", "re:economy\\W+135"]
    )


def test_a_value_of_three_characters_counts_only_beside_its_subject() -> None:
    assert SHORT == 3
    bags = ["total_baggages", "3"]
    assert fact_kept('"total_baggages": 3,', bags)
    assert fact_kept('File "numpy_handler.py", line 293, in x', ["numpy_handler.py", "293"])
    assert fact_kept("flights from Newark (EWR) to Chicago (ORD)", ["EWR", "ORD"])
    assert not fact_kept("total_baggages were counted; the nonfree ones cost 3", bags)
    assert not fact_kept("JFK and a long way further on, in other words, DTW", ["JFK", "DTW"])
    assert fact_kept("the run took 3 s", ["3"])  # a fact of one part has no subject


def test_identifiers_match_whole_tokens() -> None:
    assert not fact_kept("closed spotter-0p7.1 today", ["spotter-0p7"])
    assert fact_kept("closed spotter-0p7.", ["spotter-0p7"])  # a full stop ends it
    assert fact_kept("closed spotter-0p7.1 today", ["spotter-0p7.1"])
    assert not fact_kept("opentelemetry_api 1.5.0", ["opentelemetry_api", "1.5"])
    assert not fact_kept("opentelemetry_api 11.5", ["opentelemetry_api", "1.5"])
    assert not fact_kept("see opentelemetry_api_ext", ["opentelemetry_api"])
    assert not fact_kept("see opentelemetry-api-ext", ["opentelemetry-api"])
    # a qualified name's member and a path's last part are whole tokens
    assert fact_kept("Running Repo.Migrations.AddRefs.up/0", ["AddRefs"])
    assert fact_kept("lib/spotter/otel.ex:39:5: implicit try", ["otel.ex:39"])
    # a phrase (white space in it) is found anywhere; re: patterns are matched as written
    assert fact_kept("notInstall via mix igniter.installer", ["Install via mix igniter.install"])
    assert fact_kept("spotter-0p7.1", ["re:spotter-0p7"])


def test_facts_whose_parts_are_apart_in_their_item_are_listed_not_lost() -> None:
    """A fact whose parts sit on lines far apart in its item is labelled right: only a
    summary that brings the parts together keeps it, so the run lists it apart."""
    item = Item(
        id="t-apart",
        kind="test run",
        call_name=None,
        call_arguments="",
        output_role="ai",
        output="create_heatmap/3 is unused\n" + "filler line\n" * 12 + "at test.exs:22:8",
        facts=(("the warning", ("create_heatmap/3", "test.exs:22")),),
        source={},
    )
    result = run([item])
    assert result.unlabelled == []
    assert result.apart == ["t-apart: the warning"]
    assert fact_kept("create_heatmap/3 is unused … at test.exs:22:8", item.facts[0][1])


@needs(FIDELITY)
@pytest.mark.parametrize("fraction", BUDGETS)
def test_baselines_stay_within_budget(fraction: float) -> None:
    for item in load_items():
        budget = max(1, round(fraction * item.size))
        for summary in (head(item, budget), head_tail(item, budget), random_lines(item, budget, 1)):
            assert len(summary.encode("utf-8")) <= budget, item.id


def test_size_bands_cover_every_size() -> None:
    assert size_band(0) == size_band(999) == "under 1 KB"
    assert size_band(1000) == size_band(2999) == "1-3 KB"
    assert size_band(3000) == "3-8 KB"
    assert size_band(8000) == size_band(10**9) == "8 KB and over"


@pytest.mark.parametrize("size", [-1, 1.5, "1000", True])
def test_a_size_that_is_no_byte_count_is_refused(size: object) -> None:
    with pytest.raises(ValueError, match="whole number of bytes"):
        size_band(size)  # type: ignore[arg-type]


@needs(FIDELITY)
def test_the_report_shows_items_by_size_and_they_add_up() -> None:
    items = load_items()
    small = sorted(items, key=lambda i: i.size)
    chosen = [*small[:3], *small[-2:]]  # the smallest and the largest keep the test quick
    lines = render(run(chosen), chosen)
    lines = lines[: next(n for n, line in enumerate(lines) if line.startswith("| subset |"))]
    rows = [line for line in lines if line.startswith("| ") and "KB" in line.split("|")[1]]
    bands = [row.split("|")[1].strip() for row in rows]
    assert bands[0] == "under 1 KB"
    assert bands[-1] == size_band(small[-1].size)
    assert sum(int(row.split("|")[2]) for row in rows) == len(chosen)
    assert sum(int(row.split("|")[3]) for row in rows) == sum(len(i.facts) for i in chosen)
    assert "the 3 items under 1 KB keep" in markdown(run(chosen), chosen)
