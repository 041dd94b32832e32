"""The policy interface, the metered summarize handler, and the library-backed policies.

A policy takes the chain an agent loop is about to send and returns the chain it sends
instead, with what that step cost (:class:`PolicyStep`). Policies are stateless: the
harness keeps the returned chain as the loop's history. Baselines written from their
sources' descriptions live in :mod:`benchmarks.policies.baselines`.
"""

from __future__ import annotations

import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cast import Message, Role, ToolCall
from cast.messages import utf8_len
from csum import HistoryArchive, Stores, Summarizer, SummarizerConfig
from csum.handlers._sdk import continuation_instruction
from csum.prompt import SummaryRequest
from csum.request import RequestHandler, request_handler

__all__ = [
    "CSUM_REFERENCE_BUDGET",
    "SUMMARY_MAX_BYTES",
    "CsumPolicy",
    "LangChainTrim",
    "LatencyModel",
    "MeteredHandler",
    "NoPolicy",
    "Policy",
    "PolicyStep",
    "WorkloadSessions",
    "csum_config",
    "langchain_available",
    "make_handler",
    "truncate_handler",
]

SUMMARY_MAX_BYTES = 4096
"""Summary size every handler is held to (the extractive handler's default)."""

CSUM_REFERENCE_BUDGET = 131072
"""The window (bytes) the ``SummarizerConfig`` defaults are taken to be sized for; other
budgets scale the config's byte limits by ``budget / CSUM_REFERENCE_BUDGET``."""


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """Seconds an LLM would take for one summarize call (tokens ~ bytes / 4).

    ``first_token_s`` + prompt tokens / ``prefill_tps`` + summary tokens / ``decode_tps``.
    """

    first_token_s: float = 0.6
    prefill_tps: float = 4000.0
    decode_tps: float = 60.0

    def seconds(self, input_bytes: int, output_bytes: int) -> float:
        return (
            self.first_token_s
            + input_bytes / 4 / self.prefill_tps
            + output_bytes / 4 / self.decode_tps
        )


@dataclass
class MeteredHandler(RequestHandler):
    """Wraps a request handler: counts calls and bytes, models latency, times it.

    A request that carries its conversation (a Compactor's one summary prompt) is what
    a continuation handler sends as the conversation then its instruction: such calls
    are counted in ``continued`` and the instruction's bytes in ``instruction_bytes``
    (:func:`csum.handlers._sdk.continuation_instruction`), so the cost
    benchmark prices what the model handlers send.
    Each call sleeps ``time_scale`` times its modelled latency (0: no sleep, the quick
    mode). ``modelled_s`` runs a virtual clock per step: a call starts when the step's
    last finished call ended (concurrent calls start together), so it follows the
    handler's concurrency without waiting for real.
    """

    inner: RequestHandler
    time_scale: float = 0.0
    latency: LatencyModel = field(default_factory=LatencyModel)
    calls: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    continued: int = 0
    """Calls whose request carried its conversation."""
    instruction_bytes: int = 0
    """The continuation instructions of those calls, in UTF-8 bytes."""
    busy_s: float = 0.0
    """Real time with at least one call in flight."""
    modelled_s: float = 0.0
    _in_flight: int = 0
    _busy_since: float = 0.0
    _vnow: float = 0.0

    def reset(self) -> None:
        """Start a new step: zero every counter."""
        self.calls = self.input_bytes = self.output_bytes = 0
        self.continued = self.instruction_bytes = 0
        self.busy_s = self.modelled_s = self._vnow = 0.0

    async def __call__(self, request: SummaryRequest, /) -> str:
        if self._in_flight == 0:
            self._busy_since = time.perf_counter()
        self._in_flight += 1
        start = self._vnow
        try:
            summary = await self.inner(request)
            in_bytes, out_bytes = utf8_len(request.prompt), utf8_len(summary)
            seconds = self.latency.seconds(in_bytes, out_bytes)
            await anyio.sleep(seconds * self.time_scale)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self.busy_s += time.perf_counter() - self._busy_since
        self.calls += 1
        if request.conversation:
            self.continued += 1
            self.instruction_bytes += utf8_len(continuation_instruction(request))
        self.input_bytes += in_bytes
        self.output_bytes += out_bytes
        self._vnow = max(self._vnow, start + seconds)
        self.modelled_s = self._vnow
        return summary


def truncate_handler(max_bytes: int = SUMMARY_MAX_BYTES) -> RequestHandler:
    """The naive handler: the messages' text, cut after ``max_bytes`` UTF-8 bytes.

    The prompt's instructions are left out (they are not content); every entry summarized
    is rendered as ``role: text`` in order, and the result is cut.
    """

    async def summarize(request: SummaryRequest) -> str:
        await anyio.lowlevel.checkpoint()
        lines = [
            f"{e.role}: {e.name}({e.args})" if e.kind == "tool_call" else f"{e.role}: {e.content}"
            for e in request.summarized
        ]
        text = "\n".join(lines)
        return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")

    return request_handler(summarize, f"truncate({max_bytes})")


