"""The store side of a reset, in portable SQL: shared by ``canopy graph reset`` of a graph
with no workflow to ask and by the run's own reset activity. Only stdlib imports here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.queries import bound_list
from canopy.timefmt import utcnow

if TYPE_CHECKING:
    from canopy.store.queries import Rows

_RUNS_OF_GRAPH = "SELECT id FROM runs WHERE graph_id = :graph"


def reset_graph_record(rows: Rows, graph_id: str) -> None:
    """Graph ``idle``, blocker cleared, bound specs ``pending``.

    A run still marked active (its workflow gone) ends as ``reset``; its open spec
    passages end ``interrupted`` and their specs go back to ``pending``, and node runs still
    marked running end ``interrupted`` — so nothing is left looking in flight. The specs
    of open passages are reopened before the passages are closed, which forgets them.
    """
    now = utcnow()
    active, statuses = bound_list("active", ACTIVE_RUN_STATUSES)
    params = {"graph": graph_id, "now": now}
    rows(
        "UPDATE runs SET status = 'reset', ended_at = :now, scheduled_resume_at = NULL"
        f" WHERE graph_id = :graph AND status IN {active}",
        {**params, **statuses},
    )
    rows(
        "UPDATE specs SET status = 'pending', updated_at = :now"
        " WHERE status = 'in_progress' AND id IN (SELECT spec_id FROM run_specs"
        f" WHERE outcome IS NULL AND run_id IN ({_RUNS_OF_GRAPH}))",
        params,
    )
    rows(
        "UPDATE run_specs SET outcome = 'interrupted', ended_at = :now"
        f" WHERE outcome IS NULL AND run_id IN ({_RUNS_OF_GRAPH})",
        params,
    )
    rows(
        "UPDATE node_runs SET status = 'interrupted', ended_at = :now"
        f" WHERE status = 'running' AND run_id IN ({_RUNS_OF_GRAPH})",
        params,
    )
    rows(
        "UPDATE specs SET status = 'pending', updated_at = :now"
        " WHERE id IN (SELECT spec_id FROM graph_specs WHERE graph_id = :graph)",
        params,
    )
    rows(
        "UPDATE graphs SET status = 'idle', blocker = NULL, updated_at = :now WHERE id = :graph",
        params,
    )
