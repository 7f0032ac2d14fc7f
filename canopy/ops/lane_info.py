"""What ``graph info`` shows of a run of lanes (docs/lanes.md): the specs in flight in the
active run's lanes, and the branches the latest run kept, read from the run's passages
(which record each spec's worktree and branch) and its running node runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from canopy.timefmt import to_iso

if TYPE_CHECKING:
    from canopy.store.queries import Rows


@dataclass(frozen=True)
class LaneInfo:
    """A spec in flight in the active run's lanes: the node running now and since when
    (none between nodes, or while its work waits to be integrated), its worktree and its
    branch."""

    spec_id: str
    spec_name: str | None
    node: str | None
    since: str | None
    worktree: str
    branch: str | None


@dataclass(frozen=True)
class KeptBranch:
    """A branch a run of lanes kept when it removed a spec's lane: it holds commits the
    target does not have (a failed or skipped spec's work), for a person to look at."""

    spec_id: str
    branch: str


def lanes_in_flight(rows: Rows, run_id: str) -> list[LaneInfo]:
    """The run's open passages that have a worktree, with the node each runs now."""
    passages = rows(
        "SELECT p.spec_id, s.name, p.worktree, p.branch, p.started_at"
        " FROM run_specs p LEFT JOIN specs s ON s.id = p.spec_id"
        " WHERE p.run_id = :run_id AND p.outcome IS NULL AND p.worktree IS NOT NULL"
        " ORDER BY p.id",
        {"run_id": run_id},
    )
    running = {
        node_run["spec_id"]: node_run
        for node_run in rows(
            "SELECT spec_id, node, started_at FROM node_runs"
            " WHERE run_id = :run_id AND status = 'running' ORDER BY id",
            {"run_id": run_id},
        )
    }
    lanes = []
    for passage in passages:
        node_run = running.get(passage["spec_id"])
        lanes.append(
            LaneInfo(
                spec_id=passage["spec_id"],
                spec_name=passage["name"],
                node=node_run["node"] if node_run else None,
                since=to_iso(node_run["started_at"] if node_run else passage["started_at"]),
                worktree=passage["worktree"],
                branch=passage["branch"],
            )
        )
    return lanes


def kept_branches(rows: Rows, run_id: str) -> list[KeptBranch]:
    """The branches the run's closed passages still name: kept because they hold work."""
    found = rows(
        "SELECT spec_id, branch FROM run_specs WHERE run_id = :run_id"
        " AND outcome IS NOT NULL AND branch IS NOT NULL ORDER BY ended_at, id",
        {"run_id": run_id},
    )
    return [KeptBranch(spec_id=row["spec_id"], branch=row["branch"]) for row in found]
