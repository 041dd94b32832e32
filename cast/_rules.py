"""The provider rules, one object each: what a chain can break, who refuses it, in which
words, how lint finds it and how port repairs it.

A :class:`RuleDefinition` holds a rule's id (a :class:`Rule`), chaincast's wording for
it, the providers' own error texts with their sources (:mod:`cast._provider_errors`),
which provider profiles it applies to, the lint check that reports it and the port
step that repairs it (``None`` when port cannot). :data:`RULES` holds them in the order
lint runs its checks. :func:`cast.lint` and :func:`cast.port` run what these objects
name; :mod:`cast.providers` reads the error texts from them.

This module is a leaf: a rule names its check and its step by a :class:`Step` /
:class:`Fix` key, and the function that does the work registers itself for that key with
the :func:`implements` decorator where it is defined (:mod:`cast._lint`,
:mod:`cast._port`, :mod:`cast._port_reasoning`), so lint and port import the rules, never
the other way round. Several rules share one check or one step when one pass over the
chain finds or repairs them all (the parser's diagnosis finds the structure rules at
once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import cast._provider_errors as pe
from cast._provider_errors import ProviderError
from cast.errors import ParseRule

if TYPE_CHECKING:
    from cast.providers import ProviderProfile

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "CHECK_CONTENT",
    "CHECK_IDS",
    "CHECK_REASONING",
    "CHECK_ROLES",
    "CHECK_STRUCTURE",
    "CHECK_THINKING",
    "CHECK_TOOLS",
    "FIX_CONTENT",
    "FIX_EMPTY",
    "FIX_IDS",
    "FIX_OPENING",
    "FIX_PAIRING",
    "FIX_REASONING",
    "FIX_ROLES",
    "FIX_SYSTEM",
    "RULES",
    "Fix",
    "PortStage",
    "ProviderError",
    "Rule",
    "RuleDefinition",
    "Step",
    "default_texts",
    "implements",
    "provider_errors",
]


class Rule(StrEnum):
    """The rules a chain can break; lint reports them, port repairs them."""

    # Structure: the parse rules, named once in cast.errors.ParseRule.
    FIRST_MESSAGE = ParseRule.FIRST_MESSAGE.value
    SYSTEM_POSITION = ParseRule.SYSTEM_POSITION.value
    CONSECUTIVE_HUMAN = ParseRule.CONSECUTIVE_HUMAN.value
    ORPHAN_TOOL_MESSAGE = ParseRule.ORPHAN_TOOL_MESSAGE.value
    UNKNOWN_TOOL_RESULT = ParseRule.UNKNOWN_TOOL_RESULT.value
    DUPLICATE_TOOL_RESULT = ParseRule.DUPLICATE_TOOL_RESULT.value
    MISSING_TOOL_RESULT = ParseRule.MISSING_TOOL_RESULT.value
    # Tool-call ids.
    TOOL_CALL_ID_FORMAT = "tool-call-id-format"
    TOOL_CALL_ID_TOO_LONG = "tool-call-id-too-long"
    DUPLICATE_TOOL_CALL_ID = "duplicate-tool-call-id"
    # Reasoning.
    UNSUPPORTED_REASONING = "unsupported-reasoning"
    FOREIGN_SIGNATURE = "foreign-signature"
    UNSIGNED_REASONING = "unsigned-reasoning"
    MISSING_THOUGHT_SIGNATURE = "missing-thought-signature"
    MISSING_REASONING_CONTENT = "missing-reasoning-content"
    THINKING_NOT_FIRST = "thinking-not-first"
    # Roles.
    FIRST_TURN_NOT_HUMAN = "first-turn-not-human"
    TOOL_THEN_HUMAN = "tool-then-human"
    EMPTY_MESSAGE = "empty-message"
    # Content.
    UNSUPPORTED_MEDIA = "unsupported-media"
    MEDIA_IN_TOOL_RESULT = "media-in-tool-result"
    MEDIA_BY_URL = "media-by-url"
    # Tools.
    TOOLS_NOT_DECLARED = "tools-not-declared"
    FOREIGN_PROVIDER_PART = "foreign-provider-part"
    MISPLACED_PROVIDER_PART = "misplaced-provider-part"


_IMPLEMENTATIONS: dict[Step, Callable[..., Any]] = {}


@dataclass(frozen=True, slots=True)
class Step:
    """A lint check, by name: the function registered for it with :func:`implements`.

    A lint check is called ``check(messages, report)``: it reports its rules on the
    report (:class:`cast._lint.Report`), which drops the rules that do not apply to
    the provider."""

    name: str

    def __call__(self, *args: Any) -> Any:
        return self.function()(*args)

    def function(self) -> Callable[..., Any]:
        """The function registered for this step."""
        found = _IMPLEMENTATIONS.get(self)
        if found is None:
            raise LookupError(f"no function implements {self!r} (see cast._rules.implements)")
        return found


def implements(step: Step) -> Callable[[_F], _F]:
    """Register the decorated function as the one that does ``step``; one per step."""

    def register(function: _F) -> _F:
        if _IMPLEMENTATIONS.setdefault(step, function) is not function:
            raise ValueError(f"{step!r} is implemented twice")
        return function

    return register


class PortStage(StrEnum):
    """What a port step works on, in the order port runs the stages."""

    MESSAGES = "messages"
    """The messages as given (port then parses them with repair)."""
    CHAIN = "chain"
    """The parsed :class:`~cast.ast.ChainAST`."""
    FINAL = "final"
    """The messages of the repaired chain."""


@dataclass(frozen=True, slots=True)
class Fix(Step):
    """A port step: ``step(chain, profile, same_source)`` returns the chain (messages or
    a ``ChainAST``, as its stage says) with what the target refuses repaired. Port runs
    the steps by stage, then by ``position``."""

    stage: PortStage = PortStage.CHAIN
    position: int = 0


def _always(profile: ProviderProfile) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class RuleDefinition:
    """One provider rule: its id, chaincast's wording (``text``, with the same
    ``str.format`` fields as the providers' texts), the providers' own texts by provider
    name (``errors``), the profiles it applies to (``applies``), the lint check that
    reports it and the port step that repairs it (``fix``, ``None`` when port cannot)."""

    id: Rule
    text: str
    check: Step
    fix: Fix | None
    applies: Callable[[ProviderProfile], bool] = _always
    errors: Mapping[str, ProviderError] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))


CHECK_STRUCTURE = Step("structure")
CHECK_IDS = Step("ids")
CHECK_REASONING = Step("reasoning")
CHECK_ROLES = Step("roles")
CHECK_CONTENT = Step("content")
CHECK_TOOLS = Step("tools")
CHECK_THINKING = Step("thinking")

FIX_CONTENT = Fix("content", PortStage.MESSAGES, 10)
FIX_OPENING = Fix("opening", PortStage.MESSAGES, 20)
FIX_SYSTEM = Fix("system", PortStage.MESSAGES, 30)
FIX_PAIRING = Fix("pairing", PortStage.MESSAGES, 40)
FIX_REASONING = Fix("reasoning", PortStage.CHAIN, 10)
FIX_IDS = Fix("ids", PortStage.CHAIN, 20)
FIX_ROLES = Fix("roles", PortStage.CHAIN, 40)
FIX_EMPTY = Fix("empty", PortStage.FINAL, 10)

_GEMINI = ("gemini", "vertex")
_OPENAI = ("openai", "deepseek")


def _each(names: tuple[str, ...], error: ProviderError) -> dict[str, ProviderError]:
    return dict.fromkeys(names, error)


def _pairing(
    *,
    openai: ProviderError,
    anthropic: ProviderError,
    bedrock: ProviderError | None,
    gemini: ProviderError,
    mistral: ProviderError,
    responses: ProviderError,
) -> dict[str, ProviderError]:
    """A pairing rule's texts: OpenAI's (DeepSeek returns them too), then the others'."""
    errors = {**_each(_OPENAI, openai), "anthropic": anthropic, **_each(_GEMINI, gemini)}
    if bedrock is not None:
        errors["bedrock"] = bedrock
    return {**errors, "mistral": mistral, "openai-responses": responses}


