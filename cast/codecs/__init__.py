"""Provider codecs: request payloads (dicts, as sent over the wire) ↔ chaincast messages.

Each codec module exposes ``decode(payload) -> list[Message]`` and
``encode(messages) -> payload``; ``encode(decode(x)) == x`` for payloads in the
provider's canonical shape (see ``docs/codecs.md``). Malformed payloads raise
:class:`~cast.errors.CodecError` with the path of the bad field. Payloads are never
modified.

=======================  ======================================================
name                     payload
=======================  ======================================================
``openai``               Chat Completions ``{"messages": [...]}``
``anthropic``            Messages API ``{"system": ..., "messages": [...]}``
``gemini``               ``generateContent`` ``{"systemInstruction": ..., "contents": [...]}``
``langchaingo``          Go ``[]llms.MessageContent`` JSON (PentAGI's stored chains)
``claude_code``          Claude Code session log entries
``claude_code_session``  a Claude Code session file's lines (what ``claude --resume`` reads)
``codex_rollout``        a Codex CLI rollout's lines (what ``codex resume`` reads)
``bedrock``              Bedrock Converse ``{"system": [...], "messages": [...]}``
``openai_responses``     Responses API ``{"instructions": ..., "input": [...]}``
``pydantic_ai``          pydantic-ai ``ModelMessagesTypeAdapter`` JSON (or ``ModelMessage`` objects)
``langchain``            LangChain ``messages_to_dict`` JSON (or ``BaseMessage`` objects)
``openai_agents``        OpenAI Agents SDK input items (a bare Responses item list)
``chaincast``            chaincast's own JSON form of ``Message``
=======================  ======================================================

Every codec, built-in or a user's, is one registration (name, detect, decode, encode,
and for some an item-by-item ``encode_stream``) in :mod:`cast.codecs._registry`: see
:func:`register_codec` and docs/codecs.md.
"""

from __future__ import annotations

from cast.codecs import (
    anthropic,
    bedrock,
    claude_code,
    claude_code_session,
    codex_rollout,
    gemini,
    langchain,
    langchaingo,
    native,
    openai,
    openai_agents,
    openai_responses,
    pydantic_ai,
)
from cast.codecs._common import EVIDENCE, FITS
from cast.codecs._registry import (
    AmbiguousFormatError,
    Codec,
    CodecDefinition,
    MessagesTest,
    PayloadTest,
    StreamEncoder,
    codec_names,
    detect_format,
    get_codec,
    register_codec,
    stream_encoder,
    unregister_codec,
)
from cast.codecs._streaming import PayloadStream

__all__ = [
    "CODECS",
    "EVIDENCE",
    "FITS",
    "NATIVE",
    "AmbiguousFormatError",
    "Codec",
    "CodecDefinition",
    "MessagesTest",
    "PayloadStream",
    "PayloadTest",
    "StreamEncoder",
    "codec_names",
    "detect_format",
    "get_codec",
    "register_codec",
    "stream_encoder",
    "unregister_codec",
]

NATIVE = "chaincast"
"""Name of chaincast's own JSON form (:mod:`cast.codecs.native`)."""

# The built-in codecs. Each module's ``detect`` / ``detect_messages`` scores the
# evidence of its own format (see cast.codecs._registry); this order only breaks ties
# between codecs that read a payload the same way.
register_codec(pydantic_ai, name="pydantic_ai", builtin=True)
register_codec(langchain, name="langchain", builtin=True)
register_codec(openai_responses, name="openai_responses", builtin=True)
register_codec(bedrock, name="bedrock", encode_stream=bedrock._encode_stream, builtin=True)
register_codec(claude_code, name="claude_code", builtin=True)
register_codec(gemini, name="gemini", encode_stream=gemini._encode_stream, builtin=True)
register_codec(langchaingo, name="langchaingo", builtin=True)
register_codec(native, name=NATIVE, builtin=True)
register_codec(anthropic, name="anthropic", encode_stream=anthropic._encode_stream, builtin=True)
register_codec(openai, name="openai", encode_stream=openai._encode_stream, builtin=True)
register_codec(openai_agents, name="openai_agents", builtin=True)  # by name only
# Agents' session files (docs/handoff.md), by name only: cast handoff tells them apart.
register_codec(claude_code_session, name="claude_code_session", builtin=True)
register_codec(codex_rollout, name="codex_rollout", builtin=True)

CODECS: tuple[str, ...] = tuple(name for name in codec_names() if name != NATIVE)
"""The built-in provider codecs' names; :func:`get_codec` also takes :data:`NATIVE`
and users' codecs (:func:`codec_names` lists every registered one)."""
