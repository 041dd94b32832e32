"""csum's and cast's modules import each other without loops: no cycle among module-level
imports, and no import inside a function that would close one (issue 26: the loops
archive <-> stores, _pairs <-> _style and archive <-> reinsert, all since merged, were
held together that way; issue 37: cast/ast <-> _transforms/parse, cast/chainio <-> codecs and
cast/_rules <-> providers)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("csum", "cast")

LAZY: frozenset[tuple[str, str]] = frozenset(
    {
        # csum.handlers loads on first use, so ``import csum`` stays light
        ("csum.compactor", "csum.handlers"),
        ("csum._checks", "csum.handlers"),
        ("csum.cli", "csum.handlers"),
        # the gateway needs the serve extra: loaded only when ``csum serve`` runs
        ("csum.cli", "csum.serve"),
        ("csum.cli", "csum.serve.logs"),
        ("csum.cli", "csum.serve.connections"),  # imports uvicorn
        ("csum.serve", "csum.serve.app"),
    }
)
"""Imports inside functions that are there to load something late, not to break a loop."""


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    _name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of :data:`PACKAGES` an import statement loads (``from csum.x import
    y`` loads ``csum.x.y`` when that is a module, and ``csum.x`` unless every name it
    takes is such a module: taking a submodule reads none of the package's names)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level == 0 and node.module:
        submodules = [f"{node.module}.{alias.name}" for alias in node.names]
        names = [name for name in submodules if name in MODULES]
        if len(names) < len(submodules):
            names.append(node.module)
    else:
        names = []
    return [name for name in names if name in MODULES]


def _walk(
    tree: ast.AST, targets: Callable[[ast.Import | ast.ImportFrom], set[str]]
) -> tuple[set[str], set[str]]:
    """(module-level imports outside TYPE_CHECKING, imports inside functions) of ``tree``,
    each import named by ``targets``."""
    top: set[str] = set()
    inner: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                (inner if in_function else top).update(targets(child))
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, nested)

    visit(tree, False)
    return top, inner


def _imports(module: str) -> tuple[set[str], set[str]]:
    """(module-level imports outside TYPE_CHECKING, imports inside functions) of modules of
    the package ``module`` is in (csum imports cast, never the other way round: a loop
    stays within a package)."""
    top, inner = _walk(ast.parse(MODULES[module].read_text(encoding="utf-8")), _targets)
    package = module.split(".", maxsplit=1)[0]
    own = {name for name in MODULES if name.split(".")[0] == package} - {module}
    return top & own, inner & own


GRAPH = {module: _imports(module) for module in MODULES}


def _cycle_through(start: str, edges: Mapping[str, set[str]]) -> list[str] | None:
    """A path along ``edges`` (module -> the modules it imports) from ``start`` back to
    it, if any."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, path = stack.pop()
        for target in sorted(edges[module]):
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_no_cycle_among_module_level_imports() -> None:
    top = {module: GRAPH[module][0] for module in MODULES}
    cycles = [cycle for module in MODULES if (cycle := _cycle_through(module, top)) is not None]
    assert cycles == []


def test_imports_inside_functions_only_load_late() -> None:
    late = {(module, target) for module, (_, inner) in GRAPH.items() for target in inner}
    assert late <= LAZY, sorted(late - LAZY)


def test_the_graph_sees_the_imports() -> None:
    """The checks above look at real edges (a parser that found none would pass them)."""
    assert "csum.store_events" in GRAPH["csum.archive"][0]
    assert "csum.handlers" in GRAPH["csum.compactor"][1]
    assert "cast.transforms" in GRAPH["cast.ast"][0]
    assert "cast.codecs" in GRAPH["cast.chainio"][0]


@pytest.mark.parametrize(
    ("module", "target"),
    [
        ("cast.transforms", "cast.ast"),  # the tree transforms live in cast.ast
        ("cast.ast", "cast.parse"),
        ("cast.codecs._common", "cast.chainio"),  # install_hint lives in cast.errors
        ("cast.codecs.pydantic_ai", "cast.chainio"),
        ("cast._rules", "cast.providers"),  # checks and steps register with @implements
        ("cast._rules", "cast._lint"),
        ("cast._rules", "cast._port"),
        ("cast._rules", "cast"),
    ],
)
def test_the_loops_of_issue_37_stay_closed(module: str, target: str) -> None:
    top, inner = GRAPH[module]
    assert target not in top | inner


def test_the_salience_patterns_are_a_leaf_the_gist_and_the_guard_share() -> None:
    # the gist and the salience patterns (csum.clearing) do not load the guard (and with
    # it the handlers) to read a line
    top, inner = GRAPH["csum.clearing"]
    assert not {m for m in top | inner if m.startswith(("csum.guard", "csum.handlers"))}
    assert "csum.clearing" in GRAPH["csum.guard"][0]


# -- benchmarks/ (issue 37): no loop among the benchmark modules, counting the imports
# inside functions too (a benchmark has no import time to save, so none is there to
# hold a loop together) ---------------------------------------------------------------

BENCHMARKS = ROOT / "benchmarks"
BENCHMARK_MODULES = {_name(path): path for path in sorted(BENCHMARKS.rglob("*.py"))}


def _benchmark_imports(module: str) -> tuple[set[str], set[str]]:
    """(module-level imports of benchmark modules, those inside functions) of ``module``."""
    tree = ast.parse(BENCHMARK_MODULES[module].read_text(encoding="utf-8"))

    def targets(node: ast.Import | ast.ImportFrom) -> set[str]:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            names = []
        return {name for name in names if name in BENCHMARK_MODULES} - {module}

    return _walk(tree, targets)


BENCHMARK_GRAPH = {module: _benchmark_imports(module) for module in BENCHMARK_MODULES}


def test_no_cycle_among_benchmark_modules() -> None:
    # module level or inside functions: a benchmark loop is a loop either way
    edges = {m: set().union(*BENCHMARK_GRAPH[m]) for m in BENCHMARK_MODULES}
    cycles = [c for m in BENCHMARK_MODULES if (c := _cycle_through(m, edges)) is not None]
    assert cycles == []


def test_the_benchmark_graph_sees_the_imports() -> None:
    """The fidelity benchmark loads the bound, which loads only the items (the loop
    fidelity <-> fidelity_bound is gone); a parser that found no edge would pass above."""
    assert "benchmarks.fidelity_bound" in BENCHMARK_GRAPH["benchmarks.fidelity"][0]
    assert "benchmarks.fidelity_items" in BENCHMARK_GRAPH["benchmarks.fidelity_bound"][0]
    assert "benchmarks.fidelity" not in set().union(*BENCHMARK_GRAPH["benchmarks.fidelity_bound"])
