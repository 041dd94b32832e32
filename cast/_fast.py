"""The unchecked fast path: frozen models and AST nodes built from values already valid.

Private to ``cast``; everything here trusts its caller (other packages use the checked
public builders: ``Message.from_parts``, ``part.evolve(...)``, ``Section.build``). The
builders live beside their classes (:mod:`cast.messages`, :mod:`cast.ast`), so neither
module imports this one (no import loop).
"""

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
