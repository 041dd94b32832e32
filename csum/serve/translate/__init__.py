"""Translation between the providers' APIs (``--upstream-api``): one module per direction,
``SOURCE_to_TARGET``, the request one way, the answer back; :mod:`~csum.serve.translate.pairs`
says which serve which client and upstream."""

from __future__ import annotations

__all__ = ["TranslationError"]


class TranslationError(ValueError):
    """A request the translation cannot carry (the message names the field)."""
