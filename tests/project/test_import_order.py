"""No import loop in ``cast`` is held together by an import at the bottom of a module:
every module-level import comes before the module's first function or class."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CAST = Path(__file__).resolve().parents[2] / "cast"
MODULES = sorted(CAST.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(CAST)))
def test_imports_come_before_definitions(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined = True
        elif isinstance(node, ast.Import | ast.ImportFrom) and defined:
            pytest.fail(f"{path.name}:{node.lineno} imports after a definition")
