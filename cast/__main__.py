"""``python -m cast``: the cast command line."""

from cast.cli import entrypoint

entrypoint()
