"""csum: keep LLM agent chains under byte budgets by summarizing their old parts through
an injected async handler.

>>> import anyio
>>> from cast import Message
>>> from csum import Summarizer, SummarizerConfig
>>> async def handler(prompt: str) -> str:
...     return "the user greeted twice"
>>> chain = [Message.human("hi"), Message.ai("hello"), Message.human("hi again"), Message.ai("hey")]
>>> out = anyio.run(Summarizer().summarize_chain, handler, chain)
>>> out[1].text
'**summarized content:**\\nthe user greeted twice'
"""

from types import ModuleType as _ModuleType

from csum._calls import SummarizeHandler
from csum._pairs import SUMMARIZED_CONTENT_PREFIX, is_summarized
from csum._retry import RetryPolicy
from csum._robust import HandlerLedger, RobustHandler, is_transient, split_prompt
from csum.archive import ArchiveHit, HistoryArchive
from csum.budget import (
    MODEL_CONTEXT_WINDOWS,
    Budget,
    EstimatedTokens,
    TiktokenCounter,
    TokenCounter,
    context_window,
)
from csum.cache import SummaryCache
from csum.clearing import Clearing
from csum.compaction import CompactionResult
from csum.compactor import Compactor
from csum.config import SummarizerConfig
from csum.errors import (
    CsumError,
    HandlerError,
    PromptFormatError,
    StoreError,
    SummarizationError,
)
from csum.events import CompactionEvent, CompactionReason, otel_listener
from csum.plan import EARLIER_CONVERSATION_TEXT
from csum.prompt import messages_to_prompt
from csum.recall import RECALL_TOOL_NAME, RecallTool, recall_tool_definition
from csum.settings import Robustness, Stores
from csum.store_events import StoreEvent, StoreEventKind
from csum.summarizer import Summarizer, SummaryResult

__all__ = [
    "EARLIER_CONVERSATION_TEXT",
    "MODEL_CONTEXT_WINDOWS",
    "RECALL_TOOL_NAME",
    "SUMMARIZED_CONTENT_PREFIX",
    "ArchiveHit",
    "Budget",
    "Clearing",
    "CompactionEvent",
    "CompactionReason",
    "CompactionResult",
    "Compactor",
    "CsumError",
    "EstimatedTokens",
    "HandlerError",
    "HandlerLedger",
    "HistoryArchive",
    "PromptFormatError",
    "RecallTool",
    "RetryPolicy",
    "RobustHandler",
    "Robustness",
    "StoreError",
    "StoreEvent",
    "StoreEventKind",
    "Stores",
    "SummarizationError",
    "SummarizeHandler",
    "Summarizer",
    "SummarizerConfig",
    "SummaryCache",
    "SummaryResult",
    "TiktokenCounter",
    "TokenCounter",
    "context_window",
    "is_summarized",
    "is_transient",
    "messages_to_prompt",
    "otel_listener",
    "recall_tool_definition",
    "split_prompt",
]


def __getattr__(name: str) -> _ModuleType:
    """``csum.handlers`` loads on first use, so ``import csum`` stays light."""
    if name == "handlers":
        import importlib

        return importlib.import_module("csum.handlers")
    raise AttributeError(f"module 'csum' has no attribute {name!r}")
