"""cast.ids: the id template language, regex templates, matching and generation."""

from __future__ import annotations

import pickle
import string

import pytest

from cast import CHARSETS, DEFAULT_TOOL_CALL_ID_TEMPLATE, ChainError, IdTemplate, IdTemplateError
from cast.ids import as_template

_ALNUM = set(string.digits + string.ascii_letters)

# The contract's table, spelled out independently of cast.ids.CHARSETS.
CONTRACT_CHARSETS = {
    "d": set(string.digits),
    "digit": set(string.digits),
    "l": set(string.ascii_lowercase),
    "lower": set(string.ascii_lowercase),
    "u": set(string.ascii_uppercase),
    "upper": set(string.ascii_uppercase),
    "a": set(string.ascii_letters),
    "alpha": set(string.ascii_letters),
    "x": _ALNUM,
    "alnum": _ALNUM,
    "h": set("0123456789abcdef"),
    "hex": set("0123456789abcdef"),
    "H": set("0123456789ABCDEF"),
    "HEX": set("0123456789ABCDEF"),
    "b": _ALNUM,
    "base62": _ALNUM,
}


def test_charset_aliases_are_the_documented_ones() -> None:
    assert set(CHARSETS) == set(CONTRACT_CHARSETS)


@pytest.mark.parametrize(
    ("alias", "chars"), [pytest.param(*kv, id=kv[0]) for kv in CONTRACT_CHARSETS.items()]
)
def test_charset_draws_every_character_of_its_set_and_nothing_else(
    alias: str, chars: set[str]
) -> None:
    template = IdTemplate(f"{{r:4096:{alias}}}")
    value = template.generate(seed=alias)
    assert len(value) == 4096
    # 4096 seeded draws over at most 62 characters: each one shows up.
    assert set(value) == chars
    assert template.matches(value)


@pytest.mark.parametrize(
    ("alias", "outside"),
    [
        pytest.param("d", "a", id="digit-rejects-letter"),
        pytest.param("l", "A", id="lower-rejects-upper"),
        pytest.param("u", "a", id="upper-rejects-lower"),
        pytest.param("a", "1", id="alpha-rejects-digit"),
        pytest.param("h", "A", id="hex-rejects-upper"),
        pytest.param("H", "a", id="HEX-rejects-lower"),
        pytest.param("x", "_", id="alnum-rejects-underscore"),
    ],
)
def test_matches_rejects_characters_outside_the_charset(alias: str, outside: str) -> None:
    template = IdTemplate(f"id_{{r:3:{alias}}}")
    valid = template.generate(seed=1)
    assert template.matches(valid)
    assert not template.matches(valid[:-1] + outside)


@pytest.mark.parametrize(
    ("pattern", "value", "fits"),
    [
        pytest.param("call_{r:4:d}", "call_1234", True, id="fits"),
        pytest.param("call_{r:4:d}", "call_123", False, id="too-short"),
        pytest.param("call_{r:4:d}", "call_12345", False, id="too-long"),
        pytest.param("call_{r:4:d}", "xcall_1234", False, id="prefix-must-be-at-start"),
        pytest.param("call_{r:4:d}", "CALL_1234", False, id="literal-is-case-sensitive"),
        pytest.param("a.b+{r:2:d}", "a.b+12", True, id="regex-chars-are-literal"),
        pytest.param("a.b+{r:2:d}", "axbb+12", False, id="dot-is-not-a-wildcard"),
        pytest.param("{r:2:l}-{r:2:d}", "ab-12", True, id="two-runs"),
        pytest.param("fixed", "fixed", True, id="literal-only"),
        pytest.param("fixed", "fixed2", False, id="literal-only-exact"),
    ],
)
def test_matches_literal_text_and_runs(pattern: str, value: str, fits: bool) -> None:
    assert IdTemplate(pattern).matches(value) is fits


def test_literal_text_is_kept_in_generated_ids() -> None:
    value = IdTemplate("pre-{r:5:d}.mid-{r:3:u}.post").generate(seed="s")
    assert value.startswith("pre-")
    assert value[4:9].isdigit()
    assert value[9:14] == ".mid-"
    assert value[14:17].isupper()
    assert value.endswith(".post")


# -- {f} ----------------------------------------------------------------------------------


