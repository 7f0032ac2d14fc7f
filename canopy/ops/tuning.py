"""Per-run knobs from the environment, read by a graph run's start and a session's wake.

Apart from :mod:`canopy.ops.runs` because it is stdlib only: ``canopy session send``
wakes a session's delivery workflow with its heartbeat timeout, and should not load the
run operations (the workflow's contract, pydantic) to read one environment variable.
"""

import os

from canopy.errors import Refused
from canopy.limits import HEARTBEAT_TIMEOUT_SECONDS, SPECS_PER_EXECUTION, check_range


def run_tuning() -> dict[str, int]:
    """Per-run knobs from the environment: ``CANOPY_HEARTBEAT_TIMEOUT`` (seconds a node may
    go silent before its worker counts as lost; default 30) and
    ``CANOPY_SPECS_PER_EXECUTION`` (specs before continue-as-new; default 100), each
    within its range in :mod:`canopy.limits`."""
    knobs = {
        "heartbeat_timeout_seconds": ("CANOPY_HEARTBEAT_TIMEOUT", HEARTBEAT_TIMEOUT_SECONDS),
        "specs_per_execution": ("CANOPY_SPECS_PER_EXECUTION", SPECS_PER_EXECUTION),
    }
    tuning = {}
    for field, (variable, bounds) in knobs.items():
        raw = os.environ.get(variable)
        if raw is None:
            continue
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            raise Refused(f"{variable} must be a positive whole number, not {raw!r}")
        tuning[field] = int(check_range(int(raw), bounds, variable))
    return tuning
