"""The ScheduledRun workflow's contract: its type name and payloads.

A Temporal Schedule's action can only start a workflow, so each fire of a Canopy schedule
starts a ScheduledRun, whose one activity starts the graph's run the way ``graph run``
does and records how that went on the schedule's row.
"""

from typing import Literal

from pydantic import BaseModel

SCHEDULED_RUN_WORKFLOW = "ScheduledRun"

FireOutcome = Literal["started", "skipped", "refused"]
"""``started``: a run began; ``skipped``: the graph already had an active run (the one
run per graph holds, so the fire does nothing); ``refused``: the start was refused for any
other reason (graph deleted, queue gone, dirty tree, no worker on the host)."""


class ScheduledRunInput(BaseModel):
    """What a fire needs: the schedule, read afresh from the store when it fires."""

    schedule_id: str


class FireResult(BaseModel):
    """How one fire went: the outcome, its one line and the run it started, if any."""

    outcome: FireOutcome
    line: str
    run_id: str | None = None
