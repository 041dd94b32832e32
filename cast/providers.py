"""Provider profiles: what each LLM API accepts in a chain, so chains can be ported to it.

A :class:`ProviderProfile` records, for one API, which tool-call ids it accepts (a
pattern and a length limit) and which it generates (an :class:`~cast.ids.IdTemplate`),
what it does with reasoning from earlier turns, its role rules, and the error text it
returns for each rule a chain can break. :func:`cast.port` reads the profile to
rewrite a chain; :func:`cast.lint` reads it to report what the API would reject.

Built-in profiles are registered at import; :func:`register_provider` adds or replaces
one. The facts and error texts come from provider docs and reported API errors; each
profile lists its sources, and docs/providers.md explains them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from cast.constants import DEFAULT_TOOL_CALL_ID_TEMPLATE
from cast.errors import ParseRule, UnknownProviderError
from cast.ids import IdTemplate, TemplateLike, as_template

__all__ = [
    "IMAGE_TYPES",
    "PROVIDERS",
    "ProviderProfile",
    "ReasoningPolicy",
    "ReasoningScope",
    "Rule",
    "SystemPlacement",
    "get_provider",
    "media_matches",
    "register_provider",
    "resolve_provider",
]


class ReasoningPolicy(StrEnum):
    """What a provider does with reasoning (thinking text, signatures) in past turns."""

    STRIP = "strip"
    """Never takes reasoning back (rejects or does not define the field): always dropped."""
    REPLAY = "replay"
    """Takes its own reasoning back as plain fields; foreign reasoning is dropped."""
    ENCRYPTED_ITEMS = "encrypted-items"
    """Replays its own encrypted reasoning items; foreign ones fail verification."""
    NATIVE_SIGNATURES = "native-signatures"
    """Signed thinking blocks: only its own signed blocks may be sent back."""
    THOUGHT_SIGNATURE = "thought-signature"
    """Gemini 3: the first function call of each model step must carry a signature."""
    REASONING_CONTENT_REQUIRED = "reasoning-content-required"
    """Thinking mode: assistant messages of tool-call turns must carry reasoning_content."""

    @property
    def signed(self) -> bool:
        """Whether the provider verifies reasoning signatures (foreign ones fail)."""
        return self in _SIGNED_POLICIES


_SIGNED_POLICIES = frozenset(
    {
        ReasoningPolicy.ENCRYPTED_ITEMS,
        ReasoningPolicy.NATIVE_SIGNATURES,
        ReasoningPolicy.THOUGHT_SIGNATURE,
    }
)


class ReasoningScope(StrEnum):
    """Which AI messages must carry reasoning content (REASONING_CONTENT_REQUIRED)."""

    TOOL_CALL_MESSAGES = "tool-call-messages"
    """Every AI message with tool calls."""
    TOOL_CALL_TURNS = "tool-call-turns"
    """Every AI message of a turn (between two human messages) that made a tool call."""


class SystemPlacement(StrEnum):
    """Where the system prompt travels on the wire."""

    MESSAGE = "message"
    """An ordinary message with the system (or developer) role."""
    TOP_LEVEL = "top-level"
    """A request field (``system``, ``systemInstruction``); the codec hoists it."""


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


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types every vision API here takes (PNG, JPEG, GIF, WebP)."""


