"""Provider profiles: which ids each provider accepts and generates, lookup, registration."""

from __future__ import annotations

import pickle

import pytest

from cast import ChainError, IdTemplate, UnknownProviderError
from cast.providers import (
    PROVIDERS,
    ProviderProfile,
    ReasoningPolicy,
    Rule,
    get_provider,
    register_provider,
    resolve_provider,
)

REQUIRED = (
    "openai",
    "openai-responses",
    "anthropic",
    "gemini",
    "vertex",
    "mistral",
    "deepseek",
    "kimi",
    "bedrock",
    "ollama",
    "vllm",
)

OPENAI_ID = "call_PTLP8xhu3uwZk4l3nlnrrJha"  # 29 characters
VLLM_ID = "chatcmpl-tool-f227417118b24070b61554cc4416aba9"  # 46 characters
KIMI_ID = "functions.get_weather:0"
ANTHROPIC_ID = "toolu_01Pjr3rJaMRG6ZGtAByoNUZw"
LONG_64 = "a" * 64
LONG_65 = "a" * 65


def test_every_required_provider_is_registered() -> None:
    assert set(REQUIRED) <= set(PROVIDERS)
    for name in REQUIRED:
        assert get_provider(name).name == name


@pytest.mark.parametrize(
    ("provider", "tool_call_id", "problem"),
    [
        pytest.param("openai", OPENAI_ID, None, id="openai-native"),
        pytest.param("openai", VLLM_ID, Rule.TOOL_CALL_ID_TOO_LONG, id="openai-vllm-46-chars"),
        pytest.param("openai", "a" * 40, None, id="openai-40-chars"),
        pytest.param("openai", KIMI_ID, None, id="openai-any-chars"),
        pytest.param("openai", "", Rule.TOOL_CALL_ID_FORMAT, id="openai-empty"),
        pytest.param("openai-responses", LONG_64, None, id="responses-64"),
        pytest.param("openai-responses", LONG_65, Rule.TOOL_CALL_ID_TOO_LONG, id="responses-65"),
        pytest.param("anthropic", ANTHROPIC_ID, None, id="anthropic-native"),
        pytest.param("anthropic", "a" * 200, None, id="anthropic-no-length-limit"),
        pytest.param("anthropic", KIMI_ID, Rule.TOOL_CALL_ID_FORMAT, id="anthropic-kimi-id"),
        pytest.param("bedrock", "tooluse_BBO78QZ2Q-mQxGBOlx0zFg", None, id="bedrock-native"),
        pytest.param("bedrock", LONG_65, Rule.TOOL_CALL_ID_TOO_LONG, id="bedrock-65"),
        pytest.param("bedrock", "a.b", Rule.TOOL_CALL_ID_FORMAT, id="bedrock-dot"),
        pytest.param("mistral", "aB3xK9mP2", None, id="mistral-native"),
        pytest.param("mistral", OPENAI_ID, Rule.TOOL_CALL_ID_TOO_LONG, id="mistral-openai-id"),
        pytest.param("mistral", "abc_12345", Rule.TOOL_CALL_ID_FORMAT, id="mistral-underscore"),
        pytest.param("mistral", "abc123", Rule.TOOL_CALL_ID_FORMAT, id="mistral-short"),
        pytest.param("gemini", KIMI_ID, None, id="gemini-any"),
        pytest.param("vertex", "", None, id="vertex-no-ids-on-wire"),
        pytest.param("kimi", OPENAI_ID, None, id="kimi-any"),
        pytest.param("vllm", KIMI_ID, None, id="vllm-any"),
        pytest.param("deepseek", VLLM_ID, None, id="deepseek-any"),
    ],
)
def test_id_acceptance(provider: str, tool_call_id: str, problem: Rule | None) -> None:
    profile = get_provider(provider)
    assert profile.id_problem(tool_call_id) == problem
    assert profile.accepts_id(tool_call_id) is (problem is None)


@pytest.mark.parametrize("provider", sorted(PROVIDERS), ids=str)
def test_generated_ids_are_accepted_and_deterministic(provider: str) -> None:
    profile = get_provider(provider)
    ids = {profile.id_template.generate("get_weather", seed=n) for n in range(50)}
    assert len(ids) == 50
    assert all(profile.accepts_id(i) for i in ids)
    again = profile.id_template.generate("get_weather", seed=7)
    assert again == profile.id_template.generate("get_weather", seed=7)


@pytest.mark.parametrize(
    ("provider", "example"),
    [
        pytest.param("openai", OPENAI_ID, id="openai"),
        pytest.param("anthropic", ANTHROPIC_ID, id="anthropic"),
        pytest.param("bedrock", "tooluse_BBO78QZ2QxmQxGBOlx0zFg", id="bedrock"),
        pytest.param("mistral", "aB3xK9mP2", id="mistral"),
        pytest.param("vllm", VLLM_ID, id="vllm"),
        pytest.param("kimi", "functions.get_weather:004213", id="kimi"),
        pytest.param("ollama", "call_wteop8bt", id="ollama"),
        pytest.param("deepseek", "call_00_abcdefghijklmnopqrstuvwx", id="deepseek"),
    ],
)
def test_templates_look_like_the_providers_ids(provider: str, example: str) -> None:
    assert get_provider(provider).id_template.matches(example, "get_weather")


