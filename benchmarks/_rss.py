"""Run ``cast`` or ``csum`` in this interpreter and report its peak memory.

``python -m benchmarks._rss cast convert FILE --to gemini -o OUT`` runs the command,
then prints one JSON line to standard error: ``peak`` (peak resident set size, VmHWM, bytes),
``imports`` (resident set size once chaincast was imported) and ``seconds``.
"""

from __future__ import annotations

import json
import sys
import time


def _status(field: str) -> int:
    """A memory figure of /proc/self/status, in bytes. (``getrusage``'s ``ru_maxrss``
    would not do: Linux carries it over from the forked parent across ``exec``.)"""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> None:
    program, *argv = sys.argv[1:]
    if program == "cast":
        from cast.cli import main as run
    else:
        from csum.cli import main as run
    import csum.handlers  # noqa: F401  (the handlers load lazily; count them as imports)

    imports = _status("VmRSS")
    started = time.perf_counter()
    code = run(argv)
    seconds = time.perf_counter() - started
    peak = _status("VmHWM")
    print(
        json.dumps({"code": code, "peak": peak, "imports": imports, "seconds": seconds}),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
