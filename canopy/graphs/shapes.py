"""The published shapes of a stored graph's parts, for ``graph info``'s JSON schema.

``graph info`` hands the stored parts over as the JSON the store keeps (nodes, hooks,
ensembles, the blocker), so reading a graph never loads pydantic. These types describe
that JSON in ``docs/graph-info.schema.json``: the model's node, hook and agent, and the
blocker the engine writes (``workflows/blockers.py``), which nothing validates.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict

from canopy.graphs.hookmodels import Hook
from canopy.graphs.nodemodels import AgentConfig, Node


class SpecRef(BaseModel):
    """A spec a blocker points at."""

    id: str
    name: str


class Blocker(BaseModel):
    """Why a graph stopped: what a person reads, and the ways out to type.

    Each kind carries the fields it needs (``dirty_tree``: ``workdir``, ``dirty_paths``,
    ``dirty_count``, ``next_spec``; ``queue_failed``: ``failed_specs``, …); fields this
    model does not name are kept as stored.
    """

    model_config = ConfigDict(extra="allow")

    kind: str
    message: str
    spec_id: str | None = None
    node: str | None = None
    workdir: str | None = None
    dirty_paths: list[str] | None = None
    dirty_count: int | None = None
    next_spec: SpecRef | None = None
    failed_specs: list[str] | None = None
    held_elsewhere: list[str] | None = None
    ways_out: list[str] | None = None


SHAPES: dict[str, Any] = {
    "Node": Node,
    "Hook": Hook,
    "AgentConfig": AgentConfig,
    "Blocker": Blocker,
}
"""Each stored part's shape, by the name :class:`~canopy.ops.graph_info.GraphInfo`'s
fields give it."""
