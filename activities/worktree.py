"""The dirty-tree guard as an activity, on the agents queue of the host holding the tree."""

from collections.abc import Callable
from typing import Any

from temporalio import activity

from canopy.workdir import WorktreeState, worktree_state


@activity.defn
def check_worktree(workdir: str) -> WorktreeState:
    """Dirty paths of ``workdir`` (``git status --porcelain -z``, untracked included)."""
    return worktree_state(workdir)


ALL: list[Callable[..., Any]] = [check_worktree]