def test_function_name_placeholder() -> None:
    template = IdTemplate("{f}_{r:4:d}")
    assert template.uses_function_name
    assert template.generate("get_user", seed=1).startswith("get_user_")
    assert template.generate(seed=1).startswith("function_")
    assert not IdTemplate("call_{r:4:d}").uses_function_name


@pytest.mark.parametrize(
    ("value", "function_name", "fits"),
    [
        pytest.param("get_user_1234", "get_user", True, id="named-fits"),
        pytest.param("get_user_1234", "search", False, id="named-other-function"),
        pytest.param("get_user_1234", None, True, id="any-name"),
        pytest.param("x_1234", None, True, id="any-name-short"),
        pytest.param("_1234", None, False, id="any-name-not-empty"),
        pytest.param("get user_1234", None, False, id="any-name-no-space"),
        pytest.param("get.user_1234", "get_user", False, id="name-is-literal"),
        pytest.param("function_1234", "", True, id="empty-name-is-the-default"),
    ],
)
def test_matches_with_and_without_function_name(
    value: str, function_name: str | None, fits: bool
) -> None:
    assert IdTemplate("{f}_{r:4:d}").matches(value, function_name) is fits


def test_generated_named_id_matches_its_name() -> None:
    template = IdTemplate("{f}_{r:4:d}")
    for name in ("get_user", "función", "", "a.b"):
        assert template.matches(template.generate(name, seed=name), name)


def test_function_name_is_ignored_by_matches_without_placeholder() -> None:
    assert IdTemplate("call_{r:4:d}").matches("call_1234", "anything")


# -- malformed templates ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("{r:0:x}", "length '0'", id="zero-length"),
        pytest.param("{r:-1:x}", "length '-1'", id="negative-length"),
        pytest.param("{r:abc:x}", "length 'abc'", id="length-not-a-number"),
        pytest.param("{r::x}", "length ''", id="length-missing"),
        pytest.param("{r:4097:x}", "4096", id="length-too-large"),
        pytest.param("{r:5:zz}", "unknown charset 'zz'", id="unknown-charset"),
        pytest.param("{r:5:}", "unknown charset ''", id="charset-missing"),
        pytest.param("call_{r:24}", "brace", id="run-without-charset"),
        pytest.param("call_{r:24:x", "brace", id="unclosed-run"),
        pytest.param("{g}", "brace", id="unknown-placeholder"),
        pytest.param("{F}", "brace", id="placeholder-is-case-sensitive"),
        pytest.param("call_}", "brace", id="stray-closing-brace"),
    ],
)
def test_malformed_template_raises(pattern: str, fragment: str) -> None:
    with pytest.raises(IdTemplateError, match=fragment) as info:
        IdTemplate(pattern)
    assert isinstance(info.value, ChainError)
    assert isinstance(info.value, ValueError)
    assert info.value.rule == "id-template"


def test_invalid_regex_raises() -> None:
    with pytest.raises(IdTemplateError, match="invalid id regex"):
        IdTemplate.from_regex("[a-")


@pytest.mark.parametrize("pattern", [pytest.param(None, id="none"), pytest.param(5, id="int")])
def test_template_must_be_text(pattern: object) -> None:
    with pytest.raises(TypeError):
        IdTemplate(pattern)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        as_template(pattern)  # type: ignore[arg-type]


# -- determinism and randomness ---------------------------------------------------------------


@pytest.mark.parametrize(
    "seed",
    [pytest.param("abc", id="str"), pytest.param(b"abc", id="bytes"), pytest.param(7, id="int")],
)
def test_same_seed_same_id(seed: object) -> None:
    template = IdTemplate("call_{r:24:x}")
    assert template.generate(seed=seed) == IdTemplate("call_{r:24:x}").generate(seed=seed)
    assert template.matches(template.generate(seed=seed))


def test_different_seeds_give_different_ids() -> None:
    template = IdTemplate("call_{r:24:x}")
    assert len({template.generate(seed=seed) for seed in range(100)}) == 100


def test_seeded_ids_are_stable_across_versions() -> None:
    # The module promises stability across processes and chaincast versions.
    assert IdTemplate("call_{r:24:x}").generate(seed="pinned") == "call_Kp8AfLvfd3TykMqfuxGhPCmG"
    assert IdTemplate("toolu_{r:24:b}").generate("f", seed=42) == "toolu_q4IQEpblINHe6rXLUkVMJ1Ej"


