"""Where the real recorded data is: the shared corpus beside the repository.

The repository holds only what the project wrote; agent sessions, provider payloads and
the fidelity items come from other projects and live in ``shared/corpus`` (their sources
in its READMEs), read from there, never committed. ``$CHAINCAST_CORPUS`` names the
folder; otherwise it is the nearest ``shared/corpus`` beside the repository or above it
(a git worktree may sit a level or two deeper than the main checkout). Tests skip and
benchmarks stop with :func:`require` when a part they need is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "CLAUDE_CODE",
    "CORPUS",
    "FIDELITY",
    "PAYLOADS",
    "TAUBENCH",
    "find_corpus",
    "missing",
    "require",
]


def find_corpus() -> Path:
    """``$CHAINCAST_CORPUS``, else the nearest ``shared/corpus`` above the repository,
    else where it would be beside the repository (it may be missing)."""
    override = os.environ.get("CHAINCAST_CORPUS")
    if override:
        return Path(override)
    repository = Path(__file__).resolve().parents[1]
    for parent in repository.parents:
        candidate = parent / "shared" / "corpus"
        if candidate.is_dir():
            return candidate
    return repository.parent / "shared" / "corpus"


CORPUS = find_corpus()
"""The shared corpus of real recorded data (it may be missing)."""
TAUBENCH = CORPUS / "openai_taubench"
"""tau-bench airline chains in OpenAI's chat format."""
CLAUDE_CODE = CORPUS / "anthropic_claudecode"
"""Claude Code session logs, merged into Messages API chains."""
PAYLOADS = CORPUS / "payloads" / "project-fixtures"
"""Real provider payloads, one folder per codec (sources in its ``SOURCES.md``)."""
FIDELITY = CORPUS / "fidelity"
"""The labelled fidelity items, parts A to E (sources in its ``SOURCES.md``)."""


def missing(path: Path) -> str:
    """Why data at ``path`` cannot be read: the sentence a skip or a stop gives."""
    return (
        f"real recorded data not found: {path} (the shared corpus; set $CHAINCAST_CORPUS "
        "or put shared/corpus beside the repository)"
    )


def require(path: Path) -> Path:
    """``path`` when it exists; else stop (``SystemExit``) saying what is missing."""
    if not path.exists():
        raise SystemExit(missing(path))
    return path
