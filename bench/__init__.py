"""Benchmarks: run on demand (see bench/README.md), never part of the test suite."""
