"""Store bookkeeping is retried until the store answers, so each write must be idempotent:
a retry whose first attempt's result was lost (a server outage, a killed worker) finds its
earlier write."""

import pytest

from canopy.activities.bookkeeping import RunRecords
from canopy.contracts.graph_run import (
    DispatchOutcome,
    NextSpec,
    NodeDispatch,
    SpecClose,
    SpecClosed,
    SpecOutcome,
)
from canopy.graphs.nodemodels import AgentNode, CommandNode, Node
from canopy.ids import new_id
from canopy.ops import graphs
from canopy.store.engine import Store
from canopy.temporal.client import this_host
from canopy.timefmt import utcnow
from canopy.workdir import WorktreeState
from tests.conftest import insert, make_specs

CLEAN = WorktreeState(dirty_paths=[], dirty_count=0)


def a_run(store: Store) -> str:
    """A recorded run of a one-node graph (no workflow needed to record node runs)."""
    graph = graphs.graph_create(store, {"name": "g", "nodes": [{"name": "n", "command": "true"}]})
    run_id = new_id("run")
    with store.transaction() as rows:
        insert(
            rows,
            "runs",
            id=run_id,
            graph_id=graph["id"],
            number=1,
            workdir="/tmp",
            workflow_id="w",
            status="running",
            started_at=utcnow(),
        )
    return run_id


def node_runs(store: Store) -> int:
    with store.transaction() as rows:
        (counted,) = rows("SELECT COUNT(*) AS n FROM node_runs", {})
    return int(counted["n"])


def a_dispatch(
    run_id: str, spec_id: str, launch_key: str, guard: bool = False, node: Node | None = None
) -> NodeDispatch:
    """A GraphRunV2 launch of the run's one node (or ``node``) for ``spec_id``."""
    return NodeDispatch(
        run_id=run_id,
        graph_id="unused",
        graph_name="g",
        spec_id=spec_id,
        workdir="/nonexistent",
        node=node or CommandNode(name="n", command="true"),
        launch_key=launch_key,
        spec=NextSpec(spec_id=spec_id, name="alpha"),
        visit=1,
        guard=guard,
    )


DIRTY = WorktreeState(dirty_paths=["scratch.txt"], dirty_count=1)


def refuse_to_guard(workdir: str) -> WorktreeState:
    raise AssertionError(f"a launch not asked to guard ran the guard ({workdir})")


def passages(store: Store) -> list[tuple[str | None, str]]:
    with store.transaction() as rows:
        found = rows(
            "SELECT p.outcome, s.status FROM run_specs p JOIN specs s ON s.id = p.spec_id"
            " ORDER BY p.id",
            {},
        )
    return [(row["outcome"], row["status"]) for row in found]


def test_a_retried_launch_finds_its_node_run_whatever_the_tree(home_store: Store) -> None:
    run_id = a_run(home_store)
    (spec,) = make_specs(home_store, "alpha")
    first = RunRecords(home_store).open_launch(
        a_dispatch(run_id, spec, "wf/1", guard=True), lambda _: CLEAN
    )
    assert isinstance(first, int)
    retried = RunRecords(home_store).open_launch(
        a_dispatch(run_id, spec, "wf/1", guard=True), lambda _: DIRTY
    )
    assert retried == first, "the tree now holds the node's own edits: not a dirty start"
    assert node_runs(home_store) == 1
    assert passages(home_store) == [(None, "in_progress")]


def test_a_launch_records_its_platform_and_host_before_the_node_runs(home_store: Store) -> None:
    """So the output of a node still running is read as its harness prints it."""
    run_id = a_run(home_store)
    alpha, beta = make_specs(home_store, "alpha", "beta")
    agent = AgentNode(name="n", platform="codex", prompt="Do it.")
    records = RunRecords(home_store)
    launched = [
        records.open_launch(a_dispatch(run_id, alpha, "wf/1", node=agent), refuse_to_guard),
        records.open_launch(a_dispatch(run_id, beta, "wf/2"), refuse_to_guard),
    ]
    with home_store.transaction() as rows:
        recorded = [
            rows("SELECT status, platform, host FROM node_runs WHERE id = :id", {"id": node_run})
            for node_run in launched
        ]
    found = [(n["status"], n["platform"], n["host"]) for (n,) in recorded]
    assert found == [("running", "codex", this_host()), ("running", None, this_host())]


def test_a_dirty_tree_launches_nothing_and_claims_nothing(home_store: Store) -> None:
    run_id = a_run(home_store)
    (spec,) = make_specs(home_store, "alpha")
    outcome = RunRecords(home_store).open_launch(
        a_dispatch(run_id, spec, "wf/1", guard=True), lambda _: DIRTY
    )
    assert outcome == DispatchOutcome(dirty=DIRTY)
    assert (node_runs(home_store), passages(home_store)) == (0, [])


@pytest.mark.parametrize("outcome", ["completed", "interrupted"])
def test_a_retried_close_closes_one_passage(home_store: Store, outcome: SpecOutcome) -> None:
    run_id = a_run(home_store)
    (spec,) = make_specs(home_store, "alpha")
    RunRecords(home_store).open_launch(a_dispatch(run_id, spec, "wf/1"), refuse_to_guard)
    with home_store.transaction() as rows:
        (run,) = rows("SELECT graph_id FROM runs WHERE id = :id", {"id": run_id})
    graph_id = run["graph_id"]
    request = SpecClose(
        run_id=run_id,
        graph_id=graph_id,
        spec=NextSpec(spec_id=spec, name="alpha"),
        outcome=outcome,
        ended_node="n",
    )
    first = RunRecords(home_store).close_spec(request)
    retried = RunRecords(home_store).close_spec(request)
    assert not retried.taken, "its own earlier close, not another run's claim"
    if outcome == "completed":
        assert retried == first, "the same passage, for the hooks' occurrence"
    status = "completed" if outcome == "completed" else "pending"
    assert passages(home_store) == [(outcome, status)], "one passage, closed once"


def test_a_stop_before_any_claim_closes_nothing(home_store: Store) -> None:
    run_id = a_run(home_store)
    (spec,) = make_specs(home_store, "alpha")
    with home_store.transaction() as rows:
        (run,) = rows("SELECT graph_id FROM runs WHERE id = :id", {"id": run_id})
    graph_id = run["graph_id"]
    request = SpecClose(
        run_id=run_id,
        graph_id=graph_id,
        spec=NextSpec(spec_id=spec, name="alpha"),
        outcome="interrupted",
    )
    assert RunRecords(home_store).close_spec(request) == SpecClosed(passage_id=None)
    assert passages(home_store) == [], "the spec was never claimed, and stays pending"