def make_handler(kind: str, max_bytes: int = SUMMARY_MAX_BYTES) -> RequestHandler:
    """``"extractive"`` (the library's offline handler) or ``"truncate"``."""
    if kind == "truncate":
        return truncate_handler(max_bytes)
    from csum.handlers import extractive

    return extractive(max_bytes)


@dataclass(frozen=True, slots=True)
class PolicyStep:
    """What one application of a policy cost."""

    changed: bool
    """Whether the policy sent something other than the chain it was given."""
    handler_calls: int = 0
    handler_input_bytes: int = 0
    handler_output_bytes: int = 0
    handler_busy_s: float = 0.0
    modelled_s: float = 0.0
    glue_s: float = 0.0
    """Time spent adapting data for a third-party library (not the policy's own cost)."""
    handler_continued: int = 0
    """Handler calls whose request carried its conversation (a continuation's)."""
    handler_instruction_bytes: int = 0
    """Their continuation instructions, in UTF-8 bytes."""


class Policy(ABC):
    """A context policy applied before every AI turn of an agent loop.

    The flags say what a policy promises by design; the quick mode asserts them.
    """

    name: str = "policy"
    description: str = ""
    guarantees_valid: bool = False
    """Every output parses strictly."""
    keeps_last_pair: bool = False
    """The newest body pair (or the new question) is always sent unchanged."""
    stays_in_budget: bool = False
    """Never sends more than the budget (given turns that can fit)."""

    def __init__(self, budget: int, handler: MeteredHandler | None = None) -> None:
        self.budget = budget
        self.handler = handler

    @abstractmethod
    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        """The chain to send instead of ``messages`` (never changed in place)."""

    def _step(self, changed: bool, glue_s: float = 0.0) -> PolicyStep:
        h = self.handler
        if h is None:
            return PolicyStep(changed, glue_s=glue_s)
        return PolicyStep(
            changed,
            h.calls,
            h.input_bytes,
            h.output_bytes,
            h.busy_s,
            h.modelled_s,
            glue_s,
            h.continued,
            h.instruction_bytes,
        )


class NoPolicy(Policy):
    """The chain grows unbounded: the cost ceiling."""

    name = "none"
    description = "send everything (cost ceiling)"
    guarantees_valid = True
    keeps_last_pair = True

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        return list(messages), self._step(False)


def csum_config(
    budget: int,
    *,
    use_qa: bool,
    summarize_human_in_qa: bool = False,
    summary_bytes: int = SUMMARY_MAX_BYTES,
) -> SummarizerConfig:
    """``SummarizerConfig`` defaults, byte limits scaled to ``budget`` (see
    :data:`CSUM_REFERENCE_BUDGET`); counts and percentages stay at their defaults.

    ``summary_bytes``: the handler's summary bound. Above :data:`SUMMARY_MAX_BYTES`, the
    QA limit leaves room for the folded section's larger summaries (its pair, and its
    question when ``summarize_human_in_qa``), so the chain stays as bounded as with 4 KB.
    """
    base = SummarizerConfig()
    factor = budget / CSUM_REFERENCE_BUDGET
    extra = max(0, summary_bytes - SUMMARY_MAX_BYTES) * (2 if summarize_human_in_qa else 1)
    return SummarizerConfig(
        use_qa=use_qa,
        summarize_human_in_qa=summarize_human_in_qa,
        last_section_bytes=max(1, round(base.last_section_bytes * factor)),
        max_body_pair_bytes=max(1, round(base.max_body_pair_bytes * factor)),
        max_qa_bytes=max(1, round(base.max_qa_bytes * factor) - extra),
    )


class WorkloadSessions:
    """A history archive (SQLite, in a temporary folder) with a session per workload,
    or none when ``reinsert_bytes`` is None; 0 archives without re-insertion."""

    def __init__(self, reinsert_bytes: int | None) -> None:
        self.archive: HistoryArchive | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._workload: int | None = None
        if reinsert_bytes is not None:
            self._folder = tempfile.TemporaryDirectory(prefix="csum-archive-")
            path = Path(self._folder.name) / "history.sqlite"
            self.archive = HistoryArchive(path, session="bench", reinsert_bytes=reinsert_bytes)

    def follow(self, messages: Sequence[Message]) -> None:
        """Open a session of its own when ``messages`` is a new workload."""
        if self.archive is not None and messages and id(messages[0]) != self._workload:
            self._workload = id(messages[0])
            self.archive.session = f"workload-{self._workload}"


