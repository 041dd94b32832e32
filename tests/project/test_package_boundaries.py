"""csum uses cast's public API only, and cast's unchecked fast path stays inside cast."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSUM_SOURCES = sorted((ROOT / "csum").rglob("*.py"))
OUTSIDE_CAST = sorted(
    path for folder in ("csum", "benchmarks", "tests") for path in (ROOT / folder).rglob("*.py")
)

# cast's public surface for other packages: the package itself and the submodules whose
# names do not start with an underscore and that are documented for direct use.
PUBLIC_CAST_MODULES = {"cast", "cast.chainio", "cast.codecs", "cast.internals"}

# What only cast may do: its trusted constructors and pydantic's private slots.
FAST_PATH_MARKERS = ("trusted_", "new_trusted", "__pydantic_fields_set__", "with_field")


def _cast_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """Every import of a cast module in ``path``: (line, module, name or None)."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend(
                (node.lineno, alias.name, None)
                for alias in node.names
                if alias.name.split(".")[0] == "cast"
            )
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "cast"
        ):
            found.extend((node.lineno, node.module, alias.name) for alias in node.names)
    return found


def _public_module(module: str) -> bool:
    if any(part.startswith("_") for part in module.split(".")):
        return False
    return module in PUBLIC_CAST_MODULES or module.startswith("cast.codecs.")


def test_the_walk_finds_csum() -> None:
    names = {path.name for path in CSUM_SOURCES}
    assert {"compactor.py", "summarizer.py", "assemble.py", "plan.py"} <= names


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in CSUM_SOURCES]
)
def test_csum_imports_only_public_cast_names(path: Path) -> None:
    wrong = []
    for line, module, name in _cast_imports(path):
        if not _public_module(module):
            wrong.append(f"line {line}: module {module}")
        elif name is not None and name not in importlib.import_module(module).__all__:
            wrong.append(f"line {line}: {module}.{name} is not in its __all__")
    assert wrong == []


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in CSUM_SOURCES]
)
def test_csum_never_touches_the_fast_path(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert [marker for marker in FAST_PATH_MARKERS if marker in text] == []


def test_only_cast_imports_its_fast_path() -> None:
    users = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in OUTSIDE_CAST
        if path.name != Path(__file__).name
        for line, module, name in _cast_imports(path)
        if any(marker in (name or "") for marker in FAST_PATH_MARKERS)
    ]
    assert users == []


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from cast import Message\nfrom cast.messages import utf8_len\nimport cast._rules\n"
    )
    imports = _cast_imports(sample)
    assert [(module, _public_module(module)) for _, module, _ in imports] == [
        ("cast", True),
        ("cast.messages", False),
        ("cast._rules", False),
    ]
