"""Store bookkeeping is retried until the store answers, so each write must be idempotent:
a retry whose first attempt's result was lost (a server outage) finds its earlier write."""

import dataclasses

from sqlalchemy import func, select
from temporalio.testing import ActivityEnvironment

from canopy.activities.bookkeeping import start_node_run
from canopy.ids import new_id
from canopy.ops import graphs
from canopy.store.engine import Store
from canopy.store.models import NodeRun, Run
from canopy.timefmt import utcnow


def a_run(store: Store) -> str:
    """A recorded run of a one-node graph (no workflow needed to record node runs)."""
    graph = graphs.graph_create(store, {"name": "g", "nodes": [{"name": "n", "command": "true"}]})
    run_id = new_id("run")
    with store.transaction() as db:
        db.add(
            Run(
                id=run_id,
                graph_id=graph["id"],
                number=1,
                workdir="/tmp",
                workflow_id="w",
                status="running",
                started_at=utcnow(),
            )
        )
    return run_id


def attempt(activity_id: str, attempt_number: int) -> ActivityEnvironment:
    """An activity environment as Temporal would give one attempt of one activity."""
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(
        environment.info, activity_id=activity_id, attempt=attempt_number
    )
    return environment


def node_runs(store: Store) -> int:
    with store.transaction() as db:
        return db.scalar(select(func.count()).select_from(NodeRun)) or 0


async def test_a_retried_start_node_run_finds_its_row_instead_of_adding_one(
    home_store: Store,
) -> None:
    run_id = a_run(home_store)
    first = attempt("7", 1).run(start_node_run, run_id, "spec-x", "n", 1)
    retried = attempt("7", 2).run(start_node_run, run_id, "spec-x", "n", 1)
    assert retried == first
    assert node_runs(home_store) == 1
    another_launch = attempt("9", 1).run(start_node_run, run_id, "spec-x", "n", 2)
    assert another_launch != first
    assert node_runs(home_store) == 2
