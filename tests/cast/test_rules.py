"""The provider rules as objects (cast._rules): one definition per rule, whose check and
port step exist, whose texts are the built-in profiles' texts, and whose table in
docs/providers.md is the one they generate.

``PYTHONPATH=. python tests/cast/test_rules.py`` prints the tables docs/providers.md holds.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from cast import lint
from cast._rules import Step
from cast.messages import Message, Role, ToolCall
from cast.providers import (
    PROVIDERS,
    RULES,
    ProviderProfile,
    Rule,
    RuleDefinition,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "providers.md"
FIELDS = {"index", "position", "call", "id", "ids", "name", "length", "max_length"}
FIELDS |= {"media", "role", "provider", "kind"}  # chaincast's own texts name these too


def _code(text: str) -> str:
    """``text`` as a Markdown code span (doubled backticks when it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def rule_table() -> str:
    """Every rule: chaincast's text, who lint holds to it, what port does."""
    lines = [
        "| rule | chaincast's text (where the provider's is not known) | lint check | port step |",
        "|---|---|---|---|",
    ]
    for rule, definition in RULES.items():
        fix = definition.fix
        step = f"`{fix.function().__name__}`" if fix is not None else "none"
        check = definition.check.function().__name__
        lines.append(f"| `{rule}` | {_code(definition.text)} | `{check}` | {step} |")
    return "\n".join(lines)


def error_table() -> str:
    """Every provider's own text for every rule, with its source."""
    lines = ["| rule | provider | error text | source |", "|---|---|---|---|"]
    for rule, definition in RULES.items():
        for provider, error in definition.errors.items():
            lines.append(f"| `{rule}` | `{provider}` | {_code(error.text)} | {error.source} |")
    return "\n".join(lines)


def test_every_rule_has_one_definition_in_rule_order() -> None:
    assert list(RULES) == list(Rule)
    assert all(isinstance(d, RuleDefinition) and d.id is rule for rule, d in RULES.items())
    assert all(isinstance(d.text, str) and d.text for d in RULES.values())


def test_every_check_and_port_step_is_a_function() -> None:
    """Each is registered by the @implements decorator on the function that does it."""
    for definition in RULES.values():
        assert callable(definition.check.function())
        if definition.fix is not None:
            assert callable(definition.fix.function())
    with pytest.raises(LookupError, match="no function implements"):
        Step("nobody").function()


def test_the_built_in_profiles_errors_are_the_rules_texts() -> None:
    for name, profile in PROVIDERS.items():
        expected = {rule: d.errors[name].text for rule, d in RULES.items() if name in d.errors}
        assert dict(profile.errors) == expected, name
    for definition in RULES.values():
        assert set(definition.errors) <= set(PROVIDERS)
        assert all(error.source.strip() for error in definition.errors.values())


def test_texts_name_only_fields_lint_fills() -> None:
    for definition in RULES.values():
        texts = [definition.text, *(e.text for e in definition.errors.values())]
        for text in texts:
            named = {field for _, field, _, _ in string.Formatter().parse(text) if field}
            assert named <= FIELDS, (definition.id, named - FIELDS)


def test_applies_decides_which_profiles_lint_reports_a_rule_for() -> None:
    duplicate = RULES[Rule.DUPLICATE_TOOL_CALL_ID]
    assert sorted(n for n, p in PROVIDERS.items() if duplicate.applies(p)) == [
        "anthropic",
        "bedrock",
    ]
    chain = [
        Message.human("q"),
        Message(role=Role.AI, parts=(ToolCall(id="a", name="f", arguments="{}"),)),
        Message.tool("a", "f", "r"),
        Message(role=Role.AI, parts=(ToolCall(id="a", name="f", arguments="{}"),)),
        Message.tool("a", "f", "r"),
    ]
    strict = ProviderProfile("strict-ids", "openai", "call_{r:8:x}", unique_tool_call_ids=True)
    assert [v.rule for v in lint(chain, strict)] == ["duplicate-tool-call-id"]
    assert lint(chain, "openai") == []


def _cast_imports(path: Path) -> set[str]:
    """The cast modules ``path`` imports at run time (not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:  # module level only: the rules import nothing late
        if isinstance(node, ast.ImportFrom) and node.module == "cast":
            found.update(f"cast.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cast"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cast"))
    return found


def test_the_rule_modules_are_leaves() -> None:
    """cast._rules names the checks and steps (imported when first run) instead of
    importing lint, port or the profiles, so each of them can import the rules."""
    assert _cast_imports(ROOT / "cast" / "_rules.py") == {"cast.errors"}
    assert _cast_imports(ROOT / "cast" / "errors.py") == set()
    assert "cast.providers" in _cast_imports(ROOT / "cast" / "_lint.py")  # the parser sees imports


@pytest.mark.parametrize("table", [rule_table, error_table], ids=lambda f: f.__name__)
def test_docs_providers_holds_the_generated_table(table: object) -> None:
    assert callable(table)
    expected = table()
    assert expected in DOC.read_text(encoding="utf-8"), (
        "docs/providers.md is out of date; print the tables with "
        "`PYTHONPATH=. python tests/cast/test_rules.py`:\n" + expected
    )


if __name__ == "__main__":
    print(rule_table(), error_table(), sep="\n\n")
