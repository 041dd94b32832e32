"""csum: keep an LLM agent's chain under a budget by summarizing its old parts through
an injected async handler.

:class:`Compactor` is what an agent loop calls before every model call: it keeps the
whole chain within a budget (bytes, tokens, or a share of a model's context window),
clearing old tool results first and summarizing what that cannot bring down, one
summary per compaction; the newest turn stays verbatim.

>>> from cast import Message, ToolCall
>>> from csum import Compactor
>>> async def summarize(prompt: str) -> str:
...     return "the agent listed the files; main.py holds the entry point"
>>> chain = [Message.system("You are a coding agent."), Message.human("Tidy the repo.")]
>>> for i in range(40):
...     call = ToolCall(id=f"call_{i}", name="ls")
...     chain += [Message.ai("", call), Message.tool(f"call_{i}", "ls", "x" * 300)]
>>> keeper = Compactor(summarize, budget=8000)
>>> out = keeper.compact_sync(chain)
>>> sum(m.size for m in out) <= 8000, out[0] == chain[0], out[-1] == chain[-1]
(True, True, True)

:class:`Summarizer` is the reference algorithm for one pass over a stored chain: one
summary per section, concurrent, the last section rotated.

>>> import anyio
>>> from csum import Summarizer
>>> async def handler(prompt: str) -> str:
...     return "the user greeted twice"
>>> chain = [Message.human("hi"), Message.ai("hello"), Message.human("hi again"), Message.ai("hey")]
>>> out = anyio.run(Summarizer().summarize_chain, handler, chain)
>>> out[1].text
'**summarized content:**\\nthe user greeted twice'
"""

from types import ModuleType as _ModuleType

from csum.archive import (
    RECALL_TOOL_NAME,
    ArchiveHit,
    HistoryArchive,
    RecallTool,
    recall_tool_definition,
)
from csum.cache import SummaryCache
from csum.compaction import CompactionResult
from csum.compactor import Compactor
from csum.config import (
    LONG_MEMORY,
    LOW_COST,
    SUMMARY_ONLY,
    Budget,
    Clearing,
    Preset,
    RetryPolicy,
    Robustness,
    Stores,
    SummarizerConfig,
)
from csum.errors import CsumError, HandlerError, StoreError, SummarizationError
from csum.events import CompactionEvent, CompactionReason, otel_listener
from csum.plan import EARLIER_CONVERSATION_TEXT, SUMMARIZED_CONTENT_PREFIX, is_summarized
from csum.prompt import messages_to_prompt
from csum.request import (
    HandlerLedger,
    RobustHandler,
    SummarizeHandler,
    is_transient,
    split_request,
)
from csum.store_events import StoreEvent, StoreEventKind
from csum.summarizer import Summarizer, SummaryResult
from csum.tokens import (
    MODEL_CONTEXT_WINDOWS,
    EstimatedTokens,
    TiktokenCounter,
    TokenCounter,
    context_window,
)

__all__ = [
    "EARLIER_CONVERSATION_TEXT",
    "LONG_MEMORY",
    "LOW_COST",
    "MODEL_CONTEXT_WINDOWS",
    "RECALL_TOOL_NAME",
    "SUMMARIZED_CONTENT_PREFIX",
    "SUMMARY_ONLY",
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
    "Preset",
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
    "split_request",
]


def __getattr__(name: str) -> _ModuleType:
    """``csum.handlers`` loads on first use, so ``import csum`` stays light."""
    if name == "handlers":
        import importlib

        return importlib.import_module("csum.handlers")
    raise AttributeError(f"module 'csum' has no attribute {name!r}")
