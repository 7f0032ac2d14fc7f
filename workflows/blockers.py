"""Blockers: the structured reason a graph stopped, with the ways out spelled out.

Pure functions of their inputs (no I/O), so the workflow may call them; the wording of
``ways_out`` gives the exact commands a person types to get the graph moving again.
"""

import shlex

from canopy.budget import BudgetState, amount_text, reached, unknown_text
from canopy.contracts.graph_run import NextSpec
from canopy.contracts.graph_run_blocker import (
    Budget,
    DirtyTree,
    MergeConflict,
    Paused,
    SpecFailed,
    SpecRef,
    Stopped,
)
from canopy.contracts.lanes import LaneRef
from canopy.lanes import Integration
from canopy.markdown import code_span
from canopy.workdir import WorktreeState, describe_dirty


def spec_failed(spec: NextSpec, node: str | None) -> SpecFailed:
    """A bound-spec run that ended at a failed spec."""
    return SpecFailed(
        message=f"spec {spec.name} ({spec.spec_id}) failed at node {node}",
        spec_id=spec.spec_id,
        node=node,
    )


def _spec_ref(spec: NextSpec) -> SpecRef:
    return SpecRef(id=spec.spec_id, name=spec.name)


def dirty_tree(
    graph_name: str,
    workdir: str,
    state: WorktreeState,
    upcoming: NextSpec,
    node: str | None = None,
) -> DirtyTree:
    """The guard between specs refused a dirty tree; ``node`` is the node
    the spec would have started at (``{{node}}`` of ``on_blocked``)."""
    graph = shlex.quote(graph_name)
    return DirtyTree(
        message=(
            f"workdir {workdir} is dirty ({describe_dirty(state)}); paused before spec "
            f"{upcoming.name} ({upcoming.spec_id})"
        ),
        workdir=workdir,
        dirty_paths=state.dirty_paths,
        dirty_count=state.dirty_count,
        next_spec=_spec_ref(upcoming),
        node=node,
        ways_out=[
            f"run the next spec anyway: {_command(graph, '--mode run_from_node')}",
            f"clean the tree by hand, then skip the next spec: "
            f"{_command(graph, '--mode skip_next_spec')}",
            f"allow a dirty tree: set allow_dirty_start in the graph "
            f"({code_span(f'canopy graph edit {graph} --file FILE')}), then: {_command(graph)}",
            f"clean the tree by hand, then: {_command(graph)}",
        ],
    )


def paused(graph_name: str, upcoming: NextSpec, node: str | None = None) -> Paused:
    """``graph pause`` landed at a spec boundary; ``node`` is the node the spec would have
    started at."""
    graph = shlex.quote(graph_name)
    return Paused(
        message=f"paused on request before spec {upcoming.name} ({upcoming.spec_id})",
        next_spec=_spec_ref(upcoming),
        node=node,
        ways_out=[_command(graph)],
    )


def _command(graph: str, options: str = "") -> str:
    """``canopy graph continue GRAPH [OPTIONS]`` as a code span: the ways out are read in
    the Temporal UI and the TUI, whose markdown would make the ``--`` of ``--mode`` a
    dash."""
    return code_span(f"canopy graph continue {graph}{' ' if options else ''}{options}")


def stopped(graph_name: str, spec: NextSpec, node: str | None) -> Stopped:
    """``graph stop`` interrupted a node; the spec will run again on continue."""
    graph = shlex.quote(graph_name)
    return Stopped(
        message=f"stopped during spec {spec.name} ({spec.spec_id}) at node {node}",
        next_spec=_spec_ref(spec),
        node=node,
        ways_out=[
            f"run it again from the start: {_command(graph)}",
            f"resume at the interrupted node: "
            f"{_command(graph, f'--mode run_from_node --node {shlex.quote(str(node))}')}",
            f"skip it: {_command(graph, '--mode skip_next_spec')}",
        ],
    )


def over_budget(
    graph_name: str, upcoming: NextSpec, node: str | None, state: BudgetState | None
) -> Budget | None:
    """The budget blocker before launching ``node`` for ``upcoming``, when ``state`` (the
    graph's budget with what was spent, read just before) has reached a limit; else
    ``None``: the node may launch."""
    limit = reached(state)
    if limit is None:
        return None
    graph = shlex.quote(graph_name)
    whose = "run" if limit.scope == "run" else f"spec {upcoming.name} ({upcoming.spec_id})"
    spent = f"{amount_text(limit.spent, limit.unit)} of {amount_text(limit.limit, limit.unit)}"
    return Budget(
        message=(
            f"budget reached: spent {spent} ({whose}){unknown_text(limit.unknown, limit.unit)}; "
            f"paused before node {node} of spec {upcoming.name} ({upcoming.spec_id})"
        ),
        scope=limit.scope,
        unit=limit.unit,
        spent=limit.spent,
        limit=limit.limit,
        unknown=limit.unknown,
        next_spec=_spec_ref(upcoming),
        node=node,
        ways_out=[
            f"raise or remove the budget "
            f"({code_span(f'canopy graph edit {graph} --file FILE')}), then: {_command(graph)}",
            *(
                [f"skip the spec: {_command(graph, '--mode skip_next_spec')}"]
                if limit.scope == "spec"
                else []
            ),
        ],
    )


def merge_conflict(
    graph_name: str, spec: NextSpec, lane: LaneRef, conflict: Integration, node: str | None
) -> MergeConflict:
    """A run of lanes could not integrate ``spec``: its branch conflicts with the target."""
    graph = shlex.quote(graph_name)
    paths = ", ".join(conflict.paths)
    more = conflict.count - len(conflict.paths)
    tail = f" and {more} more" if more > 0 else ""
    noun = "path" if conflict.count == 1 else "paths"
    rebase = f"git -C {shlex.quote(lane.tree)} rebase {shlex.quote(lane.target)}"
    return MergeConflict(
        message=(
            f"spec {spec.name} ({spec.spec_id}) conflicts with {lane.target} "
            f"({conflict.count} conflicting {noun}: {paths}{tail}); paused before integrating "
            f"its branch {lane.branch}"
        ),
        next_spec=_spec_ref(spec),
        node=node,
        branch=lane.branch,
        worktree=lane.tree,
        target=lane.target,
        conflict_paths=list(conflict.paths),
        conflict_count=conflict.count,
        ways_out=[
            f"resolve it in the spec's worktree ({code_span(rebase)}, fix the conflicts, "
            f"{code_span('git rebase --continue')}), then: {_command(graph)}",
            f"rerun the spec on the new tip: {_command(graph, '--mode run_from_node')}",
            f"skip it (its branch is kept): {_command(graph, '--mode skip_next_spec')}",
        ],
    )
