"""Temporal activities: every side effect Canopy performs (agents, git, hooks, store writes)."""
