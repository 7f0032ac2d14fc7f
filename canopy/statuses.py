"""Status vocabularies."""

SPEC_STATUSES = ("pending", "in_progress", "completed", "failed", "skipped")

SET_STATUS_ACTIONS = {"complete": "completed", "skip": "skipped", "reopen": "pending"}
"""``spec set_status`` admin transitions and the status each one sets."""

ACTIVE_RUN_STATUSES = ("running", "paused")
"""A run in one of these still owns its specs: they cannot be deleted under it."""


def check_spec_status(status: str) -> str:
    """``status`` when it is a spec status; otherwise a refusal listing the valid ones."""
    from canopy.errors import Refused

    if status not in SPEC_STATUSES:
        raise Refused(f"unknown spec status {status!r}; one of {', '.join(SPEC_STATUSES)}")
    return status