def media_matches(patterns: frozenset[str] | None, mime_type: str) -> bool:
    """Whether ``mime_type`` is among ``patterns`` (``None``: anything; ``"image/*"``
    matches every image type)."""
    if patterns is None or mime_type in patterns or "*" in patterns:
        return True
    major = mime_type.partition("/")[0]
    return f"{major}/*" in patterns


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """What one provider API accepts in a chain.

    ``id_pattern`` (a regex, full match) and ``max_id_length`` say which tool-call ids
    the API accepts; ``None`` means no constraint. Every id must be non-empty, except
    where ids never reach the wire (``ids_on_wire=False``, Vertex): any id goes there.
    ``id_template`` is how the provider's own ids look; ported chains get new ids from
    it. ``errors`` maps a :class:`Rule` to the provider's error text for it, with
    ``str.format`` fields (``{index}``, ``{position}``, ``{call}``, ``{id}``, ``{ids}``,
    ``{name}``, ``{length}``, ``{max_length}``); rules without one get chaincast's text.

    Content rules: ``system_anywhere`` — system messages are accepted after the first
    message (several leading ones, or instructions mid-chain); ``empty_content_ok`` —
    a message without content (or with only empty text) is accepted (no built-in API
    does: OpenAI and Mistral refuse an assistant message with neither content nor tool
    calls, Anthropic, Bedrock and Gemini any empty content); ``empty_final_ai_ok`` —
    except for a last AI message (Anthropic's "optional final assistant message"); ``user_media`` —
    the media types a human message can carry inline (``None``: any, ``"image/*"``
    patterns allowed); ``tool_result_media`` — those a tool result can carry;
    ``url_media`` — those the API takes by URL (``image/*`` covers an ``ImagePart``
    without a ``mime_type``); ``ai_media`` — AI messages can carry media;
    ``tool_error_flag`` — the wire format marks failed tool results (Anthropic
    ``is_error``, Bedrock ``status``, Gemini's ``error`` response key).

    Tools: ``tools_with_tool_history`` — a request whose history holds a tool call or
    result must declare tools (Anthropic ``tools``, Bedrock ``toolConfig``), though not
    the tools called: none of the APIs here checks a past call's name against the
    declared tools (docs/providers.md).
    """

    name: str
    wire_format: str
    id_template: IdTemplate
    id_pattern: str | None = None
    max_id_length: int | None = None
    ids_on_wire: bool = True
    unique_tool_call_ids: bool = False
    reasoning: ReasoningPolicy = ReasoningPolicy.STRIP
    reasoning_scope: ReasoningScope = ReasoningScope.TOOL_CALL_MESSAGES
    system_placement: SystemPlacement = SystemPlacement.MESSAGE
    merges_same_role: bool = False
    results_contiguous: bool = True
    needs_human_first: bool = False
    needs_ai_between_tool_and_human: bool = False
    system_anywhere: bool = False
    empty_content_ok: bool = False
    empty_final_ai_ok: bool = False
    user_media: frozenset[str] | None = IMAGE_TYPES
    tool_result_media: frozenset[str] = frozenset()
    url_media: frozenset[str] = frozenset({"image/*"})
    ai_media: bool = False
    tool_error_flag: bool = False
    tools_with_tool_history: bool = False
    errors: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    sources: tuple[str, ...] = ()
    _matcher: IdTemplate | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip().lower():
            raise ValueError(f"provider name must be non-empty lower-case, got {self.name!r}")
        object.__setattr__(self, "id_template", as_template(self.id_template))
        if self.max_id_length is not None and self.max_id_length < 1:
            raise ValueError(f"{self.name}: max_id_length must be positive")
        if self.id_pattern is not None:
            object.__setattr__(self, "_matcher", IdTemplate.from_regex(self.id_pattern))
        unknown = sorted(set(self.errors) - set(Rule))
        if unknown:
            raise ValueError(f"{self.name}: error texts for unknown rules {unknown}")
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))
        object.__setattr__(self, "reasoning", ReasoningPolicy(self.reasoning))
        object.__setattr__(self, "reasoning_scope", ReasoningScope(self.reasoning_scope))
        object.__setattr__(self, "system_placement", SystemPlacement(self.system_placement))
        object.__setattr__(self, "sources", tuple(self.sources))
        if self.user_media is not None:
            object.__setattr__(self, "user_media", frozenset(self.user_media))
        object.__setattr__(self, "tool_result_media", frozenset(self.tool_result_media))
        object.__setattr__(self, "url_media", frozenset(self.url_media))

    def media_problem(self, mime_type: str, *, url: bool, place: str) -> Rule | None:
        """Why the provider would refuse media of ``mime_type`` (by URL or inline) in a
        message of ``place`` (``"human"``, ``"tool"``, ``"ai"``, ``"system"``), or None.

        ``MEDIA_IN_TOOL_RESULT`` means a human message could carry it (port moves it
        there); ``MEDIA_BY_URL`` that inline data would do; ``UNSUPPORTED_MEDIA`` that
        the provider takes it nowhere.
        """
        if url and not media_matches(self.url_media, mime_type):
            if media_matches(self.user_media, mime_type):
                return Rule.MEDIA_BY_URL
            return Rule.UNSUPPORTED_MEDIA
        inline_ok = url or media_matches(self.user_media, mime_type)
        if place == "tool":
            if media_matches(self.tool_result_media, mime_type) and inline_ok:
                return None
            return Rule.MEDIA_IN_TOOL_RESULT if inline_ok else Rule.UNSUPPORTED_MEDIA
        if place == "system" or (place == "ai" and not self.ai_media):
            return Rule.UNSUPPORTED_MEDIA
        return None if inline_ok else Rule.UNSUPPORTED_MEDIA

    def id_problem(self, tool_call_id: str) -> Rule | None:
        """Why the provider would reject this tool-call id, or None when it accepts it."""
        if not self.ids_on_wire:
            return None
        if not tool_call_id:
            return Rule.TOOL_CALL_ID_FORMAT
        if self.max_id_length is not None and len(tool_call_id) > self.max_id_length:
            return Rule.TOOL_CALL_ID_TOO_LONG
        if self._matcher is not None and not self._matcher.matches(tool_call_id):
            return Rule.TOOL_CALL_ID_FORMAT
        return None

    def accepts_id(self, tool_call_id: str) -> bool:
        """Whether the provider accepts this tool-call id."""
        return self.id_problem(tool_call_id) is None


