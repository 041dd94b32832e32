"""The examples in README.md and docs/*.md run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


_IMPORTED = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)


def _skip_without_extras(path: Path) -> None:
    """Skip, with the reason, a document whose examples import a module needing an
    optional extra that is not installed (a third-party module is missing)."""
    examples = doctest.DocTestParser().get_examples(path.read_text(encoding="utf-8"))
    modules = {a or b for e in examples for a, b in _IMPORTED.findall(e.source)}
    for name in sorted(modules):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
            root = (getattr(missing, "name", None) or "").split(".")[0]
            if isinstance(missing, ModuleNotFoundError) and root not in {"cast", "csum"}:
                pytest.skip(f"{path.name}'s examples need an extra that is not installed: {exc}")
            raise


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_examples_in_document_run(path: Path) -> None:
    _skip_without_extras(path)
    result = doctest.testfile(
        str(path),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        verbose=False,
    )
    assert result.failed == 0, f"{result.failed} example(s) failed in {path.name}"


def test_package_docstrings_run() -> None:
    import cast
    import csum

    for module in (cast, csum):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
