"""``canopy worktree list`` and ``prune``: the lane worktrees Canopy made, and removing
those whose run is over (a crash, a deleted graph, a reset that could not finish).

Only what :func:`canopy.lanes.found_lanes` finds is ever listed or touched: a directory
under ``<data dir>/worktrees`` with Canopy's ``lane.json`` naming a ``canopy/`` branch.
A worktree a person made, anywhere, is not looked at. A lane whose run is still running
or paused is the run's: prune leaves it alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.queries import bound_list

if TYPE_CHECKING:
    from canopy.lanes import Lane
    from canopy.store.engine import Store


def worktree_list(store: Store) -> list[dict[str, Any]]:
    """Every lane Canopy made, with its run's status (``None``: the run is gone) and
    whether it is left over (its run no longer active)."""
    from canopy.lanes import found_lanes

    lanes = found_lanes()
    statuses = _run_statuses(store, sorted({lane.run_id for lane in lanes}))
    return [_listed(lane, statuses.get(lane.run_id)) for lane in lanes]


def worktree_prune(store: Store) -> dict[str, Any]:
    """Remove every left-over lane (see :func:`worktree_list`): its worktree, and its
    branch unless that holds commits its target does not have (kept, and named)."""
    from canopy.lanes import close_lane, found_lanes

    lanes = found_lanes()
    statuses = _run_statuses(store, sorted({lane.run_id for lane in lanes}))
    removed, kept = [], []
    for lane in lanes:
        if statuses.get(lane.run_id) in ACTIVE_RUN_STATUSES:
            continue
        closed = close_lane(lane)
        removed.append(str(lane.tree))
        if closed.kept_branch is not None:
            kept.append(closed.kept_branch)
    return {"removed": removed, "kept_branches": kept}


def _listed(lane: Lane, status: str | None) -> dict[str, Any]:
    return {
        "worktree": str(lane.tree),
        "branch": lane.branch,
        "workdir": lane.workdir,
        "target": lane.target,
        "graph_id": lane.graph_id,
        "run_id": lane.run_id,
        "spec_id": lane.spec_id,
        "run_status": status,
        "leftover": status not in ACTIVE_RUN_STATUSES,
    }


def _run_statuses(store: Store, run_ids: list[str]) -> dict[str, str]:
    """The status of each of these runs the store still has."""
    if not run_ids:
        return {}
    listed, params = bound_list("run", run_ids)
    with store.transaction() as rows:
        found = rows(f"SELECT id, status FROM runs WHERE id IN {listed}", params)
    return {row["id"]: row["status"] for row in found}
