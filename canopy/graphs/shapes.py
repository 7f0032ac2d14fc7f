"""The published shapes of a stored graph's parts, for ``graph info``'s JSON schema.

``graph info`` hands the stored parts over as the JSON the store keeps (nodes, hooks,
ensembles), so reading a graph never loads pydantic. These types describe that JSON in
``docs/graph-info.schema.json``: the model's node, hook, agent and budget. (The stored blocker
is described by its own classes, :mod:`canopy.contracts.graph_run_blocker`, which
``graph info`` reads it with.)
"""

from typing import Any

from canopy.graphs.hookmodels import Hook
from canopy.graphs.model import GraphBudget
from canopy.graphs.nodemodels import AgentConfig, Node

SHAPES: dict[str, Any] = {
    "GraphBudget": GraphBudget,
    "Node": Node,
    "Hook": Hook,
    "AgentConfig": AgentConfig,
}
"""Each stored part's shape, by the name :class:`~canopy.ops.graph_info.GraphInfo`'s
fields give it."""