def _profile(
    name: str,
    wire_format: str,
    id_template: TemplateLike,
    **options: object,
) -> ProviderProfile:
    return ProviderProfile(name, wire_format, as_template(id_template), **options)  # type: ignore[arg-type]


# -- error texts ---------------------------------------------------------------------------
# Verbatim texts the APIs return, with the variable parts turned into fields. Where a
# text comes from a report, the report is named (see docs/providers.md).

_OPENAI_MISSING = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)  # litellm#10083, agno#3105; DeepSeek returns the same text (dify#32222)
_OPENAI_ORPHAN = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)  # morphic#136 (the API's own spelling "preceeding")
# run-llama/llama_index#17921, docker/docker-agent#63
_OPENAI_EMPTY = "Invalid value for 'content': expected a string, got null."
_OPENAI_ERRORS = {
    Rule.EMPTY_MESSAGE: _OPENAI_EMPTY,
    Rule.MISSING_TOOL_RESULT: _OPENAI_MISSING,
    Rule.ORPHAN_TOOL_MESSAGE: _OPENAI_ORPHAN,
    Rule.UNKNOWN_TOOL_RESULT: _OPENAI_ORPHAN,
    Rule.DUPLICATE_TOOL_RESULT: _OPENAI_ORPHAN,
}

_ANTHROPIC_ORPHAN = (
    "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
    "blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in "
    "the previous message."
)  # claude-code#13460
_ANTHROPIC_ERRORS = {
    Rule.MISSING_TOOL_RESULT: (
        "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in "
        "the next message."
    ),  # claude-code#5989
    Rule.ORPHAN_TOOL_MESSAGE: _ANTHROPIC_ORPHAN,
    Rule.UNKNOWN_TOOL_RESULT: _ANTHROPIC_ORPHAN,
    Rule.DUPLICATE_TOOL_RESULT: _ANTHROPIC_ORPHAN,
    Rule.TOOL_CALL_ID_FORMAT: (
        "messages.{index}.content.{position}.tool_use.id: String should match pattern "
        "'^[a-zA-Z0-9_-]+$'"
    ),  # command-code#323, RooCode PR#10649
    # claude-code#20901, litellm#23510
    Rule.DUPLICATE_TOOL_CALL_ID: (
        "messages.{index}.content.{position}: `tool_use` ids must be unique"
    ),
    # claude-code-hub#518
    Rule.FOREIGN_SIGNATURE: (
        "messages.{index}.content.{position}: Invalid `signature` in `thinking` block"
    ),
    # AIClient2API#437
    Rule.UNSIGNED_REASONING: (
        "messages.{index}.content.{position}.thinking.signature: Field required"
    ),
    Rule.EMPTY_MESSAGE: (
        "messages.{index}: all messages must have non-empty content except for the optional "
        "final assistant message"
    ),  # anthropics/claude-code#3196, #6774
    # anthropics/anthropic-sdk-python#494
    Rule.TOOLS_NOT_DECLARED: (
        "Requests which include tool_use or tool_result blocks must define tools."
    ),
}

