"""The error texts the provider APIs return, verbatim, each with where it was seen.

The variable parts are ``str.format`` fields (``{index}``, ``{position}``, ``{call}``,
``{id}``, ``{ids}``, ``{name}``, ``{length}``, ``{max_length}``). Each text is named
once here; :mod:`cast._rules` says which rule and which providers it belongs to, and
docs/providers.md quotes them (a test checks the doc against the rules).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProviderError"]


@dataclass(frozen=True, slots=True)
class ProviderError:
    """A provider's own error text for a rule, and its source (issues that report it,
    or the provider's docs)."""

    text: str
    source: str


# -- OpenAI Chat Completions (and DeepSeek, which returns the same pairing texts) ------------
OPENAI_MISSING = ProviderError(
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}",
    "BerriAI/litellm#10083, agno-agi/agno#3105; DeepSeek returns the same (langgenius/dify#32222)",
)
OPENAI_ORPHAN = ProviderError(
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'.",
    "miurla/morphic#136 (the API's own spelling 'preceeding')",
)
OPENAI_EMPTY = ProviderError(
    "Invalid value for 'content': expected a string, got null.",
    "run-llama/llama_index#17921, docker/docker-agent#63",
)
OPENAI_ID_TOO_LONG = ProviderError(
    "Invalid 'messages[{index}].tool_calls[{call}].id': string too long. Expected a string "
    "with maximum length {max_length}, but got a string with length {length} instead.",
    "vercel/ai#8132, agno-agi/agno#5382, vllm-project/vllm#22966",
)

# -- OpenAI Responses ------------------------------------------------------------------------
RESPONSES_ID_TOO_LONG = ProviderError(
    "Invalid 'input[{index}].call_id': string too long. Expected a string with maximum "
    "length {max_length}, but got a string with length {length} instead.",
    "AnswerDotAI/fastllm#45",
)
RESPONSES_MISSING = ProviderError(
    "No tool output found for function call {id}.", "continuedev/continue#10092"
)
RESPONSES_ORPHAN = ProviderError(
    "No tool call found for function call output with call_id {id}.",
    "continuedev/continue#10092",
)

# -- Anthropic Messages ----------------------------------------------------------------------
ANTHROPIC_ORPHAN = ProviderError(
    "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
    "blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in "
    "the previous message.",
    "anthropics/claude-code#13460",
)
ANTHROPIC_MISSING = ProviderError(
    "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
    "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in "
    "the next message.",
    "anthropics/claude-code#5989",
)
ANTHROPIC_ID_FORMAT = ProviderError(
    "messages.{index}.content.{position}.tool_use.id: String should match pattern "
    "'^[a-zA-Z0-9_-]+$'",
    "CommandCodeAI/command-code#323, RooCodeInc/Roo-Code#10649",
)
ANTHROPIC_DUPLICATE_ID = ProviderError(
    "messages.{index}.content.{position}: `tool_use` ids must be unique",
    "anthropics/claude-code#20901, BerriAI/litellm#23510",
)
ANTHROPIC_FOREIGN_SIGNATURE = ProviderError(
    "messages.{index}.content.{position}: Invalid `signature` in `thinking` block",
    "ding113/claude-code-hub#518",
)
ANTHROPIC_UNSIGNED = ProviderError(
    "messages.{index}.content.{position}.thinking.signature: Field required",
    "justlovemaki/AIClient2API#437",
)
ANTHROPIC_THINKING_FIRST = ProviderError(
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`text`. When `thinking` is enabled, a final `assistant` message must start with a thinking "
    "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
    "n8n-io/n8n#22550; https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows",
)
ANTHROPIC_EMPTY = ProviderError(
    "messages.{index}: all messages must have non-empty content except for the optional "
    "final assistant message",
    "anthropics/claude-code#3196, #6774",
)
ANTHROPIC_NO_TOOLS = ProviderError(
    "Requests which include tool_use or tool_result blocks must define tools.",
    "anthropics/anthropic-sdk-python#494",
)

