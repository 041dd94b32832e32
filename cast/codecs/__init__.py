"""Provider codecs: request payloads (dicts, as sent over the wire) ↔ chaincast messages.

Each codec module has ``decode(payload) -> list[Message]`` and ``encode(messages) ->
payload``, one registration each (:func:`register_codec`); docs/codecs.md has the table of
codecs, their payloads and every normalization. Malformed payloads raise
:class:`~cast.errors.CodecError` with the path of the bad field; payloads are never modified.
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
register_codec(bedrock, name="bedrock", encode_stream=bedrock._BLOCKS.stream, builtin=True)
register_codec(claude_code, name="claude_code", builtin=True)
register_codec(gemini, name="gemini", encode_stream=gemini._BLOCKS.stream, builtin=True)
register_codec(langchaingo, name="langchaingo", builtin=True)
register_codec(native, name=NATIVE, builtin=True)
register_codec(anthropic, name="anthropic", encode_stream=anthropic._BLOCKS.stream, builtin=True)
register_codec(openai, name="openai", encode_stream=openai._encode_stream, builtin=True)
register_codec(openai_agents, name="openai_agents", builtin=True)  # by name only
# Agents' session files (docs/handoff.md), by name only: cast handoff tells them apart.
register_codec(claude_code_session, name="claude_code_session", builtin=True)
register_codec(codex_rollout, name="codex_rollout", builtin=True)

CODECS: tuple[str, ...] = tuple(name for name in codec_names() if name != NATIVE)
"""The built-in provider codecs' names; :func:`get_codec` also takes :data:`NATIVE`
and users' codecs (:func:`codec_names` lists every registered one)."""