_BEDROCK_ID = "Value at 'messages.{index}.member.content.{position}.member.toolUse.toolUseId'"
_BEDROCK_ORPHAN = (
    "The number of toolResult blocks at messages.{index}.content exceeds the number of "
    "toolUse blocks of previous turn."
)  # OpenHands#4912
_BEDROCK_ERRORS = {
    Rule.TOOL_CALL_ID_FORMAT: (
        _BEDROCK_ID + " failed to satisfy constraint: Member must satisfy regular expression "
        "pattern: [a-zA-Z0-9_-]+"
    ),  # AWS ValidationException format, tontinton/maki#38
    Rule.TOOL_CALL_ID_TOO_LONG: (
        _BEDROCK_ID + " failed to satisfy constraint: Member must have length less than or "
        "equal to 64"
    ),
    # Cyber-AutoAgent-ng#72
    Rule.DUPLICATE_TOOL_CALL_ID: (
        "The toolUse blocks at messages.{index}.content contain duplicate Ids: {id}"
    ),
    Rule.ORPHAN_TOOL_MESSAGE: _BEDROCK_ORPHAN,
    Rule.UNKNOWN_TOOL_RESULT: _BEDROCK_ORPHAN,
    Rule.DUPLICATE_TOOL_RESULT: _BEDROCK_ORPHAN,
    Rule.FIRST_TURN_NOT_HUMAN: "A conversation must start with a user message.",  # kibana#246393
    # langgenius/dify#17545, vxcontrol/pentagi#196, patriceckhart/zot#18
    Rule.TOOLS_NOT_DECLARED: (
        "The toolConfig field must be defined when using toolUse and toolResult content blocks."
    ),
    # Portkey-AI/gateway#995, earendil-works/pi#3443
    Rule.EMPTY_MESSAGE: (
        "The content field in the Message object at messages.{index} is empty. Add a "
        "ContentBlock object to the content field and try again."
    ),
}

_GEMINI_MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {index}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)  # paws#103, chatbox#3308
_GEMINI_ORPHAN = (  # langchain#27799
    "Please ensure that function response turn comes immediately after a function call turn."
)
_GEMINI_ERRORS = {
    Rule.MISSING_TOOL_RESULT: (
        "Please ensure that the number of function response parts is equal to the number of "
        "function call parts of the function call turn."
    ),  # gemini-cli#4217
    Rule.ORPHAN_TOOL_MESSAGE: _GEMINI_ORPHAN,
    Rule.UNKNOWN_TOOL_RESULT: _GEMINI_ORPHAN,
    Rule.DUPLICATE_TOOL_RESULT: _GEMINI_ORPHAN,
    Rule.MISSING_THOUGHT_SIGNATURE: _GEMINI_MISSING_SIGNATURE,
    Rule.FOREIGN_SIGNATURE: "Corrupted thought signature.",  # proxypal#119, crush#1698
    # egoist/chatwise-releases#250, vercel/ai#3775
    Rule.EMPTY_MESSAGE: (
        "* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty."
    ),
}
_VERTEX_ERRORS = {
    **_GEMINI_ERRORS,
    Rule.FOREIGN_SIGNATURE: (
        "Unable to submit request because Thought signature is not valid."
    ),  # OmniRoute#1410, 9router#301
    Rule.EMPTY_MESSAGE: (
        "Unable to submit request because it must include at least one parts field, which "
        "describes the prompt input."
    ),  # langgenius/dify#30566
}

_MISTRAL_COUNT = "Not the same number of function calls and responses"  # client-ts#106
# opencode#1680, magentic#276, langchain PR#24668 (code 3280)
_MISTRAL_ID = "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."
_MISTRAL_ERRORS = {
    Rule.TOOL_CALL_ID_FORMAT: _MISTRAL_ID,
    Rule.TOOL_CALL_ID_TOO_LONG: _MISTRAL_ID,
    Rule.MISSING_TOOL_RESULT: _MISTRAL_COUNT,
    Rule.UNKNOWN_TOOL_RESULT: _MISTRAL_COUNT,
    Rule.DUPLICATE_TOOL_RESULT: _MISTRAL_COUNT,
    Rule.ORPHAN_TOOL_MESSAGE: "Unexpected role 'tool' after role 'user'",  # crush#279
    Rule.TOOL_THEN_HUMAN: "Unexpected role 'user' after role 'tool'",  # avante.nvim#2562 (3230)
    Rule.UNSUPPORTED_REASONING: "Extra inputs are not permitted",  # litellm#30835 (422)
    # OpenHands#8685, solbrowse/extension#16
    Rule.EMPTY_MESSAGE: "Assistant message must have either content or tool_calls, but not none.",
}

