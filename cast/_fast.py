"""The unchecked fast path, private to ``cast``: frozen models and AST nodes built from values
already valid (builders live beside their classes; see :mod:`cast.messages`)."""

from __future__ import annotations

from cast.ast import _trusted_chain as trusted_chain
from cast.ast import _trusted_header as trusted_header
from cast.ast import _trusted_pair as trusted_pair
from cast.ast import _trusted_section as trusted_section
from cast.messages import _new_trusted as new_trusted
from cast.messages import _trusted_message as trusted_message
from cast.messages import _with_field as with_field

__all__ = [
    "new_trusted",
    "trusted_chain",
    "trusted_header",
    "trusted_message",
    "trusted_pair",
    "trusted_section",
    "with_field",
]
