"""``csum serve``: a gateway that speaks the providers' HTTP APIs and keeps every
conversation within its budget (docs/serve.md).

Point an agent's base URL at it (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``): requests
to OpenAI Chat Completions, OpenAI Responses and Anthropic Messages have their history
compacted by the :class:`~csum.compactor.Compactor` when it is over the budget (within
it, they are forwarded byte for byte); everything else is forwarded untouched. With
``upstream_api="openai"``, Anthropic Messages clients are served by an
OpenAI-compatible upstream (:mod:`csum.serve.translate`).

The app needs the ``serve`` extra (Starlette, uvicorn, httpx, prometheus-client):
``pip install 'chaincast[serve]'``. This package imports without it; :func:`create_app`
raises ``ImportError`` saying how to install it.
"""

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
