"""Benchmarks of chaincast (run each module with python -m)."""
