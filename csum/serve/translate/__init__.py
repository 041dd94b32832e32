"""Translation between the providers' APIs, for a client whose API the upstream does not
speak (``--upstream-api``; same-provider traffic is never translated).

One module per direction, ``SOURCE_to_TARGET``, where ``anthropic`` is Anthropic
Messages, ``chat`` OpenAI Chat Completions and ``responses`` OpenAI Responses: each
turns requests and answers of its source API into its target's (a translation uses two
directions: the request one way, the answer back).

- :mod:`~csum.serve.translate.anthropic_to_chat`, :mod:`~csum.serve.translate.chat_to_anthropic`
- :mod:`~csum.serve.translate.responses_to_chat`, :mod:`~csum.serve.translate.chat_to_responses`
- :mod:`~csum.serve.translate.responses_to_anthropic`,
  :mod:`~csum.serve.translate.anthropic_to_responses`

Shared by them: :mod:`~csum.serve.translate.responses_output` (the Response object and
its event sequence), :mod:`~csum.serve.translate.responses_tools` (Responses tools as
Chat functions and back). Around them: :mod:`~csum.serve.translate.pairs` (which
directions serve which client and upstream), :mod:`~csum.serve.translate.headers` (the
key header moved), :mod:`~csum.serve.translate.token_count` (``count_tokens`` estimated),
:mod:`~csum.serve.translate.responses_as_sent` (a compacted Responses history written as
the client sent it).
"""

from __future__ import annotations

__all__ = ["TranslationError"]


class TranslationError(ValueError):
    """A request the translation cannot carry (the message names the field)."""
