"""Names and texts that chains produced by chaincast carry on the wire."""

from __future__ import annotations

__all__ = [
    "DEFAULT_TOOL_CALL_ID_TEMPLATE",
    "FAKE_GEMINI_SIGNATURE",
    "FALLBACK_RESPONSE_CONTENT",
    "SUMMARIZATION_TOOL_ARGS",
    "SUMMARIZATION_TOOL_NAME",
    "TOOL_BRIDGE_TEXT",
]

SUMMARIZATION_TOOL_NAME = "execute_task_and_return_summary"
"""Name of the fake tool call whose result holds a summary (a SUMMARIZATION pair)."""

SUMMARIZATION_TOOL_ARGS = (
    '{"question": "delegate and execute the task, then return the summary of the result"}'
)
"""Arguments of the fake summarization tool call."""

FALLBACK_RESPONSE_CONTENT = "the call was not handled, please try again"
"""Content of the result that repair adds for a tool call left without one."""

DEFAULT_TOOL_CALL_ID_TEMPLATE = "call_{r:24:x}"
"""OpenAI-style ids: ``call_`` and 24 alphanumerics."""

FAKE_GEMINI_SIGNATURE = "skip_thought_signature_validator"
"""Placeholder thought signature that Gemini and Vertex accept on replayed tool calls
(https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ)."""

TOOL_BRIDGE_TEXT = "Tool results received."
"""Text of the AI message put between a tool result and the next human message for
targets that reject a human message right after a tool message (Mistral): by port, and
by the Compactor after pinned calls that end a summary's turn."""
