"""Helpers for chaincast's sibling packages (``csum``, the benchmarks), not for users.

They are not part of ``cast``'s top level, which holds the user-facing API only, and
may change between releases with the packages that use them.

``utf8_len(text)``: the UTF-8 byte length of ``text`` (what a provider receives for
it), the unit of every size in chaincast.
"""

from __future__ import annotations

from cast.messages import utf8_len

__all__ = ["utf8_len"]