def _strip(profile: ProviderProfile) -> bool:
    return profile.reasoning == "strip"


def _definitions() -> tuple[RuleDefinition, ...]:
    orphan = _pairing(
        openai=pe.OPENAI_ORPHAN,
        anthropic=pe.ANTHROPIC_ORPHAN,
        bedrock=pe.BEDROCK_ORPHAN,
        gemini=pe.GEMINI_ORPHAN,
        mistral=pe.MISTRAL_COUNT,
        responses=pe.RESPONSES_ORPHAN,
    )
    return (
        # -- structure (the parser's diagnosis; port's repair) --
        RuleDefinition(
            Rule.FIRST_MESSAGE,
            "the chain must open with a system or human message",
            CHECK_STRUCTURE,
            FIX_OPENING,
        ),
        RuleDefinition(
            Rule.SYSTEM_POSITION,
            "a system message may only open the chain",
            CHECK_STRUCTURE,
            FIX_SYSTEM,
            applies=lambda p: not p.system_anywhere,
        ),
        RuleDefinition(
            Rule.CONSECUTIVE_HUMAN,
            "human message right after another human message",
            CHECK_STRUCTURE,
            FIX_PAIRING,
            applies=lambda p: not p.consecutive_humans_ok,
        ),
        RuleDefinition(
            Rule.ORPHAN_TOOL_MESSAGE,
            "tool message does not follow an AI message with tool calls",
            CHECK_STRUCTURE,
            FIX_PAIRING,
            errors={**orphan, "mistral": pe.MISTRAL_ORPHAN},
        ),
        RuleDefinition(
            Rule.UNKNOWN_TOOL_RESULT,
            "tool result {id} answers no tool call of the AI message before it",
            CHECK_STRUCTURE,
            FIX_PAIRING,
            errors=orphan,
        ),
        RuleDefinition(
            Rule.DUPLICATE_TOOL_RESULT,
            "second tool result for {id}, which is already answered",
            CHECK_STRUCTURE,
            FIX_PAIRING,
            errors=orphan,
        ),
        RuleDefinition(
            Rule.MISSING_TOOL_RESULT,
            "tool calls without results right after them: {ids}",
            CHECK_STRUCTURE,
            FIX_PAIRING,
            errors={
                **_pairing(
                    openai=pe.OPENAI_MISSING,
                    anthropic=pe.ANTHROPIC_MISSING,
                    bedrock=None,
                    gemini=pe.GEMINI_MISSING,
                    mistral=pe.MISTRAL_COUNT,
                    responses=pe.RESPONSES_MISSING,
                ),
                "deepseek": pe.DEEPSEEK_MISSING,
            },
        ),
        # -- tool-call ids --
        RuleDefinition(
            Rule.TOOL_CALL_ID_FORMAT,
            "tool call id {id!r} does not match the provider's id format",
            CHECK_IDS,
            FIX_IDS,
            applies=lambda p: p.ids_on_wire,
            errors={
                "anthropic": pe.ANTHROPIC_ID_FORMAT,
                "bedrock": pe.BEDROCK_ID_FORMAT,
                "mistral": pe.MISTRAL_ID,
            },
        ),
        RuleDefinition(
            Rule.TOOL_CALL_ID_TOO_LONG,
            "tool call id {id} is {length} characters long, over {max_length}",
            CHECK_IDS,
            FIX_IDS,
            applies=lambda p: p.ids_on_wire and p.max_id_length is not None,
            errors={
                "openai": pe.OPENAI_ID_TOO_LONG,
                "openai-responses": pe.RESPONSES_ID_TOO_LONG,
                "bedrock": pe.BEDROCK_ID_TOO_LONG,
                "mistral": pe.MISTRAL_ID,
            },
        ),
        RuleDefinition(
            Rule.DUPLICATE_TOOL_CALL_ID,
            "tool call id {id} is used by an earlier tool call",
            CHECK_IDS,
            FIX_IDS,
            applies=lambda p: p.unique_tool_call_ids,
            errors={"anthropic": pe.ANTHROPIC_DUPLICATE_ID, "bedrock": pe.BEDROCK_DUPLICATE_ID},
        ),
        # -- reasoning --
        RuleDefinition(
            Rule.UNSUPPORTED_REASONING,
            "the provider does not take reasoning back in assistant messages",
            CHECK_REASONING,
            FIX_REASONING,
            applies=_strip,
            errors={"mistral": pe.MISTRAL_REASONING, "groq": pe.GROQ_REASONING},
        ),
        RuleDefinition(
            Rule.FOREIGN_SIGNATURE,
            "reasoning signed by another provider",
            CHECK_REASONING,
            FIX_REASONING,
            applies=lambda p: p.reasoning.signed,
            errors={
                "anthropic": pe.ANTHROPIC_FOREIGN_SIGNATURE,
                "gemini": pe.GEMINI_FOREIGN_SIGNATURE,
                "vertex": pe.VERTEX_FOREIGN_SIGNATURE,
            },
        ),
        RuleDefinition(
            Rule.UNSIGNED_REASONING,
            "reasoning without the signature the provider requires",
            CHECK_REASONING,
            FIX_REASONING,
            applies=lambda p: p.reasoning == "native-signatures",
            errors={"anthropic": pe.ANTHROPIC_UNSIGNED},
        ),
        RuleDefinition(
            Rule.MISSING_THOUGHT_SIGNATURE,
            "the first tool call {name} carries no thought signature",
            CHECK_REASONING,
            FIX_REASONING,
            applies=lambda p: p.reasoning == "thought-signature",
            errors=_each(_GEMINI, pe.GEMINI_MISSING_SIGNATURE),
        ),
        RuleDefinition(
            Rule.MISSING_REASONING_CONTENT,
            "assistant message at index {index} has no reasoning content",
            CHECK_REASONING,
            FIX_REASONING,
            applies=lambda p: p.reasoning == "reasoning-content-required",
            errors={"deepseek": pe.DEEPSEEK_NO_REASONING, "kimi": pe.KIMI_NO_REASONING},
        ),
        RuleDefinition(
            Rule.THINKING_NOT_FIRST,
            "with thinking on, the assistant turn before the last tool results must open "
            "with a thinking block",
            CHECK_THINKING,
            None,  # a fact of the request (its thinking setting): the turn needs its thinking
            applies=lambda p: p.reasoning == "native-signatures" and p.merges_same_role,
            errors={"anthropic": pe.ANTHROPIC_THINKING_FIRST},
        ),
        # -- roles --
        RuleDefinition(
            Rule.FIRST_TURN_NOT_HUMAN,
            "the conversation must open with a human message",
            CHECK_ROLES,
            FIX_ROLES,
            applies=lambda p: p.needs_human_first,
            errors={"bedrock": pe.BEDROCK_FIRST_TURN},
        ),
        RuleDefinition(
            Rule.TOOL_THEN_HUMAN,
            "human message right after a tool message",
            CHECK_ROLES,
            FIX_ROLES,
            applies=lambda p: p.needs_ai_between_tool_and_human,
            errors={"mistral": pe.MISTRAL_TOOL_THEN_HUMAN},
        ),
        # -- content --
        RuleDefinition(
            Rule.EMPTY_MESSAGE,
            "message {index} has no content",
            CHECK_CONTENT,
            FIX_EMPTY,
            applies=lambda p: not p.empty_content_ok,
            errors={
                **_each(_OPENAI, pe.OPENAI_EMPTY),
                "anthropic": pe.ANTHROPIC_EMPTY,
                "bedrock": pe.BEDROCK_EMPTY,
                "gemini": pe.GEMINI_EMPTY,
                "vertex": pe.VERTEX_EMPTY,
                "mistral": pe.MISTRAL_EMPTY,
            },
        ),
        RuleDefinition(
            Rule.UNSUPPORTED_MEDIA,
            "the provider takes no {media} in a {role} message",
            CHECK_CONTENT,
            FIX_CONTENT,
        ),
        RuleDefinition(
            Rule.MEDIA_IN_TOOL_RESULT,
            "the provider takes no {media} in a tool result",
            CHECK_CONTENT,
            FIX_CONTENT,
        ),
        RuleDefinition(
            Rule.MEDIA_BY_URL,
            "the provider takes {media} only inline, not by URL",
            CHECK_CONTENT,
            FIX_CONTENT,
        ),
        # -- tools --
        RuleDefinition(
            Rule.TOOLS_NOT_DECLARED,
            "the history holds tool calls or results, so the request must declare tools",
            CHECK_TOOLS,
            None,  # the request's tools are not part of the chain: declare them
            applies=lambda p: p.tools_with_tool_history,
            errors={"anthropic": pe.ANTHROPIC_NO_TOOLS, "bedrock": pe.BEDROCK_NO_TOOLS},
        ),
        RuleDefinition(
            Rule.FOREIGN_PROVIDER_PART,
            "a {provider} {kind} block, which only {provider} understands",
            CHECK_CONTENT,
            FIX_CONTENT,
        ),
        RuleDefinition(
            Rule.MISPLACED_PROVIDER_PART,
            "a cache breakpoint with no block before it to mark",
            CHECK_CONTENT,
            FIX_CONTENT,
        ),
    )


RULES: Mapping[Rule, RuleDefinition] = MappingProxyType({d.id: d for d in _definitions()})
"""Every rule's definition, by rule, in the order lint runs their checks."""


def provider_errors(provider: str) -> dict[Rule, str]:
    """The error texts of ``provider`` (a profile name), by rule: what its profile's
    ``errors`` holds."""
    return {
        rule: definition.errors[provider].text
        for rule, definition in RULES.items()
        if provider in definition.errors
    }


def default_texts() -> dict[str, str]:
    """chaincast's wording of every rule, used where the provider's is not known."""
    return {rule: definition.text for rule, definition in RULES.items()}
