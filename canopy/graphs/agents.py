"""Every agent a stored graph launches, read through the typed nodes and hooks.

``graph run`` asks which platforms a graph needs (to refuse a run whose CLI is missing
here) and ``canopy doctor`` asks where each platform is used and at which permission
level: both are this one walk over the graph's agent nodes, ensemble members and agent
hooks, matched on their classes after the one parse point (:func:`stored_node`,
:func:`stored_hook`), not on which fields the stored JSON happens to set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from canopy.graphs.hookmodels import AgentHook, stored_hook
from canopy.graphs.nodemodels import AgentConfig, AgentNode, EnsembleNode, stored_node
from canopy.permissions import Permissions


@dataclass(frozen=True)
class LaunchedAgent:
    """One agent the graph launches: its platform, where the graph names it, and the
    permission levels set on the way to it, nearest first (member, then node)."""

    platform: str
    where: str
    permissions: tuple[Permissions | None, ...]


def launched_agents(
    nodes: Sequence[Mapping[str, Any]],
    ensembles: Mapping[str, Sequence[Mapping[str, Any]]],
    hooks: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Iterator[LaunchedAgent]:
    """The agents of a stored graph's parts, in the order the graph names them."""
    for node in map(stored_node, nodes):
        where = f"node {node.name}"
        if isinstance(node, AgentNode):
            yield LaunchedAgent(node.platform, where, (node.permissions,))
        elif isinstance(node, EnsembleNode):
            for member in ensembles.get(node.ensemble, []):
                agent = AgentConfig.model_validate(member)
                levels = (agent.permissions, node.permissions)
                yield LaunchedAgent(agent.platform, f"{where} (ensemble {node.ensemble})", levels)
    for event, event_hooks in hooks.items():
        for index, hook in enumerate(map(stored_hook, event_hooks)):
            if isinstance(hook, AgentHook):
                yield LaunchedAgent(hook.platform, f"hook {event}[{index}]", (hook.permissions,))


def agent_platforms(
    nodes: Sequence[Mapping[str, Any]],
    ensembles: Mapping[str, Sequence[Mapping[str, Any]]],
    hooks: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[str]:
    """The platforms a stored graph's agents launch, each once, in the order the graph
    names them."""
    return list(dict.fromkeys(agent.platform for agent in launched_agents(nodes, ensembles, hooks)))