_DEEPSEEK_ERRORS = {
    **_OPENAI_ERRORS,
    Rule.MISSING_TOOL_RESULT: (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
    ),  # dify#32222 (official DeepSeek API)
    Rule.MISSING_REASONING_CONTENT: (
        "Missing `reasoning_content` field in the assistant message at message index {index}. "
        "For more information, please refer to "
        "https://api-docs.deepseek.com/guides/thinking_mode%23tool-calls"
    ),  # continue#9913, langchain PR#34516
}
_KIMI_ERRORS = {
    Rule.MISSING_REASONING_CONTENT: (
        "thinking is enabled but reasoning_content is missing in assistant tool call message "
        "at index {index}"
    ),  # FastGPT#6357, kimi-agent-sdk#169
}
_RESPONSES_ERRORS = {
    Rule.TOOL_CALL_ID_TOO_LONG: (
        "Invalid 'input[{index}].call_id': string too long. Expected a string with maximum "
        "length {max_length}, but got a string with length {length} instead."
    ),  # AnswerDotAI/fastllm#45
    Rule.MISSING_TOOL_RESULT: "No tool output found for function call {id}.",  # continue#10092
    Rule.UNKNOWN_TOOL_RESULT: "No tool call found for function call output with call_id {id}.",
    Rule.ORPHAN_TOOL_MESSAGE: "No tool call found for function call output with call_id {id}.",
    Rule.DUPLICATE_TOOL_RESULT: "No tool call found for function call output with call_id {id}.",
}
_OPENAI_CHAT_ERRORS = {
    **_OPENAI_ERRORS,
    Rule.TOOL_CALL_ID_TOO_LONG: (
        "Invalid 'messages[{index}].tool_calls[{call}].id': string too long. Expected a string "
        "with maximum length {max_length}, but got a string with length {length} instead."
    ),  # vercel/ai#8132, agno#5382, vllm#22966
}
_GROQ_ERRORS = {
    Rule.UNSUPPORTED_REASONING: (
        "'messages.{index}' : for 'role:assistant' the following must be satisfied"
        "[('messages.{index}' : property 'reasoning_content' is unsupported)]"
    ),  # freellmapi#1070, jan#8136
}

_ANTHROPIC_IDS = r"[a-zA-Z0-9_-]+"
# Converse image, document and video formats (API_runtime_ImageBlock, _DocumentBlock,
# _VideoBlock); cast.codecs.bedrock maps the same formats.
_BEDROCK_MEDIA = IMAGE_TYPES | {
    "application/pdf",
    "text/csv",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "text/html",
    "text/plain",
    "text/markdown",
    "video/x-matroska",
    "video/quicktime",
    "video/mp4",
    "video/webm",
    "video/x-flv",
    "video/mpeg",
    "video/mpg",
    "video/x-ms-wmv",
    "video/3gpp",
}
# Gemini 3 multimodal function responses: images, PDF and plain text.
_GEMINI_TOOL_MEDIA = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)

# Gemini and Vertex take the same content (the Gemini 3 API behind both).
_GEMINI_CONTENT: dict[str, object] = {
    "tool_error_flag": True,
    "user_media": None,
    "tool_result_media": _GEMINI_TOOL_MEDIA,
    "url_media": frozenset({"*"}),
    "ai_media": True,
}

