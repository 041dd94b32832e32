"""Context policies replayed on agent loops: cost, quality and validity side by side.

Run ``python -m benchmarks.policies`` (full mode, rewrites ``docs/benchmarks.md`` and
the plots) or ``python -m benchmarks.policies --quick`` (CI: invariants only).
"""
