"""What the digest gates share: a gate records a hash per case of some output (the
offline handler's summaries, the clearing gists, lint and port's results) and checks a
later run against the record, so a change meant to move code shows it changed nothing.

Used by ``benchmarks.extractive_gate``, ``benchmarks.gist_gate`` and the tests' rule gate.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["compare", "record_or_check"]


def compare(found: dict[str, str], recorded: dict[str, str]) -> list[str]:
    """The cases whose hash differs from the recorded one, or that it lacks."""
    return [
        f"{name}: {'not recorded' if name not in recorded else 'differs'}"
        for name, value in found.items()
        if recorded.get(name) != value
    ]


def record_or_check(found: dict[str, str], digest: Path, *, write: bool) -> int:
    """Record ``found`` in ``digest`` (``write``) or print how it differs from the
    record; the exit status: 1 when a case differs."""
    if write:
        digest.write_text(json.dumps(found, indent=0, sort_keys=True) + "\n")
        print(f"{len(found)} cases recorded in {digest}")
        return 0
    differences = compare(found, json.loads(digest.read_text()))
    for line in differences:
        print(line)
    print(f"{len(found)} cases, {len(differences)} differ")
    return 1 if differences else 0
