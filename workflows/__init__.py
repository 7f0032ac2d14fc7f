"""Deterministic Temporal workflows: orchestration only, no I/O."""
