"""The unchecked fast path, private to ``cast``: frozen models and AST nodes built from values
already valid (builders live beside their classes: :mod:`cast.ast`, :mod:`cast.messages`)."""

from __future__ import annotations

from cast.ast import trusted_chain, trusted_header, trusted_pair, trusted_section
from cast.messages import trusted_message, with_field

__all__ = [
    "trusted_chain",
    "trusted_header",
    "trusted_message",
    "trusted_pair",
    "trusted_section",
    "with_field",
]
