"""The lane activities' payloads (:mod:`canopy.activities.lanes`), part of the GraphRunV2
contract: a lane as the workflow carries it, and how to integrate it.

A module of its own beside :mod:`canopy.contracts.graph_run`, which is at its size; the
answers are :mod:`canopy.lanes`'s own dataclasses, which the pydantic data converter
carries as they are.
"""

from __future__ import annotations

from dataclasses import asdict

from pydantic import BaseModel

from canopy.lanes import IntegrationMode, Lane


class LaneRef(BaseModel):
    """A lane (:class:`~canopy.lanes.Lane`): ids, branch, workdir, target, and the commit
    it started from once it exists. Its worktree's path follows from its ids."""

    graph_id: str
    run_id: str
    spec_id: str
    lane_id: str
    branch: str
    workdir: str
    target: str
    base: str = ""
    tree: str = ""
    """The worktree's path, as the host that made it says (the data dir is the host's)."""

    def lane(self) -> Lane:
        """The lane this names."""
        return Lane(**self.model_dump(exclude={"tree"}))

    @classmethod
    def of(cls, lane: Lane) -> LaneRef:
        """``lane`` as a payload, its worktree's path with it."""
        return cls(**asdict(lane), tree=str(lane.tree))


class LaneIntegration(BaseModel):
    """Integrate ``lane`` into its target: rebased and fast-forwarded, or merged."""

    lane: LaneRef
    mode: IntegrationMode = "rebase"
