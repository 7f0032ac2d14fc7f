"""Blockers: the structured reason a graph stopped, with the ways out spelled out.

Pure functions of their inputs (no I/O), so the workflow may call them; the wording of
``ways_out`` gives the exact commands a person types to get the graph moving again.
"""

import shlex
from typing import Any

from canopy.contracts.graph_run import NextSpec
from canopy.workdir import WorktreeState, describe_dirty


def spec_failed(spec: NextSpec, node: str | None) -> dict[str, Any]:
    """A bound-spec run that ended at a failed spec (DESIGN §6.6)."""
    return {
        "kind": "spec_failed",
        "message": f"spec {spec.name} ({spec.spec_id}) failed at node {node}",
        "spec_id": spec.spec_id,
        "node": node,
    }


def _spec_ref(spec: NextSpec) -> dict[str, str]:
    return {"id": spec.spec_id, "name": spec.name}


def dirty_tree(
    graph_name: str,
    workdir: str,
    state: WorktreeState,
    upcoming: NextSpec,
    node: str | None = None,
) -> dict[str, Any]:
    """The guard between specs refused a dirty tree (DESIGN §6.4); ``node`` is the node
    the spec would have started at (``{{node}}`` of ``on_blocked``)."""
    graph = shlex.quote(graph_name)
    return {
        "kind": "dirty_tree",
        "message": (
            f"workdir {workdir} is dirty ({describe_dirty(state)}); paused before spec "
            f"{upcoming.name} ({upcoming.spec_id})"
        ),
        "workdir": workdir,
        "dirty_paths": state.dirty_paths,
        "dirty_count": state.dirty_count,
        "next_spec": _spec_ref(upcoming),
        **_at(node),
        "ways_out": [
            f"run the next spec anyway: canopy graph continue {graph} --mode run_from_node",
            f"clean the tree by hand, then skip the next spec: canopy graph continue {graph} "
            "--mode skip_next_spec",
            f"allow a dirty tree: set allow_dirty_start in the graph (canopy graph edit "
            f"{graph} --file FILE), then: canopy graph continue {graph}",
            f"clean the tree by hand, then: canopy graph continue {graph}",
        ],
    }


def paused(graph_name: str, upcoming: NextSpec, node: str | None = None) -> dict[str, Any]:
    """``graph pause`` landed at a spec boundary; ``node`` is the node the spec would have
    started at."""
    graph = shlex.quote(graph_name)
    return {
        "kind": "paused",
        "message": f"paused on request before spec {upcoming.name} ({upcoming.spec_id})",
        "next_spec": _spec_ref(upcoming),
        **_at(node),
        "ways_out": [f"canopy graph continue {graph}"],
    }


def _at(node: str | None) -> dict[str, str]:
    """The blocker's ``node`` when it is known."""
    return {} if node is None else {"node": node}


def stopped(graph_name: str, spec: NextSpec, node: str | None) -> dict[str, Any]:
    """``graph stop`` interrupted a node; the spec will run again on continue."""
    graph = shlex.quote(graph_name)
    return {
        "kind": "stopped",
        "message": f"stopped during spec {spec.name} ({spec.spec_id}) at node {node}",
        "next_spec": _spec_ref(spec),
        "node": node,
        "ways_out": [
            f"run it again from the start: canopy graph continue {graph}",
            f"resume at the interrupted node: canopy graph continue {graph} --mode "
            f"run_from_node --node {node}",
            f"skip it: canopy graph continue {graph} --mode skip_next_spec",
        ],
    }
