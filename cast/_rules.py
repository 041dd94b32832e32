"""The provider rules, one object each: what a chain can break, who refuses it and in
which words (the providers' own texts, each with where it was seen), and the lint check
and port step, registered with :func:`implements` where defined, that find and fix it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from cast.errors import ParseRule, Registry

if TYPE_CHECKING:
    from cast.providers import ProviderProfile


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


IMPLEMENTATIONS: Registry[Any] = Registry()
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Step:
    """A lint check or port step, named for the function that does it, which registers
    with :func:`implements` (port runs its steps in the order ``cast._port`` lists them)."""

    name: str

    def function(self) -> Callable[..., Any]:
        """The function registered for this step."""
        return IMPLEMENTATIONS[self]


def implements(function: _F) -> _F:
    """Register the decorated function as the one that does the :class:`Step` of its name."""
    return IMPLEMENTATIONS.register(Step(function.__name__))(function)


@dataclass(frozen=True, slots=True)
class RuleDefinition:
    """One provider rule: its id, chaincast's wording (``text``, with the same
    ``str.format`` fields as the providers' texts), the providers' own texts by provider
    name (``errors``), the profiles it applies to (``applies``), the lint check that
    reports it and the port step that repairs it (``fix``, ``None`` when port cannot)."""

    id: Rule
    text: str
    check: Step
    fix: Step | None
    applies: Callable[[ProviderProfile], bool] = lambda profile: True
    errors: Mapping[str, ProviderError] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))


@dataclass(frozen=True, slots=True)
class ProviderError:
    """A provider's own error text for a rule, verbatim (``{index}``, ``{id}``... are
    ``str.format`` fields), and its source (issues that report it, or the provider's docs)."""

    text: str
    source: str


_BEDROCK_ID = "Value at 'messages.{index}.member.content.{position}.member.toolUse.toolUseId'"
_MISTRAL_COUNT = ProviderError(
    "Not the same number of function calls and responses", "mistralai/client-ts#106"
)
_MISTRAL_ID = ProviderError(
    "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
    "anomalyco/opencode#1680, jackmpcollins/magentic#276, langchain-ai/langchain#24668 (code 3280)",
)

# The rules one check reports and one step repairs.
_pairing_rule = partial(RuleDefinition, check=Step("check_structure"), fix=Step("fix_pairing"))
_id_rule = partial(RuleDefinition, check=Step("check_ids"), fix=Step("fix_ids"))
_reasoning_rule = partial(RuleDefinition, check=Step("check_reasoning"), fix=Step("fix_reasoning"))
_role_rule = partial(RuleDefinition, check=Step("check_roles"), fix=Step("fix_roles"))
_content_rule = partial(RuleDefinition, check=Step("check_content"), fix=Step("fix_content"))

_GEMINI = ("gemini", "vertex")
_OPENAI = ("openai", "deepseek")


# The pairing rules' texts: OpenAI's (DeepSeek returns them too), then the others'.
_ORPHAN = {
    **dict.fromkeys(
        _OPENAI,
        ProviderError(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
            "message with 'tool_calls'.",
            "miurla/morphic#136 (the API's own spelling 'preceeding')",
        ),
    ),
    "anthropic": ProviderError(
        "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
        "blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in "
        "the previous message.",
        "anthropics/claude-code#13460",
    ),
    **dict.fromkeys(
        _GEMINI,
        ProviderError(
            "Please ensure that function response turn comes immediately after a function call "
            "turn.",
            "langchain-ai/langchain#27799",
        ),
    ),
    "bedrock": ProviderError(
        "The number of toolResult blocks at messages.{index}.content exceeds the number of "
        "toolUse blocks of previous turn.",
        "OpenHands/OpenHands#4912",
    ),
    "mistral": _MISTRAL_COUNT,
    "openai-responses": ProviderError(
        "No tool call found for function call output with call_id {id}.",
        "continuedev/continue#10092",
    ),
}
_DEFINITIONS = (
    # -- structure (the parser's diagnosis; port's repair) --
    RuleDefinition(
        Rule.FIRST_MESSAGE,
        "the chain must open with a system or human message",
        Step("check_structure"),
        Step("fix_opening"),
    ),
    RuleDefinition(
        Rule.SYSTEM_POSITION,
        "a system message may only open the chain",
        Step("check_structure"),
        Step("fix_system"),
        applies=lambda p: not p.system_anywhere,
    ),
    _pairing_rule(
        Rule.CONSECUTIVE_HUMAN,
        "human message right after another human message",
        applies=lambda p: not p.consecutive_humans_ok,
    ),
    _pairing_rule(
        Rule.ORPHAN_TOOL_MESSAGE,
        "tool message does not follow an AI message with tool calls",
        errors={
            **_ORPHAN,
            "mistral": ProviderError(
                "Unexpected role 'tool' after role 'user'", "charmbracelet/crush#279"
            ),
        },
    ),
    _pairing_rule(
        Rule.UNKNOWN_TOOL_RESULT,
        "tool result {id} answers no tool call of the AI message before it",
        errors=_ORPHAN,
    ),
    _pairing_rule(
        Rule.DUPLICATE_TOOL_RESULT,
        "second tool result for {id}, which is already answered",
        errors=_ORPHAN,
    ),
    _pairing_rule(
        Rule.MISSING_TOOL_RESULT,
        "tool calls without results right after them: {ids}",
        errors={
            "openai": ProviderError(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                "response messages: {ids}",
                "BerriAI/litellm#10083, agno-agi/agno#3105; DeepSeek returns the same "
                "(langgenius/dify#32222)",
            ),
            "deepseek": ProviderError(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. (insufficient tool messages following "
                "tool_calls message)",
                "langgenius/dify#32222 (official DeepSeek API)",
            ),
            "anthropic": ProviderError(
                "messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                "immediately after: {ids}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message.",
                "anthropics/claude-code#5989",
            ),
            **dict.fromkeys(
                _GEMINI,
                ProviderError(
                    "Please ensure that the number of function response parts is equal to the "
                    "number of function call parts of the function call turn.",
                    "google-gemini/gemini-cli#4217",
                ),
            ),
            "mistral": _MISTRAL_COUNT,
            "openai-responses": ProviderError(
                "No tool output found for function call {id}.", "continuedev/continue#10092"
            ),
        },
    ),
    # -- tool-call ids --
    _id_rule(
        Rule.TOOL_CALL_ID_FORMAT,
        "tool call id {id!r} does not match the provider's id format",
        applies=lambda p: p.ids_on_wire,
        errors={
            "anthropic": ProviderError(
                "messages.{index}.content.{position}.tool_use.id: String should match pattern "
                "'^[a-zA-Z0-9_-]+$'",
                "CommandCodeAI/command-code#323, RooCodeInc/Roo-Code#10649",
            ),
            "bedrock": ProviderError(
                _BEDROCK_ID
                + " failed to satisfy constraint: Member must satisfy regular expression "
                "pattern: [a-zA-Z0-9_-]+",
                "AWS ValidationException format, tontinton/maki#38",
            ),
            "mistral": _MISTRAL_ID,
        },
    ),
    _id_rule(
        Rule.TOOL_CALL_ID_TOO_LONG,
        "tool call id {id} is {length} characters long, over {max_length}",
        applies=lambda p: p.ids_on_wire and p.max_id_length is not None,
        errors={
            "openai": ProviderError(
                "Invalid 'messages[{index}].tool_calls[{call}].id': string too long. Expected "
                "a string with maximum length {max_length}, but got a string with length "
                "{length} instead.",
                "vercel/ai#8132, agno-agi/agno#5382, vllm-project/vllm#22966",
            ),
            "openai-responses": ProviderError(
                "Invalid 'input[{index}].call_id': string too long. Expected a string with "
                "maximum length {max_length}, but got a string with length {length} instead.",
                "AnswerDotAI/fastllm#45",
            ),
            "bedrock": ProviderError(
                _BEDROCK_ID
                + " failed to satisfy constraint: Member must have length less than or equal to 64",
                "AWS ValidationException format, tontinton/maki#38; "
                "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html",
            ),
            "mistral": _MISTRAL_ID,
        },
    ),
    _id_rule(
        Rule.DUPLICATE_TOOL_CALL_ID,
        "tool call id {id} is used by an earlier tool call",
        applies=lambda p: p.unique_tool_call_ids,
        errors={
            "anthropic": ProviderError(
                "messages.{index}.content.{position}: `tool_use` ids must be unique",
                "anthropics/claude-code#20901, BerriAI/litellm#23510",
            ),
            "bedrock": ProviderError(
                "The toolUse blocks at messages.{index}.content contain duplicate Ids: {id}",
                "bvcyber/Cyber-AutoAgent-ng#72",
            ),
        },
    ),
    # -- reasoning --
    _reasoning_rule(
        Rule.UNSUPPORTED_REASONING,
        "the provider does not take reasoning back in assistant messages",
        applies=lambda p: p.reasoning == "strip",
        errors={
            "mistral": ProviderError(
                "Extra inputs are not permitted", "BerriAI/litellm#30835 (HTTP 422)"
            ),
            "groq": ProviderError(
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}' : property 'reasoning_content' is unsupported)]",
                "tashfeenahmed/freellmapi#1070, janhq/jan#8136",
            ),
        },
    ),
    _reasoning_rule(
        Rule.FOREIGN_SIGNATURE,
        "reasoning signed by another provider",
        applies=lambda p: p.reasoning.signed,
        errors={
            "anthropic": ProviderError(
                "messages.{index}.content.{position}: Invalid `signature` in `thinking` block",
                "ding113/claude-code-hub#518",
            ),
            "gemini": ProviderError(
                "Corrupted thought signature.",
                "heyhuynhgiabuu/proxypal#119, charmbracelet/crush#1698",
            ),
            "vertex": ProviderError(
                "Unable to submit request because Thought signature is not valid.",
                "diegosouzapw/OmniRoute#1410, 9router#301",
            ),
        },
    ),
    _reasoning_rule(
        Rule.UNSIGNED_REASONING,
        "reasoning without the signature the provider requires",
        applies=lambda p: p.reasoning == "native-signatures",
        errors={
            "anthropic": ProviderError(
                "messages.{index}.content.{position}.thinking.signature: Field required",
                "justlovemaki/AIClient2API#437",
            )
        },
    ),
    _reasoning_rule(
        Rule.MISSING_THOUGHT_SIGNATURE,
        "the first tool call {name} carries no thought signature",
        applies=lambda p: p.reasoning == "thought-signature",
        errors=dict.fromkeys(
            _GEMINI,
            ProviderError(
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead "
                "to degraded model performance. Additional data, function call "
                "`default_api:{name}` , position {index}. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                "manthanabc/paws#103, chatbox#3308",
            ),
        ),
    ),
    _reasoning_rule(
        Rule.MISSING_REASONING_CONTENT,
        "assistant message at index {index} has no reasoning content",
        applies=lambda p: p.reasoning == "reasoning-content-required",
        errors={
            "deepseek": ProviderError(
                "Missing `reasoning_content` field in the assistant message at message index "
                "{index}. For more information, please refer to "
                "https://api-docs.deepseek.com/guides/thinking_mode%23tool-calls",
                "continuedev/continue#9913, langchain-ai/langchain#34516",
            ),
            "kimi": ProviderError(
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                "message at index {index}",
                "labring/FastGPT#6357, MoonshotAI/kimi-agent-sdk#169",
            ),
        },
    ),
    RuleDefinition(
        Rule.THINKING_NOT_FIRST,
        "with thinking on, the assistant turn before the last tool results must open "
        "with a thinking block",
        Step("check_thinking"),
        None,  # a fact of the request (its thinking setting): the turn needs its thinking
        applies=lambda p: p.reasoning == "native-signatures" and p.merges_same_role,
        errors={
            "anthropic": ProviderError(
                "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                "but found `text`. When `thinking` is enabled, a final `assistant` message "
                "must start with a thinking block (preceeding the lastmost set of `tool_use` "
                "and `tool_result` blocks).",
                "n8n-io/n8n#22550; "
                "https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows",
            )
        },
    ),
    # -- roles --
    _role_rule(
        Rule.FIRST_TURN_NOT_HUMAN,
        "the conversation must open with a human message",
        applies=lambda p: p.needs_human_first,
        errors={
            "bedrock": ProviderError(
                "A conversation must start with a user message.", "elastic/kibana#246393"
            )
        },
    ),
    _role_rule(
        Rule.TOOL_THEN_HUMAN,
        "human message right after a tool message",
        applies=lambda p: p.needs_ai_between_tool_and_human,
        errors={
            "mistral": ProviderError(
                "Unexpected role 'user' after role 'tool'",
                "avante-corp/avante.nvim#2562 (code 3230)",
            )
        },
    ),
    # -- content --
    RuleDefinition(
        Rule.EMPTY_MESSAGE,
        "message {index} has no content",
        Step("check_content"),
        Step("fix_empty"),
        applies=lambda p: not p.empty_content_ok,
        errors={
            **dict.fromkeys(
                _OPENAI,
                ProviderError(
                    "Invalid value for 'content': expected a string, got null.",
                    "run-llama/llama_index#17921, docker/docker-agent#63",
                ),
            ),
            "anthropic": ProviderError(
                "messages.{index}: all messages must have non-empty content except for the "
                "optional final assistant message",
                "anthropics/claude-code#3196, #6774",
            ),
            "bedrock": ProviderError(
                "The content field in the Message object at messages.{index} is empty. Add a "
                "ContentBlock object to the content field and try again.",
                "Portkey-AI/gateway#995, earendil-works/pi#3443",
            ),
            "gemini": ProviderError(
                "* GenerateContentRequest.contents[{index}].parts: contents.parts must not be "
                "empty.",
                "egoist/chatwise-releases#250, vercel/ai#3775",
            ),
            "vertex": ProviderError(
                "Unable to submit request because it must include at least one parts field, "
                "which describes the prompt input.",
                "langgenius/dify#30566",
            ),
            "mistral": ProviderError(
                "Assistant message must have either content or tool_calls, but not none.",
                "OpenHands/OpenHands#8685, solbrowse/extension#16",
            ),
        },
    ),
    _content_rule(Rule.UNSUPPORTED_MEDIA, "the provider takes no {media} in a {role} message"),
    _content_rule(Rule.MEDIA_IN_TOOL_RESULT, "the provider takes no {media} in a tool result"),
    _content_rule(Rule.MEDIA_BY_URL, "the provider takes {media} only inline, not by URL"),
    # -- tools --
    RuleDefinition(
        Rule.TOOLS_NOT_DECLARED,
        "the history holds tool calls or results, so the request must declare tools",
        Step("check_tools"),
        None,  # the request's tools are not part of the chain: declare them
        applies=lambda p: p.tools_with_tool_history,
        errors={
            "anthropic": ProviderError(
                "Requests which include tool_use or tool_result blocks must define tools.",
                "anthropics/anthropic-sdk-python#494",
            ),
            "bedrock": ProviderError(
                "The toolConfig field must be defined when using toolUse and toolResult "
                "content blocks.",
                "langgenius/dify#17545, vxcontrol/pentagi#196, patriceckhart/zot#18",
            ),
        },
    ),
    _content_rule(
        Rule.FOREIGN_PROVIDER_PART, "a {provider} {kind} block, which only {provider} understands"
    ),
    _content_rule(
        Rule.MISPLACED_PROVIDER_PART, "a cache breakpoint with no block before it to mark"
    ),
)


RULES: Mapping[Rule, RuleDefinition] = MappingProxyType({d.id: d for d in _DEFINITIONS})
"""Every rule's definition, by rule, in the order lint runs their checks."""
