"""The ``recall`` tool: lets an agent fetch, by the ``[archived: REF]`` reference of a
summary or by a text query, what a compaction summarized away (cut to a byte limit)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from cast import Message, TextPart, ToolCall, ToolResult
from cast.internals import clip_utf8, utf8_len
from csum.archive import RECALL_TOOL_NAME, HistoryArchive, message_reference

__all__ = ["RECALL_TOOL_DESCRIPTION", "RecallTool", "recall_tool_definition"]

RECALL_TOOL_DESCRIPTION: Final = (
    "Fetch conversation history that was summarized away. Summaries end with "
    "'[archived: REFERENCE]': pass that reference to get the original messages back, "
    "or pass a query (an identifier, file path, error message) to get the archived "
    "lines containing it."
)
_PROPERTIES: Final = {
    "reference": "A reference from an '[archived: ...]' line (16 hex digits).",
    "query": "Text to find in the archived messages (case-insensitive substring).",
}

Provider = Literal["openai", "anthropic", "gemini"]


def recall_tool_definition(provider: Provider) -> dict[str, Any]:
    """The tool's definition as the provider's API takes it in its tool list.

    ``openai``: a Chat Completions function tool; ``anthropic``: a Messages API tool
    (``input_schema``); ``gemini``: a Tool holding one ``functionDeclarations`` entry
    (OpenAPI schema types in upper case).
    """
    if provider not in ("openai", "anthropic", "gemini"):
        raise ValueError(f"unknown provider {provider!r}: expected openai, anthropic or gemini")
    gemini = provider == "gemini"
    kind = "STRING" if gemini else "string"
    properties = {name: {"type": kind, "description": text} for name, text in _PROPERTIES.items()}
    schema: dict[str, Any] = {"type": "OBJECT" if gemini else "object", "properties": properties}
    tool = {"name": RECALL_TOOL_NAME, "description": RECALL_TOOL_DESCRIPTION}
    if gemini:
        return {"functionDeclarations": [{**tool, "parameters": schema}]}
    schema["additionalProperties"] = False
    if provider == "openai":
        return {"type": "function", "function": {**tool, "parameters": schema}}
    return {**tool, "input_schema": schema}


def _render(reference: str, message: Message) -> str:
    lines = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(f"{message.role}: {part.text}")
        elif isinstance(part, ToolCall):
            lines.append(f"{message.role}: call {part.name}({part.arguments}) id={part.id}")
        elif isinstance(part, ToolResult):
            head = f"{message.role}: result of {part.name} ({part.tool_call_id}): "
            lines.append(head + part.content)
    return f"[{reference}] " + "\n".join(lines)


class RecallTool:
    """Answers calls of the ``recall`` tool from ``archive``, at most ``max_bytes`` each.

    Call it with the tool call's arguments (the JSON text or the parsed object); it
    returns the tool result text, never longer than ``max_bytes`` UTF-8 bytes. Bad
    arguments (not JSON, wrong types, a query holding NUL or a lone surrogate or longer
    than :data:`csum.archive.MAX_QUERY_CHARS`, a reference that is not 16 hex digits)
    give a result starting ``error:`` saying what was wrong, without echoing it, so the
    model can retry; store failures propagate.
    """

    name = RECALL_TOOL_NAME

    def __init__(
        self, archive: HistoryArchive, *, max_bytes: int = 16384, max_hits: int = 20
    ) -> None:
        if max_bytes < 256:
            raise ValueError(f"max_bytes must be at least 256, not {max_bytes}")
        self.archive = archive
        self.max_bytes = max_bytes
        self.max_hits = max_hits

    async def __call__(self, arguments: str | Mapping[str, Any]) -> str:
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError as exc:
                return f"error: the arguments are not JSON ({exc.msg} at {exc.pos})"
        if not isinstance(arguments, Mapping):
            return "error: the arguments must be an object with 'reference' or 'query'"
        reference, query = arguments.get("reference"), arguments.get("query")
        for name, value in (("reference", reference), ("query", query)):
            if value is not None and not isinstance(value, str):
                return f"error: '{name}' must be a string"
        try:
            if reference and reference.strip():
                reference = reference.strip()
                messages = await self.archive.recall(reference)
                if not messages:
                    return f"nothing archived under {reference!r}"
                text = "\n\n".join(_render(message_reference(m), m) for m in messages)
            elif query and query.strip():
                hits = await self.archive.search(query, limit=self.max_hits)
                lines = [f"[{hit.reference}] {line}" for hit in hits for line in hit.lines]
                text = "\n".join(lines) if hits else f"no archived message contains {query!r}"
            else:
                return (
                    "error: give 'reference' (from an [archived: ...] line) or a non-empty 'query'"
                )
        except ValueError as exc:
            text = f"error: {exc}"
        size = utf8_len(text)
        if size <= self.max_bytes:
            return text
        note = f"\n[... cut: {size - self.max_bytes} more bytes; ask with a narrower query]"
        return clip_utf8(text, self.max_bytes - utf8_len(note)) + note
