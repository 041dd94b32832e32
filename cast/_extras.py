"""The install line for an optional extra: the one place its wording lives, a leaf that
the codecs needing one (pydantic-ai, LangChain, the Agents SDK) and the command lines
(:mod:`cast.chainio`, which re-exports it for csum) both import."""

from __future__ import annotations

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """The install line for an optional extra, in the package form and the form that
    works from a checkout: ``pip install 'chaincast[extra]'`` and
    ``pip install '.[extra]'``."""
    return f"pip install 'chaincast[{extra}]' (from a checkout: pip install '.[{extra}]')"
