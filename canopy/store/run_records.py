"""Store records of runs that pausing, resuming and settling a run share, in portable SQL
(:data:`~canopy.store.queries.Rows`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.store.queries import stored_json
from canopy.timefmt import utcnow

if TYPE_CHECKING:
    from canopy.store.queries import Row, Rows

IGNORED_SIGNALS = "ignored_signals"
"""The key of a run's summary listing the signals it ignored (``signal``, ``reason``,
``at``), oldest first."""


def run_record(rows: Rows, run_id: str) -> Row:
    """A run's ``id``, ``graph_id``, ``queue_id``, ``status`` and ``summary`` (decoded)."""
    (run,) = rows(
        "SELECT id, graph_id, queue_id, status, CAST(summary AS TEXT) AS summary"
        " FROM runs WHERE id = :id",
        {"id": run_id},
    )
    return {**run, "summary": stored_json(run["summary"])}


def set_run_status(rows: Rows, run_id: str, status: str, blocker: dict[str, Any] | None) -> Row:
    """The run and its graph in ``status`` together, the graph with ``blocker`` (or none):
    what pausing, resuming and settling a run all write. The run as it was
    (:func:`run_record`), but for its new status."""
    run = run_record(rows, run_id)
    rows(
        "UPDATE graphs SET status = :status, blocker = :blocker, updated_at = :now WHERE id = :id",
        {"status": status, "blocker": blocker, "now": utcnow(), "id": run["graph_id"]},
    )
    rows("UPDATE runs SET status = :status WHERE id = :id", {"status": status, "id": run_id})
    return {**run, "status": status}
