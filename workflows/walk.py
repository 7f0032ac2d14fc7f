"""One spec's walk through the graph's nodes: launch a node, follow its transition, read
the next node as stored now, until the passage ends; each launch only while the graph's
budget (read with the node) allows it.

Both loops of a run walk with it: the sequential one in the graph's workdir
(:meth:`~canopy.workflows.graph_run.GraphRunV2._run_spec`) and each spec in flight of a
run of lanes, in its lane's worktree (:mod:`canopy.workflows.lanes`).
"""

from collections.abc import Awaitable, Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from canopy.budget import BudgetState, remaining_usd
    from canopy.contracts.graph_run import Ahead, NextSpec, NodeStep, RunInput
    from canopy.contracts.lanes import LaneRef
    from canopy.workflows import blockers
    from canopy.workflows.node_launch import NodeLauncher, NotLaunched
    from canopy.workflows.spec_walk import (
        BUDGET,
        DIRTY,
        TAKEN,
        HarnessSession,
        SpecEnd,
        where_next,
    )

ReadNode = Callable[[RunInput, NextSpec, str], Awaitable[Ahead]]
"""Reads the named node of the graph as stored now (and the budget with it)."""


async def walk(
    launcher: NodeLauncher,
    read_node: ReadNode,
    start: RunInput,
    spec: NextSpec,
    first: tuple[NodeStep | None, BudgetState | None],
    node_name: str | None,
    harness_session: HarnessSession | None,
    lane: LaneRef | None = None,
) -> SpecEnd:
    """Walk ``spec``'s nodes from ``first`` (a step and the budget read with it) until its
    passage ends there; :data:`TAKEN` or :data:`DIRTY` when the first launch did not
    launch, :data:`BUDGET` (``opened`` false before any launch) when the budget keeps a
    node back."""
    step, budget = first
    visits: dict[str, int] = {}
    while True:
        if step is None:
            return SpecEnd("failed", node_name)
        visits[step.name] = visits.get(step.name, 0) + 1
        if visits[step.name] > step.max_visits:
            return SpecEnd("failed", step.name)
        over = blockers.over_budget(start.graph_name, spec, step.name, budget)
        if over is not None:
            # a launch opened the passage, which closes, the spec pending again
            opened = sum(visits.values()) > 1
            guarded = launcher.guard_next
            return SpecEnd(BUDGET, step.name, budget=over, guarded=guarded, opened=opened)
        try:
            result = await launcher.launch(
                start,
                spec,
                step,
                visits[step.name],
                harness_session,
                remaining_usd(budget),
                lane,
            )
        except NotLaunched as not_launched:
            if not_launched.outcome.taken:
                return SpecEnd(TAKEN)
            return SpecEnd(DIRTY, dirty=not_launched.outcome.dirty)
        harness_session = None
        after = where_next(step, result)
        if isinstance(after, SpecEnd):
            return after
        node_name = after
        following = await read_node(start, spec, node_name)
        step, budget = following.step, following.budget
