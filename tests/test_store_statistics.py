"""A big queue's per-spec store reads stay cheap.

A spec's status is stored after its body; ``ix_specs_id_status`` answers the run's
status lookups without reading the rows, and the planner's statistics, refreshed when a
run starts, keep SQLite from driving that read from the pending specs instead (a sort of
every pending spec, per spec run). A spec's passage is found by its spec, not among every
passage of the run, and the pending specs are counted only when the run asks.
"""

from pathlib import Path

import pytest

from canopy.activities.bookkeeping import RunRecords, next_pending_query
from canopy.contracts.graph_run import ReadAhead
from canopy.ops import graphs, queues, runs
from canopy.store.engine import Store
from tests.conftest import make_specs
from tests.engine import git_repo

pytestmark = pytest.mark.store


def plan(store: Store, run_id: str) -> list[str]:
    """SQLite's plan for the run's next-pending read."""
    with store.transaction() as rows:
        sql, params = next_pending_query(rows, run_id)
        return [row["detail"] for row in rows(f"EXPLAIN QUERY PLAN {sql}", params)]


def a_queue_run(store: Store, tmp_path: Path, names: list[str]) -> tuple[str, str, list[str]]:
    """A prepared run (its id) of a one-command-node graph (its id) over a queue of new
    specs with these names (their ids), as ``graph run --queue`` records it."""
    queue = queues.queue_create(store, "q")["id"]
    specs = make_specs(store, *names)
    for spec_id in specs:
        queues.queue_add_spec(store, queue, spec_id)
    definition = {
        "name": "g",
        "workdir": str(git_repo(tmp_path / "repo")),
        "nodes": [{"name": "n", "command": "true"}],
    }
    graph = graphs.graph_create(store, definition)["id"]
    return runs.prepare_run(store, graph, queue=queue).start.run_id, graph, list(specs)


def test_a_run_start_lets_the_planner_walk_the_queue_in_order(store: Store, tmp_path: Path) -> None:
    if store.dialect != "sqlite":
        pytest.skip("Postgres keeps its own statistics")
    names = [f"s{index}" for index in range(400)]
    with store.transaction() as rows:
        rows("DELETE FROM sqlite_stat1", {})
    run_id, _graph, _specs = a_queue_run(store, tmp_path, names)
    with store.transaction() as rows:
        analyzed = rows("SELECT idx FROM sqlite_stat1 WHERE tbl = 'specs'", {})
    assert "ix_specs_id_status" in {row["idx"] for row in analyzed}
    steps = plan(store, run_id)
    assert steps[0].startswith("SEARCH queue_members USING INDEX ix_queue_members_queue_position")
    assert not any("TEMP B-TREE" in step for step in steps), steps


def test_a_spec_s_passage_is_found_by_its_spec(store: Store) -> None:
    if store.dialect != "sqlite":
        pytest.skip("the plan is SQLite's")
    lookup = "SELECT id FROM run_specs WHERE run_id = 'r' AND spec_id = 's' AND outcome IS NULL"
    with store.transaction() as rows:
        steps = [row["detail"] for row in rows(f"EXPLAIN QUERY PLAN {lookup}", {})]
    assert steps == ["SEARCH run_specs USING INDEX ix_run_specs_spec (spec_id=? AND run_id=?)"]


def test_the_pending_specs_are_counted_when_asked(store: Store, tmp_path: Path) -> None:
    run_id, graph, (first, _second) = a_queue_run(store, tmp_path, ["first", "second"])
    records = RunRecords(store)
    counted = records.read_ahead(ReadAhead(run_id=run_id, graph_id=graph))
    uncounted = records.read_ahead(ReadAhead(run_id=run_id, graph_id=graph, count_pending=False))
    assert counted.spec is not None and counted.spec.spec_id == first
    assert (counted.pending, uncounted.pending) == (2, None)
    assert uncounted.spec == counted.spec and uncounted.step == counted.step