_BUILTINS = (
    _profile(
        "openai",
        "openai",
        DEFAULT_TOOL_CALL_ID_TEMPLATE,
        max_id_length=40,
        reasoning=ReasoningPolicy.STRIP,
        errors=_OPENAI_CHAT_ERRORS,
        system_anywhere=True,
        user_media=IMAGE_TYPES | {"audio/wav", "audio/mp3", "application/pdf"},
        sources=(
            "https://platform.openai.com/docs/guides/images-vision",
            "https://platform.openai.com/docs/guides/pdf-files",
            "vercel/ai#8132",
            "vllm-project/vllm#22966",
            "BerriAI/litellm#10083",
        ),
    ),
    _profile(
        "openai-responses",
        "openai-responses",
        DEFAULT_TOOL_CALL_ID_TEMPLATE,
        max_id_length=64,
        reasoning=ReasoningPolicy.ENCRYPTED_ITEMS,
        errors=_RESPONSES_ERRORS,
        system_anywhere=True,
        user_media=IMAGE_TYPES | {"application/pdf"},
        tool_result_media=IMAGE_TYPES | {"application/pdf"},
        url_media=frozenset({"image/*", "application/pdf"}),
        sources=(
            "https://platform.openai.com/docs/api-reference/responses/create",
            "pydantic/pydantic-ai tests/models/cassettes/test_multimodal_tool_returns",
            "AnswerDotAI/fastllm#45",
            "continuedev/continue#10092",
        ),
    ),
    _profile(
        "anthropic",
        "anthropic",
        "toolu_{r:24:b}",
        id_pattern=_ANTHROPIC_IDS,
        unique_tool_call_ids=True,
        reasoning=ReasoningPolicy.NATIVE_SIGNATURES,
        system_placement=SystemPlacement.TOP_LEVEL,
        merges_same_role=True,
        needs_human_first=True,
        errors=_ANTHROPIC_ERRORS,
        tools_with_tool_history=True,
        system_anywhere=True,
        tool_error_flag=True,
        empty_final_ai_ok=True,
        user_media=IMAGE_TYPES | {"application/pdf", "text/plain"},
        tool_result_media=IMAGE_TYPES | {"application/pdf", "text/plain"},
        url_media=frozenset({"image/*", "application/pdf"}),
        sources=(
            "https://docs.anthropic.com/en/docs/build-with-claude/pdf-support",
            "anthropics/claude-code#3196",
            "pydantic/pydantic-ai tests/models/cassettes/test_anthropic_mid_conversation_system",
            "https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use",
            "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking",
            "CommandCodeAI/command-code#323",
            "anthropics/claude-code#5989",
            "anthropics/anthropic-sdk-python#494",
            "vercel/ai#17005",
        ),
    ),
    _profile(
        "bedrock",
        "bedrock",
        "tooluse_{r:22:b}",
        id_pattern=_ANTHROPIC_IDS,
        max_id_length=64,
        unique_tool_call_ids=True,
        reasoning=ReasoningPolicy.NATIVE_SIGNATURES,
        system_placement=SystemPlacement.TOP_LEVEL,
        merges_same_role=True,
        needs_human_first=True,
        errors=_BEDROCK_ERRORS,
        tools_with_tool_history=True,
        tool_error_flag=True,
        user_media=_BEDROCK_MEDIA,
        tool_result_media=_BEDROCK_MEDIA,
        url_media=frozenset(),
        sources=(
            "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html",
            "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolResultContentBlock.html",
            "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html",
            "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolResultBlock.html",
            "OpenHands/OpenHands#4912",
            "langgenius/dify#17545",
            "vxcontrol/pentagi#196",
        ),
    ),
    _profile(
        "gemini",
        "gemini",
        DEFAULT_TOOL_CALL_ID_TEMPLATE,
        reasoning=ReasoningPolicy.THOUGHT_SIGNATURE,
        system_placement=SystemPlacement.TOP_LEVEL,
        merges_same_role=True,
        needs_human_first=True,
        errors=_GEMINI_ERRORS,
        **_GEMINI_CONTENT,
        sources=(
            "https://ai.google.dev/gemini-api/docs/function-calling#multimodal",
            "https://ai.google.dev/gemini-api/docs/thought-signatures",
            "https://ai.google.dev/gemini-api/docs/function-calling",
        ),
    ),
    _profile(
        "vertex",
        "gemini",
        DEFAULT_TOOL_CALL_ID_TEMPLATE,
        ids_on_wire=False,
        reasoning=ReasoningPolicy.THOUGHT_SIGNATURE,
        system_placement=SystemPlacement.TOP_LEVEL,
        merges_same_role=True,
        needs_human_first=True,
        errors=_VERTEX_ERRORS,
        **_GEMINI_CONTENT,
        sources=(
            "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures",
            "pydantic/pydantic-ai#5081",
            "vercel/ai#15664",
        ),
    ),
    _profile(
        "mistral",
        "openai",
        "{r:9:x}",
        id_pattern=r"[a-zA-Z0-9]{9}",
        max_id_length=9,
        reasoning=ReasoningPolicy.STRIP,
        needs_ai_between_tool_and_human=True,
        errors=_MISTRAL_ERRORS,
        sources=(
            "anomalyco/opencode#1680",
            "langchain-ai/langchain#24668",
            "avante-corp/avante.nvim#2562",
            "BerriAI/litellm#30835",
        ),
    ),
    _profile(
        "deepseek",
        "openai",
        "call_{r:2:d}_{r:24:x}",
        reasoning=ReasoningPolicy.REASONING_CONTENT_REQUIRED,
        reasoning_scope=ReasoningScope.TOOL_CALL_TURNS,
        errors=_DEEPSEEK_ERRORS,
        system_anywhere=True,
        user_media=frozenset(),
        url_media=frozenset(),
        sources=(
            "https://api-docs.deepseek.com/api/create-chat-completion",
            "https://api-docs.deepseek.com/guides/thinking_mode",
            "continuedev/continue#9913",
        ),
    ),
    _profile(
        "kimi",
        "openai",
        "functions.{f}:{r:6:d}",
        reasoning=ReasoningPolicy.REASONING_CONTENT_REQUIRED,
        errors=_KIMI_ERRORS,
        sources=("sgl-project/sglang#9606", "labring/FastGPT#6357"),
    ),
    _profile(
        "ollama",
        "openai",
        "call_{r:8:x}",
        reasoning=ReasoningPolicy.REPLAY,
        sources=("ollama/ollama-python#667", "ollama/ollama#7510"),
    ),
    _profile(
        "vllm",
        "openai",
        "chatcmpl-tool-{r:32:h}",
        reasoning=ReasoningPolicy.REPLAY,
        sources=("vllm-project/vllm#22966", "vllm-project/vllm#27752"),
    ),
    _profile(
        "groq",
        "openai",
        DEFAULT_TOOL_CALL_ID_TEMPLATE,
        reasoning=ReasoningPolicy.STRIP,
        errors=_GROQ_ERRORS,
        sources=("tashfeenahmed/freellmapi#1070", "janhq/jan#8136"),
    ),
)