def test_function_name_changes_only_the_placeholder() -> None:
    template = IdTemplate("{f}:{r:8:x}")
    first = template.generate("alpha", seed=3)
    second = template.generate("beta", seed=3)
    assert first.split(":")[1] == second.split(":")[1]
    assert first.split(":")[0] == "alpha"


def test_without_seed_ids_are_random() -> None:
    template = IdTemplate(DEFAULT_TOOL_CALL_ID_TEMPLATE)
    values = {template.generate() for _ in range(50)}
    assert len(values) == 50
    assert all(template.matches(value) for value in values)


# -- regex form ---------------------------------------------------------------------------------


def test_from_regex_generates_matching_ids_deterministically() -> None:
    template = IdTemplate.from_regex("[a-zA-Z0-9]{9}")
    assert template.is_regex
    first = template.generate(seed="pinned")
    assert template.generate(seed="pinned") == first
    assert template.regex.fullmatch(first)
    assert len(first) == 9
    assert set(first) <= _ALNUM
    assert len({template.generate(seed=seed) for seed in range(30)}) == 30


def test_from_regex_without_seed_is_random() -> None:
    template = IdTemplate.from_regex("[a-z]{12}")
    values = {template.generate() for _ in range(20)}
    assert len(values) == 20
    assert all(template.matches(value) for value in values)


@pytest.mark.parametrize(
    ("value", "fits"),
    [
        pytest.param("abc123XYZ", True, id="fits"),
        pytest.param("abc123XY", False, id="short"),
        pytest.param("abc123XYZ0", False, id="long-full-match-only"),
        pytest.param("abc-23XYZ", False, id="bad-char"),
    ],
)
def test_from_regex_matches_full_ids(value: str, fits: bool) -> None:
    template = IdTemplate.from_regex("[a-zA-Z0-9]{9}")
    assert template.matches(value) is fits
    assert template.matches(value, "some_function") is fits


def test_from_regex_has_no_capacity() -> None:
    assert IdTemplate.from_regex("[a-z]{3}").capacity is None


# -- the template object -------------------------------------------------------------------------


def test_regex_attribute_is_the_compiled_full_pattern() -> None:
    template = IdTemplate("call_{r:3:d}")
    assert template.regex.fullmatch("call_123")
    assert not template.regex.fullmatch("call_12a")


@pytest.mark.parametrize(
    ("pattern", "capacity"),
    [
        pytest.param("{r:2:d}", 100, id="digits"),
        pytest.param("x{r:1:h}{r:1:u}", 16 * 26, id="two-runs"),
        pytest.param("fixed", 1, id="literal-only"),
    ],
)
def test_capacity(pattern: str, capacity: int) -> None:
    assert IdTemplate(pattern).capacity == capacity


def test_template_is_immutable_hashable_and_picklable() -> None:
    template = IdTemplate("call_{r:24:x}")
    with pytest.raises(AttributeError):
        template.pattern = "other"  # type: ignore[misc]
    assert template == IdTemplate("call_{r:24:x}")
    assert IdTemplate(template) == template
    assert hash(template) == hash(IdTemplate("call_{r:24:x}"))
    assert template != IdTemplate.from_regex("call_{r:24:x}")
    assert pickle.loads(pickle.dumps(template)) == template
    regex_template = IdTemplate.from_regex("[a-z]{3}")
    assert pickle.loads(pickle.dumps(regex_template)) == regex_template
    assert repr(regex_template) == "IdTemplate.from_regex('[a-z]{3}')"


def test_as_template_accepts_strings_and_templates() -> None:
    template = IdTemplate("call_{r:4:d}")
    assert as_template(template) is template
    assert as_template("call_{r:4:d}") == template


def test_generate_unused_skips_used_ids_deterministically() -> None:
    template = IdTemplate("call_{r:2:d}")
    first = template.generate_unused("f", seed="s", used=set())
    used = {first}
    second = template.generate_unused("f", seed="s", used=used)
    assert second != first
    assert used == {first, second}
    assert template.generate_unused("f", seed="s", used={first}) == second  # deterministic


def test_generate_unused_gives_up_on_a_full_template() -> None:
    template = IdTemplate("call_{r:1:d}")
    with pytest.raises(IdTemplateError, match="keeps producing ids already used"):
        template.generate_unused(seed="s", used={f"call_{d}" for d in range(10)})
