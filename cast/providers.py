"""Provider profiles: what each LLM API accepts in a chain (ids, reasoning, roles, media),
read by :func:`cast.port` and :func:`cast.lint`. Built-in profiles are registered at
import, with their sources (docs/providers.md); the rules are in :mod:`cast._rules`."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from cast._rules import RULES, ProviderError, Rule, RuleDefinition
from cast.constants import DEFAULT_TOOL_CALL_ID_TEMPLATE
from cast.errors import UnknownProviderError
from cast.ids import IdTemplate, TemplateLike, as_template

__all__ = [
    "BEDROCK_DOCUMENT_FORMATS",
    "BEDROCK_IMAGE_FORMATS",
    "BEDROCK_VIDEO_FORMATS",
    "IMAGE_TYPES",
    "PROVIDERS",
    "RULES",
    "ProviderError",
    "ProviderProfile",
    "ReasoningPolicy",
    "ReasoningScope",
    "Rule",
    "RuleDefinition",
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
        return self in ("encrypted-items", "native-signatures", "thought-signature")


class ReasoningScope(StrEnum):
    """Which AI messages must carry reasoning content (REASONING_CONTENT_REQUIRED)."""

    TOOL_CALL_MESSAGES = "tool-call-messages"
    """Every AI message with tool calls."""
    TOOL_CALL_TURNS = "tool-call-turns"
    """Every AI message of a turn (between two human messages) that made a tool call."""


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types every vision API here takes (PNG, JPEG, GIF, WebP)."""


