"""Every public module of cast and csum declares a complete, sorted ``__all__``; the
packages' lazy submodules load on first use."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import cast
import csum

PACKAGES = (cast, csum)
ROOT = Path(__file__).resolve().parents[2]

# The names the contract promises at the top of the package.
CONTRACT_NAMES = {
    "Role",
    "Reasoning",
    "TextPart",
    "ImagePart",
    "BinaryPart",
    "ToolCall",
    "ToolResult",
    "Part",
    "Message",
    "ChainAST",
    "Section",
    "Header",
    "BodyPair",
    "BodyPairType",
    "ChainError",
    "IdTemplate",
    "IdTemplateError",
    "contains_tool_call_reasoning",
    "extract_reasoning_message",
    "diagnose",
    "SUMMARIZATION_TOOL_NAME",
    "SUMMARIZATION_TOOL_ARGS",
    "FALLBACK_RESPONSE_CONTENT",
    "DEFAULT_TOOL_CALL_ID_TEMPLATE",
    "FAKE_GEMINI_SIGNATURE",
}


def _public_module_names() -> list[str]:
    names = [package.__name__ for package in PACKAGES]
    for package in PACKAGES:
        names.extend(
            info.name
            for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
            # Private modules, and __main__ (importing it would run the CLI), are skipped.
            if not any(part.startswith("_") for part in info.name.split("."))
        )
    return sorted(names)


MODULES = _public_module_names()


def _import(module_name: str) -> ModuleType:
    """``module_name`` imported; the test skipped, with the reason, when the module
    needs an optional extra that is not installed (a third-party module is missing)."""
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
        name = getattr(missing, "name", None) or ""
        if isinstance(missing, ModuleNotFoundError) and name.split(".")[0] not in {"cast", "csum"}:
            pytest.skip(f"{module_name} needs an extra that is not installed: {exc}")
        raise


def isort_key(name: str) -> tuple[int, str]:
    """The order of ruff's RUF022: CONSTANTS, then Classes, then functions and the rest."""
    if name.isupper() and len(name) > 1:
        return 0, name
    if name[:1].isupper():
        return 1, name
    return 2, name


def _defined_here(module: ModuleType) -> set[str]:
    """Public classes and functions whose home is this module."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }


def test_the_walk_finds_the_core_modules() -> None:
    assert {"cast", "cast.messages", "cast.ids", "cast.ast", "cast.parse"} <= set(MODULES)
    assert {"cast.transforms", "cast.errors", "cast.constants"} <= set(MODULES)


@pytest.mark.parametrize("module_name", [pytest.param(name, id=name) for name in MODULES])
def test_all_is_complete_sorted_and_resolvable(module_name: str) -> None:
    module = _import(module_name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{module_name} has no __all__"
    assert all(isinstance(name, str) for name in exported)
    assert len(set(exported)) == len(exported), "duplicate names"
    assert list(exported) == sorted(exported, key=isort_key)
    missing_objects = [name for name in exported if not hasattr(module, name)]
    assert missing_objects == []
    unlisted = _defined_here(module) - set(exported)
    assert unlisted == set(), f"public names of {module_name} missing from __all__"


PACKAGE_PARAMS = [pytest.param(package, id=package.__name__) for package in PACKAGES]


@pytest.mark.parametrize("package", PACKAGE_PARAMS)
def test_every_name_in_all_is_importable(package: ModuleType) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)  # the star import is the point
    assert set(package.__all__) <= set(namespace)
    for name in package.__all__:
        assert getattr(package, name) is namespace[name]


def test_cast_exports_the_contract_names() -> None:
    assert set(cast.__all__) >= CONTRACT_NAMES


def test_csum_exports_the_contract_names_and_its_error_tree() -> None:
    assert set(csum.__all__) >= {
        "SummarizeHandler",
        "SummarizerConfig",
        "Summarizer",
        "SummarizationError",
        "SUMMARIZED_CONTENT_PREFIX",
        "messages_to_prompt",
        "CsumError",
        "HandlerError",
    }


@pytest.mark.parametrize("package", PACKAGE_PARAMS)
def test_every_public_attribute_is_exported(package: ModuleType) -> None:
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert public <= set(package.__all__)


@pytest.mark.parametrize("package", PACKAGE_PARAMS)
def test_re_exports_come_from_their_modules_all(package: ModuleType) -> None:
    for name in package.__all__:
        value = getattr(package, name)
        home = getattr(value, "__module__", None)
        if not (inspect.isclass(value) or inspect.isfunction(value)) or home == package.__name__:
            continue
        assert name in _import(home).__all__, f"{name} not in {home}.__all__"


@pytest.mark.parametrize(
    ("statement", "heavy"),
    [
        pytest.param(
            "import cast; assert callable(cast.codecs.openai.decode)", "cast.codecs", id="cast"
        ),
        pytest.param(
            "import csum; assert callable(csum.handlers.extractive())", "csum.handlers", id="csum"
        ),
    ],
)
def test_lazy_submodules_load_on_first_use_in_a_fresh_interpreter(
    statement: str, heavy: str
) -> None:
    package = heavy.split(".", maxsplit=1)[0]
    check = (
        f"import sys; import {package}; assert {heavy!r} not in sys.modules; {statement}; "
        f"assert {heavy!r} in sys.modules"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("package", PACKAGE_PARAMS)
def test_an_unknown_attribute_is_an_attribute_error(package: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = package.no_such_name


def test_a_run_with_the_callers_own_handler_does_not_load_the_bundled_handlers() -> None:
    # The check refusing the uncalled extractive factory must not import it (about a
    # tenth of a second, paid by every process on its first call).
    check = (
        "import sys, anyio; from cast import Message; from csum import Summarizer\n"
        "async def handler(prompt): return 'summary'\n"
        "chain = [Message.system('s'), Message.human('q'), Message.ai('a'), "
        "Message.human('q2'), Message.ai('b')]\n"
        "assert anyio.run(Summarizer().summarize, handler, chain).handler_calls == 1\n"
        "assert 'csum.handlers' not in sys.modules, 'csum.handlers was imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
