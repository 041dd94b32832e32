"""The unchecked fast path: frozen models and AST nodes built from values already valid.

Private to ``cast``. The parser, the transforms and the codecs rebuild thousands of
messages and nodes from parts of validated ones; checking them again would cost more
than the work itself. Everything here trusts its caller: nothing is validated, sizes
are taken as given. Other packages use the checked public builders instead
(:meth:`Message.from_parts`, ``part.evolve(...)``, :meth:`Section.build` and friends),
which check what they are given and then come here.

The generic model builders live in :mod:`cast._trusted`, the others beside their
classes (:mod:`cast.messages`, :mod:`cast.ast`), so neither module imports this one
(no import loop).
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
