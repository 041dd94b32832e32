"""csum's modules import each other without loops: no cycle among module-level imports,
and no import inside a function that would close one (issue 26: the loops archive <->
stores, _pairs <-> _style and archive <-> reinsert were held together that way)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSUM = ROOT / "csum"

LAZY: frozenset[tuple[str, str]] = frozenset(
    {
        # csum.handlers loads on first use, so ``import csum`` stays light
        ("csum.compactor", "csum.handlers"),
        ("csum._handler_check", "csum.handlers"),
        ("csum.cli", "csum.handlers"),
        # the gateway needs the serve extra: loaded only when ``csum serve`` runs
        ("csum.serve.cli", "csum.serve"),
        ("csum.serve.cli", "csum.serve.logs"),
        ("csum.serve.cli", "csum.serve.connections"),  # imports uvicorn
        ("csum.serve", "csum.serve.app"),
    }
)
"""Imports inside functions that are there to load something late, not to break a loop."""


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_name(path): path for path in sorted(CSUM.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The csum modules an import statement loads (``from csum.x import y`` loads
    ``csum.x.y`` when that is a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level == 0 and node.module:
        names = [node.module]
        names += [f"{node.module}.{alias.name}" for alias in node.names]
    else:
        names = []
    return [name for name in names if name in MODULES]


def _imports(module: str) -> tuple[set[str], set[str]]:
    """(module-level csum imports outside TYPE_CHECKING, csum imports inside functions)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top: set[str] = set()
    inner: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                (inner if in_function else top).update(_targets(child))
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, nested)

    visit(tree, False)
    top.discard(module)
    inner.discard(module)
    return top, inner


GRAPH = {module: _imports(module) for module in MODULES}


def _cycle_through(start: str) -> list[str] | None:
    """A path of module-level imports from ``start`` back to it, if any."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, path = stack.pop()
        for target in sorted(GRAPH[module][0]):
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_no_cycle_among_module_level_imports() -> None:
    cycles = [cycle for module in MODULES if (cycle := _cycle_through(module)) is not None]
    assert cycles == []


def test_imports_inside_functions_only_load_late() -> None:
    late = {(module, target) for module, (_, inner) in GRAPH.items() for target in inner}
    assert late <= LAZY, sorted(late - LAZY)


def test_the_graph_sees_the_imports() -> None:
    """The checks above look at real edges (a parser that found none would pass them)."""
    assert "csum._search_text" in GRAPH["csum.archive"][0]
    assert "csum.handlers" in GRAPH["csum.compactor"][1]


def test_the_salience_patterns_are_a_leaf_the_gist_and_the_guard_share() -> None:
    # the gist no longer loads the guard (and with it the handlers) to read a line
    top, inner = GRAPH["csum._salience"]
    assert not {m for m in top | inner if m.startswith("csum")}
    assert "csum._salience" in GRAPH["csum._gist"][0]
    assert "csum._salience" in GRAPH["csum.guard"][0]
    assert "csum.guard" not in GRAPH["csum._gist"][0] | GRAPH["csum._gist"][1]
