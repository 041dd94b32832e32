"""The unchecked fast path: frozen models and AST nodes built from values already valid.

Private to ``cast``; everything here trusts its caller (see :mod:`cast._trusted` for
why and for what other packages use instead). The generic model builders live in
:mod:`cast._trusted`, the others beside their classes (:mod:`cast.messages`,
:mod:`cast.ast`), so neither module imports this one (no import loop).
"""

from __future__ import annotations

from cast._trusted import new_trusted, with_field
from cast.ast import _trusted_chain as trusted_chain
from cast.ast import _trusted_header as trusted_header
from cast.ast import _trusted_pair as trusted_pair
from cast.ast import _trusted_section as trusted_section
from cast.messages import _trusted_message as trusted_message

__all__ = [
    "new_trusted",
    "trusted_chain",
    "trusted_header",
    "trusted_message",
    "trusted_pair",
    "trusted_section",
    "with_field",
]
