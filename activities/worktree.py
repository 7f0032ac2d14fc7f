"""The dirty-tree guard as an activity, on the agents queue of the host holding the tree."""

from temporalio import activity

from canopy.contracts.graph_run import WorkdirRef
from canopy.workdir import WorktreeState, worktree_state


@activity.defn
def check_worktree(request: WorkdirRef) -> WorktreeState:
    """Dirty paths of the workdir (``git status --porcelain -z``, untracked included)."""
    return worktree_state(request.workdir)
