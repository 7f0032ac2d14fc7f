"""The ``Ping`` workflow's contract: ``canopy up`` starts it by name as a readiness check."""

PING_WORKFLOW = "Ping"
"""Workflow type name. Its one argument is the agents task queue to ping; it returns the
reply of the ``ping`` activity served there."""
