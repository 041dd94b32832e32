"""Helpers for chaincast's sibling packages (``csum``, the benchmarks), not for users:
``utf8_len(text)``, the UTF-8 byte length of ``text``, the unit of every size."""

from __future__ import annotations

from cast.messages import utf8_len

__all__ = ["utf8_len"]
