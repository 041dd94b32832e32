"""The library may not know the benchmarks' data: no fact format appears anywhere in csum/.

A summarizer that recognised the simulator's phrasings, or the labelled facts of the
fidelity set, would score well without keeping what a real agent needs.
"""

from __future__ import annotations

import builtins
import keyword
import re
import string
from pathlib import Path

from benchmarks.fidelity_items import DEV_PATH, load_items
from benchmarks.policies import simulate
from tests.conftest import FIDELITY, needs

CSUM = Path(__file__).resolve().parents[2] / "csum"
MIN_CHUNK = 8  # shorter literal pieces are ordinary words
ORDINARY = {w.lower() for w in dir(builtins)} | set(keyword.kwlist) | {"cancelled", "langchain"}
"""Words the library uses for its own code (Python names, cancellation, the framework it
integrates with)."""


def _library_text() -> str:
    files = [p for p in sorted(CSUM.rglob("*")) if p.is_file() and p.suffix in {".py", ".md", ""}]
    assert files
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files).lower()


def _literal_chunks(template: str) -> list[str]:
    chunks = [text.strip().lower() for text, _, _, _ in string.Formatter().parse(template)]
    # A lone English word ("measured") is vocabulary, not a format.
    return [c for c in chunks if len(c) >= MIN_CHUNK and not c.isalpha()]


def test_the_simulator_formats_are_unknown_to_csum() -> None:
    library = _library_text()
    templates = [t for group in simulate.FACT_TEMPLATES.values() for t in group]
    templates += list(simulate._QUESTIONS.values()) + list(simulate._CAUSES)
    chunks = [c for t in templates for c in _literal_chunks(t)]
    chunks += [key for pair in simulate._ID_KEYS for key in pair if "_" in key]
    chunks.append("fact-")  # the former planted token
    assert len(chunks) > 20
    found = [chunk for chunk in chunks if chunk in library]
    assert found == []


@needs(FIDELITY)
def test_the_fidelity_facts_are_unknown_to_csum() -> None:
    library = _library_text()
    literals = {
        pattern.lower()
        for item in load_items(dev=DEV_PATH)  # the parts a tuner sees: A, B and D
        for _, patterns in item.facts
        for pattern in patterns
        if not pattern.startswith("re:")
        and len(pattern) >= MIN_CHUNK
        and not set(re.findall(r"\w+", pattern.lower())) <= ORDINARY
    }
    assert len(literals) > 100
    assert sorted(p for p in literals if p in library) == []
