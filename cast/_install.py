"""The install line an error or a doc gives for an optional extra: the package form and
the form that works from a checkout of the repository."""

from __future__ import annotations

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """``pip install 'chaincast[extra]'`` and its checkout form ``pip install '.[extra]'``."""
    return f"pip install 'chaincast[{extra}]' (from a checkout: pip install '.[{extra}]')"