_REGISTRY: dict[str, ProviderProfile] = {}
_LOCK = threading.Lock()

PROVIDERS: Mapping[str, ProviderProfile] = MappingProxyType(_REGISTRY)
"""Registered profiles by name (a read-only live view; see :func:`register_provider`)."""


def register_provider(profile: ProviderProfile, *, replace: bool = False) -> ProviderProfile:
    """Register ``profile`` under its name and return it.

    The profile's template must generate ids the profile accepts (checked on a sample),
    otherwise port could never produce a valid chain for it. Registering a name that
    exists raises ``ValueError`` unless ``replace``.
    """
    if not isinstance(profile, ProviderProfile):
        raise TypeError(f"expected a ProviderProfile, not {type(profile).__name__}")
    for seed in range(4):
        sample = profile.id_template.generate("get_weather", seed=f"cast.providers\x1f{seed}")
        if not profile.accepts_id(sample):
            raise ValueError(
                f"{profile.name}: id template {profile.id_template.pattern!r} generates "
                f"{sample!r}, which the profile does not accept"
            )
    with _LOCK:
        if profile.name in _REGISTRY and not replace:
            raise ValueError(f"provider {profile.name!r} is already registered (pass replace=True)")
        _REGISTRY[profile.name] = profile
    return profile


def get_provider(name: str) -> ProviderProfile:
    """The registered profile called ``name`` (case-insensitive).

    Raises :class:`UnknownProviderError` (a ``ChainError``/``ValueError``) naming the
    known providers when there is none.
    """
    if not isinstance(name, str):
        raise TypeError(f"provider name must be a str, not {type(name).__name__}")
    profile = _REGISTRY.get(name.strip().lower())
    if profile is None:
        raise UnknownProviderError(name, sorted(_REGISTRY))
    return profile


def resolve_provider(target: str | ProviderProfile) -> ProviderProfile:
    """A profile given directly, or the registered one with that name."""
    if isinstance(target, ProviderProfile):
        return target
    return get_provider(target)


for _builtin in _BUILTINS:
    register_provider(_builtin)
del _builtin
