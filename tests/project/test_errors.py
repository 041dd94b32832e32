"""The two error trees (cast.errors, csum.errors): the drawn hierarchy is the real one,
each error is the builtin it claims, survives pickling, and the parse rules are one enum."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import cast
import cast.errors
import csum
import csum.errors
from cast import (
    ChainError,
    CodecError,
    IdTemplateError,
    InputError,
    Message,
    MessageFormatError,
    ParseRule,
    UnknownProviderError,
    diagnose,
    get_provider,
    lint,
)
from cast.chainio import decode_chain, read_json
from cast.providers import Rule
from csum import CsumError, HandlerError, StoreError, SummarizationError

# (error, its parent in the drawn tree, the builtins it also is)
CAST_TREE = [
    (ChainError, ValueError, (ValueError,)),
    (MessageFormatError, ChainError, (ValueError,)),
    (CodecError, ChainError, (ValueError,)),
    (IdTemplateError, ChainError, (ValueError,)),
    (UnknownProviderError, ChainError, (ValueError,)),
    (InputError, ValueError, (ValueError,)),
]
CSUM_TREE = [
    (CsumError, Exception, (Exception,)),
    (SummarizationError, CsumError, (RuntimeError,)),
    (HandlerError, CsumError, (RuntimeError,)),
    (StoreError, CsumError, (RuntimeError,)),
]


@pytest.mark.parametrize(
    ("module", "tree"),
    [
        pytest.param(cast.errors, CAST_TREE, id="cast"),
        pytest.param(csum.errors, CSUM_TREE, id="csum"),
    ],
)
def test_the_docstring_draws_every_error_under_its_parent(module: object, tree: list) -> None:
    drawing = [line for line in (module.__doc__ or "").splitlines() if "──" in line]
    indents = {}
    for line in drawing:
        name = line.split("── ")[1].split()[0].rsplit(".", 1)[-1]  # csum.stores.StoreError
        indents[name] = line.index("── ")
    for error, parent, builtins in tree:
        assert issubclass(error, parent)
        assert issubclass(error, builtins)
        assert error.__name__ in indents, f"{error.__name__} is not drawn"
        if parent.__name__ in indents:
            assert indents[error.__name__] > indents[parent.__name__]
    assert set(indents) == {error.__name__ for error, _, _ in tree}
    own = {error.__name__ for error, _, _ in tree if error.__module__ == module.__name__}  # type: ignore[attr-defined]
    assert set(module.__all__) >= own  # type: ignore[attr-defined]


def test_every_csum_error_has_one_root() -> None:
    import csum.stores

    for error, _, _ in CSUM_TREE:
        assert issubclass(error, CsumError)
        home = csum.stores if error is StoreError else csum  # the stores' errors live there
        assert error.__name__ in home.__all__


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ChainError("bad", index=3, rule=ParseRule.CONSECUTIVE_HUMAN), id="chain"),
        pytest.param(MessageFormatError("bad", index=1, field="parts.0"), id="format"),
        pytest.param(CodecError("bad", path="messages[2].role", index=2), id="codec"),
        pytest.param(IdTemplateError("bad template"), id="id-template"),
        pytest.param(UnknownProviderError("nope", ["a", "b"]), id="provider"),
        pytest.param(InputError("cannot read x"), id="input"),
        pytest.param(SummarizationError("boom", section=2, phase="QA summary"), id="summary"),
        pytest.param(
            HandlerError("late", provider="openai", model="m", status_code=503, attempts=3),
            id="handler",
        ),
    ],
)
def test_errors_survive_pickling(error: Exception) -> None:
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error)
    assert str(clone) == str(error)
    assert vars(clone) == vars(error)


def test_a_missing_file_is_an_input_error_not_a_chain_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read") as info:
        read_json(str(tmp_path / "missing.json"))
    assert not isinstance(info.value, ChainError)
    assert isinstance(info.value.__cause__, FileNotFoundError)
    with pytest.raises(InputError, match="unknown format"):
        decode_chain([], "no-such-format")


# -- the parse rules -------------------------------------------------------------------------


def test_parse_rules_keep_their_strings() -> None:
    assert ParseRule.CONSECUTIVE_HUMAN == "consecutive-human"
    assert str(ParseRule.MISSING_TOOL_RESULT) == "missing-tool-result"


def test_lint_rules_for_structure_are_the_parse_rules() -> None:
    structure = {rule for rule in Rule if rule.value in ParseRule._value2member_map_}
    assert {rule.value for rule in structure} == {
        "first-message",
        "system-position",
        "consecutive-human",
        "orphan-tool-message",
        "unknown-tool-result",
        "duplicate-tool-result",
        "missing-tool-result",
    }


def test_one_rule_from_parser_to_error_to_report_to_lint() -> None:
    chain = [Message.human("a"), Message.human("b"), Message.ai("ok")]
    with pytest.raises(ChainError) as info:
        cast.ChainAST.from_messages(chain)
    assert info.value.rule is ParseRule.CONSECUTIVE_HUMAN
    (issue,) = diagnose(chain)
    assert issue.rule is ParseRule.CONSECUTIVE_HUMAN
    assert str(issue).startswith("message 1: [consecutive-human]")
    profile = get_provider("bedrock")  # turns must alternate (Anthropic merges them)
    assert [v.rule for v in lint(chain, profile.name)] == [ParseRule.CONSECUTIVE_HUMAN.value]