class CsumPolicy(Policy):
    """``csum.Summarizer`` run before every turn (it is idempotent once within limits)."""

    guarantees_valid = True
    keeps_last_pair = True

    def __init__(
        self,
        budget: int,
        handler: MeteredHandler,
        *,
        use_qa: bool = False,
        summarize_human_in_qa: bool = False,
        reinsert_bytes: int | None = None,
        summary_bytes: int = SUMMARY_MAX_BYTES,
        name: str = "csum",
        description: str = "",
    ) -> None:
        super().__init__(budget, handler)
        self.config = csum_config(
            budget,
            use_qa=use_qa,
            summarize_human_in_qa=summarize_human_in_qa,
            summary_bytes=summary_bytes,
        )
        # With ``reinsert_bytes``, a SQLite history archive in a temporary folder, one
        # session per workload, re-inserting archived lines the newest question names.
        self.sessions = WorkloadSessions(reinsert_bytes)
        self.archive = self.sessions.archive
        self.summarizer = Summarizer(self.config, stores=Stores(archive=self.archive))
        if reinsert_bytes:
            self.keeps_last_pair = False  # re-insertion adds a recall pair to the newest turn
        self.name = name
        self.description = description
        # QA folds old sections, but it concatenates their questions unless told to
        # summarize them: only then is the whole chain bounded.
        self.stays_in_budget = use_qa and summarize_human_in_qa
        if summary_bytes > SUMMARY_MAX_BYTES:
            # The summarizer does not know the budget: a larger summary pair next to a
            # newest pair that nearly fills the window can tip it over (one Claude Code
            # turn does at 16 KiB), so this is measured, not promised.
            self.stays_in_budget = False

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        assert self.handler is not None
        self.handler.reset()
        self.sessions.follow(messages)
        result = await self.summarizer.summarize(self.handler, messages)
        return result.messages, self._step(result.changed)


# --- LangChain -----------------------------------------------------------------------


def langchain_available() -> bool:
    """Whether ``langchain-core`` (extra ``bench``) is installed."""
    try:
        import langchain_core.messages  # noqa: F401
    except ImportError:
        return False
    return True


def _to_langchain(messages: Sequence[Message]) -> list[Any]:
    import json

    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for i, message in enumerate(messages):
        key = str(i)
        if message.role is Role.SYSTEM:
            out.append(SystemMessage(content=message.text, id=key))
        elif message.role is Role.HUMAN:
            out.append(HumanMessage(content=message.text, id=key))
        elif message.role is Role.AI:
            calls = []
            for part in message.parts:
                if type(part) is ToolCall:
                    try:
                        args = json.loads(part.arguments)
                    except ValueError:
                        args = {}
                    if not isinstance(args, dict):
                        args = {"value": args}
                    calls.append({"name": part.name, "args": args, "id": part.id})
            out.append(AIMessage(content=message.text, tool_calls=calls, id=key))
        else:
            result = message.tool_results[0] if message.tool_results else None
            out.append(
                ToolMessage(
                    content="\n".join(r.content for r in message.tool_results),
                    tool_call_id=result.tool_call_id if result else "",
                    id=key,
                )
            )
    return out


class LangChainTrim(Policy):
    """``langchain_core.messages.trim_messages`` configured as its docstring advises for
    chat history: ``strategy="last"``, ``include_system=True``, ``start_on="human"``,
    ``end_on=("human", "tool")``, ``token_counter="approximate"`` (recommended on the
    hot path; ~4 characters per token), ``max_tokens = budget // 4``."""

    name = "trim_messages (langchain)"
    description = 'trim_messages(strategy="last", start_on="human", include_system=True)'

    def __init__(self, budget: int, handler: MeteredHandler | None = None) -> None:
        super().__init__(budget, handler)
        # Warm up: its first call imports lazily, which is not a step's cost.
        self._trim([Message.human("warm up")])

    def _trim(self, messages: Sequence[Message]) -> tuple[list[Message], float]:
        from langchain_core.messages import trim_messages

        started = time.perf_counter()
        converted = _to_langchain(messages)
        glue = time.perf_counter() - started
        trimmed = trim_messages(
            converted,
            max_tokens=self.budget // 4,
            token_counter="approximate",
            strategy="last",
            include_system=True,
            start_on="human",
            end_on=("human", "tool"),
            allow_partial=False,
        )
        started = time.perf_counter()
        out = [messages[int(str(m.id))] for m in trimmed]
        return out, glue + time.perf_counter() - started

    async def apply(self, messages: Sequence[Message]) -> tuple[list[Message], PolicyStep]:
        out, glue = self._trim(messages)
        return out, self._step(len(out) != len(messages), glue)
