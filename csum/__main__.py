"""``python -m csum``: the csum command line."""

from csum.cli import entrypoint

entrypoint()
