"""Running a docs/examples script in a child interpreter, as a newcomer would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def run_example(name: str) -> str:
    """The output of ``python docs/examples/<name>`` run from the repository root (this
    checkout's packages first); fails with the script's output when it exits non-zero."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": ""}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