# -- Bedrock Converse ------------------------------------------------------------------------
_BEDROCK_ID = "Value at 'messages.{index}.member.content.{position}.member.toolUse.toolUseId'"
BEDROCK_ID_FORMAT = ProviderError(
    _BEDROCK_ID + " failed to satisfy constraint: Member must satisfy regular expression "
    "pattern: [a-zA-Z0-9_-]+",
    "AWS ValidationException format, tontinton/maki#38",
)
BEDROCK_ID_TOO_LONG = ProviderError(
    _BEDROCK_ID + " failed to satisfy constraint: Member must have length less than or equal to 64",
    "AWS ValidationException format, tontinton/maki#38; "
    "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html",
)
BEDROCK_DUPLICATE_ID = ProviderError(
    "The toolUse blocks at messages.{index}.content contain duplicate Ids: {id}",
    "bvcyber/Cyber-AutoAgent-ng#72",
)
BEDROCK_ORPHAN = ProviderError(
    "The number of toolResult blocks at messages.{index}.content exceeds the number of "
    "toolUse blocks of previous turn.",
    "OpenHands/OpenHands#4912",
)
BEDROCK_FIRST_TURN = ProviderError(
    "A conversation must start with a user message.", "elastic/kibana#246393"
)
BEDROCK_NO_TOOLS = ProviderError(
    "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
    "langgenius/dify#17545, vxcontrol/pentagi#196, patriceckhart/zot#18",
)
BEDROCK_EMPTY = ProviderError(
    "The content field in the Message object at messages.{index} is empty. Add a "
    "ContentBlock object to the content field and try again.",
    "Portkey-AI/gateway#995, earendil-works/pi#3443",
)

# -- Gemini and Vertex -----------------------------------------------------------------------
GEMINI_MISSING_SIGNATURE = ProviderError(
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {index}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
    "manthanabc/paws#103, chatbox#3308",
)
GEMINI_ORPHAN = ProviderError(
    "Please ensure that function response turn comes immediately after a function call turn.",
    "langchain-ai/langchain#27799",
)
GEMINI_MISSING = ProviderError(
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn.",
    "google-gemini/gemini-cli#4217",
)
GEMINI_FOREIGN_SIGNATURE = ProviderError(
    "Corrupted thought signature.", "heyhuynhgiabuu/proxypal#119, charmbracelet/crush#1698"
)
GEMINI_EMPTY = ProviderError(
    "* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty.",
    "egoist/chatwise-releases#250, vercel/ai#3775",
)
VERTEX_FOREIGN_SIGNATURE = ProviderError(
    "Unable to submit request because Thought signature is not valid.",
    "diegosouzapw/OmniRoute#1410, 9router#301",
)
VERTEX_EMPTY = ProviderError(
    "Unable to submit request because it must include at least one parts field, which "
    "describes the prompt input.",
    "langgenius/dify#30566",
)

# -- Mistral ---------------------------------------------------------------------------------
MISTRAL_COUNT = ProviderError(
    "Not the same number of function calls and responses", "mistralai/client-ts#106"
)
MISTRAL_ID = ProviderError(
    "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
    "anomalyco/opencode#1680, jackmpcollins/magentic#276, langchain-ai/langchain#24668 (code 3280)",
)
MISTRAL_ORPHAN = ProviderError(
    "Unexpected role 'tool' after role 'user'", "charmbracelet/crush#279"
)
MISTRAL_TOOL_THEN_HUMAN = ProviderError(
    "Unexpected role 'user' after role 'tool'", "avante-corp/avante.nvim#2562 (code 3230)"
)
MISTRAL_REASONING = ProviderError(
    "Extra inputs are not permitted", "BerriAI/litellm#30835 (HTTP 422)"
)
MISTRAL_EMPTY = ProviderError(
    "Assistant message must have either content or tool_calls, but not none.",
    "OpenHands/OpenHands#8685, solbrowse/extension#16",
)

# -- DeepSeek, Kimi, Groq --------------------------------------------------------------------
DEEPSEEK_MISSING = ProviderError(
    "An assistant message with 'tool_calls' must be followed by tool messages responding "
    "to each 'tool_call_id'. (insufficient tool messages following tool_calls message)",
    "langgenius/dify#32222 (official DeepSeek API)",
)
DEEPSEEK_NO_REASONING = ProviderError(
    "Missing `reasoning_content` field in the assistant message at message index {index}. "
    "For more information, please refer to "
    "https://api-docs.deepseek.com/guides/thinking_mode%23tool-calls",
    "continuedev/continue#9913, langchain-ai/langchain#34516",
)
KIMI_NO_REASONING = ProviderError(
    "thinking is enabled but reasoning_content is missing in assistant tool call message "
    "at index {index}",
    "labring/FastGPT#6357, MoonshotAI/kimi-agent-sdk#169",
)
GROQ_REASONING = ProviderError(
    "'messages.{index}' : for 'role:assistant' the following must be satisfied"
    "[('messages.{index}' : property 'reasoning_content' is unsupported)]",
    "tashfeenahmed/freellmapi#1070, janhq/jan#8136",
)