def media_matches(patterns: frozenset[str] | None, mime_type: str) -> bool:
    """Whether ``mime_type`` is among ``patterns`` (``None``: anything; ``"image/*"``
    matches every image type)."""
    wildcard = f"{mime_type.partition('/')[0]}/*"
    return patterns is None or bool(patterns & {mime_type, "*", wildcard})


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """What one provider API accepts in a chain (docs/providers.md has each fact's source).

    Ids: ``id_pattern`` (a regex, full match) and ``max_id_length`` (``None``: no
    constraint); every id must be non-empty unless ids never reach the wire
    (``ids_on_wire=False``, Vertex); ``id_template`` is how the provider's own ids look
    (ported chains get new ids from it). ``errors`` maps a :class:`Rule` to the
    provider's text for it, with ``str.format`` fields (``{index}``, ``{position}``,
    ``{call}``, ``{id}``, ``{ids}``, ``{name}``, ``{length}``, ``{max_length}``).

    Content: ``system_anywhere`` (system messages after the first are taken),
    ``consecutive_humans_ok``, ``empty_content_ok`` (no built-in API takes an empty
    message), ``empty_final_ai_ok`` (but a last AI message: Anthropic); the media types
    a human message (``user_media``, ``None``: any, ``"image/*"`` patterns allowed), a
    tool result (``tool_result_media``) and a URL (``url_media``) can carry;
    ``ai_media``; ``tool_error_flag`` (the wire marks failed results). Tools:
    ``tools_with_tool_history`` (a request whose history holds tool calls must declare
    tools: Anthropic, Bedrock).
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
    merges_same_role: bool = False
    needs_human_first: bool = False
    needs_ai_between_tool_and_human: bool = False
    system_anywhere: bool = False
    consecutive_humans_ok: bool = False
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
        inline_ok = media_matches(self.user_media, mime_type)
        if url and not media_matches(self.url_media, mime_type):
            return Rule.MEDIA_BY_URL if inline_ok else Rule.UNSUPPORTED_MEDIA
        if not (url or inline_ok) or place == "system" or (place == "ai" and not self.ai_media):
            return Rule.UNSUPPORTED_MEDIA
        if place == "tool" and not media_matches(self.tool_result_media, mime_type):
            return Rule.MEDIA_IN_TOOL_RESULT
        return None

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
    return target if isinstance(target, ProviderProfile) else get_provider(target)


def _builtin(name: str, wire_format: str, id_template: TemplateLike, **options: object) -> None:
    """Register a built-in profile, its error texts read from the rules."""
    errors = {rule: d.errors[name].text for rule, d in RULES.items() if name in d.errors}
    profile = ProviderProfile(name, wire_format, as_template(id_template), errors=errors, **options)  # type: ignore[arg-type]
    register_provider(profile)


# Converse image, document and video formats, which cast.codecs.bedrock maps.
BEDROCK_DOCUMENT_FORMATS: dict[str, str] = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "html": "text/html",
    "txt": "text/plain",
    "md": "text/markdown",
}
"""``DocumentBlock.format`` values and their media types (API_runtime_DocumentBlock)."""
BEDROCK_IMAGE_FORMATS = ("png", "jpeg", "gif", "webp")
"""``ImageBlock.format`` values: ``image/<format>``."""
BEDROCK_VIDEO_FORMATS: dict[str, str] = {
    "mkv": "video/x-matroska",
    "mov": "video/quicktime",
    "mp4": "video/mp4",
    "webm": "video/webm",
    "flv": "video/x-flv",
    "mpeg": "video/mpeg",
    "mpg": "video/mpg",
    "wmv": "video/x-ms-wmv",
    "three_gp": "video/3gpp",
}
"""``VideoBlock.format`` values and their media types (API_runtime_VideoBlock)."""
_BEDROCK_MEDIA = frozenset(
    {f"image/{f}" for f in BEDROCK_IMAGE_FORMATS}
    | set(BEDROCK_DOCUMENT_FORMATS.values())
    | set(BEDROCK_VIDEO_FORMATS.values())
)

# Anthropic and Bedrock's Converse take the same chains (Claude's rules behind both).
_CLAUDE: dict[str, object] = {
    "id_pattern": r"[a-zA-Z0-9_-]+",
    "unique_tool_call_ids": True,
    "reasoning": ReasoningPolicy.NATIVE_SIGNATURES,
    "merges_same_role": True,
    "needs_human_first": True,
    "tools_with_tool_history": True,
    "tool_error_flag": True,
}
# Gemini and Vertex take the same chains (the Gemini 3 API behind both).
_GEMINI: dict[str, object] = {
    "reasoning": ReasoningPolicy.THOUGHT_SIGNATURE,
    "merges_same_role": True,
    "needs_human_first": True,
    "consecutive_humans_ok": True,
    "tool_error_flag": True,
    "user_media": None,
    # Gemini 3 multimodal function responses: images, PDF and plain text.
    "tool_result_media": frozenset(
        {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
    ),
    "url_media": frozenset({"*"}),
    "ai_media": True,
}

_builtin(
    "openai",
    "openai",
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    max_id_length=40,
    consecutive_humans_ok=True,
    system_anywhere=True,
    user_media=IMAGE_TYPES | {"audio/wav", "audio/mp3", "application/pdf"},
    sources=(
        "https://platform.openai.com/docs/guides/images-vision",
        "https://platform.openai.com/docs/guides/pdf-files",
        "vercel/ai#8132",
        "vllm-project/vllm#22966",
        "BerriAI/litellm#10083",
    ),
)
_builtin(
    "openai-responses",
    "openai-responses",
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    max_id_length=64,
    reasoning=ReasoningPolicy.ENCRYPTED_ITEMS,
    consecutive_humans_ok=True,
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
)
_builtin(
    "anthropic",
    "anthropic",
    "toolu_{r:24:b}",
    **_CLAUDE,
    consecutive_humans_ok=True,
    system_anywhere=True,
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
)
_builtin(
    "bedrock",
    "bedrock",
    "tooluse_{r:22:b}",
    **_CLAUDE,
    max_id_length=64,
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
)
_builtin(
    "gemini",
    "gemini",
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    **_GEMINI,
    sources=(
        "https://ai.google.dev/gemini-api/docs/function-calling#multimodal",
        "https://ai.google.dev/gemini-api/docs/thought-signatures",
        "https://ai.google.dev/gemini-api/docs/function-calling",
    ),
)
_builtin(
    "vertex",
    "gemini",
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    ids_on_wire=False,
    **_GEMINI,
    sources=(
        "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures",
        "pydantic/pydantic-ai#5081",
        "vercel/ai#15664",
    ),
)
_builtin(
    "mistral",
    "openai",
    "{r:9:x}",
    id_pattern=r"[a-zA-Z0-9]{9}",
    max_id_length=9,
    needs_ai_between_tool_and_human=True,
    sources=(
        "anomalyco/opencode#1680",
        "langchain-ai/langchain#24668",
        "avante-corp/avante.nvim#2562",
        "BerriAI/litellm#30835",
    ),
)
_builtin(
    "deepseek",
    "openai",
    "call_{r:2:d}_{r:24:x}",
    reasoning=ReasoningPolicy.REASONING_CONTENT_REQUIRED,
    reasoning_scope=ReasoningScope.TOOL_CALL_TURNS,
    system_anywhere=True,
    user_media=frozenset(),
    url_media=frozenset(),
    sources=(
        "https://api-docs.deepseek.com/api/create-chat-completion",
        "https://api-docs.deepseek.com/guides/thinking_mode",
        "continuedev/continue#9913",
    ),
)
_builtin(
    "kimi",
    "openai",
    "functions.{f}:{r:6:d}",
    reasoning=ReasoningPolicy.REASONING_CONTENT_REQUIRED,
    sources=("sgl-project/sglang#9606", "labring/FastGPT#6357"),
)
_builtin(
    "ollama",
    "openai",
    "call_{r:8:x}",
    reasoning=ReasoningPolicy.REPLAY,
    sources=("ollama/ollama-python#667", "ollama/ollama#7510"),
)
_builtin(
    "vllm",
    "openai",
    "chatcmpl-tool-{r:32:h}",
    reasoning=ReasoningPolicy.REPLAY,
    sources=("vllm-project/vllm#22966", "vllm-project/vllm#27752"),
)
_builtin(
    "groq",
    "openai",
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    sources=("tashfeenahmed/freellmapi#1070", "janhq/jan#8136"),
)
