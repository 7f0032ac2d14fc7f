"""A lane's git work as activities, on the agents queue of the host holding the workdir:
make its worktree, integrate its branch into the target, remove it.

Each is safe to retry from any point a crash cut it at (see :mod:`canopy.lanes`): a
retried attempt finds the lane made, the branch already in the target, the worktree
gone, and answers as the first attempt would have. Git work blocks, so these are plain
``def`` activities, run on the worker's thread pool.
"""

from temporalio import activity

from canopy.contracts.lanes import LaneIntegration, LaneRef
from canopy.lanes import Closed, Integration, close_lane, integrate_lane, open_lane


@activity.defn
def open_lane_worktree(request: LaneRef) -> LaneRef:
    """The lane's worktree on its branch from the target's tip; the lane with its base."""
    return LaneRef.of(open_lane(request.lane()))


@activity.defn
def integrate_lane_branch(request: LaneIntegration) -> Integration:
    """The lane's branch put on the target, or why not (a conflict, a dirty tree)."""
    return integrate_lane(request.lane.lane(), request.mode)


@activity.defn
def close_lane_worktree(request: LaneRef) -> Closed:
    """The lane's worktree removed; its branch too unless it holds unintegrated work."""
    return close_lane(request.lane())