@pytest.mark.parametrize(
    ("provider", "policy"),
    [
        pytest.param("openai", ReasoningPolicy.STRIP, id="openai"),
        pytest.param("groq", ReasoningPolicy.STRIP, id="groq"),
        pytest.param("mistral", ReasoningPolicy.STRIP, id="mistral"),
        pytest.param("openai-responses", ReasoningPolicy.ENCRYPTED_ITEMS, id="responses"),
        pytest.param("anthropic", ReasoningPolicy.NATIVE_SIGNATURES, id="anthropic"),
        pytest.param("bedrock", ReasoningPolicy.NATIVE_SIGNATURES, id="bedrock"),
        pytest.param("gemini", ReasoningPolicy.THOUGHT_SIGNATURE, id="gemini"),
        pytest.param("vertex", ReasoningPolicy.THOUGHT_SIGNATURE, id="vertex"),
        pytest.param("deepseek", ReasoningPolicy.REASONING_CONTENT_REQUIRED, id="deepseek"),
        pytest.param("kimi", ReasoningPolicy.REASONING_CONTENT_REQUIRED, id="kimi"),
        pytest.param("ollama", ReasoningPolicy.REPLAY, id="ollama"),
        pytest.param("vllm", ReasoningPolicy.REPLAY, id="vllm"),
    ],
)
def test_reasoning_policies(provider: str, policy: ReasoningPolicy) -> None:
    assert get_provider(provider).reasoning is policy


def test_error_texts_are_the_providers_own() -> None:
    mistral = get_provider("mistral").errors[Rule.TOOL_CALL_ID_FORMAT]
    assert mistral.format(id=OPENAI_ID) == (
        f"Tool call id was {OPENAI_ID} but must be a-z, A-Z, 0-9, with a length of 9."
    )
    assert get_provider("mistral").errors[Rule.TOOL_THEN_HUMAN] == (
        "Unexpected role 'user' after role 'tool'"
    )
    assert (
        "String should match pattern '^[a-zA-Z0-9_-]+$'"
        in (get_provider("anthropic").errors[Rule.TOOL_CALL_ID_FORMAT])
    )


@pytest.mark.parametrize(
    "name",
    [pytest.param("OpenAI", id="mixed-case"), pytest.param(" mistral ", id="spaces")],
)
def test_lookup_is_case_insensitive(name: str) -> None:
    assert get_provider(name).name == name.strip().lower()


def test_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(UnknownProviderError) as caught:
        get_provider("openia")
    assert isinstance(caught.value, ChainError)
    assert isinstance(caught.value, ValueError)
    for name in REQUIRED:
        assert name in str(caught.value)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert str(copy) == str(caught.value)


def test_register_a_custom_provider() -> None:
    profile = ProviderProfile(
        name="test-strict9",
        wire_format="openai",
        id_template=IdTemplate("{r:9:d}"),
        id_pattern=r"[0-9]{9}",
        max_id_length=9,
        reasoning=ReasoningPolicy.STRIP,
    )
    try:
        assert register_provider(profile) is profile
        assert get_provider("test-strict9") is profile
        assert resolve_provider(profile) is profile
        with pytest.raises(ValueError, match="already registered"):
            register_provider(profile)
        replacement = ProviderProfile("test-strict9", "openai", IdTemplate("x{r:8:d}"))
        assert register_provider(replacement, replace=True) is replacement
    finally:
        from cast import providers

        providers._REGISTRY.pop("test-strict9", None)


def test_register_rejects_a_template_the_profile_does_not_accept() -> None:
    profile = ProviderProfile(
        "test-broken", "openai", IdTemplate("call_{r:24:x}"), id_pattern=r"[0-9]+"
    )
    with pytest.raises(ValueError, match="does not accept"):
        register_provider(profile)
    assert "test-broken" not in PROVIDERS


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"name": "Upper"}, "lower-case", id="name-case"),
        pytest.param({"name": ""}, "lower-case", id="name-empty"),
        pytest.param({"max_id_length": 0}, "positive", id="max-length"),
        pytest.param({"errors": {"no-such-rule": "x"}}, "unknown rules", id="errors"),
    ],
)
def test_profile_validation(options: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {
        "name": "test-x",
        "wire_format": "openai",
        "id_template": IdTemplate("call_{r:24:x}"),
    }
    fields.update(options)
    with pytest.raises(ValueError, match=message):
        ProviderProfile(**fields)  # type: ignore[arg-type]


def test_profiles_are_frozen_and_hashable() -> None:
    profile = get_provider("anthropic")
    with pytest.raises(AttributeError):
        profile.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        profile.errors[Rule.TOOL_CALL_ID_FORMAT] = "x"  # type: ignore[index]
    assert hash(profile) == hash(get_provider("anthropic"))
    with pytest.raises(TypeError):
        PROVIDERS["x"] = profile  # type: ignore[index]


def test_every_profile_cites_sources() -> None:
    for profile in PROVIDERS.values():
        assert profile.sources, profile.name
