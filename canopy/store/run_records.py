"""Store records of runs shared by the reset operation and the run's own activities."""

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.models import Graph, GraphSpec, NodeRun, Run, RunSpec, Spec
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


def reset_graph_record(db: Session, graph_id: str) -> None:
    """The store side of a reset: graph ``idle``, blocker cleared, bound specs ``pending``.

    A run still marked active (its workflow gone) ends as ``reset``; its open spec
    passages end ``interrupted`` and their specs go back to ``pending``, and node runs still
    marked running end ``interrupted`` — so nothing is left looking in flight.
    """
    now = utcnow()
    run_ids = select(Run.id).where(Run.graph_id == graph_id)
    db.execute(
        update(Run)
        .where(Run.graph_id == graph_id, Run.status.in_(ACTIVE_RUN_STATUSES))
        .values(status="reset", ended_at=now, scheduled_resume_at=None)
    )
    open_passages = select(RunSpec.spec_id).where(
        RunSpec.run_id.in_(run_ids), RunSpec.outcome.is_(None)
    )
    db.execute(
        update(Spec)
        .where(Spec.id.in_(open_passages), Spec.status == "in_progress")
        .values(status="pending", updated_at=now)
    )
    db.execute(
        update(RunSpec)
        .where(RunSpec.run_id.in_(run_ids), RunSpec.outcome.is_(None))
        .values(outcome="interrupted", ended_at=now)
    )
    db.execute(
        update(NodeRun)
        .where(NodeRun.run_id.in_(run_ids), NodeRun.status == "running")
        .values(status="interrupted", ended_at=now)
    )
    bound = select(GraphSpec.spec_id).where(GraphSpec.graph_id == graph_id)
    db.execute(update(Spec).where(Spec.id.in_(bound)).values(status="pending", updated_at=now))
    db.execute(
        update(Graph)
        .where(Graph.id == graph_id)
        .values(status="idle", blocker=None, updated_at=now)
    )
