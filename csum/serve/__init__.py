"""``csum serve``: a gateway that speaks the providers' HTTP APIs and keeps every
conversation within its budget (docs/serve.md). Needs the ``serve`` extra
(``pip install 'chaincast[serve]'``); this package imports without it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from csum.serve.config import ServeConfig

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["INSTALL_HINT", "ServeConfig", "create_app"]

INSTALL_HINT = (
    "csum serve needs the serve extra: pip install 'chaincast[serve]' "
    "(from a checkout: pip install '.[serve]')"
)
"""What to run when the ``serve`` extra is missing."""


def create_app(config: ServeConfig, **options: Any) -> Starlette:
    """The gateway's ASGI app (see :func:`csum.serve.app.create_app`)."""
    try:
        from csum.serve.app import create_app as build
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from exc
    return build(config, **options)
