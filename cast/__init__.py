"""cast: parse LLM agent chains into an immutable, size-tracked AST; repair, port and
convert them.

>>> from cast import ChainAST, Message
>>> chain = [Message.system("be brief"), Message.human("hi"), Message.ai("hello")]
>>> ast = ChainAST.from_messages(chain)
>>> [len(section.body) for section in ast.sections], ast.size
([1], 15)
"""

from typing import Any as _Any

from cast._lint import Violation, lint
from cast._port import EncryptedCompactionError, LostCompactionWarning, open_with_human, port
from cast.ast import BodyPair, BodyPairType, ChainAST, Header, Section
from cast.constants import (
    DEFAULT_TOOL_CALL_ID_TEMPLATE,
    FAKE_GEMINI_SIGNATURE,
    FALLBACK_RESPONSE_CONTENT,
    SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME,
    TOOL_BRIDGE_TEXT,
)
from cast.errors import (
    AmbiguousFormatError,
    ChainError,
    CodecError,
    IdTemplateError,
    InputError,
    MessageFormatError,
    ParseRule,
    UnknownProviderError,
)
from cast.ids import CHARSETS, IdTemplate, TemplateLike
from cast.messages import (
    FIELD_PART_KINDS,
    AnyPart,
    BinaryPart,
    ImagePart,
    Message,
    Part,
    ProviderPart,
    Reasoning,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from cast.parse import ChainIssue, diagnose, parse_chain
from cast.providers import (
    PROVIDERS,
    ProviderProfile,
    ReasoningPolicy,
    ReasoningScope,
    get_provider,
    register_provider,
)
from cast.transforms import (
    contains_tool_call_reasoning,
    extract_reasoning_message,
    with_empty_reasoning,
)

__all__ = [
    "CHARSETS",
    "DEFAULT_TOOL_CALL_ID_TEMPLATE",
    "FAKE_GEMINI_SIGNATURE",
    "FALLBACK_RESPONSE_CONTENT",
    "FIELD_PART_KINDS",
    "PROVIDERS",
    "SUMMARIZATION_TOOL_ARGS",
    "SUMMARIZATION_TOOL_NAME",
    "TOOL_BRIDGE_TEXT",
    "AmbiguousFormatError",
    "AnyPart",
    "BinaryPart",
    "BodyPair",
    "BodyPairType",
    "ChainAST",
    "ChainError",
    "ChainIssue",
    "CodecError",
    "EncryptedCompactionError",
    "Header",
    "IdTemplate",
    "IdTemplateError",
    "ImagePart",
    "InputError",
    "LostCompactionWarning",
    "Message",
    "MessageFormatError",
    "ParseRule",
    "Part",
    "ProviderPart",
    "ProviderProfile",
    "Reasoning",
    "ReasoningPolicy",
    "ReasoningScope",
    "Role",
    "Section",
    "TemplateLike",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "UnknownProviderError",
    "Violation",
    "contains_tool_call_reasoning",
    "diagnose",
    "extract_reasoning_message",
    "get_provider",
    "lint",
    "open_with_human",
    "parse_chain",
    "port",
    "register_codec",
    "register_provider",
    "unregister_codec",
    "with_empty_reasoning",
]


def __getattr__(name: str) -> _Any:
    """``cast.codecs`` (and :func:`register_codec` from it) loads on first use, so
    ``import cast`` stays light."""
    if name in ("codecs", "register_codec", "unregister_codec"):
        import importlib

        codecs = importlib.import_module("cast.codecs")
        return codecs if name == "codecs" else getattr(codecs, name)
    raise AttributeError(f"module 'cast' has no attribute {name!r}")
