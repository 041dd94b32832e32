"""Handler calls for one summarization run: the handler type, and the books kept on it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from cast import BodyPair, Message, utf8_len
from csum.errors import SummarizationError
from csum.prompt import messages_to_prompt

__all__ = ["HandlerCalls", "SummarizeHandler"]

SummarizeHandler = Callable[[str], Awaitable[str]]
"""Takes the prompt text, returns the summary text."""


@dataclass
class HandlerCalls:
    """Calls the handler for one summarization run and keeps its books.

    ``limiter`` bounds the calls in flight. A handler exception or a non-``str`` result
    becomes a :class:`SummarizationError` whose ``__cause__`` is the handler's exception.
    """

    handler: SummarizeHandler
    limiter: anyio.CapacityLimiter | None = None
    calls: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    on_call: Callable[[int, int], None] | None = field(default=None, repr=False)
    created: list[BodyPair] = field(default_factory=list, repr=False)
    """The summary pairs made in this run (their ids are made unique at the end)."""

    def adopt(self, pair: BodyPair) -> BodyPair:
        """Record a summary pair made in this run."""
        self.created.append(pair)
        return pair

    async def summarize(
        self,
        human_messages: Sequence[Message],
        ai_messages: Sequence[Message],
        *,
        phase: str,
        section: int,
    ) -> str:
        prompt = messages_to_prompt(human_messages, ai_messages)
        self.calls += 1
        self.input_bytes += utf8_len(prompt)
        try:
            if self.limiter is None:
                result = await self.handler(prompt)
            else:
                async with self.limiter:
                    # The limiter may hand its slot over just as the caller is
                    # cancelled: do not start a handler call then.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    result = await self.handler(prompt)
        except Exception as exc:
            raise SummarizationError(
                f"the summarize handler raised {type(exc).__name__}: {exc}",
                section=section,
                phase=phase,
            ) from exc
        if not isinstance(result, str):
            raise SummarizationError(
                f"the summarize handler returned {type(result).__name__}, expected str",
                section=section,
                phase=phase,
            )
        self.output_bytes += utf8_len(result)
        if self.on_call is not None:
            self.on_call(self.calls, self.input_bytes)
        return result
