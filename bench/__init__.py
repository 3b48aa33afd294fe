"""Benchmarks: figures, not pass/fail tests."""
