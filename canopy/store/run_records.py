"""Store records of runs that pausing, resuming and settling a run share."""

from typing import Any

from sqlalchemy.orm import Session

from canopy.store.models import Graph, Run
from canopy.timefmt import utcnow

IGNORED_SIGNALS = "ignored_signals"
"""The key of a run's summary listing the signals it ignored (``signal``, ``reason``,
``at``), oldest first."""


def set_run_status(db: Session, run_id: str, status: str, blocker: dict[str, Any] | None) -> Run:
    """The run and its graph in ``status`` together, the graph with ``blocker`` (or none):
    what pausing, resuming and settling a run all write."""
    run = db.get_one(Run, run_id)
    run.status = status
    graph = db.get_one(Graph, run.graph_id)
    graph.status = status
    graph.blocker = blocker
    graph.updated_at = utcnow()
    return run
