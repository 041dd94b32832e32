"""The longest functions of a set of Python files, by line count (ast).

Run: python -m benchmarks.function_sizes PATH... [--top 10]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

__all__ = ["function_sizes"]


def function_sizes(paths: list[Path]) -> list[tuple[int, str]]:
    """(lines, "file:name") of every function in ``paths`` (files or folders), longest
    first; a nested function is counted on its own and in its parent."""
    files = [f for p in paths for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    sizes: list[tuple[int, str]] = []
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                sizes.append((node.end_lineno - node.lineno + 1, f"{file}:{node.name}"))
    return sorted(sizes, key=lambda s: (-s[0], s[1]))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.function_sizes")
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    for lines, name in function_sizes(args.paths)[: args.top]:
        print(f"{lines:5d}  {name}")


if __name__ == "__main__":
    main()
