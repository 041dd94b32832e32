"""A summary request sent as a continuation of the conversation's cached prefix.

A provider caches the prefix of a request (Anthropic at its cache breakpoints, OpenAI
automatically from 1,024 tokens): tools, system prompt, messages. A compaction that
sends the evicted messages as a fresh prompt pays their full input price; sent as the
conversation the agent just sent (the same tools, system prompt and messages, encoded
by the same codec) followed by one instruction, the provider reads all of it but the
instruction from its cache, at a tenth of the price (Claude Code's and Codex's own
compaction work this way). :func:`anthropic_body` and :func:`openai_body` build such a
request; ``anthropic(..., continuation=True)`` and ``openai_compatible(...,
continuation=True)`` send it, with the handlers' retries, for a request that carries
its conversation (:attr:`csum.prompt.SummaryRequest.conversation`, which the Compactor
fills), and the fresh prompt for one that does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from cast import Message
from csum.prompt import SummaryRequest

__all__ = [
    "CONTINUATION_INSTRUCTION",
    "anthropic_body",
    "continuation_instruction",
    "openai_body",
]

CONTINUATION_INSTRUCTION: Final = (
    "Summarize the conversation above{scope}, for your own later use: what was asked, "
    "what was done and decided, what is still open. Keep every path, identifier, id, "
    "number, error and command you may need again, exactly as written. Answer with the "
    "summary as plain text; call no tool."
)
"""The instruction that follows the conversation (the only uncached part of the input);
``{scope}`` names the messages that stay in the chain."""
_FOCUS: Final = (
    "\nThe agent's next step needs this: keep everything that serves it in full, even "
    "at the cost of other detail.\n{focus}"
)


def continuation_instruction(request: SummaryRequest) -> str:
    """The instruction after ``request.conversation``: summarize what comes before its
    last ``request.kept`` messages (they stay in the chain), with the request's focus."""
    kept = request.kept
    scope = ""
    if kept == 1:
        scope = " but its last message, which stays in the conversation as it is"
    elif kept > 1:
        scope = f" but its last {kept} messages, which stay in the conversation as they are"
    text = CONTINUATION_INSTRUCTION.format(scope=scope)
    return text + _FOCUS.format(focus=request.focus) if request.focus else text


def anthropic_body(
    conversation: Sequence[Message],
    instruction: str = CONTINUATION_INSTRUCTION,
    *,
    tools: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A Messages API body: ``conversation`` encoded by :mod:`cast.codecs.anthropic`
    (``tools`` as the agent sent them: they lead the cached prefix), a cache breakpoint
    on its last block, then ``instruction`` as the last user text."""
    from cast.codecs.anthropic import encode

    body = encode(list(conversation))
    messages: list[dict[str, Any]] = body["messages"]
    instruction_block = {"type": "text", "text": instruction}
    if messages:
        last = messages[-1]
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if blocks:
            blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
        if last["role"] == "user":
            messages[-1] = {**last, "content": [*blocks, instruction_block]}
        else:
            messages[-1] = {**last, "content": blocks}
            messages.append({"role": "user", "content": [instruction_block]})
    else:
        messages.append({"role": "user", "content": [instruction_block]})
    if tools:
        body["tools"] = [dict(tool) for tool in tools]
    return body


def openai_body(
    conversation: Sequence[Message],
    instruction: str = CONTINUATION_INSTRUCTION,
    *,
    tools: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A Chat Completions body: ``conversation`` encoded by :mod:`cast.codecs.openai`
    (``tools`` as the agent sent them), then ``instruction`` as a last user message
    (OpenAI caches the common prefix by itself)."""
    from cast.codecs.openai import encode

    body = encode(list(conversation))
    body["messages"] = [*body["messages"], {"role": "user", "content": instruction}]
    if tools:
        body["tools"] = [dict(tool) for tool in tools]
    return body
